#!/usr/bin/env bash
# Installs what the benchmark needs beyond tools/setup.sh. Idempotent. Usage: setup_bench.sh [BUILD_DIR]
#  - apt: python3-torch, python3-torchvision and python3-torchaudio (export the zoos), GNU time (peak RSS), and Node.js
#    with npm when no `node` is on the PATH (Debian 12 ships Node 18; onnxruntime-node 1.30 runs on
#    it and on Node 20).
#  - npm: onnxruntime-node, pinned by tools/bench/package-lock.json, into BUILD_DIR/bench/node_modules
#    (not the repository). Its CPU library ships inside the package; ONNXRUNTIME_NODE_INSTALL=skip
#    and --ignore-scripts keep its install script from fetching GPU libraries.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}

packages=(python3-torch python3-torchvision python3-torchaudio python3-onnx python3-numpy time)
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup_bench: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

dest=$build/bench
mkdir -p "$dest"
if cmp -s "$here/tools/bench/package-lock.json" "$dest/package-lock.json" &&
   [ -f "$dest/node_modules/onnxruntime-node/package.json" ]; then
  echo "setup_bench: onnxruntime-node already installed in $dest/node_modules"
else
  cp "$here/tools/bench/package.json" "$here/tools/bench/package-lock.json" "$dest/"
  (cd "$dest" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --ignore-scripts --no-audit --no-fund)
fi

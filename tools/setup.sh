#!/usr/bin/env bash
# Installs every build and test dependency from Debian 12's apt. Idempotent: does nothing when
# everything is already installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler libdnnl-dev
  ocl-icd-opencl-dev opencl-c-headers
  libcli11-dev libspdlog-dev catch2
  python3-onnx python3-numpy
  python3-dev pybind11-dev python3-pybind11
  python3-venv python3-pip python3-setuptools python3-wheel
  clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"

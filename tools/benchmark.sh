#!/usr/bin/env bash
# The benchmark: memplan against ONNX Runtime on every model set, written to docs/BENCHMARKS.md,
# the whole page (machine, method, overview, tables), nothing kept from before.
# Sets up (apt, npm) and builds memplan, exports the zoo (torchvision CNNs and torch.jit.script
# control-flow models) into BUILD/zoo, the transformer zoo into BUILD/transformer_zoo and the
# quantized zoo (int8 models in ONNX Runtime's dynamic and QDQ layouts, expected outputs from ONNX
# Runtime) into BUILD/quant_zoo, then runs tools/bench/bench.py on: the zoo, the quantized zoo,
# models/ and the PyTorch exports whose sizes the run decides (models/torch_decoders,
# models/torch_dynamic), with the columns under load; the real models (models/real,
# models/patterns) and the transformer zoo, each at the machine's instruction set and with oneDNN
# capped to AVX2 (DNNL_MAX_CPU_ISA=AVX2); then tools/bench/process_memory.py (the whole process's
# peak memory over models/real); then the overview. About 30 minutes on 2 cores.
#
# Usage: tools/benchmark.sh [--repeat N] [--filter REGEX] [--out FILE] [--build DIR] [--shared DIR] [--no-setup]
#                          [--no-load] [--real | --transformers]
#   --repeat N      timed inferences per model and thread count (default 20; 10 for the sections
#                   at both instruction sets, which time memplan and ONNX Runtime in turn, 3
#                   rounds, each cell the median of the rounds, memplan at --fixed-threads)
#   --filter REGEX  only models whose folder name matches; the page then goes to
#                   BUILD/bench/BENCHMARKS.md unless --out is given
#   --out FILE      where the markdown goes (default docs/BENCHMARKS.md)
#   --build DIR     build folder (default build)
#   --shared DIR    also a table of the models in DIR (e.g. ../shared/models)
#   --no-setup      skip apt, npm and the build (for quick reruns)
#   --no-load       skip the columns under load: 2 threads with one core kept busy, and the
#                   throughput of 2 concurrent 1-thread sessions (2 ORT runs on one session)
#   --real          only the real models' two sections (models/real and models/patterns, at
#                   both instruction sets), made again in the existing page
#   --transformers  only the transformer zoo's two sections (tools/bench/zoo_transformers.py:
#                   ViT-B/16, Swin-T, ConvNeXt-T, wav2vec2 base, a Conformer encoder, a BERT-like
#                   encoder with a padding mask, an RNN-T predictor and joiner), the same way
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build
shared=""
repeat=20
both_isa_repeat=10
both_isa_rounds=3
filter=""
out=""
setup=1
load=()
real=0
transformers=0
command_line="tools/benchmark.sh${*:+ $*}"
while [ $# -gt 0 ]; do
  case $1 in
    --repeat) repeat=$2; both_isa_repeat=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --shared) shared=$2; shift 2 ;;
    --no-setup) setup=0; shift ;;
    --no-load) load=(--no-load); shift ;;
    --real) real=1; shift ;;
    --transformers) transformers=1; shift ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 1 ;;
  esac
done
[ -n "$out" ] || { [ -z "$filter" ] && out=$here/docs/BENCHMARKS.md || out=$build/bench/BENCHMARKS.md; }

if [ "$setup" = 1 ]; then
  "$here/tools/setup.sh"
  "$here/tools/bench/setup_bench.sh" "$build"
  "$here/tools/build.sh" "$build"
fi
# Sections SECTION (with SETS, "TITLE=DIR" each) of the markdown, made again at the machine's
# instruction set and with oneDNN capped to AVX2: oneDNN picks kernels, layouts and scratchpads by
# instruction set, so a regression at either shows. 1 and 2 threads (memplan's fixed, as ONNX
# Runtime's are), no load columns.
sections_at_both_isas() {
  local base=$1 work=$2 isa section
  local -a isa_env
  shift 2
  for isa in native AVX2; do
    section=$base
    isa_env=()
    [ "$isa" = native ] || { section="$section, oneDNN capped to $isa"; isa_env=("DNNL_MAX_CPU_ISA=$isa"); }
    env "${isa_env[@]}" /usr/bin/python3 "$here/tools/bench/bench.py" \
      --memplan "$build/tools/memplan" --node-modules "$build/bench/node_modules" --repeat "$both_isa_repeat" \
      --rounds "$both_isa_rounds" --fixed-threads --filter "$filter" --out "$out" \
      --work "$build/bench/${work}_$isa" --command "$command_line" --no-load --section "$section" "$@"
  done
}
real_sets=("models/real: published models (expected outputs: ONNX Runtime 1.30)=$here/models/real"
           "models/patterns: what converters write (expected outputs: ONNX Runtime 1.30)=$here/models/patterns")
transformer_sets=("Transformer zoo: torchvision and torchaudio exports, random weights (expected outputs: torch)=$build/transformer_zoo")
real_section="Real models and converter patterns against ONNX Runtime"
transformer_section="Transformer zoo against ONNX Runtime"
if [ "$real" = 1 ]; then
  sections_at_both_isas "$real_section" work "${real_sets[@]}"
  exit 0
fi
/usr/bin/python3 "$here/tools/bench/export_zoo.py" --transformers "$build/transformer_zoo"
if [ "$transformers" = 1 ]; then
  sections_at_both_isas "$transformer_section" work_transformers "${transformer_sets[@]}"
  exit 0
fi
/usr/bin/python3 "$here/tools/bench/export_zoo.py" "$build/zoo"
/usr/bin/python3 "$here/tools/bench/make_quant_zoo.py" "$build/quant_zoo" --node-modules "$build/bench/node_modules"

sets=("Zoo: torchvision CNNs and torch.jit.script control flow (expected outputs: torch)=$build/zoo")
sets+=("Quantized zoo: int8 in ONNX Runtime's dynamic and QDQ layouts (expected outputs: ONNX Runtime 1.30)=$build/quant_zoo")
sets+=("models/: the example and control-flow models (expected outputs: the numpy reference of make_models.py)=$here/models")
sets+=("Greedy decoders: PyTorch exports whose state grows (expected outputs: ONNX Runtime 1.30)=$here/models/torch_decoders")
sets+=("Run-time sizes: PyTorch exports with lists, per-box loops and length masks (expected outputs: ONNX Runtime 1.30)=$here/models/torch_dynamic")
[ -z "$shared" ] || sets+=("$shared (expected outputs: those of its data sets)=$(cd "$shared" && pwd)")

# The page first (machine, method, these tables), then the sections after it.
/usr/bin/python3 "$here/tools/bench/bench.py" --memplan "$build/tools/memplan" \
  --node-modules "$build/bench/node_modules" --repeat "$repeat" --filter "$filter" --out "$out" \
  --work "$build/bench/work" --command "$command_line" "${load[@]}" "${sets[@]}"
sections_at_both_isas "$real_section" work "${real_sets[@]}"
sections_at_both_isas "$transformer_section" work_transformers "${transformer_sets[@]}"
[ -n "$filter" ] || /usr/bin/python3 "$here/tools/bench/process_memory.py" "$build/tools/memplan" \
  "$build/bench/node_modules" --out "$out" --command "$command_line"
results=()
for w in work work_native work_AVX2 work_transformers_native work_transformers_AVX2; do
  results+=("$build/bench/$w/results.json")
done
/usr/bin/python3 "$here/tools/bench/bench.py" --out "$out" --overview "${results[@]}"
echo "benchmark: wrote $out"

#!/bin/bash
# `ort-dml-ops bench --target webgpu` on a REAL GPU, through Vulkan (Dawn picks the hardware
# adapter; NVIDIA's Vulkan driver on a lent device machine). The same bench as the lavapipe
# figures in docs/performance.md, so a later session can fill its "WebGPU on a real GPU" section.
#
# Two steps, because the device machine reaches nothing outside itself:
#   1. here:   bash tools/bench_gpu_device.sh --fetch-wheels shared/wheels-cp311
#              (downloads the project's runtime wheels, the webgpu extra included, for the
#              device's Python; PY_VERSION=3.11 by default)
#   2. there:  bash tools/bench_gpu_device.sh [--wheels shared/wheels-cp311] [bench args...]
#              (the `device` tool's `run`, from the repository root; the wheels dir travels
#              with the working tree under shared/ or through `carry`). It makes a venv in
#              /tmp, checks that a hardware Vulkan device exists (refuses lavapipe: the point
#              is GPU time), prints the Vulkan devices, runs the bench and writes
#              bench-webgpu-gpu.json and .md into $OUT (or the current directory).
#   Default bench args: --full --sizes 1e5,1e6,1e7 --reps 7 --budget 60
#   3. there, for `tune` (docs/tune.md): bash tools/bench_gpu_device.sh [--wheels DIR] --tune MODEL
#              [tune args, e.g. --input x=x.npy ... or --random-inputs] runs
#              `ort-dml-ops tune MODEL --provider webgpu` on the hardware adapter and writes
#              tune-gpu.onnx and tune-gpu.json (the report docs/performance.md would record) into $OUT.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ "${1:-}" = "--fetch-wheels" ]; then
  dir=${2:?usage: --fetch-wheels DIR}
  mkdir -p "$dir"
  python3 -m pip download -q --python-version "${PY_VERSION:-3.11}" --only-binary=:all: -d "$dir" \
    "numpy>=1.26,<3" "onnx>=1.16,<1.24" "onnx-ir>=0.1.12,<2" "ml_dtypes>=0.4,<0.7" "onnxruntime>=1.20,<1.32" \
    "onnxruntime-extensions>=0.14,<0.16" "onnxruntime-ep-webgpu==0.4.0"
  du -sh "$dir"; exit 0
fi
wheels=""
if [ "${1:-}" = "--wheels" ]; then wheels=$2; shift 2; fi
out=${OUT:-$PWD}
unset VK_ICD_FILENAMES ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER  # the hardware adapter, never lavapipe
V=/tmp/ort-dml-ops-gpu-venv
if [ ! -x "$V/bin/ort-dml-ops" ]; then
  python3 -m venv "$V"
  if [ -n "$wheels" ]; then
    "$V/bin/pip" install -q --no-index --find-links "$wheels" numpy onnx onnx-ir ml_dtypes onnxruntime \
      onnxruntime-extensions "onnxruntime-ep-webgpu==0.4.0"
    "$V/bin/pip" install -q --no-index --no-deps --no-build-isolation -e "$ROOT" 2>/dev/null \
      || echo "$ROOT" > "$("$V/bin/python" -c 'import site; print(site.getsitepackages()[0])')/ort_dml_ops_src.pth"
  else
    "$V/bin/pip" install -q -e "$ROOT[webgpu]"
  fi
fi
devices=$("$V/bin/python" -c 'from ort_dml_ops.bench.webgpu import _vulkan_device_names as n; print("\n".join(n()))')
echo "Vulkan devices:"; echo "$devices" | sed 's/^/  /'
if ! echo "$devices" | grep -qv -i -E 'llvmpipe|lavapipe|swiftshader|no Vulkan device'; then
  echo "bench_gpu_device: no hardware Vulkan device (only: $devices); is the GPU's Vulkan driver installed?" >&2
  exit 1
fi
if [ "${1:-}" = "--tune" ]; then
  model=${2:?usage: --tune MODEL [tune args]}; shift 2
  "$V/bin/ort-dml-ops" tune "$model" -o "$out/tune-gpu.onnx" --provider webgpu --report "$out/tune-gpu.json" "$@"
  exit 0
fi
args=("$@"); [ ${#args[@]} -eq 0 ] && args=(--full --sizes 1e5,1e6,1e7 --reps 7 --budget 60)
"$V/bin/ort-dml-ops" bench --target webgpu "${args[@]}" --json > "$out/bench-webgpu-gpu.json"
"$V/bin/python" -c 'import json,sys; from ort_dml_ops.bench.webgpu import table; print(table(json.load(open(sys.argv[1]))))' \
  "$out/bench-webgpu-gpu.json" | tee "$out/bench-webgpu-gpu.md"

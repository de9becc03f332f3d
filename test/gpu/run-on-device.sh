#!/usr/bin/env bash
# The GPU check (docs/gpu.md), on a machine with an NVIDIA GPU:
#
#   test/gpu/run-on-device.sh [--build] REPORT.json
#
# With --build (from a clean checkout; .ci/setup installs Debian's MLIR 22
# and the rest) it builds, runs the whole test suite and prepares the CUDA
# artifacts (test/gpu/prepare-prebuilt.sh). Without it, it runs what
# prepare-prebuilt.sh left in build/gpu-prebuilt (made here, or on a build
# machine and copied: the GPU machine then needs no MLIR), preparing it first
# if it is missing and the build tools are here. Then
# test/gpu/device_check.py runs the example decoders (draft, Medusa chain,
# MTP module, Medusa with a 6-candidate tree) on the GPU and
# writes the report: exact greedy on the device, CUDA vs CPU token
# agreement, speedups, the device's copy bandwidth; and, where
# prepare-prebuilt.sh --large made the large target's artifact, its decode
# step's bandwidth and verify(k)/step(1) for k = 2..8.
set -euo pipefail
build=0
if [[ ${1:-} == --build ]]; then
  build=1
  shift
fi
report=${1:?usage: run-on-device.sh [--build] REPORT.json}
report=$(realpath -m "$report")
cd "$(dirname "$0")/../.."
prebuilt=build/gpu-prebuilt

if ((build)); then
  .ci/setup
  ninja -C build check-specula
  test/gpu/prepare-prebuilt.sh
elif [[ ! -x $prebuilt/bin/spec-run && -f build/build.ninja ]]; then
  test/gpu/prepare-prebuilt.sh
fi
if [[ ! -x $prebuilt/bin/spec-run ]]; then
  echo "run-on-device: no $prebuilt; run test/gpu/prepare-prebuilt.sh on a" \
       "build machine and copy it here, or pass --build" >&2
  exit 1
fi

command -v nvidia-smi >/dev/null &&
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
export LD_LIBRARY_PATH=$PWD/$prebuilt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
artifacts=()
for name in draft medusa mtp medusa-tree; do
  artifacts+=(--artifact "$name=$prebuilt/$name.spec")
done
large=()
if [[ -d $prebuilt/large.spec ]]; then
  weights=$prebuilt/large.spec/weights.bin
  if [[ ! -f $weights ]]; then
    # Python's lzma: the GPU machine may lack the xz tool.
    python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 24)' "$weights.xz" "$weights.partial"
    mv "$weights.partial" "$weights"
  fi
  large=(--large "$prebuilt/large.spec" --large-weight-bytes
         "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["weight_bytes"])' "$prebuilt/large.json")")
fi
python3 test/gpu/device_check.py --spec-run "$prebuilt/bin/spec-run" \
  "${artifacts[@]}" --cpu-tokens "$prebuilt/cpu_tokens.json" \
  --budget-seconds "${SPECULA_BUDGET_SECONDS:-90}" "${large[@]}" \
  --report "$report"

#!/usr/bin/env bash
# Prepares the GPU check on a build machine (no GPU needed): builds specc and
# spec-run, compiles the example decoders (draft, Medusa heads as a chain
# and verifying a 6-candidate tree, MTP module) for CUDA, records the CPU's
# greedy tokens for the same prompts, and puts spec-run and libspecrt.so
# beside them. The result, build/gpu-prebuilt (about 25 MB), runs on a GPU
# machine without MLIR: test/gpu/run-on-device.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
chip=${SPECULA_CHIP:-sm_90}
out=build/gpu-prebuilt
ninja -C build specc spec-run
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib" "$out/cpu"
M=models
decoders=(
  "draft:--draft=$M/draft.onnx --gamma=5"
  "medusa:--mtp-head=$M/medusa_head_1.onnx --mtp-head=$M/medusa_head_2.onnx --mtp-head=$M/medusa_head_3.onnx"
  "mtp:--mtp-head=$M/mtp_module.onnx"
  "medusa-tree:--mtp-head=$M/medusa_head_1.onnx --mtp-head=$M/medusa_head_2.onnx --mtp-head=$M/medusa_head_3.onnx --tree=[[0],[1],[0,0],[0,1],[1,0],[0,0,0]]"
)
artifacts=()
set -f  # the options below are split into words, never globbed ([[0], ...])
for entry in "${decoders[@]}"; do
  name=${entry%%:*}
  # shellcheck disable=SC2086
  build/bin/specc $M/target.onnx ${entry#*:} --device cuda --chip "$chip" \
    -o "$out/$name.spec"
  # shellcheck disable=SC2086
  build/bin/specc $M/target.onnx ${entry#*:} -o "$out/cpu/$name.spec"
  artifacts+=(--artifact "$name=$out/cpu/$name.spec")
done
python3 test/gpu/device_check.py --spec-run build/bin/spec-run \
  "${artifacts[@]}" --record-cpu-tokens "$out/cpu_tokens.json"
rm -rf "$out/cpu"
cp build/bin/spec-run "$out/bin/"
cp build/lib/libspecrt.so "$out/lib/"
du -sh "$out"

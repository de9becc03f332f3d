#!/usr/bin/env bash
# Prepares the GPU check on a build machine (no GPU needed): builds specc and
# spec-run, compiles the example decoders (draft, Medusa heads as a chain
# and verifying a 6-candidate tree, MTP module) for CUDA, records the CPU's
# greedy tokens for the same prompts, and puts spec-run and libspecrt.so
# beside them. The result, build/gpu-prebuilt (about 25 MB), runs on a GPU
# machine without MLIR: test/gpu/run-on-device.sh.
#
#   test/gpu/prepare-prebuilt.sh [--large]
#
# --large adds the bandwidth benchmark's artifact: a Llama-3.2-1B-shaped
# target with random weights whose rows repeat every 2
# (bench/make_large_model.py --preset 1b --repeat-rows 2, generated into
# build/large-preset1b unless there; needs python3-torch and about 9 GB of
# memory to compile), with its 4 GB weights.bin compressed by xz to 3.7
# MB; run-on-device.sh restores it. SPECULA_LARGE_SHAPE replaces
# "--preset 1b" (e.g. "--layers 2 --dim 512 --ffn 1408" for a quick try);
# SPECULA_LARGE_FLAGS adds specc options (e.g. "--gpu-contractions=false"
# for the other side of an A/B). On the 2-core build machine the 1 B model
# takes 82 s to generate and its artifact 341 s and 8.1 GB to compile.
set -euo pipefail
large=0
if [[ ${1:-} == --large ]]; then
  large=1
  shift
fi
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
if ((large)); then
  shape=${SPECULA_LARGE_SHAPE:---preset 1b}
  models=build/large-${shape//[^a-z0-9]/}
  if [[ ! -f $models/target.json ]]; then
    # shellcheck disable=SC2086
    /usr/bin/python3 bench/make_large_model.py $shape --repeat-rows 2 \
      --out "$models"
  fi
  # shellcheck disable=SC2086
  build/bin/specc "$models/target.onnx" --draft "$models/draft.onnx" \
    --gamma 7 --device cuda --chip "$chip" ${SPECULA_LARGE_FLAGS:-} \
    -o "$out/large.spec"
  cp "$models/target.json" "$out/large.json"
  xz -T0 -3 "$out/large.spec/weights.bin"
fi
cp build/bin/spec-run "$out/bin/"
cp build/lib/libspecrt.so "$out/lib/"
du -sh "$out"

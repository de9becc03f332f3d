#!/usr/bin/env bash
# Runs MODEL on the same random inputs (PAST cached positions, SEQ new ones)
# through ONNX Runtime and through Specula's compiled CPU code, and compares
# every output: spec-run-graph fails unless all match within the tolerances.
#
#   check_against_ort.sh MODEL PAST SEQ WORK_DIR [RTOL] [ATOL]
set -euo pipefail
model=$1 past=$2 seq=$3 work=$4 rtol=${5:-1e-4} atol=${6:-1e-5}
here=$(dirname "$0")
if [[ ! -d ${ORT_NODE_PATH:-} ]]; then
  echo "error: ONNX Runtime for Node.js not found at '${ORT_NODE_PATH:-}'" \
       "(.ci/setup installs it into build/ort)" >&2
  exit 1
fi
rm -rf "$work"
/usr/bin/python3 "$here/make_decoder_inputs.py" "$model" "$work/in" \
  --past "$past" --seq "$seq"
inputs=$(ls "$work"/in/input_*.pb | sort -V)
node "$here/ort_run.mjs" "$model" "$work/ort" $inputs
args=()
for f in $inputs; do args+=(-i "$f"); done
for f in $(ls "$work"/ort/output_*.pb | sort -V); do args+=(--expect "$f"); done
# SPEC_RUN_GRAPH_FLAGS: extra flags, e.g. --gpu-schedule-threads=128.
# shellcheck disable=SC2086
spec-run-graph "$model" "${args[@]}" --rtol "$rtol" --atol "$atol" \
  ${SPEC_RUN_GRAPH_FLAGS:-}

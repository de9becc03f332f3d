"""Checks that the compiled target gives bit-identical logits for a token
whether it is computed in a prefill together with the tokens before it or
alone in a cached decode step: what exact speculative greedy decoding relies
on (verification of several tokens must equal decoding them one by one).

  check_batch_invariance.py MODEL WORK_DIR [--tokens N]

Runs spec-run-graph (one process, --runs-from-stdin) on: (1) a prefill of N
tokens; (2) a prefill of the first N - k tokens followed by k decode steps,
each fed the previous step's present keys/values. Compares the logits of every position bitwise.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

parser = argparse.ArgumentParser()
parser.add_argument("model")
parser.add_argument("work")
parser.add_argument("--tokens", type=int, default=8)
parser.add_argument("--decode", type=int, default=3)
args = parser.parse_args()

model = onnx.load(args.model, load_external_data=False)
inputs = [i.name for i in model.graph.input]
outputs = [o.name for o in model.graph.output]
meta = {p.key: p.value for p in model.metadata_props}
layers = int(meta["num_hidden_layers"])
kv_heads = int(meta["num_key_value_heads"])
head_dim = int(meta["head_dim"])
rng = np.random.default_rng(7)
ids = rng.integers(0, int(meta["vocab_size"]), size=(1, args.tokens))


# One spec-run-graph compiles the model once and runs every step.
runner = subprocess.Popen(["spec-run-graph", args.model, "--runs-from-stdin"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)


def run(name, token_ids, start, past):
    """Runs the model on token_ids at positions start.. with the given past
    (a dict name -> array); returns outputs by name."""
    d = os.path.join(args.work, name)
    os.makedirs(d, exist_ok=True)
    feeds = {"input_ids": token_ids,
             "position_ids": (np.arange(token_ids.shape[1]) + start)[None]}
    feeds.update(past)
    files = []
    for i, input_name in enumerate(inputs):
        path = os.path.join(d, f"input_{i}.pb")
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(feeds[input_name],
                                            input_name).SerializeToString())
        files += ["-i", path]
    runner.stdin.write(" ".join([*files, "--output-dir", d]) + "\n")
    runner.stdin.flush()
    while (line := runner.stdout.readline().strip()) not in ("done", "failed"):
        if not line:
            sys.exit(f"spec-run-graph exited ({runner.wait()})")
    if line == "failed":
        sys.exit(f"spec-run-graph failed on the run '{name}'")
    result = {}
    for i, output_name in enumerate(outputs):
        with open(os.path.join(d, f"output_{i}.pb"), "rb") as f:
            tensor = onnx.TensorProto()
            tensor.ParseFromString(f.read())
            result[output_name] = numpy_helper.to_array(tensor)
    return result


def empty_past():
    shape = (1, kv_heads, 0, head_dim)
    return {f"past_key_values.{i}.{kv}": np.zeros(shape, np.float32)
            for i in range(layers) for kv in ("key", "value")}


def presents_as_past(result):
    return {f"past_key_values.{i}.{kv}": result[f"present.{i}.{kv}"]
            for i in range(layers) for kv in ("key", "value")}


full = run("prefill", ids, 0, empty_past())["logits"][0]
prefix = args.tokens - args.decode
step = run("prefix", ids[:, :prefix], 0, empty_past())
rows = [step["logits"][0]]
for k in range(prefix, args.tokens):
    step = run(f"decode_{k}", ids[:, k:k + 1], k, presents_as_past(step))
    rows.append(step["logits"][0])
runner.stdin.close()
if runner.wait() != 0:
    sys.exit(f"spec-run-graph exited with {runner.returncode}")
incremental = np.concatenate(rows)
same = np.array_equal(full.view(np.uint32), incremental.view(np.uint32))
worst = np.max(np.abs(full - incremental))
print(f"{os.path.basename(args.model)}: {args.tokens} positions, last "
      f"{args.decode} decoded one at a time: "
      f"{'bit-identical' if same else f'DIFFERENT (max |diff| {worst:.3g})'}")
sys.exit(0 if same else 1)

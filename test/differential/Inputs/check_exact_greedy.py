"""Exact greedy: runs a compiled decoder's speculative loop
(@<decoder>_generate) and its target-only loop (@<decoder>_target_only) on
several prompts and requires the same tokens, position for position, up to
the first EOS.

  check_exact_greedy.py MODULE.mlir WORK_DIR [--new-tokens N] [--decoder NAME]
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

PROMPTS = [
    "import os\nimport sys\n\n\ndef main(",
    "class Parser:\n    def __init__(self, ",
    "        return self.",
    "if __name__ == '__main__':\n    ",
    "    for i in range(len(",
    "def _get_default_",
    "        raise ValueError(",
    "\"\"\"Return the ",
    "    @property\n    def ",
    "try:\n    import ",
]
BOS, EOS = 256, 257

parser = argparse.ArgumentParser()
parser.add_argument("module")
parser.add_argument("work")
parser.add_argument("--new-tokens", type=int, default=96)
parser.add_argument("--decoder", default="decoder")
args = parser.parse_args()


def write(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def read(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def run(function, prompt_file, out):
    os.makedirs(out, exist_ok=True)
    subprocess.run(["spec-run-graph", args.module, "--function", function,
                    "-i", prompt_file, "-i", limit_file, "-i", key_file,
                    "--output-dir", out], check=True, stdout=subprocess.DEVNULL)
    seq, length, steps = (read(os.path.join(out, f"output_{i}.pb"))
                          for i in range(3))
    tokens = [int(t) for t in seq[:int(length)]]
    if EOS in tokens:
        tokens = tokens[:tokens.index(EOS) + 1]
    return tokens, int(steps)


os.makedirs(args.work, exist_ok=True)
limit_file = os.path.join(args.work, "limit.pb")
key_file = os.path.join(args.work, "key.pb")
write(limit_file, np.array(args.new_tokens, np.int64), "max_new_tokens")
write(key_file, np.array(0, np.int64), "key")
mismatches = 0
generated = speculative_steps = 0
for i, text in enumerate(PROMPTS):
    prompt = np.array([BOS] + list(text.encode()), np.int64)
    prompt_file = os.path.join(args.work, f"prompt_{i}.pb")
    write(prompt_file, prompt, "prompt")
    spec, steps = run(f"{args.decoder}_generate", prompt_file,
                      os.path.join(args.work, f"spec_{i}"))
    ref, _ = run(f"{args.decoder}_target_only", prompt_file,
                 os.path.join(args.work, f"ref_{i}"))
    new = len(ref) - len(prompt)
    if spec != ref:
        mismatches += 1
        first = next((j for j, (a, b) in enumerate(zip(spec, ref)) if a != b),
                     min(len(spec), len(ref)))
        print(f"prompt {i}: speculative output differs from the target's at "
              f"position {first}")
    generated += new
    speculative_steps += steps
print(f"{len(PROMPTS)} prompts, {generated} tokens: "
      f"{len(PROMPTS) - mismatches} identical to target-only greedy, "
      f"{mismatches} different; {generated / speculative_steps:.2f} tokens "
      f"per target forward")
sys.exit(1 if mismatches else 0)

#!/usr/bin/env python3
"""Per-token greedy decode latency: the compiled target vs ONNX Runtime.

Compiles the bundled target (with its draft, whose artifact also holds the
target-only decode loop) with `specc -o`, then for each prompt runs, in this
one process and one after the other, `spec-run --no-speculation` (the
compiled target alone) and ONNX Runtime's CPU provider on the same
models/target.onnx (bench/ort_greedy.mjs: prefill, then one token per step
with the KV cache). Both are single-threaded, greedy, with one untimed
warm-up generation, and are timed from the prompt to the last new token.
Reports whether the tokens agree and the ratio of ORT's seconds per token
to ours (above 1: the compiled target is faster).

    python3 bench/target_vs_ort.py [--build build] [--prompts 8]
        [--max-new-tokens 128] [--json results.json]

Needs node and onnxruntime-node (.ci/setup installs it into build/ort).
Not a test: nothing here asserts on time.
"""

import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The same prompts and helpers as the speedup benchmark.
from speculative_speedup import (PROMPTS, find_tools,  # noqa: E402
                                 parse_arguments, run)

BOS = 256


def main():
    args = parse_arguments(__doc__.split("\n")[0], default_prompts=8)
    specc, spec_run = find_tools(args.build)
    ort = os.path.join(os.path.abspath(args.build), "ort", "node_modules",
                       "onnxruntime-node")
    if not os.path.isdir(ort):
        sys.exit(f"error: {ort} not found; run .ci/setup first")
    env = dict(os.environ, ORT_NODE_PATH=ort)

    rows, ours_total, ort_total, tokens_total = [], 0.0, 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        artifact = os.path.join(tmp, "target.spec")
        run([specc, f"{MODELS}/target.onnx", f"--draft={MODELS}/draft.onnx",
             "-o", artifact])
        for prompt in PROMPTS[:args.prompts]:
            ids = [BOS] + list(prompt.encode())
            ours = json.loads(run(
                [spec_run, artifact, "--no-speculation", "--json",
                 "--warmup=1", f"--prompt={prompt}",
                 f"--max-new-tokens={args.max_new_tokens}"]))["no_speculation"]
            theirs = json.loads(run(
                ["node", os.path.join(ROOT, "bench", "ort_greedy.mjs"),
                 f"{MODELS}/target.onnx", ",".join(map(str, ids)),
                 str(args.max_new_tokens), "1"], env=env))
            # Compare the text: ORT's tokens, decoded as spec-run does.
            ort_text = bytes(t for t in theirs["tokens"] if t < 256).decode(
                "utf-8", errors="replace")
            ours_text = ours["text"]
            same = ort_text == ours_text
            n = ours["new_tokens"]
            rows.append({"prompt": prompt, "same_tokens": same,
                         "new_tokens": n,
                         "specula_ms_per_token": 1e3 * ours["seconds"] / n,
                         "ort_ms_per_token":
                             1e3 * theirs["seconds"] / len(theirs["tokens"])})
            ours_total += ours["seconds"]
            ort_total += theirs["seconds"] * n / len(theirs["tokens"])
            tokens_total += n
            print(f"  {prompt!r} done", file=sys.stderr)

    ratio = ort_total / ours_total
    print(f"{args.prompts} prompts x {args.max_new_tokens} new tokens, greedy, "
          "1 thread")
    print(f"{'prompt':<28} {'same tokens':>11} {'specula ms/tok':>14} "
          f"{'ORT ms/tok':>10}")
    for r in rows:
        print(f"{r['prompt']!r:<28} {'yes' if r['same_tokens'] else 'NO':>11} "
              f"{r['specula_ms_per_token']:>14.3f} "
              f"{r['ort_ms_per_token']:>10.3f}")
    print(f"ORT / Specula time per token: {ratio:.2f} "
          f"({'Specula faster' if ratio > 1 else 'ORT faster'}); "
          f"{tokens_total} tokens")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"prompts": args.prompts,
                       "max_new_tokens": args.max_new_tokens,
                       "ort_over_specula": ratio, "rows": rows}, f, indent=2)
    return 0 if all(r["same_tokens"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Target-only decoding speed by thread count (spec-run --threads).

Compiles one artifact whose large contractions share their column tiles
among threads (specc --parallel-columns, with --parallel-min-work) and one
without (--parallel-columns=false), then runs the target-only loop
(`spec-run --no-speculation --json`, one warm-up) with each thread count
and the serial artifact, in one process each, one after the other. Reports
tokens/s, the ratio to the serial artifact, and whether every run generated
the same tokens (they must: work is split by output columns, never inside a
reduction).

    python3 bench/threads.py [--build build] [--target T.onnx --draft D.onnx]
        [--threads 1,2] [--min-work 131072] [--max-new-tokens 32]
        [--json results.json]

The example models (default) are small: their contractions are below the
default --min-work, so pass --min-work 0 to put them on threads anyway. The
bandwidth-bound case is bench/make_large_model.py's model. Not a test:
nothing here asserts on time.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPT = "import os\nimport sys\n\n\ndef main(argv):\n"


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed:\n{result.stderr}")
    return result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--target",
                        default=os.path.join(ROOT, "models", "target.onnx"))
    parser.add_argument("--draft",
                        default=os.path.join(ROOT, "models", "draft.onnx"))
    parser.add_argument("--threads", default="1,2",
                        help="comma-separated thread counts")
    parser.add_argument("--min-work", type=int, default=131072)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--json")
    args = parser.parse_args()
    try:
        counts = [int(t) for t in args.threads.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        sys.exit("error: --threads must list positive thread counts, "
                 "e.g. 1,2")
    specc = os.path.join(args.build, "bin", "specc")
    spec_run = os.path.join(args.build, "bin", "spec-run")
    for tool in (specc, spec_run):
        if not os.path.exists(tool):
            sys.exit(f"error: {tool} not found; run `ninja -C {args.build} "
                     "specc spec-run` first")

    with tempfile.TemporaryDirectory() as work:
        parallel = os.path.join(work, "parallel.spec")
        serial = os.path.join(work, "serial.spec")
        common = [specc, args.target, "--draft", args.draft, "--gamma", "4"]
        run(common + ["--parallel-min-work", str(args.min_work),
                      "-o", parallel])
        run(common + ["--parallel-columns=false", "-o", serial])

        def decode(artifact, threads):
            report = json.loads(run(
                [spec_run, artifact, "--prompt", PROMPT, "--no-speculation",
                 "--max-new-tokens", str(args.max_new_tokens), "--warmup",
                 "1", "--threads", str(threads), "--json"]))
            return report["no_speculation"]

        baseline = decode(serial, 1)
        rows = [{"artifact": "serial", "threads": 1,
                 "tokens_per_second": baseline["tokens_per_second"],
                 "ratio": 1.0, "same_tokens": True}]
        for threads in counts:
            result = decode(parallel, threads)
            rows.append({
                "artifact": "parallel", "threads": threads,
                "tokens_per_second": result["tokens_per_second"],
                "ratio": result["tokens_per_second"] /
                         baseline["tokens_per_second"],
                "same_tokens": result["token_ids"] == baseline["token_ids"]})

    print(f"{os.path.basename(args.target)}, target alone, "
          f"{args.max_new_tokens} new tokens, min-work {args.min_work}")
    print("artifact threads tokens/s ratio same_tokens")
    for row in rows:
        print(f"{row['artifact']} {row['threads']} "
              f"{row['tokens_per_second']:.1f} {row['ratio']:.2f} "
              f"{'yes' if row['same_tokens'] else 'NO'}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"target": args.target, "min_work": args.min_work,
                       "max_new_tokens": args.max_new_tokens, "runs": rows},
                      out, indent=2)
    if not all(row["same_tokens"] for row in rows):
        sys.exit("error: the thread count changed the tokens")


if __name__ == "__main__":
    main()

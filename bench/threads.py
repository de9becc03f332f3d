#!/usr/bin/env python3
"""Target-only decoding speed by thread count (spec-run --threads), on an
idle machine or under load.

Compiles one artifact whose large contractions share their column tiles
among threads (specc --parallel-columns, with --parallel-min-work) and one
without (--parallel-columns=false), then runs the target-only loop
(`spec-run --no-speculation --json`, one warm-up) with each thread count
and the serial artifact, in one process each, one after the other. Reports
tokens/s, the ratio to the serial artifact, and whether every run generated
the same tokens (they must: work is split by output columns, never inside a
reduction).

--load N runs N busy processes (one spinning loop each) during the measured
runs, as another job holding the cores would; --wait runs the threaded
artifact with each way of waiting at a barrier: `runtime` (the runtime's
choice: threads sleep at once), `libomp` (libomp's own default: spin for
200 ms, KMP_BLOCKTIME=200), `active` and `passive` (OMP_WAIT_POLICY);
--repeats R takes the median of R runs, the configurations interleaved.

    python3 bench/threads.py [--build build] [--target T.onnx --draft D.onnx]
        [--threads 1,2] [--min-work 131072] [--max-new-tokens 32]
        [--load N] [--wait runtime,libomp,active,passive] [--repeats R]
        [--json results.json]

The example models (default) are small: their contractions are below the
default --min-work, so pass --min-work 0 to put them on threads anyway. The
bandwidth-bound case is bench/make_large_model.py's model. Not a test:
nothing here asserts on time.
"""

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPT = "import os\nimport sys\n\n\ndef main(argv):\n"


def run(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed:\n{result.stderr}")
    return result.stdout


def spin():
    """Another job's work: a core kept busy until terminated."""
    while True:
        pass


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
    parser.add_argument("--load", type=int, default=0,
                        help="busy processes during the measured runs")
    parser.add_argument("--wait", default="runtime",
                        help="comma-separated: runtime (the runtime's "
                             "choice), libomp (KMP_BLOCKTIME=200), active, "
                             "passive (OMP_WAIT_POLICY)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json")
    args = parser.parse_args()
    waits = args.wait.split(",")
    if not waits or not set(waits) <= {"runtime", "libomp", "active",
                                        "passive"}:
        sys.exit("error: --wait takes runtime, libomp, active and passive, "
                 "comma-separated")
    if args.load < 0 or args.repeats < 1:
        sys.exit("error: --load takes 0 or more, --repeats 1 or more")
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

        def decode(artifact, threads, wait):
            env = {k: v for k, v in os.environ.items()
                   if k not in ("OMP_WAIT_POLICY", "KMP_BLOCKTIME")}
            if wait == "libomp":
                env["KMP_BLOCKTIME"] = "200"
            elif wait != "runtime":
                env["OMP_WAIT_POLICY"] = wait
            report = json.loads(run(
                [spec_run, artifact, "--prompt", PROMPT, "--no-speculation",
                 "--max-new-tokens", str(args.max_new_tokens), "--warmup",
                 "1", "--threads", str(threads), "--json"], env))
            return report["no_speculation"]

        configurations = [("serial", serial, 1, "runtime")] + [
            ("parallel", parallel, threads, wait)
            for threads in counts for wait in waits]
        results = {c: [] for c in configurations}
        hogs = [multiprocessing.Process(target=spin, daemon=True)
                for _ in range(args.load)]
        for hog in hogs:
            hog.start()
        try:
            for _ in range(args.repeats):
                for c in configurations:
                    results[c].append(decode(c[1], c[2], c[3]))
        finally:
            for hog in hogs:
                hog.terminate()

        def rate(c):
            return statistics.median(r["tokens_per_second"]
                                     for r in results[c])

        baseline = configurations[0]
        rows = [{"artifact": c[0], "threads": c[2], "wait": c[3],
                 "tokens_per_second": rate(c),
                 "ratio": rate(c) / rate(baseline),
                 "same_tokens": all(
                     r["token_ids"] == results[baseline][0]["token_ids"]
                     for r in results[c])}
                for c in configurations]

    print(f"{os.path.basename(args.target)}, target alone, "
          f"{args.max_new_tokens} new tokens, min-work {args.min_work}, "
          f"{args.load} busy processes, median of {args.repeats}")
    print("artifact threads wait tokens/s ratio same_tokens")
    for row in rows:
        print(f"{row['artifact']} {row['threads']} {row['wait']} "
              f"{row['tokens_per_second']:.1f} {row['ratio']:.2f} "
              f"{'yes' if row['same_tokens'] else 'NO'}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"target": args.target, "min_work": args.min_work,
                       "max_new_tokens": args.max_new_tokens,
                       "load": args.load, "repeats": args.repeats,
                       "runs": rows},
                      out, indent=2)
    if not all(row["same_tokens"] for row in rows):
        sys.exit("error: the thread count changed the tokens")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What a target forward costs on the CPU, by rows: the figures that decide
whether speculative decoding pays.

For k = 2..--max-rows it compiles the example draft decoder with gamma k - 1
(`specc --gamma`), so that every verify forward of the example target has k
rows, and runs `spec-run --compare --json` on one prompt: the verify rounds
and the target-only loop's one-row steps run in the same process, one after
the other, over the same positions, so verify(k) / step(1) is a ratio
measured under one load; --repeats runs go round all widths in turn (a
slow spell of a shared machine falls on every width) and each figure is
the median. It then times prefills of growing prompts
(`spec-run --no-speculation --max-new-tokens 1`) for the cost per prompt row,
measures this machine's memory bandwidth with a 256 MiB copy (numpy), and
reports the one-row step's weight bytes per second as a fraction of it, and
of a copy of the weights' size that stays in cache (a model whose weights
fit the last-level cache is not bound by memory bandwidth). --plot draws
verify(k)/step(1) against k (with --plot-with, next to earlier runs'
--json results).

    /usr/bin/python3 bench/forward_cost.py [--build build] [--max-rows 8]
        [--rows 2,6] [--target T.onnx --draft D.onnx]
        [--max-new-tokens 96] [--repeats 3] [--json results.json]
        [--plot out.png [--label NAME] [--plot-with LABEL=earlier.json]]

--target/--draft measure another pair, e.g. bench/make_large_model.py's
bandwidth-bound one (default: the example models); --rows picks the verify
widths (default 2..--max-rows), since each is a compilation.

Needs numpy and onnx (Debian's python3-numpy, python3-onnx). Not a test:
nothing here asserts on time.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from statistics import median

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")
PROMPT = "import os\nimport sys\n\n\ndef main(argv):\n"


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed:\n{result.stderr}")
    return result.stdout


def per_round(mode):
    """Seconds per decode-loop round (the prefill is not a round)."""
    rounds = mode["target_forwards"] - 1
    if rounds < 1:
        sys.exit("error: no decode rounds ran; raise --max-new-tokens")
    return mode["verify_seconds"] / rounds


def copy_bandwidth(source_bytes, repeats):
    """Bytes per second a copy of `source_bytes` moves (read + write), best
    of `repeats`."""
    import numpy as np
    source = np.ones(max(source_bytes // 4, 1 << 14), dtype=np.float32)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return 2 * source.nbytes / best


def pyplot():
    """matplotlib's pyplot drawing into files, or exit with a message."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("error: --plot needs matplotlib (Debian's "
                 "python3-matplotlib)")
    return plt


def plot(path, runs):
    """verify(k)/step(1) against k, one line per (label, verify list), and
    beside it the times in microseconds of the runs that recorded them."""
    plt = pyplot()
    figure, (ratios, times) = plt.subplots(1, 2, figsize=(11, 4), dpi=110)
    for index, (label, verify) in enumerate(runs):
        color = f"C{index}"  # the same run in the same color in both
        rows = [1] + [v["rows"] for v in verify]
        ratios.plot(rows, [1.0] + [v["ratio"] for v in verify], marker="o",
                    color=color, label=label)
        if all("verify_seconds" in v for v in verify):
            step = median(v["step_seconds"] for v in verify)
            times.plot(rows, [step * 1e6] + [v["verify_seconds"] * 1e6
                                             for v in verify],
                       marker="o", color=color, label=label)
    ratios.plot([1, 8], [1, 8], linestyle=":", color="gray",
                label="k separate one-row steps")
    ratios.set_ylabel("verify(k) / step(1)")
    ratios.set_ylim(0, 4)
    times.set_ylabel("forward time (us; k = 1: the one-row step)")
    times.set_ylim(bottom=0)
    for axes in (ratios, times):
        axes.set_xlabel("rows k in one target forward")
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)


def weight_bytes(model):
    import onnx
    from onnx import numpy_helper
    graph = onnx.load(model).graph
    return sum(numpy_helper.to_array(t).nbytes for t in graph.initializer)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--max-rows", type=int, default=8)
    parser.add_argument("--rows", help="verify widths to measure, e.g. 2,6 "
                        "(default: 2..--max-rows)")
    parser.add_argument("--target", default=os.path.join(MODELS,
                                                         "target.onnx"))
    parser.add_argument("--draft", default=os.path.join(MODELS, "draft.onnx"))
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--prefill-rows", default="32,128,256",
                        help="prompt lengths timed for the prefill cost")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per verify width; medians are reported")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--plot", help="draw verify(k)/step(1) against k "
                        "into this PNG (needs matplotlib)")
    parser.add_argument("--plot-with", action="append", default=[],
                        metavar="LABEL=RESULTS.json",
                        help="also draw an earlier run's --json results; "
                        "repeat")
    parser.add_argument("--label", default="this run",
                        help="this run's name in the plot")
    args = parser.parse_args()
    if args.plot:
        pyplot()  # before minutes of measuring, not after
    earlier = []
    for entry in args.plot_with:
        label, sep, path = entry.partition("=")
        if not sep or not os.path.isfile(path):
            sys.exit(f"error: --plot-with wants LABEL=RESULTS.json of an "
                     f"existing file, got '{entry}'")
        with open(path) as f:
            earlier.append((label, json.load(f)["verify"]))
    if not 1 <= args.repeats <= 100:
        sys.exit("error: --repeats must be between 1 and 100")
    if not 2 <= args.max_rows <= 16:
        sys.exit("error: --max-rows must be between 2 and 16")
    try:
        widths = ([int(r) for r in args.rows.split(",")] if args.rows
                  else list(range(2, args.max_rows + 1)))
    except ValueError:
        sys.exit(f"error: --rows must be comma-separated integers, got "
                 f"'{args.rows}'")
    if not all(2 <= r <= 16 for r in widths):
        sys.exit("error: each of --rows must be between 2 and 16")
    for model in (args.target, args.draft):
        if not os.path.isfile(model):
            sys.exit(f"error: {model} not found")
    specc, spec_run = (os.path.join(args.build, "bin", name)
                       for name in ("specc", "spec-run"))
    for tool in (specc, spec_run):
        if not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} not found; run `ninja -C {args.build} "
                     "specc spec-run` first")
    prefill_rows = [int(r) for r in args.prefill_rows.split(",")]

    prefill = []
    with tempfile.TemporaryDirectory() as tmp:
        artifacts = {}
        for rows in widths:
            artifacts[rows] = os.path.join(tmp, f"gamma{rows - 1}.spec")
            run([specc, args.target, f"--draft={args.draft}",
                 f"--gamma={rows - 1}", "-o", artifacts[rows]])
        samples = {rows: [] for rows in widths}
        for repeat in range(args.repeats):
            for rows in widths:
                out = json.loads(run([
                    spec_run, artifacts[rows], f"--prompt={PROMPT}",
                    f"--max-new-tokens={args.max_new_tokens}", "--compare",
                    "--warmup=2", "--json"]))
                step = per_round(out["no_speculation"])
                cost = per_round(out["speculative"])
                samples[rows].append((cost, step, cost / step))
            print(f"  run {repeat + 1} of {args.repeats} done",
                  file=sys.stderr)
        verify = [{"rows": rows,
                   "verify_seconds": median(x[0] for x in samples[rows]),
                   "step_seconds": median(x[1] for x in samples[rows]),
                   "ratio": median(x[2] for x in samples[rows]),
                   "ratios": [x[2] for x in samples[rows]]}
                  for rows in widths]
        artifact = artifacts[widths[-1]]
        # Prefills: prompts of n bytes (n rows), one new token.
        text = open(os.path.join(ROOT, "bench", "forward_cost.py")).read()
        for rows in prefill_rows:
            prompt = os.path.join(tmp, f"prompt{rows}.txt")
            with open(prompt, "w") as f:
                f.write(text[:rows - 1])  # BOS is the first row
            out = json.loads(run([
                spec_run, artifact, f"--prompt-file={prompt}",
                "--no-speculation", "--max-new-tokens=1", "--warmup=3",
                "--json"]))
            seconds = out["no_speculation"]["seconds"]
            prefill.append({"rows": rows, "seconds": seconds,
                            "seconds_per_row": seconds / rows})

    weights = weight_bytes(args.target)
    # From memory: 256 MiB, far beyond the caches. In cache: source and
    # destination together the weights' size, which stay in the
    # last-level cache when the model is small enough.
    bandwidth = copy_bandwidth(256 << 20, repeats=5)
    cached = copy_bandwidth(weights // 2, repeats=200)
    step = min(v["step_seconds"] for v in verify)
    example = os.path.join(MODELS, "target.onnx")
    name = ("example target"
            if os.path.realpath(args.target) == os.path.realpath(example)
            else os.path.basename(args.target))
    print(f"{name} ({weights / 2**20:.2f} MiB of weights), prompt of "
          f"{len(PROMPT)} bytes + {args.max_new_tokens} new tokens, greedy, "
          f"medians of {args.repeats} runs")
    print(f"{'rows k':>6} {'verify(k) us':>12} {'step(1) us':>10} "
          f"{'verify(k)/step(1)':>17}")
    for v in verify:
        print(f"{v['rows']:>6} {v['verify_seconds'] * 1e6:>12.1f} "
              f"{v['step_seconds'] * 1e6:>10.1f} {v['ratio']:>17.2f}")
    print(f"{'prefill rows':>12} {'us':>9} {'us per row':>10}")
    for p in prefill:
        print(f"{p['rows']:>12} {p['seconds'] * 1e6:>9.1f} "
              f"{p['seconds_per_row'] * 1e6:>10.2f}")
    print(f"copy bandwidth {bandwidth / 1e9:.1f} GB/s; one-row step reads "
          f"weights at {weights / step / 1e9:.1f} GB/s "
          f"({weights / step / bandwidth:.0%} of it)")
    print(f"a copy of the weights' size, in cache: {cached / 1e9:.1f} GB/s "
          f"(the step's weight reads are {weights / step / cached:.0%} of "
          f"it)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"weight_bytes": weights,
                       "copy_bytes_per_second": bandwidth,
                       "cached_copy_bytes_per_second": cached,
                       "verify": verify, "prefill": prefill}, f, indent=2)
    if args.plot:
        plot(args.plot, earlier + [(args.label, verify)])
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""specc's compile time and peak memory per example decoder, by step.

Compiles each decoder with `specc --timing -o` (one process each, one after
the other) and reports the wall time, the peak resident memory of the
specc process, and the steps `--timing` names: the device pipeline
(spec-to-cpu) with its one-shot bufferization, LLVM's O3, and code
generation with --codegen-threads (0: one per hardware thread).

    python3 bench/compile_time.py [--build build] [--specc PATH]
        [--decoders draft,medusa,mtp] [--codegen-threads 0] [--repeats 1]
        [--json results.json]

With --repeats N each decoder compiles N times and its fastest run counts.
--specc names another specc (an A/B against another build).
Not a test: nothing here asserts on time.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")
DECODERS = {
    "draft": ("draft (gamma 5)",
              ["--draft", os.path.join(MODELS, "draft.onnx"), "--gamma", "5"]),
    "medusa": ("Medusa (3 heads)",
               [arg for i in (1, 2, 3) for arg in
                ("--mtp-head", os.path.join(MODELS, f"medusa_head_{i}.onnx"))]),
    "mtp": ("MTP module",
            ["--mtp-head", os.path.join(MODELS, "mtp_module.onnx")]),
}
STEPS = {
    "pipeline": r"spec-to-cpu",
    "bufferize": r"OneShotBufferizePass",
    "optimize": r"LLVM optimization \(O3\)",
    "codegen": r"LLVM code generation",
}


def step_seconds(report, name):
    """The wall seconds of the first report line naming `name`."""
    match = re.search(r"^\s*[0-9.]+ \(\s*[0-9.]+%\)\s+([0-9.]+) \(\s*[0-9.]+%\)\s+"
                      + name + r"\s*$", report, re.MULTILINE)
    if not match:
        sys.exit(f"error: specc --timing printed no '{name}' line:\n{report}")
    return float(match.group(1))


def compile_once(specc, flags, threads, directory):
    output = os.path.join(directory, "decoder.spec")
    command = [specc, os.path.join(MODELS, "target.onnx"), *flags, "--timing",
               "--codegen-threads", str(threads), "-o", output]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    report = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed:\n{report}")
    result = {"seconds": wall, "peak_mib": usage.ru_maxrss / 1024}
    for key, name in STEPS.items():
        result[key] = step_seconds(report, name)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--specc", help="default: BUILD/bin/specc")
    parser.add_argument("--decoders", default="draft,medusa,mtp")
    parser.add_argument("--codegen-threads", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json")
    args = parser.parse_args()
    names = args.decoders.split(",")
    unknown = [n for n in names if n not in DECODERS]
    if unknown or not names:
        sys.exit(f"error: --decoders takes names from {', '.join(DECODERS)}")
    if args.repeats < 1:
        sys.exit("error: --repeats must be at least 1")
    if args.codegen_threads < 0:
        sys.exit("error: --codegen-threads must not be negative")
    specc = args.specc or os.path.join(args.build, "bin", "specc")
    if not os.path.exists(specc):
        sys.exit(f"error: {specc} not found; run `ninja -C {args.build} "
                 "specc` first")

    results = []
    print(f"specc --codegen-threads {args.codegen_threads}, fastest of "
          f"{args.repeats}, {os.cpu_count()} hardware threads")
    print("decoder wall s peak MiB spec-to-cpu s bufferize s O3 s codegen s")
    for name in names:
        label, flags = DECODERS[name]
        runs = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as directory:
                runs.append(compile_once(specc, flags, args.codegen_threads,
                                         directory))
        best = min(runs, key=lambda r: r["seconds"])
        results.append({"decoder": label, **best})
        print(f"{label} {best['seconds']:.1f} {best['peak_mib']:.0f} "
              f"{best['pipeline']:.1f} {best['bufferize']:.1f} "
              f"{best['optimize']:.1f} {best['codegen']:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"codegen_threads": args.codegen_threads,
                       "repeats": args.repeats, "results": results}, f,
                      indent=2)


if __name__ == "__main__":
    main()

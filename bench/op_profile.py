#!/usr/bin/env python3
"""Where a decode round's time goes, by op: contractions, attention,
elementwise ops, copies, the decode loop, the runtime's allocator.

It compiles the example draft decoder (or --target/--draft) with `specc
--line-tables`, which writes the IR as its loops are scheduled to a file and
gives decoder.so line tables pointing into it, then samples `spec-run` with
`perf record` twice, speculative and target alone (--no-speculation), and
attributes each sample to the op of the IR its address came from: for each
model function, the top-level op around that line (a loop nest of blocked
contractions, the fused attention's loops, an elementwise linalg op, a copy
or fill), and outside them the decode loop, the runtime's allocator, libc's
memmove/memset and libm. Times per round are each category's share of the
decode samples times the time per target forward of the fastest of three
runs without perf (spec-run's own clock; sampling slows a run down, and the
samples cover the --warmup runs too).

    /usr/bin/python3 bench/op_profile.py [--build build] [--target T.onnx
        --draft D.onnx] [--gamma 5] [--prompt P] [--max-new-tokens 256]
        [--warmup 40] [--top 0] [--json out.json]

--top N also lists the N costliest ops of each model function with their
line in the IR file (kept with --keep DIR). Needs Linux perf (Debian's
linux-perf) with sampling allowed (perf_event_paranoid <= 2 or root).
Not a test: nothing here asserts on time.
"""

import argparse
import bisect
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")
PROMPT = "import os\nimport sys\n\n\ndef main(argv):\n"

ALLOCATOR = re.compile(r"allocate|_mlir_memref_to_llvm_(alloc|free)|"
                       r"pthread_mutex|Allocator|deallocate")
LIBC_COPY = re.compile(r"mem(move|cpy|set)")
LIBM = re.compile(r"^(__)?(sin|cos|exp|log|tanh|erf|pow)f?(_fma)?$")
MODEL_CATEGORIES = ["contractions", "attention", "elementwise",
                    "copies and fills", "other"]


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed:\n{result.stderr}")
    return result.stdout


class Snapshot:
    """The IR file of --line-tables: which function and which top-level op
    of it each line belongs to."""

    def __init__(self, path):
        self.lines = open(path).read().split("\n")
        self.functions = []  # (first line, name, is a model function)
        self.tops = []  # first lines of the ops at a function body's level
        for number, line in enumerate(self.lines, start=1):
            match = re.match(r"  func\.func (private )?@([\w$.]+)\(", line)
            if match:
                # Model functions carry their role; the decode loops and
                # helpers do not.
                self.functions.append(
                    (number, match.group(2), "spec.role" in line))
            elif re.match(r"    [^ }]", line):
                self.tops.append(number)
        self.categories = {}

    def function(self, line):
        index = bisect.bisect_right([f[0] for f in self.functions], line) - 1
        return self.functions[index] if index >= 0 else None

    def top(self, line):
        index = bisect.bisect_right(self.tops, line) - 1
        return self.tops[index] if index >= 0 else None

    def category(self, top):
        """What the op starting at line `top` is, from its text."""
        if top in self.categories:
            return self.categories[top]
        head = self.lines[top - 1].strip()
        end = self.tops[bisect.bisect_right(self.tops, top)] \
            if bisect.bisect_right(self.tops, top) < len(self.tops) \
            else len(self.lines)
        body = "\n".join(self.lines[top - 1:end - 1])
        op = re.sub(r"^(%[\w:#, ]+ = )", "", head).split(" ")[0]
        if op == "scf.for" and "vector.contract" in body:
            category = "contractions"
        elif op == "scf.for" and "vector.transfer_read" in body:
            # spec-fuse-attention's loops over heads, rows and positions.
            category = "attention"
        elif op.startswith("linalg.") and op not in (
                "linalg.fill", "linalg.copy", "linalg.transpose"):
            category = "elementwise"
        elif op in ("memref.copy", "linalg.fill", "linalg.copy",
                    "linalg.transpose"):
            category = "copies and fills"
        else:
            category = "other"
        self.categories[top] = category
        return category


def generate(spec_run, artifact, prompt, max_new_tokens, warmup, extra,
             data=None):
    """spec-run's JSON result; sampled by perf into `data` when given."""
    command = [spec_run, artifact, "--prompt", prompt, "--max-new-tokens",
               str(max_new_tokens), "--warmup", str(warmup), "--json",
               "--threads", "1"] + extra
    if data:
        # Sampling slows the run down: its time is not the one reported.
        command = ["perf", "record", "-e", "cpu-clock", "-F", "4000", "-o",
                   data, "--"] + command
    return json.loads(run(command))


def samples(data):
    """(count, dso, symbol, line) for each sampled line."""
    report = run(["perf", "report", "-i", data, "--no-children", "--sort",
                  "dso,sym,srcline", "-F", "sample,dso,sym,srcline",
                  "--percent-limit", "0", "--stdio", "-t", "|"])
    for row in report.split("\n"):
        if not row.strip() or row.startswith("#"):
            continue
        fields = [f.strip() for f in row.split("|")]
        if len(fields) < 4 or not fields[0].isdigit():
            continue
        count, dso, symbol, srcline = fields[:4]
        symbol = re.sub(r"^\[[.k]\] ", "", symbol)
        match = re.match(r".*\.mlir:(\d+)$", srcline)
        yield int(count), dso, symbol, int(match.group(1)) if match else None


def attribute(snapshot, data, tops):
    """Sample counts by category, and by (function, top-level op line)."""
    by_category = collections.Counter()
    for count, dso, symbol, line in samples(data):
        if dso == "decoder.so":
            function = snapshot.function(line) if line else None
            name = function[1] if function else symbol
            if function and function[2]:
                top = snapshot.top(line) if line > function[0] else None
                category = snapshot.category(top) if top else "other"
                by_category[f"{name}: {category}"] += count
                if top:
                    tops[(name, top)] += count
            elif ALLOCATOR.search(symbol):
                by_category["runtime allocator"] += count
            else:
                # The decode loops and the helpers bufferization adds.
                by_category["decode loop"] += count
        elif dso.startswith("libspecrt"):
            by_category["runtime allocator" if ALLOCATOR.search(symbol)
                        else "runtime (copies, clock, hooks)"] += count
        elif LIBC_COPY.search(symbol):
            by_category["libc memmove/memset"] += count
        elif ALLOCATOR.search(symbol) or symbol in ("malloc", "free"):
            by_category["runtime allocator"] += count
        elif LIBM.match(symbol):
            by_category["libm (sin, cos)"] += count
        else:
            by_category["outside decoding (start-up, kernel)"] += count
    return by_category


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--target", default=os.path.join(MODELS,
                                                         "target.onnx"))
    parser.add_argument("--draft", default=os.path.join(MODELS, "draft.onnx"))
    parser.add_argument("--gamma", type=int, default=5)
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=40,
                        help="untimed generations before the measured one, "
                        "sampled too (more samples)")
    parser.add_argument("--top", type=int, default=0,
                        help="also list this many costliest ops per model")
    parser.add_argument("--keep", help="keep the artifact and its IR here")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.gamma < 1 or args.max_new_tokens < 1 or args.warmup < 0:
        sys.exit("error: --gamma and --max-new-tokens must be positive, "
                 "--warmup at least 0")
    specc = os.path.join(args.build, "bin", "specc")
    spec_run = os.path.join(args.build, "bin", "spec-run")
    for tool in (specc, spec_run):
        if not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} not found; run ninja -C {args.build} "
                     "specc spec-run")

    with tempfile.TemporaryDirectory() as scratch:
        probe = subprocess.run(
            ["perf", "record", "-e", "cpu-clock", "-o",
             os.path.join(scratch, "probe.data"), "--", "true"],
            capture_output=True, text=True)
        if probe.returncode != 0:
            sys.exit("error: perf cannot sample here (Debian's linux-perf, "
                     "and perf_event_paranoid <= 2 or root):\n" + probe.stderr)
        where = args.keep or scratch
        os.makedirs(where, exist_ok=True)
        artifact = os.path.join(where, "decoder.spec")
        lines = os.path.join(where, "decoder.mlir")
        print(f"compiling {os.path.basename(args.target)} + "
              f"{os.path.basename(args.draft)} (gamma {args.gamma}) with "
              "line tables", file=sys.stderr)
        run([specc, args.target, "--draft", args.draft, "--gamma",
             str(args.gamma), "--line-tables", lines, "-o", artifact])
        snapshot = Snapshot(lines)

        modes = {}
        tops = {}
        for mode, extra in (("speculative", []),
                            ("target alone", ["--no-speculation"])):
            print(f"sampling {mode}", file=sys.stderr)
            data = os.path.join(scratch, mode.replace(" ", "_") + ".data")
            key = "speculative" if mode == "speculative" else "no_speculation"
            # The times: the fastest of three runs without perf.
            measured = min(
                (generate(spec_run, artifact, args.prompt,
                          args.max_new_tokens, 2, extra)[key]
                 for _ in range(3)),
                key=lambda result: result["seconds"])
            generate(spec_run, artifact, args.prompt, args.max_new_tokens,
                     args.warmup, extra, data)
            tops[mode] = collections.Counter()
            counts = attribute(snapshot, data, tops[mode])
            forwards = measured["target_forwards"]
            per_forward = measured["seconds"] / forwards
            decoding = sum(c for k, c in counts.items()
                           if not k.startswith("outside"))
            modes[mode] = {
                "target_forwards": forwards,
                "new_tokens": measured["new_tokens"],
                "us_per_forward": per_forward * 1e6,
                "samples": sum(counts.values()),
                "decode_samples": decoding,
                "us": {k: c / decoding * per_forward * 1e6
                       for k, c in counts.items()
                       if not k.startswith("outside")},
                "samples_by_category": dict(counts),
            }

    names = sorted({k for m in modes.values() for k in m["us"]},
                   key=lambda k: (-max(m["us"].get(k, 0)
                                       for m in modes.values()), k))
    spec, alone = modes["speculative"], modes["target alone"]
    print(f"{os.path.basename(args.target)} + {os.path.basename(args.draft)},"
          f" gamma {args.gamma}, {args.max_new_tokens} new tokens, "
          f"{spec['decode_samples']} / {alone['decode_samples']} decode "
          "samples")
    print(f"{'us per target forward':40s} {'speculative':>12s} "
          f"{'target alone':>13s}")
    for name in names:
        print(f"{name:40s} {spec['us'].get(name, 0):12.1f} "
              f"{alone['us'].get(name, 0):13.1f}")
    print(f"{'total':40s} {spec['us_per_forward']:12.1f} "
          f"{alone['us_per_forward']:13.1f}")
    print(f"tokens per target forward {spec['new_tokens'] / spec['target_forwards']:.2f}"
          f" / {alone['new_tokens'] / alone['target_forwards']:.2f}")
    if args.top:
        for mode, counter in tops.items():
            total = modes[mode]["decode_samples"]
            print(f"costliest ops, {mode} (share of decode samples, line in "
                  "the IR file)")
            for (function, top), count in counter.most_common(args.top):
                text = snapshot.lines[top - 1].strip()
                print(f"  {100 * count / total:5.1f}% {function}:{top} "
                      f"{snapshot.category(top)}: {text[:70]}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"target": args.target, "draft": args.draft,
                       "gamma": args.gamma, "prompt": args.prompt,
                       "max_new_tokens": args.max_new_tokens,
                       "modes": modes}, out, indent=1)


if __name__ == "__main__":
    main()

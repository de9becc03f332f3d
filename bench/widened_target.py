#!/usr/bin/env python3
"""Speculation end to end on a bandwidth-bound target.

The example target's 3 MiB of weights live in the CPU's cache, so a
target forward costs about what a draft forward does and speculation
gains little. This benchmark widens the target without changing what it
computes: each layer's SwiGLU MLP gets `--extra-units` more units whose
gate and up columns are random and whose down-projection rows are zero
(each extra unit adds exactly 0 to the layer's output), until the weights
are hundreds of MiB and a forward is bound by reading them, as a real
model's is. The example draft and Medusa heads then propose for it as
they do for the example target (same hidden states), and every decoder is
measured against the widened target alone, by weight precision, with
`spec-run --compare` (both modes in one process, one after the other).

    python3 bench/widened_target.py [--extra-units 32768] [--prompts 5]
        [--max-new-tokens 128] [--precisions f32,bf16,int8]
        [--decoders draft,medusa] [--threads 1] [--repeats 1] [--json out.json]

Not a test: nothing here asserts on time. Exactness is checked: every
speculative run must give the widened target's own tokens (spec-run's
"identical"); the script exits 1 otherwise.
"""

import argparse
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from speculative_speedup import MODELS, PROMPTS, find_tools, run  # noqa: E402

DECODERS = {
    "draft": [f"--draft={MODELS}/draft.onnx", "--gamma=5"],
    "medusa": [f"--mtp-head={MODELS}/medusa_head_{i}.onnx" for i in (1, 2, 3)],
}


def widen(source, destination, extra, seed=0):
    """Writes `source` with `extra` more units in each MLP; returns the
    weights' size in bytes. An MLP is recognized by its shapes: the gate and
    up projections are [hidden, width] and the down projection [width,
    hidden], in every layer."""
    model = onnx.load(source)
    shapes = [tuple(i.dims) for i in model.graph.initializer]
    # (The embedding and the output head, [vocab, hidden] and [hidden,
    # vocab], appear once; the MLPs once per layer.)
    down = {s for s in shapes if len(s) == 2 and (s[1], s[0]) in shapes
            and s[0] > s[1] and shapes.count(s) > 1}
    if len(down) != 1:
        sys.exit(f"error: cannot tell the MLPs of {source} by their shapes")
    width, hidden = next(iter(down))
    random = np.random.default_rng(seed)
    total = 0
    for init in model.graph.initializer:
        value = numpy_helper.to_array(init)
        if value.shape == (hidden, width):  # gate and up: more columns
            more = random.normal(0, 0.02, (hidden, extra)).astype(value.dtype)
            value = np.concatenate([value, more], axis=1)
        elif value.shape == (width, hidden):  # down: zero rows
            value = np.concatenate(
                [value, np.zeros((extra, hidden), value.dtype)], axis=0)
        init.CopyFrom(numpy_helper.from_array(value, init.name))
        total += value.nbytes
    onnx.save(model, destination)
    return total


def measure(spec_run, artifact, prompts, args):
    """Per mode: new tokens, target forwards and the fastest run's seconds,
    summed over `prompts`; and whether every run was exact."""
    best, identical = {}, True
    for _ in range(args.repeats):
        for prompt in prompts:
            out = json.loads(run([
                spec_run, artifact, f"--prompt={prompt}",
                f"--max-new-tokens={args.max_new_tokens}",
                f"--threads={args.threads}", "--compare", "--json"]))
            identical &= out["identical"]
            for mode in ("speculative", "no_speculation"):
                m = out[mode]
                old = best.get((prompt, mode))
                if old is None or m["seconds"] < old[2]:
                    best[(prompt, mode)] = (m["new_tokens"],
                                            m["target_forwards"], m["seconds"])
    totals = {mode: [sum(best[(p, mode)][i] for p in prompts) for i in range(3)]
              for mode in ("speculative", "no_speculation")}
    return totals, identical


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(
        os.path.dirname(MODELS), "build"))
    parser.add_argument("--extra-units", type=int, default=32768,
                        help="MLP units added to each layer")
    parser.add_argument("--prompts", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--precisions", default="f32,bf16,int8")
    parser.add_argument("--decoders", default="draft,medusa")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs per prompt; the fastest counts")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if not 1 <= args.prompts <= len(PROMPTS):
        sys.exit(f"error: --prompts must be between 1 and {len(PROMPTS)}")
    if args.extra_units < 0 or args.repeats < 1 or args.threads < 1:
        sys.exit("error: --extra-units must be at least 0, --repeats and "
                 "--threads at least 1")
    unknown = set(args.decoders.split(",")) - set(DECODERS)
    if unknown:
        sys.exit(f"error: unknown decoders {sorted(unknown)}; "
                 f"choose among {sorted(DECODERS)}")
    return args


def main():
    args = parse_arguments()
    specc, spec_run = find_tools(args.build)
    prompts = PROMPTS[:args.prompts]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "widened.onnx")
        size = widen(os.path.join(MODELS, "target.onnx"), target,
                     args.extra_units)
        print(f"widened target: {size / 2**20:.1f} MiB of f32 weights "
              f"({args.extra_units} more MLP units per layer)", file=sys.stderr)
        for precision in args.precisions.split(","):
            for decoder in args.decoders.split(","):
                artifact = os.path.join(tmp, f"{decoder}-{precision}.spec")
                run([specc, target, *DECODERS[decoder],
                     f"--weights={precision}", "-o", artifact])
                totals, identical = measure(spec_run, artifact, prompts, args)
                spec, base = totals["speculative"], totals["no_speculation"]
                results.append({
                    "precision": precision, "decoder": decoder,
                    "identical": identical,
                    "tokens_per_target_forward": spec[0] / spec[1],
                    "speculative_tokens_per_second": spec[0] / spec[2],
                    "target_only_tokens_per_second": base[0] / base[2],
                    "speedup": (spec[0] / spec[2]) / (base[0] / base[2]),
                })
                print(f"  {decoder} at {precision} done", file=sys.stderr)
    print(f"widened target ({size / 2**20:.0f} MiB of f32 weights), "
          f"{args.prompts} prompts x {args.max_new_tokens} new tokens, "
          f"greedy, {args.threads} thread(s)"
          + (f", fastest of {args.repeats} runs" if args.repeats > 1 else ""))
    print("| weights | decoder | same tokens | tokens per target forward | "
          "target alone: tokens/s | speculative: tokens/s | speedup |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['precision']} | {r['decoder']} | "
              f"{'yes' if r['identical'] else 'NO'} | "
              f"{r['tokens_per_target_forward']:.2f} | "
              f"{r['target_only_tokens_per_second']:.1f} | "
              f"{r['speculative_tokens_per_second']:.1f} | "
              f"{r['speedup']:.2f}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"extra_units": args.extra_units, "weight_bytes": size,
                       "prompts": args.prompts,
                       "max_new_tokens": args.max_new_tokens,
                       "threads": args.threads, "repeats": args.repeats,
                       "results": results}, f, indent=2)
    return 0 if all(r["identical"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

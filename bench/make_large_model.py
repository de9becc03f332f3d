#!/usr/bin/env python3
"""Generates a bandwidth-bound benchmark pair: a Llama-shaped target whose
f32 weights are far larger than this CPU's caches, and a small draft of the
same vocabulary and tokenizer, exported per the model contract.

The weights are random (seeded): they set the costs, not the text. The
models use the architecture, export and metadata of models/train.py, so
`specc` compiles them like the bundled example.

    /usr/bin/python3 bench/make_large_model.py [--out build/large]
        [--layers 9] [--dim 1024] [--ffn 2816] [--preset 1b]
        [--repeat-rows R]

Writes target.onnx (about 106 M parameters, 0.42 GB, by default),
draft.onnx and target.json (the target's parameters and weight bytes) into
--out; never into the repository. `--preset 1b` is a
Llama-3.2-1B-shaped target (16 layers, dim 2048, ffn 8192: 1.0 B
parameters, 4.0 GiB of f32, written as external data beside target.onnx).

--repeat-rows R makes each weight matrix's rows repeat every R rows (R
random rows, tiled): the GPU still reads every byte of every weight from
memory (caches work by address, not by value), but an artifact's
weights.bin then compresses a thousandfold, so that the artifacts of a
large model travel to a GPU machine (test/gpu/prepare-prebuilt.sh
--large). Needs Debian's python3-torch and python3-onnx.
"""

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "models"))

import torch  # noqa: E402

import train  # noqa: E402  (models/train.py: architecture and export)

# (layers, dim, ffn) of named target shapes.
PRESETS = {"1b": (16, 2048, 8192)}


def randomize(parameter, repeat_rows):
    """Small random weights (they keep activations finite through the
    layers); with repeat_rows, the first repeat_rows rows tiled."""
    if not repeat_rows or parameter.shape[0] <= repeat_rows:
        parameter.normal_(0.0, 0.02)
        return
    block = torch.empty((repeat_rows,) + parameter.shape[1:]).normal_(0.0, 0.02)
    tiles = -(-parameter.shape[0] // repeat_rows)
    parameter.copy_(block.repeat((tiles,) + (1,) * (parameter.dim() - 1))
                    [:parameter.shape[0]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "large"))
    parser.add_argument("--layers", type=int, default=9)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--ffn", type=int, default=2816)
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="a named target shape (overrides --layers, "
                        "--dim and --ffn)")
    parser.add_argument("--repeat-rows", type=int, default=0, metavar="R",
                        help="rows of each weight matrix repeat every R "
                        "(0: every row random)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.preset:
        args.layers, args.dim, args.ffn = PRESETS[args.preset]
    if args.repeat_rows < 0:
        sys.exit("error: --repeat-rows must not be negative")
    if args.dim % 64 or args.layers < 1 or args.ffn < 1:
        sys.exit("error: --dim must be a multiple of 64 (heads of 64); "
                 "--layers and --ffn positive")
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    heads = args.dim // 64
    target_cfg = {"dim": args.dim, "layers": args.layers, "heads": heads,
                  "kv_heads": max(1, heads // 2), "head_dim": 64,
                  "ffn": args.ffn}
    draft_cfg = {"dim": 256, "layers": 2, "heads": 4, "kv_heads": 2,
                 "head_dim": 64, "ffn": 704}
    for name, cfg, role in (("target", target_cfg, "target"),
                            ("draft", draft_cfg, "draft")):
        model = train.Llama(cfg)
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.dim() > 1:
                    randomize(parameter, args.repeat_rows)
        parameters = sum(p.numel() for p in model.parameters())
        path = os.path.join(args.out, f"{name}.onnx")
        size = train.export_decoder(
            model, path,
            train.config_metadata(cfg, role, model_type="llama"),
            cfg["kv_heads"], cfg["head_dim"])
        print(f"{path}: {parameters / 1e6:.1f} M parameters, "
              f"{size / 2**20:.1f} MiB", flush=True)
        if role == "target":  # what a decode step reads (GPU check, bench)
            with open(os.path.join(args.out, "target.json"), "w") as f:
                json.dump({"parameters": parameters,
                           "weight_bytes": sum(p.numel() * p.element_size()
                                               for p in model.parameters()),
                           "layers": args.layers, "dim": args.dim,
                           "ffn": args.ffn,
                           "repeat_rows": args.repeat_rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

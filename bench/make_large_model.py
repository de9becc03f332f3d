#!/usr/bin/env python3
"""Generates a bandwidth-bound benchmark pair: a Llama-shaped target whose
f32 weights are far larger than this CPU's caches, and a small draft of the
same vocabulary and tokenizer, exported per the model contract.

The weights are random (seeded): they set the costs, not the text. The
models use the architecture, export and metadata of models/train.py, so
`specc` compiles them like the bundled example.

    /usr/bin/python3 bench/make_large_model.py [--out build/large]
        [--layers 9] [--dim 1024] [--ffn 2816]

Writes target.onnx (about 106 M parameters, 0.42 GB, by default) and
draft.onnx into --out; never into the repository. Needs Debian's
python3-torch and python3-onnx.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "models"))

import torch  # noqa: E402

import train  # noqa: E402  (models/train.py: architecture and export)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "large"))
    parser.add_argument("--layers", type=int, default=9)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--ffn", type=int, default=2816)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
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
        # Small weights keep activations finite through the layers.
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.dim() > 1:
                    parameter.normal_(0.0, 0.02)
        parameters = sum(p.numel() for p in model.parameters())
        path = os.path.join(args.out, f"{name}.onnx")
        size = train.export_decoder(
            model, path,
            train.config_metadata(cfg, role, model_type="llama"),
            cfg["kv_heads"], cfg["head_dim"])
        print(f"{path}: {parameters / 1e6:.1f} M parameters, "
              f"{size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

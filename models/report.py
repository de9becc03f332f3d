#!/usr/bin/python3
"""Render the figures of models/README.md from models/metrics.json.

  /usr/bin/python3 models/report.py                 # print the tables
  /usr/bin/python3 models/report.py --check README  # fail if README differs

The tables sit in README.md between `<!-- BEGIN FIGURES -->` and
`<!-- END FIGURES -->`; --check keeps them equal to what train.py measured.
"""

import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def bits(nats):
    return nats / math.log(2)


def render(metrics):
    m = metrics["models"]
    acc = metrics["acceptance"]
    lines = []
    add = lines.append
    corpus = metrics["corpus"]
    add(f"Corpus: {corpus['files']} files, {corpus['train_tokens']:,} training "
        f"and {corpus['val_tokens']:,} held-out bytes (SHA-256 of the file "
        f"list and contents `{corpus['sha256'][:16]}...`). Seed "
        f"{metrics['seed']}, torch {metrics['torch']}; the whole run took "
        f"{metrics['total_seconds'] / 60:.0f} minutes on this 2-core machine.")
    add("")
    add("| model | architecture | parameters | steps | training time | "
        "held-out loss |")
    add("| --- | --- | --- | --- | --- | --- |")
    t, d, g = m["target"], m["draft"], m["gpt2"]
    tc, dc, gc = t["config"], d["config"], g["config"]
    def loss(x):
        return f"{x:.3f} nats/byte ({bits(x):.2f} bits)"
    add(f"| target | Llama: d={tc['dim']}, {tc['layers']} layers, "
        f"{tc['heads']} query / {tc['kv_heads']} KV heads of {tc['head_dim']}, "
        f"SwiGLU {tc['ffn']} | {t['params']:,} | {t['steps']} | "
        f"{t['train_seconds']} s | {loss(t['val_loss'])} |")
    h = m["medusa_heads"]
    add(f"| medusa_head_1..{h['count']} | residual SiLU block + the target's "
        f"output head (frozen) | {h['params_each_trained']:,} trained each | "
        f"{h['steps']} | {h['train_seconds']} s | {loss(h['val_loss_mean'])} "
        f"(mean over heads) |")
    mt = m["mtp_module"]
    add(f"| mtp_module | DeepSeek-V3 MTP: 2 RMSNorms, 2d→d projection, one "
        f"decoder block, the target's embedding/norm/head (frozen) | "
        f"{mt['params_trained']:,} trained | {mt['steps']} | "
        f"{mt['train_seconds']} s | {loss(mt['val_loss'])} (token t+2) |")
    add(f"| draft | Llama: d={dc['dim']}, {dc['layers']} layers, "
        f"{dc['heads']} query / {dc['kv_heads']} KV heads, SwiGLU {dc['ffn']} "
        f"| {d['params']:,} | {d['steps']} | {d['train_seconds']} s | "
        f"{loss(d['val_loss'])} |")
    add(f"| gpt2 | GPT-2: d={gc['dim']}, {gc['layers']} layers, "
        f"{gc['heads']} heads, LayerNorm, GELU (erf), learned positions, "
        f"tied head | {g['params']:,} | {g['steps']} | {g['train_seconds']} s "
        f"| {loss(g['val_loss'])} |")
    add("")
    add(f"Greedy acceptance measured in torch on {acc['prompts']} held-out "
        f"prompts of {acc['prompt_bytes']} bytes, {acc['new_tokens']} new "
        f"tokens each, against the target's own greedy continuation (what "
        f"speculative greedy decoding must reproduce):")
    add("")
    add("| proposer | position | accuracy | acceptance (given the previous "
        "ones accepted) |")
    add("| --- | --- | --- | --- |")
    for name, key in (("Medusa heads", "medusa"), ("MTP module (chained)", "mtp")):
        r = acc[key]
        for k, (a, c) in enumerate(zip(r["per_position_accuracy"],
                                       r["per_position_acceptance"]), start=1):
            add(f"| {name} | {k} | {a:.1%} | {c:.1%} |")
    add("")
    add(f"Mean tokens per target forward: Medusa "
        f"{acc['medusa']['mean_tokens_per_step']:.2f}, MTP module "
        f"{acc['mtp']['mean_tokens_per_step']:.2f}.")
    add("")
    add("| draft, gamma | per-token acceptance | tokens per target forward |")
    add("| --- | --- | --- |")
    for r in acc["draft"]:
        add(f"| {r['gamma']} | {r['acceptance_rate']:.1%} | "
            f"{r['mean_tokens_per_step']:.2f} |")
    add("")
    files = dict(metrics["onnx_bytes"])
    distilled = metrics.get("distilled")
    if distilled:
        add(f"Self-distilled proposers (`models/distill.py`): the same "
            f"architectures retrained on the target's own greedy "
            f"continuations of {distilled['sequences']:,} training-corpus "
            f"lines ({distilled['prompt_bytes']}-byte prompts, "
            f"{distilled['continuation']} tokens each, generated in "
            f"{distilled['generate_seconds']} s), {distilled['steps']} "
            f"steps each"
            + (f" (the MTP module at depths 1-{distilled['mtp_depths']} of "
               f"its chain)" if distilled.get("mtp_depths", 1) > 1 else "")
            + ". Greedy acceptance on the same held-out prompts, "
            f"before (trained on the text) and after:")
        add("")
        add("| proposer | position | accuracy before | after | acceptance "
            "before | after |")
        add("| --- | --- | --- | --- | --- | --- |")
        summary = []
        for name, key in (("Medusa heads", "medusa"),
                          ("MTP module (chained)", "mtp")):
            if f"{key}_after" not in distilled:
                continue
            before, after = distilled[f"{key}_before"], distilled[f"{key}_after"]
            for k in range(len(before["per_position_accuracy"])):
                add(f"| {name} | {k + 1} | "
                    f"{before['per_position_accuracy'][k]:.1%} | "
                    f"{after['per_position_accuracy'][k]:.1%} | "
                    f"{before['per_position_acceptance'][k]:.1%} | "
                    f"{after['per_position_acceptance'][k]:.1%} |")
            summary.append(f"{name} {before['mean_tokens_per_step']:.2f} "
                           f"before, {after['mean_tokens_per_step']:.2f} after")
        add("")
        add("Mean tokens per target forward: " + "; ".join(summary) + ".")
        add("")
        files.update(distilled["files"])
    add("| file | bytes |")
    add("| --- | --- |")
    for name, size in sorted(files.items()):
        add(f"| {name} | {size:,} |")
    add(f"| total | {sum(files.values()):,} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metrics", default=os.path.join(HERE, "metrics.json"))
    parser.add_argument("--check", metavar="README",
                        help="compare the figures in this file instead")
    args = parser.parse_args()
    with open(args.metrics) as f:
        tables = render(json.load(f))
    if not args.check:
        sys.stdout.write(tables)
        return 0
    text = open(args.check).read()
    begin, end = "<!-- BEGIN FIGURES -->\n", "<!-- END FIGURES -->"
    if begin not in text or end not in text:
        print(f"{args.check}: no figures section", file=sys.stderr)
        return 1
    current = text.split(begin, 1)[1].split(end, 1)[0]
    if current != tables:
        print(f"{args.check}: the figures differ from {args.metrics}; "
              f"regenerate them with models/report.py", file=sys.stderr)
        return 1
    print(f"{args.check}: figures match {os.path.basename(args.metrics)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

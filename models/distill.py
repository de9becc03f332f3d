#!/usr/bin/python3
"""Self-distilled Medusa heads and MTP module: retrained on the target's own
greedy text.

models/train.py trains the Medusa heads on the corpus: head k learns the
token k + 1 positions after the current one in the ground-truth text. But
speculative decoding accepts a proposal only when it equals what the target
itself would generate. Medusa-2's self-distillation trains the heads on the
target's own output instead; this script does that for the bundled example:

  1. loads the trained target from models/target.onnx into the torch model of
     models/train.py (weights by the exported node names) and checks it
     against the figures train.py measured when it trained the target;
  2. generates the target's greedy continuations of prompts drawn from the
     training corpus (never the held-out files);
  3. trains three fresh heads (same architecture, schedule and steps as
     train.py's) with head k predicting token t + 1 + k of those
     continuations, from the target's hidden state at t; and a fresh MTP
     module predicting token t + 2 from the hidden state at t and token
     t + 1 (with --mtp-depths 2 also chained: depth 2 predicts token t + 3
     from depth 1's hidden state at t and token t + 2, the loss the
     depths' mean, as DeepSeek-V3 trains its MTP modules);
  4. measures acceptance on train.py's 20 held-out prompts, before (the
     committed models) and after (the MTP module chained to depth 2, as
     train.py measures it), and exports medusa_distilled_head_{1,2,3}.onnx
     and mtp_distilled_module.onnx with the same contract metadata.

  /usr/bin/python3 models/distill.py            # ~25 minutes on 2 cores
  /usr/bin/python3 models/distill.py --proposers mtp   # one of them
  /usr/bin/python3 models/distill.py --quick    # smoke run to /tmp

Writes the ONNX files and a "distilled" section into models/metrics.json
(models/report.py renders it into models/README.md).
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train  # noqa: E402


def onnx_weights(path):
    """{torch parameter name: tensor} of an exported model: named
    initializers as they are, MatMul weights by their node's module path
    (/layers.0/attn/q/MatMul -> layers.0.attn.q.weight, transposed back)."""
    model = onnx.load(path)
    arrays = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    weights = {name: torch.from_numpy(array.copy())
               for name, array in arrays.items()
               if not name.startswith("onnx::")}
    for node in model.graph.node:
        if node.op_type != "MatMul":
            continue
        for name in node.input:
            if name.startswith("onnx::") and name in arrays:
                module = node.name.strip("/").rsplit("/", 1)[0]
                weights[module.replace("/", ".") + ".weight"] = \
                    torch.from_numpy(arrays[name].T.copy())
    return weights


def load_into(module, path):
    weights = onnx_weights(path)
    state = module.state_dict()
    missing = sorted(set(state) - set(weights))
    if missing:
        sys.exit(f"error: {path} lacks {', '.join(missing)}")
    module.load_state_dict({name: weights[name] for name in state})
    return module


@torch.no_grad()
def greedy_batch(target, prompts, length):
    """Greedy continuations of equally long prompts, batched, with the
    target's cache."""
    ids = torch.tensor(prompts)
    out = target(ids)
    logits, past = out[0], out[2:]
    tokens = [logits[:, -1].argmax(-1)]
    for _ in range(length - 1):
        out = target(tokens[-1][:, None], None, *past)
        logits, past = out[0], out[2:]
        tokens.append(logits[:, -1].argmax(-1))
    return torch.cat([ids, torch.stack(tokens, 1)], 1)


def fit(name, params, loss_fn, sample, steps, log):
    """train.py's schedule on batches of 32 continuations from `sample`;
    returns seconds taken."""
    stream = iter(lambda: (sample(32),), None)
    return train.optimize(name, params, loss_fn, stream, steps, 3e-3, log)


def medusa_proposer(heads):
    def propose(context, hidden, next_token):
        return [int(head(hidden[0, -1]).argmax()) for head in heads]
    return propose


def distill_medusa(target, sample, prompt_length, measure, args, log):
    """Fresh heads on the continuations; their acceptance and files."""
    torch.manual_seed(args.seed + 1)
    heads = nn.ModuleList(train.MedusaHead(train.TARGET["dim"], target.lm_head)
                          for _ in range(train.MEDUSA_HEADS))

    def loss(sequences):
        with torch.no_grad():
            hidden = target(sequences)[1]
        total = 0.0
        for k, head in enumerate(heads, start=1):
            # From the last prompt position on: the labels are the target's.
            h = hidden[:, prompt_length - 1:-1 - k]
            y = sequences[:, prompt_length + k:]
            total = total + F.cross_entropy(
                head(h).reshape(-1, train.VOCAB), y.reshape(-1))
        return total / len(heads)

    seconds = fit("distilled heads", [p for p in heads.parameters()
                                      if p.requires_grad],
                  loss, sample, args.steps, log)
    heads.eval()
    after = measure(medusa_proposer(heads), train.MEDUSA_HEADS)
    log(f"distilled heads: {after}")
    files = {}
    for k, head in enumerate(heads, start=1):
        name = f"medusa_distilled_head_{k}.onnx"
        files[name] = train.export(
            head, [torch.zeros(1, 2, train.TARGET["dim"])],
            os.path.join(args.out, name), ["hidden_states"], ["logits"],
            {"hidden_states": {0: "batch", 1: "sequence"},
             "logits": {0: "batch", 1: "sequence"}},
            train.config_metadata(train.TARGET, "medusa_head", spec_depth=k,
                                  model_type="medusa"))
    return after, seconds, files


def distill_mtp(target, sample, prompt_length, measure, args, log):
    """A fresh MTP module on the continuations, trained at every depth of a
    chain of --mtp-depths (DeepSeek-V3's objective, one module shared by
    the depths); its acceptance (chained to depth 2) and file."""
    torch.manual_seed(args.seed + 2)
    mtp = train.MTPModule(train.TARGET, target)

    def loss(sequences):
        with torch.no_grad():
            hidden = target(sequences)[1]
        # Depth k at position t: the previous depth's hidden state at t (the
        # target's at depth 1), token t + k in, token t + k + 1 out, from the
        # last prompt position on. Depth k + 1 reads depth k's states, so the
        # module learns from its own hidden states as the chain feeds them.
        first = prompt_length - 1
        length = sequences.shape[1]
        states, total = hidden[:, first:], 0.0
        for k in range(1, args.mtp_depths + 1):
            n = length - first - k - 1
            logits, states = mtp(states[:, :n],
                                 sequences[:, first + k:first + k + n])[:2]
            total = total + F.cross_entropy(
                logits.reshape(-1, train.VOCAB),
                sequences[:, first + k + 1:first + k + 1 + n].reshape(-1))
        return total / args.mtp_depths

    seconds = fit("distilled MTP module", [p for p in mtp.parameters()
                                           if p.requires_grad],
                  loss, sample, args.steps, log)
    mtp.eval()
    after = measure(train.mtp_chain_proposer(mtp), 2)
    log(f"distilled MTP module: {after}")
    name = "mtp_distilled_module.onnx"
    return after, seconds, {
        name: train.export_mtp_module(mtp, os.path.join(args.out, name))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=HERE)
    parser.add_argument("--out", default=HERE)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sequences", type=int, default=2048,
                        help="greedy continuations to train on")
    parser.add_argument("--prompt-bytes", type=int, default=64)
    parser.add_argument("--continuation", type=int, default=256)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--proposers", default="medusa,mtp",
                        help="what to distill: medusa, mtp or both")
    parser.add_argument("--mtp-depths", type=int, default=1,
                        help="chain depths the MTP module is trained at "
                             "(the committed module: 1)")
    args = parser.parse_args()
    if args.mtp_depths < 1:
        sys.exit("error: --mtp-depths must be at least 1")
    proposers = set(args.proposers.split(","))
    if proposers - {"medusa", "mtp"}:
        sys.exit("error: --proposers takes medusa, mtp or medusa,mtp")
    if args.quick:
        args.sequences, args.continuation, args.steps = 64, 64, 20
    torch.set_num_threads(2)
    start = time.time()

    def log(message):
        print(message, flush=True)

    with open(os.path.join(args.models, "metrics.json")) as f:
        metrics = json.load(f)
    reference = metrics["acceptance"]
    prompts, train_data = train.reference_prompts(metrics)
    target = load_into(train.Llama(train.TARGET),
                       os.path.join(args.models, "target.onnx")).eval()
    for p in target.parameters():
        p.requires_grad_(False)
    new_tokens = reference["new_tokens"]
    if args.quick:
        prompts, new_tokens = prompts[:2], 16

    def measure(propose, depth):
        return train.head_acceptance(target, propose, prompts, new_tokens,
                                     depth)

    if "medusa" in proposers:
        # The loaded target must be the trained one: with the committed
        # heads it reproduces train.py's figures exactly.
        committed = nn.ModuleList(
            load_into(train.MedusaHead(train.TARGET["dim"], target.lm_head),
                      os.path.join(args.models, f"medusa_head_{k}.onnx"))
            for k in range(1, train.MEDUSA_HEADS + 1)).eval()
        before = measure(medusa_proposer(committed), train.MEDUSA_HEADS)
        log(f"committed heads: {before}")
        if not args.quick and before != reference["medusa"]:
            sys.exit("error: the target and heads loaded from ONNX do not "
                     "reproduce models/metrics.json's acceptance "
                     f"({reference['medusa']})")

    # The target's own text: greedy continuations of training-corpus lines.
    rng = np.random.default_rng(args.seed)
    newlines = np.nonzero(train_data[:-args.prompt_bytes - 1] == ord("\n"))[0]
    starts = rng.choice(newlines, size=args.sequences, replace=False)
    data = []
    generate_start = time.time()
    for first in range(0, args.sequences, 64):
        batch_prompts = [[train.BOS] + train_data[s + 1:s + 1 +
                                                  args.prompt_bytes].tolist()
                         for s in starts[first:first + 64]]
        data.append(greedy_batch(target, batch_prompts, args.continuation))
    data = torch.cat(data)
    generate_seconds = time.time() - generate_start
    log(f"generated {data.shape[0]} x {args.continuation} tokens in "
        f"{generate_seconds:.0f} s")
    generator = torch.Generator().manual_seed(args.seed + 5)

    def sample(batch):
        return data[torch.randint(0, data.shape[0], (batch,),
                                  generator=generator)]

    os.makedirs(args.out, exist_ok=True)
    distilled = dict(metrics.get("distilled", {}))
    distilled.setdefault("files", {})
    distilled.update({"sequences": args.sequences,
                      "prompt_bytes": args.prompt_bytes,
                      "continuation": args.continuation, "steps": args.steps,
                      "generate_seconds": round(generate_seconds)})
    prompt_length = args.prompt_bytes + 1
    if "medusa" in proposers:
        after, seconds, files = distill_medusa(target, sample, prompt_length,
                                               measure, args, log)
        distilled.update({"medusa_before": before, "medusa_after": after,
                          "train_seconds": round(seconds)})
        distilled["files"].update(files)
    if "mtp" in proposers:
        after, seconds, files = distill_mtp(target, sample, prompt_length,
                                            measure, args, log)
        distilled.update({"mtp_before": reference["mtp"], "mtp_after": after,
                          "mtp_depths": args.mtp_depths,
                          "mtp_train_seconds": round(seconds)})
        distilled["files"].update(files)
    distilled["seconds"] = round(time.time() - start)
    if args.quick:
        return 0
    metrics["distilled"] = distilled
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

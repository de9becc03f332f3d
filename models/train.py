#!/usr/bin/python3
"""Train Specula's example models and export them to ONNX.

Everything here is reproducible from a fixed seed on a CPU-only Debian 12
machine, with Debian's python3-torch (1.13) and python3-onnx (1.12):

  /usr/bin/python3 models/train.py            # full run, writes models/*.onnx
  /usr/bin/python3 models/train.py --quick    # minutes-long smoke run to /tmp

Models (byte-level vocabulary: 256 bytes + BOS 256, EOS 257, PAD 258):
  target        Llama-style: RMSNorm, rotary positions, SwiGLU, grouped-query
                attention, untied output head
  medusa_head_k Medusa-style heads k = 1..3 on the target's last hidden state
                (residual SiLU block + the target's output head, frozen)
  mtp_module    DeepSeek-V3-style MTP module: RMSNorm(hidden) and
                RMSNorm(embedding of token t+1), concatenated, projected 2d->d,
                one decoder block, the shared final norm and output head
  draft         a smaller Llama-style model of the same vocabulary
  draft_incompatible  the draft re-exported with a different (padded)
                vocabulary and tokenizer fingerprint, for negative tests
  gpt2          GPT-2-style: LayerNorm, GELU (erf), learned positions, biases,
                tied output head

Corpus: the Python 3.11 standard library sources that Debian's
libpython3.11-minimal and libpython3.11-stdlib install under
/usr/lib/python3.11 (excluding test/ and site-packages, and tkinter/, which
python3-tk adds when installed, e.g. with python3-matplotlib), one document
per file, split train/validation by a hash of the file path.

Outputs: the ONNX files, models/metrics.json (losses, timings, acceptance
measured in torch) and the tables in models/README.md are written from it.
"""

import argparse
import glob
import hashlib
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 259
BOS, EOS, PAD = 256, 257, 258
MAX_CONTEXT = 512
CORPUS_ROOT = "/usr/lib/python3.11"
# What the token ids mean; its SHA-256 is the tokenizer fingerprint that
# spec-pair-draft compares.
TOKENIZER = {"type": "byte-level", "bytes": 256,
             "special": {"bos": BOS, "eos": EOS, "pad": PAD}}


def fingerprint(tokenizer):
    text = json.dumps(tokenizer, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------

def load_corpus():
    files = sorted(
        f for f in glob.glob(os.path.join(CORPUS_ROOT, "**", "*.py"),
                             recursive=True)
        if "/test/" not in f and "/tests/" not in f
        and "-packages/" not in f
        # Not in libpython3.11-stdlib: python3-tk's, present or not.
        and not os.path.relpath(f, CORPUS_ROOT).startswith("tkinter/"))
    train, val = [], []
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        rel = os.path.relpath(path, CORPUS_ROOT)
        digest.update(rel.encode() + b"\0" + data)
        doc = [BOS] + list(data) + [EOS]
        # 1 file in 20 is held out, chosen by path so it is stable.
        if hashlib.sha256(rel.encode()).digest()[0] % 20 == 0:
            val.extend(doc)
        else:
            train.extend(doc)
    return (np.array(train, dtype=np.int64), np.array(val, dtype=np.int64),
            {"files": len(files), "train_tokens": len(train),
             "val_tokens": len(val), "sha256": digest.hexdigest()})


def batches(data, batch, seq, generator):
    """Random windows of seq + 1 tokens: inputs and next-token targets."""
    data = torch.from_numpy(data)
    while True:
        starts = torch.randint(0, len(data) - seq - 1, (batch,),
                               generator=generator)
        window = torch.stack([data[s:s + seq + 1] for s in starts.tolist()])
        yield window[:, :-1], window[:, 1:]


# ---------------------------------------------------------------------------
# Llama-style model
# ---------------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # Pow / ReduceMean / Add / Sqrt / Div in ONNX, as Llama exports do.
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) \
            * self.weight


def rotary(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, dim, heads, kv_heads, head_dim):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q = nn.Linear(dim, heads * head_dim, bias=False)
        self.k = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.v = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.o = nn.Linear(heads * head_dim, dim, bias=False)

    def forward(self, x, cos, sin, past_k, past_v):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        # The functional cache pattern spec-kv-cache-inplace rewrites.
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        present_k, present_v = k, v
        total = k.shape[2]
        rep = self.heads // self.kv_heads
        k = k[:, :, None].expand(b, self.kv_heads, rep, total, self.head_dim) \
            .reshape(b, self.heads, total, self.head_dim)
        v = v[:, :, None].expand(b, self.kv_heads, rep, total, self.head_dim) \
            .reshape(b, self.heads, total, self.head_dim)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        past = total - s
        query_pos = torch.arange(s) + past
        key_pos = torch.arange(total)
        future = key_pos[None, :] > query_pos[:, None]
        scores = torch.where(future, torch.tensor(float("-inf")), scores)
        out = torch.softmax(scores, dim=-1) @ v
        out = out.transpose(1, 2).reshape(b, s, self.heads * self.head_dim)
        return self.o(out), present_k, present_v


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn_norm = RMSNorm(cfg["dim"])
        self.attn = Attention(cfg["dim"], cfg["heads"], cfg["kv_heads"],
                              cfg["head_dim"])
        self.mlp_norm = RMSNorm(cfg["dim"])
        self.mlp = SwiGLU(cfg["dim"], cfg["ffn"])

    def forward(self, x, cos, sin, past_k, past_v):
        a, pk, pv = self.attn(self.attn_norm(x), cos, sin, past_k, past_v)
        x = x + a
        return x + self.mlp(self.mlp_norm(x)), pk, pv


class Rotary(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, position_ids):
        freqs = position_ids[..., None].float() * self.inv_freq
        emb = torch.cat([freqs, freqs], dim=-1)[:, None]  # b, 1, s, head_dim
        return torch.cos(emb), torch.sin(emb)


class Llama(nn.Module):
    """Returns logits, the last hidden state (after the final norm) and the
    present keys/values of every layer."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(VOCAB, cfg["dim"])
        self.rotary = Rotary(cfg["head_dim"])
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg["layers"]))
        self.norm = RMSNorm(cfg["dim"])
        self.lm_head = nn.Linear(cfg["dim"], VOCAB, bias=False)

    def empty_cache(self, batch):
        shape = (batch, self.cfg["kv_heads"], 0, self.cfg["head_dim"])
        return [torch.zeros(shape) for _ in range(2 * self.cfg["layers"])]

    def forward(self, input_ids, position_ids=None, *past):
        b, s = input_ids.shape
        if not past:
            past = self.empty_cache(b)
        if position_ids is None:
            start = past[0].shape[2]
            position_ids = (torch.arange(s) + start)[None].expand(b, s)
        cos, sin = self.rotary(position_ids)
        x = self.embed(input_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            x, pk, pv = layer(x, cos, sin, past[2 * i], past[2 * i + 1])
            presents += [pk, pv]
        hidden = self.norm(x)
        return (self.lm_head(hidden), hidden, *presents)


class MedusaHead(nn.Module):
    """logits = W_out(h + SiLU(W h + b)), W_out the target's output head."""

    def __init__(self, dim, lm_head):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        nn.init.zeros_(self.proj.weight)  # starts as the target's own head
        nn.init.zeros_(self.proj.bias)
        self.lm_head = nn.Linear(dim, VOCAB, bias=False)
        self.lm_head.weight.data.copy_(lm_head.weight.data)
        self.lm_head.weight.requires_grad_(False)

    def forward(self, hidden_states):
        return self.lm_head(hidden_states + F.silu(self.proj(hidden_states)))


class MTPModule(nn.Module):
    """DeepSeek-V3 MTP module at one depth. Shares the target's embedding,
    final norm and output head (copied, frozen)."""

    def __init__(self, cfg, target):
        super().__init__()
        self.cfg = cfg
        dim = cfg["dim"]
        self.hidden_norm = RMSNorm(dim)
        self.embed_norm = RMSNorm(dim)
        self.proj = nn.Linear(2 * dim, dim, bias=False)
        self.block = Block(cfg)
        self.rotary = Rotary(cfg["head_dim"])
        self.embed = nn.Embedding(VOCAB, dim)
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, VOCAB, bias=False)
        for shared, source in ((self.embed, target.embed),
                               (self.norm, target.norm),
                               (self.lm_head, target.lm_head)):
            shared.load_state_dict(source.state_dict())
            for p in shared.parameters():
                p.requires_grad_(False)

    def empty_cache(self, batch):
        shape = (batch, self.cfg["kv_heads"], 0, self.cfg["head_dim"])
        return [torch.zeros(shape), torch.zeros(shape)]

    def forward(self, hidden_states, input_ids, position_ids=None, *past):
        """hidden_states[t] is the previous depth's state at position t and
        input_ids[t] the token at t + 1; predicts the token at t + 2."""
        b, s = input_ids.shape
        if not past:
            past = self.empty_cache(b)
        if position_ids is None:
            start = past[0].shape[2]
            position_ids = (torch.arange(s) + start)[None].expand(b, s)
        cos, sin = self.rotary(position_ids)
        x = self.proj(torch.cat([self.hidden_norm(hidden_states),
                                 self.embed_norm(self.embed(input_ids))], -1))
        x, pk, pv = self.block(x, cos, sin, past[0], past[1])
        hidden = self.norm(x)
        return self.lm_head(hidden), hidden, pk, pv


# ---------------------------------------------------------------------------
# GPT-2-style model
# ---------------------------------------------------------------------------

class GPT2Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(dim)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.c_out = nn.Linear(4 * dim, dim)
        self.gelu = nn.GELU()  # exact: Erf in ONNX

    def forward(self, x, past_k, past_v):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=-1)
        q = q.view(b, s, self.heads, hd).transpose(1, 2)
        k = torch.cat([past_k, k.view(b, s, self.heads, hd).transpose(1, 2)], 2)
        v = torch.cat([past_v, v.view(b, s, self.heads, hd).transpose(1, 2)], 2)
        total = k.shape[2]
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        query_pos = torch.arange(s) + (total - s)
        future = torch.arange(total)[None, :] > query_pos[:, None]
        scores = torch.where(future, torch.tensor(float("-inf")), scores)
        a = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.c_proj(a)
        return x + self.c_out(self.gelu(self.c_fc(self.ln_2(x)))), k, v


class GPT2(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(VOCAB, cfg["dim"])
        self.wpe = nn.Embedding(MAX_CONTEXT, cfg["dim"])
        self.blocks = nn.ModuleList(GPT2Block(cfg["dim"], cfg["heads"])
                                    for _ in range(cfg["layers"]))
        self.ln_f = nn.LayerNorm(cfg["dim"])

    def empty_cache(self, batch):
        hd = self.cfg["dim"] // self.cfg["heads"]
        shape = (batch, self.cfg["heads"], 0, hd)
        return [torch.zeros(shape) for _ in range(2 * self.cfg["layers"])]

    def forward(self, input_ids, position_ids=None, *past):
        b, s = input_ids.shape
        if not past:
            past = self.empty_cache(b)
        if position_ids is None:
            start = past[0].shape[2]
            position_ids = (torch.arange(s) + start)[None].expand(b, s)
        x = self.wte(input_ids) + self.wpe(position_ids)
        presents = []
        for i, block in enumerate(self.blocks):
            x, pk, pv = block(x, past[2 * i], past[2 * i + 1])
            presents += [pk, pv]
        hidden = self.ln_f(x)
        return (hidden @ self.wte.weight.t(), hidden, *presents)  # tied head


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------

def train(name, params, loss_fn, data, steps, lr, batch, seq, seed, log):
    """AdamW with linear warm-up and cosine decay on random windows of
    `data`; returns seconds taken."""
    generator = torch.Generator().manual_seed(seed)
    return optimize(name, params, loss_fn,
                    batches(data, batch, seq, generator), steps, lr, log)


def optimize(name, params, loss_fn, stream, steps, lr, log):
    """train()'s schedule on the argument tuples `stream` yields to
    `loss_fn`; returns seconds taken."""
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95),
                            weight_decay=0.1)
    warmup = max(1, steps // 20)
    start = time.time()
    for step in range(steps):
        scale = (step + 1) / warmup if step < warmup else \
            0.5 * (1 + math.cos(math.pi * (step - warmup) / (steps - warmup)))
        for group in opt.param_groups:
            group["lr"] = lr * scale
        loss = loss_fn(*next(stream))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            log(f"{name}: step {step + 1}/{steps} loss {loss.item():.4f} "
                f"({time.time() - start:.0f} s)")
    return time.time() - start


@torch.no_grad()
def evaluate(loss_fn, data, batch, seq, batches_count=20):
    generator = torch.Generator().manual_seed(1234)
    stream = batches(data, batch, seq, generator)
    return float(np.mean([loss_fn(*next(stream)).item()
                          for _ in range(batches_count)]))


# ---------------------------------------------------------------------------
# Acceptance, measured in torch by simulating greedy speculative decoding
# ---------------------------------------------------------------------------

@torch.no_grad()
def greedy_continuation(target, prompt, length):
    ids = list(prompt)
    for _ in range(length):
        logits = target(torch.tensor([ids]))[0]
        ids.append(int(logits[0, -1].argmax()))
    return ids[len(prompt):]


@torch.no_grad()
def head_acceptance(target, propose, prompts, new_tokens, depth):
    """Greedy speculative decoding with `depth` proposals per step from
    propose(context ids, target hidden states, next token) -> list of tokens.
    Every step the target's own next token is certain; the proposals guess
    the tokens after it. Returns per-position marginal accuracy, conditional
    acceptance and mean tokens per target step."""
    hits = np.zeros(depth)
    reached = np.zeros(depth)
    marginal = np.zeros(depth)
    steps = tokens = 0
    for prompt in prompts:
        greedy = greedy_continuation(target, prompt, new_tokens + depth + 1)
        p = 0
        while p < new_tokens:
            context = list(prompt) + greedy[:p]
            _, hidden, *_ = target(torch.tensor([context]))
            proposals = propose(context, hidden, greedy[p])
            accepted = 0
            for k in range(depth):
                correct = proposals[k] == greedy[p + 1 + k]
                marginal[k] += correct
                if accepted == k:
                    reached[k] += 1
                    if correct:
                        hits[k] += 1
                        accepted += 1
            steps += 1
            tokens += 1 + accepted
            p += 1 + accepted
    count = steps
    return {"per_position_accuracy": (marginal / count).round(4).tolist(),
            "per_position_acceptance": (hits / np.maximum(reached, 1))
            .round(4).tolist(),
            "mean_tokens_per_step": round(tokens / steps, 4)}


@torch.no_grad()
def draft_acceptance(target, draft, prompts, new_tokens, gamma):
    """Greedy speculative decoding with a draft proposing gamma tokens."""
    proposed = accepted_total = steps = tokens = 0
    rejections = 0
    for prompt in prompts:
        greedy = greedy_continuation(target, prompt, new_tokens + gamma + 1)
        p = 0
        while p < new_tokens:
            context = list(prompt) + greedy[:p]
            accepted = 0
            for k in range(gamma):
                token = int(draft(torch.tensor([context]))[0][0, -1].argmax())
                proposed += 1
                if token != greedy[p + k]:
                    rejections += 1
                    break
                accepted += 1
                context.append(token)
            accepted_total += accepted
            steps += 1
            tokens += 1 + accepted
            p += 1 + accepted
    return {"gamma": gamma,
            # Per-token acceptance: accepted / (accepted + rejected) tokens.
            "acceptance_rate": round(accepted_total /
                                     max(1, accepted_total + rejections), 4),
            "mean_tokens_per_step": round(tokens / steps, 4)}


def held_out_prompts(val, count, length, seed):
    """Prompts that start at a line start in held-out text."""
    rng = np.random.default_rng(seed)
    newlines = np.nonzero(val[:-length - 1] == ord("\n"))[0]
    starts = rng.choice(newlines, size=count, replace=False)
    return [[BOS] + val[s + 1:s + 1 + length].tolist() for s in sorted(starts)]


def reference_prompts(metrics):
    """The held-out prompts the acceptance in `metrics` (metrics.json) was
    measured on, and the corpus split they come from; exits when this
    machine's corpus differs from the one the models were trained on."""
    reference = metrics["acceptance"]
    train_data, val_data, corpus = load_corpus()
    if corpus["sha256"] != metrics["corpus"]["sha256"]:
        sys.exit("error: this machine's corpus differs from the one the "
                 "models were trained on; the prompts would differ")
    prompts = held_out_prompts(val_data, reference["prompts"],
                               reference["prompt_bytes"], metrics["seed"])
    return prompts, train_data


# ---------------------------------------------------------------------------
# ONNX export
# ---------------------------------------------------------------------------

def export(module, args, path, input_names, output_names, dynamic_axes,
           metadata):
    import onnx
    module.eval()
    torch.onnx.export(module, tuple(args), path, input_names=input_names,
                      output_names=output_names, dynamic_axes=dynamic_axes,
                      opset_version=17, do_constant_folding=True)
    # Past 2 GiB the exporter writes the weights as external data beside
    # the model, which a protobuf message cannot hold: the metadata goes
    # into the graph alone and the checker reads the model from its path.
    model = onnx.load(path, load_external_data=False)
    for key, value in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, str(value)
    onnx.save(model, path)
    onnx.checker.check_model(path)
    return sum(os.path.getsize(os.path.join(os.path.dirname(path), name))
               for name in external_files(model)) + os.path.getsize(path)


def external_files(model):
    """The files a model's external data lives in."""
    import onnx
    names = set()
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            names.update(e.value for e in tensor.external_data
                         if e.key == "location")
    return names


def cache_names(layers, prefix):
    return [f"{prefix}.{i}.{kv}" for i in range(layers)
            for kv in ("key", "value")]


def export_decoder(model, path, metadata, kv_heads, head_dim):
    layers = len(model.layers) if hasattr(model, "layers") else \
        len(model.blocks)
    past_len, seq = 3, 2
    past = [torch.zeros(1, kv_heads, past_len, head_dim)
            for _ in range(2 * layers)]
    ids = torch.zeros(1, seq, dtype=torch.int64)
    pos = (torch.arange(seq) + past_len)[None]
    inputs = ["input_ids", "position_ids"] + \
        cache_names(layers, "past_key_values")
    outputs = ["logits", "hidden_states"] + cache_names(layers, "present")
    axes = {"input_ids": {0: "batch", 1: "sequence"},
            "position_ids": {0: "batch", 1: "sequence"},
            "logits": {0: "batch", 1: "sequence"},
            "hidden_states": {0: "batch", 1: "sequence"}}
    for name in cache_names(layers, "past_key_values"):
        axes[name] = {0: "batch", 2: "past_sequence"}
    for name in cache_names(layers, "present"):
        axes[name] = {0: "batch", 2: "total_sequence"}
    return export(model, [ids, pos] + past, path, inputs, outputs, axes,
                  metadata)


def export_mtp_module(mtp, path, cfg=None, metadata=None):
    """The MTP module with its contract: previous hidden states, ids,
    positions and one layer's cache in; logits, hidden states, present out.
    `metadata` replaces the contract's metadata_props (an export folder's
    module has none: its config.json says it)."""
    cfg = cfg or TARGET
    past = [torch.zeros(1, cfg["kv_heads"], 3, cfg["head_dim"])
            for _ in range(2)]
    axes = {"previous_hidden_states": {0: "batch", 1: "sequence"},
            "input_ids": {0: "batch", 1: "sequence"},
            "position_ids": {0: "batch", 1: "sequence"},
            "logits": {0: "batch", 1: "sequence"},
            "hidden_states": {0: "batch", 1: "sequence"},
            "past_key_values.0.key": {0: "batch", 2: "past_sequence"},
            "past_key_values.0.value": {0: "batch", 2: "past_sequence"},
            "present.0.key": {0: "batch", 2: "total_sequence"},
            "present.0.value": {0: "batch", 2: "total_sequence"}}
    if metadata is None:
        metadata = config_metadata(cfg, "mtp_module", spec_depth=1,
                                   model_type="deepseek_mtp",
                                   num_hidden_layers=1)
    return export(
        mtp, [torch.zeros(1, 2, cfg["dim"]),
              torch.zeros(1, 2, dtype=torch.int64),
              (torch.arange(2) + 3)[None]] + past,
        path,
        ["previous_hidden_states", "input_ids", "position_ids"] +
        cache_names(1, "past_key_values"),
        ["logits", "hidden_states"] + cache_names(1, "present"),
        axes, metadata)


def mtp_chain_proposer(mtp, depth=2):
    """Proposals of `mtp` chained with itself: depth 1 sees the target's
    hidden states and the tokens one ahead (the context shifted, then the
    certain next token); each further depth the previous depth's states and
    its proposal."""
    def propose(context, hidden, next_token):
        ids = list(context[1:]) + [next_token]
        states, proposals = hidden, []
        for _ in range(depth):
            logits, states = mtp(states, torch.tensor([ids]))[:2]
            token = int(logits[0, -1].argmax())
            proposals.append(token)
            ids = ids[1:] + [token]
        return proposals
    return propose


def config_metadata(cfg, role, tokenizer=None, vocab=VOCAB, **extra):
    meta = {"vocab_size": vocab, "bos_token_id": BOS, "eos_token_id": EOS,
            "pad_token_id": PAD, "max_position_embeddings": MAX_CONTEXT,
            "tokenizer_sha256": fingerprint(tokenizer or TOKENIZER),
            "spec_role": role, "hidden_size": cfg["dim"],
            "num_hidden_layers": cfg.get("layers", 1),
            "num_attention_heads": cfg["heads"],
            "num_key_value_heads": cfg.get("kv_heads", cfg["heads"]),
            "head_dim": cfg.get("head_dim", cfg["dim"] // cfg["heads"])}
    meta.update(extra)
    return meta


# ---------------------------------------------------------------------------

TARGET = {"dim": 128, "layers": 4, "heads": 4, "kv_heads": 2, "head_dim": 32,
          "ffn": 352}
DRAFT = {"dim": 64, "layers": 2, "heads": 2, "kv_heads": 1, "head_dim": 32,
         "ffn": 176}
GPT2_CFG = {"dim": 96, "layers": 2, "heads": 4}
MEDUSA_HEADS = 3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.dirname(
        os.path.abspath(__file__)), help="where to write models and metrics")
    parser.add_argument("--quick", action="store_true",
                        help="few steps, few prompts: a smoke test")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target-steps", type=int, default=1200)
    parser.add_argument("--head-steps", type=int, default=400)
    parser.add_argument("--draft-steps", type=int, default=1200)
    parser.add_argument("--gpt2-steps", type=int, default=400)
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--new-tokens", type=int, default=128)
    args = parser.parse_args()
    if args.quick:
        args.target_steps = args.head_steps = 20
        args.draft_steps = args.gpt2_steps = 20
        args.prompts, args.new_tokens = 2, 16
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(2)
    torch.manual_seed(args.seed)

    def log(message):
        print(message, flush=True)

    total_start = time.time()
    train_data, val_data, corpus = load_corpus()
    log(f"corpus: {corpus['files']} files, {corpus['train_tokens']} train / "
        f"{corpus['val_tokens']} validation bytes, sha256 {corpus['sha256']}")
    metrics = {"seed": args.seed, "corpus": corpus,
               "torch": torch.__version__, "models": {}}
    batch, seq = 32, 256

    def lm_loss(model):
        def loss(x, y):
            logits = model(x)[0]
            return F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        return loss

    def train_language_model(name, build, cfg, steps, seed):
        torch.manual_seed(seed)
        model = build(cfg)
        seconds = train(name, list(model.parameters()), lm_loss(model),
                        train_data, steps, 3e-3, batch, seq, seed, log)
        model.eval()
        metrics["models"][name] = {
            "config": cfg,
            "params": sum(p.numel() for p in model.parameters()),
            "steps": steps, "train_seconds": round(seconds),
            "val_loss": round(evaluate(lm_loss(model), val_data, batch, seq),
                              4)}
        log(f"{name}: {metrics['models'][name]}")
        return model

    target = train_language_model("target", Llama, TARGET, args.target_steps,
                                  args.seed)
    for p in target.parameters():
        p.requires_grad_(False)

    # Medusa heads on the frozen target: head k predicts token t + 1 + k.
    torch.manual_seed(args.seed + 1)
    heads = nn.ModuleList(MedusaHead(TARGET["dim"], target.lm_head)
                          for _ in range(MEDUSA_HEADS))

    def heads_loss(x, y):
        with torch.no_grad():
            hidden = target(x)[1]
        total = 0.0
        for k, head in enumerate(heads, start=1):
            logits = head(hidden[:, :-k])
            total = total + F.cross_entropy(logits.reshape(-1, VOCAB),
                                            y[:, k:].reshape(-1))
        return total / len(heads)

    seconds = train("medusa", [p for p in heads.parameters()
                               if p.requires_grad], heads_loss, train_data,
                    args.head_steps, 3e-3, batch, seq, args.seed + 1, log)
    heads.eval()
    metrics["models"]["medusa_heads"] = {
        "count": MEDUSA_HEADS,
        "params_each_trained": sum(p.numel() for p in heads[0].parameters()
                                   if p.requires_grad),
        "steps": args.head_steps, "train_seconds": round(seconds),
        "val_loss_mean": round(evaluate(heads_loss, val_data, batch, seq), 4)}

    # DeepSeek-V3-style MTP module on the frozen target: predicts t + 2 from
    # the hidden state at t and the token at t + 1.
    torch.manual_seed(args.seed + 2)
    mtp = MTPModule(TARGET, target)

    def mtp_loss(x, y):
        with torch.no_grad():
            hidden = target(x)[1]
        logits = mtp(hidden[:, :-1], y[:, :-1])[0]
        return F.cross_entropy(logits.reshape(-1, VOCAB), y[:, 1:].reshape(-1))

    seconds = train("mtp", [p for p in mtp.parameters() if p.requires_grad],
                    mtp_loss, train_data, args.head_steps, 3e-3, batch, seq,
                    args.seed + 2, log)
    mtp.eval()
    metrics["models"]["mtp_module"] = {
        "params_trained": sum(p.numel() for p in mtp.parameters()
                              if p.requires_grad),
        "steps": args.head_steps, "train_seconds": round(seconds),
        "val_loss": round(evaluate(mtp_loss, val_data, batch, seq), 4)}

    # Draft: a smaller model trained on the same data; GPT-2-style model, for
    # importer breadth.
    draft = train_language_model("draft", Llama, DRAFT, args.draft_steps,
                                 args.seed + 3)
    gpt2 = train_language_model("gpt2", GPT2, GPT2_CFG, args.gpt2_steps,
                                args.seed + 4)

    # Acceptance on held-out prompts, greedy.
    start = time.time()
    prompts = held_out_prompts(val_data, args.prompts, 64, args.seed)

    def medusa_propose(context, hidden, next_token):
        return [int(head(hidden[0, -1]).argmax()) for head in heads]


    metrics["acceptance"] = {
        "prompts": args.prompts, "prompt_bytes": 64,
        "new_tokens": args.new_tokens,
        "medusa": head_acceptance(target, medusa_propose, prompts,
                                  args.new_tokens, MEDUSA_HEADS),
        "mtp": head_acceptance(target, mtp_chain_proposer(mtp), prompts,
                               args.new_tokens, 2),
        "draft": [draft_acceptance(target, draft, prompts, args.new_tokens, g)
                  for g in range(1, 6)]}
    metrics["acceptance_seconds"] = round(time.time() - start)
    log(f"acceptance: {json.dumps(metrics['acceptance'])}")

    # Export.
    sizes = {}
    out = lambda name: os.path.join(args.out, name)  # noqa: E731
    sizes["target.onnx"] = export_decoder(
        target, out("target.onnx"),
        config_metadata(TARGET, "target", model_type="llama"),
        TARGET["kv_heads"], TARGET["head_dim"])
    for k, head in enumerate(heads, start=1):
        name = f"medusa_head_{k}.onnx"
        sizes[name] = export(
            head, [torch.zeros(1, 2, TARGET["dim"])], out(name),
            ["hidden_states"], ["logits"],
            {"hidden_states": {0: "batch", 1: "sequence"},
             "logits": {0: "batch", 1: "sequence"}},
            config_metadata(TARGET, "medusa_head", spec_depth=k,
                            model_type="medusa"))
    sizes["mtp_module.onnx"] = export_mtp_module(mtp, out("mtp_module.onnx"))
    sizes["draft.onnx"] = export_decoder(
        draft, out("draft.onnx"),
        config_metadata(DRAFT, "draft", model_type="llama"),
        DRAFT["kv_heads"], DRAFT["head_dim"])
    # The incompatible draft: the same network with its vocabulary padded to
    # 320 ids for a different tokenizer (61 merged byte pairs).
    other_tokenizer = dict(TOKENIZER, merges=61)
    padded = Llama(DRAFT)
    padded.load_state_dict(draft.state_dict(), strict=False)
    padded.embed = nn.Embedding(320, DRAFT["dim"])
    padded.embed.weight.data[:VOCAB] = draft.embed.weight.data
    padded.embed.weight.data[VOCAB:] = 0
    padded.lm_head = nn.Linear(DRAFT["dim"], 320, bias=False)
    padded.lm_head.weight.data[:VOCAB] = draft.lm_head.weight.data
    padded.lm_head.weight.data[VOCAB:] = 0
    sizes["draft_incompatible.onnx"] = export_decoder(
        padded, out("draft_incompatible.onnx"),
        config_metadata(DRAFT, "draft", tokenizer=other_tokenizer, vocab=320,
                        model_type="llama"),
        DRAFT["kv_heads"], DRAFT["head_dim"])
    sizes["gpt2.onnx"] = export_decoder(
        gpt2, out("gpt2.onnx"),
        config_metadata(GPT2_CFG, "target", model_type="gpt2"),
        GPT2_CFG["heads"], GPT2_CFG["dim"] // GPT2_CFG["heads"])
    metrics["onnx_bytes"] = sizes
    metrics["total_seconds"] = round(time.time() - total_start)
    with open(out("metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)
        f.write("\n")
    log(f"done in {metrics['total_seconds']} s; "
        f"{sum(sizes.values()) / 1e6:.1f} MB of ONNX")


if __name__ == "__main__":
    sys.exit(main())

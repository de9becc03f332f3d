"""Exports, with torch.onnx.export, decoder architectures the example models
do not cover, with seeded random weights, following the model contract:

  neox         GPT-NeoX-style: one fused qkv projection reshaped, transposed
               and Split; partial rotary (a quarter of each head); parallel
               residual (x + attn(ln1(x)) + mlp(ln2(x))); LayerNorm and GELU;
               untied output head
  llama-tied   Llama-style with grouped-query attention, the output head tied
               to the embedding, an `attention_mask` input combined with the
               causal mask as optimum exports do, and rotary written as
               partial rotary over the whole head (so `x[..., head_dim:]` is
               an empty slice at the end of the dimension)

  export_architectures.py ARCH OUT.onnx [--role target|draft]

A draft is the same architecture with one layer and other random weights.
"""
import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "models"))
import train  # noqa: E402  (the example models' building blocks and export)


def rotate(x, cos, sin, rot):
    """Rotary embedding of the first `rot` channels; the rest pass through."""
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    half = rot // 2
    rotated = torch.cat([-x_rot[..., half:], x_rot[..., :half]], dim=-1)
    return torch.cat([x_rot * cos + rotated * sin, x_pass], dim=-1)


def causal(scores, s, total):
    query_pos = torch.arange(s) + (total - s)
    key_pos = torch.arange(total)
    future = key_pos[None, :] > query_pos[:, None]
    return torch.where(future, torch.tensor(float("-inf")), scores)


class NeoXAttention(nn.Module):
    def __init__(self, dim, heads, rot):
        super().__init__()
        self.heads, self.head_dim, self.rot = heads, dim // heads, rot
        self.qkv = nn.Linear(dim, 3 * dim)
        self.dense = nn.Linear(dim, dim)

    def forward(self, x, cos, sin, past_k, past_v):
        b, s, _ = x.shape
        qkv = self.qkv(x).view(b, s, self.heads, 3 * self.head_dim) \
            .transpose(1, 2)
        q, k, v = qkv.split(self.head_dim, dim=-1)
        q, k = rotate(q, cos, sin, self.rot), rotate(k, cos, sin, self.rot)
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        scores = causal(q @ k.transpose(-1, -2) / math.sqrt(self.head_dim),
                        s, k.shape[2])
        out = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2) \
            .reshape(b, s, self.heads * self.head_dim)
        return self.dense(out), k, v


class NeoXBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        dim = cfg["dim"]
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = NeoXAttention(dim, cfg["heads"], cfg["rot"])
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x, cos, sin, past_k, past_v):
        a, k, v = self.attn(self.ln1(x), cos, sin, past_k, past_v)
        return x + a + self.down(F.gelu(self.up(self.ln2(x)))), k, v


class NeoX(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(train.VOCAB, cfg["dim"])
        self.rotary = train.Rotary(cfg["rot"])
        self.layers = nn.ModuleList(NeoXBlock(cfg)
                                    for _ in range(cfg["layers"]))
        self.norm = nn.LayerNorm(cfg["dim"])
        self.lm_head = nn.Linear(cfg["dim"], train.VOCAB, bias=False)

    def forward(self, input_ids, position_ids, *past):
        cos, sin = self.rotary(position_ids)
        x = self.embed(input_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, past[2 * i], past[2 * i + 1])
            presents += [k, v]
        hidden = self.norm(x)
        return (self.lm_head(hidden), hidden, *presents)


class TiedAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads, self.kv_heads = cfg["heads"], cfg["kv_heads"]
        self.head_dim = cfg["head_dim"]
        dim = cfg["dim"]
        self.q = nn.Linear(dim, self.heads * self.head_dim, bias=False)
        self.k = nn.Linear(dim, self.kv_heads * self.head_dim, bias=False)
        self.v = nn.Linear(dim, self.kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(self.heads * self.head_dim, dim, bias=False)

    def forward(self, x, padding, cos, sin, past_k, past_v):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = rotate(q, cos, sin, self.head_dim)
        k = rotate(k, cos, sin, self.head_dim)
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        present_k, present_v = k, v
        total, rep = k.shape[2], self.heads // self.kv_heads
        k = k[:, :, None].expand(b, self.kv_heads, rep, total, self.head_dim) \
            .reshape(b, self.heads, total, self.head_dim)
        v = v[:, :, None].expand(b, self.kv_heads, rep, total, self.head_dim) \
            .reshape(b, self.heads, total, self.head_dim)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + padding
        scores = causal(scores, s, total)
        out = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2) \
            .reshape(b, s, self.heads * self.head_dim)
        return self.o(out), present_k, present_v


class TiedBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn_norm = train.RMSNorm(cfg["dim"])
        self.attn = TiedAttention(cfg)
        self.mlp_norm = train.RMSNorm(cfg["dim"])
        self.mlp = train.SwiGLU(cfg["dim"], cfg["ffn"])

    def forward(self, x, padding, cos, sin, past_k, past_v):
        a, k, v = self.attn(self.attn_norm(x), padding, cos, sin, past_k,
                            past_v)
        x = x + a
        return x + self.mlp(self.mlp_norm(x)), k, v


class TiedLlama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(train.VOCAB, cfg["dim"])
        self.rotary = train.Rotary(cfg["head_dim"])
        self.layers = nn.ModuleList(TiedBlock(cfg)
                                    for _ in range(cfg["layers"]))
        self.norm = train.RMSNorm(cfg["dim"])

    def forward(self, input_ids, attention_mask, position_ids, *past):
        cos, sin = self.rotary(position_ids)
        # optimum's form: masked keys get the float32 minimum added.
        padding = (1.0 - attention_mask[:, None, None, :].float()) \
            * torch.finfo(torch.float32).min
        x = self.embed(input_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, padding, cos, sin, past[2 * i],
                            past[2 * i + 1])
            presents += [k, v]
        hidden = self.norm(x)
        return (hidden @ self.embed.weight.t(), hidden, *presents)


NEOX = {"dim": 64, "layers": 2, "heads": 4, "rot": 4}
TIED = {"dim": 64, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 16,
        "ffn": 160}


def export(arch, path, role):
    torch.manual_seed(0 if role == "target" else 1)
    cfg = dict(NEOX if arch == "neox" else TIED)
    if role == "draft":
        cfg["layers"] = 1
    if arch == "neox":
        model, kv_heads, head_dim = NeoX(cfg), cfg["heads"], \
            cfg["dim"] // cfg["heads"]
    else:
        model, kv_heads, head_dim = TiedLlama(cfg), cfg["kv_heads"], \
            cfg["head_dim"]
    metadata = train.config_metadata(cfg, role, model_type=arch)
    if arch == "neox":
        return train.export_decoder(model, path, metadata, kv_heads, head_dim)
    layers = cfg["layers"]
    past_len, seq = 3, 2
    past = [torch.zeros(1, kv_heads, past_len, head_dim)
            for _ in range(2 * layers)]
    cache = train.cache_names(layers, "past_key_values")
    axes = {"input_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "total_sequence"},
            "position_ids": {0: "batch", 1: "sequence"},
            "logits": {0: "batch", 1: "sequence"},
            "hidden_states": {0: "batch", 1: "sequence"}}
    axes.update({n: {0: "batch", 2: "past_sequence"} for n in cache})
    present = train.cache_names(layers, "present")
    axes.update({n: {0: "batch", 2: "total_sequence"} for n in present})
    args = [torch.zeros(1, seq, dtype=torch.int64),
            torch.ones(1, past_len + seq, dtype=torch.int64),
            (torch.arange(seq) + past_len)[None]] + past
    return train.export(model, args, path,
                        ["input_ids", "attention_mask", "position_ids"]
                        + cache, ["logits", "hidden_states"] + present,
                        axes, metadata)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("arch", choices=["neox", "llama-tied"])
    parser.add_argument("out")
    parser.add_argument("--role", choices=["target", "draft"],
                        default="target")
    args = parser.parse_args()
    export(args.arch, args.out, args.role)


if __name__ == "__main__":
    main()

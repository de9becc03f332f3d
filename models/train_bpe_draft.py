#!/usr/bin/python3
"""Train a draft with another tokenizer: a byte-level BPE of a few hundred
merges learned here, and a draft of the example draft's size trained on the
same corpus in those tokens. It is the fixture of cross-tokenizer drafting
(issue 49): the example target reads bytes, this draft reads BPE tokens.

  /usr/bin/python3 models/train_bpe_draft.py            # ~10 min on 2 cores
  /usr/bin/python3 models/train_bpe_draft.py --quick    # a smoke run to /tmp

Writes models/draft_bpe.onnx, models/draft_bpe.tokenizer.json (a Hugging
Face tokenizer.json: a Split pre-tokenizer, byte-level BPE, BOS/EOS/PAD as
special added tokens) and models/draft_bpe.json (what was measured).
"""

import argparse
import collections
import json
import os
import re
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402

# Words as the pre-tokenizer splits them: a run of letters, of digits or of
# other symbols, each with the space before it, or whitespace. Written so
# that Python's `re` (here) and PCRE2/Oniguruma (tokenizer.json) read it
# alike: ASCII classes only.
SPLIT = r" ?[A-Za-z_]+| ?[0-9]+| ?[^\sA-Za-z_0-9]+|\s+(?!\S)|\s+"
SPECIAL = ["<s>", "</s>", "<pad>"]


def byte_chars():
    """GPT-2's byte -> printable character table (the ByteLevel alphabet)."""
    printable = list(range(33, 127)) + list(range(161, 173)) + \
        list(range(174, 256))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def learn_merges(words, count):
    """Byte-pair merges, most frequent pair first (ties by the pair), with
    pair counts updated incrementally."""
    symbols = {w: [bytes([b]) for b in w] for w in words}
    pairs = collections.Counter()
    where = collections.defaultdict(set)
    for w, n in words.items():
        s = symbols[w]
        for a, b in zip(s, s[1:]):
            pairs[a, b] += n
            where[a, b].add(w)
    merges = []
    for _ in range(count):
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        joined = best[0] + best[1]
        for w in list(where.pop(best, ())):
            n, s = words[w], symbols[w]
            for a, b in zip(s, s[1:]):
                pairs[a, b] -= n
                if pairs[a, b] <= 0:
                    del pairs[a, b]
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and (s[i], s[i + 1]) == best:
                    out.append(joined)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            symbols[w] = out
            for a, b in zip(out, out[1:]):
                pairs[a, b] += n
                where[a, b].add(w)
        pairs.pop(best, None)
    return merges


def tokenizer_json(merges):
    chars = byte_chars()
    spell = lambda b: "".join(chars[x] for x in b)  # noqa: E731
    vocab = {spell(bytes([b])): b for b in range(256)}
    for i, (a, b) in enumerate(merges):
        vocab[spell(a + b)] = 256 + len(SPECIAL) + i
    added = [{"id": 256 + i, "content": s, "single_word": False,
              "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, s in enumerate(SPECIAL)]
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": SPLIT},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False,
             "trim_offsets": False, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False,
                    "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab,
                  "merges": [[spell(a), spell(b)] for a, b in merges]}}


def encoder(merges):
    """Ids of a byte string under `merges`, cached per word."""
    rank = {m: i for i, m in enumerate(merges)}
    ids = {bytes([b]): b for b in range(256)}
    for i, (a, b) in enumerate(merges):
        ids[a + b] = 256 + len(SPECIAL) + i
    split = re.compile(SPLIT.encode())
    cache = {}

    def word(w):
        if w in cache:
            return cache[w]
        s = [bytes([b]) for b in w]
        while len(s) > 1:
            ranked = [(rank.get((a, b), 1 << 30), i)
                      for i, (a, b) in enumerate(zip(s, s[1:]))]
            best, i = min(ranked)
            if best == 1 << 30:
                break
            s[i:i + 2] = [s[i] + s[i + 1]]
        cache[w] = [ids[p] for p in s]
        return cache[w]

    def encode(text):
        out = []
        for m in split.finditer(text):
            out.extend(word(m.group()))
        return out
    return encode


def documents(tokens):
    """The corpus (BOS, bytes, EOS per file) back as byte strings."""
    docs, current = [], []
    for t in tokens.tolist():
        if t == train.BOS:
            current = []
        elif t == train.EOS:
            docs.append(bytes(current))
        else:
            current.append(t)
    return docs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.dirname(
        os.path.abspath(__file__)))
    parser.add_argument("--merges", type=int, default=381,
                        help="BPE merges (vocabulary: 259 + merges)")
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.out, args.steps, args.merges = "/tmp/bpe-quick", 20, 40
        os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(2)
    log = lambda s: print(s, flush=True)  # noqa: E731
    start = time.time()
    train_bytes, val_bytes, corpus = train.load_corpus()
    train_docs, val_docs = documents(train_bytes), documents(val_bytes)

    split = re.compile(SPLIT.encode())
    words = collections.Counter(
        m.group() for d in train_docs for m in split.finditer(d))
    merges = learn_merges(words, args.merges)
    log(f"{len(merges)} merges from {len(words)} distinct words "
        f"({time.time() - start:.0f} s)")
    tokenizer = tokenizer_json(merges)
    vocab = 256 + len(SPECIAL) + len(merges)
    encode = encoder(merges)

    def ids(docs):
        out = []
        for d in docs:
            out += [train.BOS] + encode(d) + [train.EOS]
        return np.array(out, dtype=np.int64)
    train_ids, val_ids = ids(train_docs), ids(val_docs)
    log(f"{len(train_ids)} training tokens for {corpus['train_tokens']} "
        f"bytes ({time.time() - start:.0f} s)")

    # The draft's network with this vocabulary (train.Llama reads VOCAB).
    train.VOCAB = vocab
    torch.manual_seed(args.seed)
    draft = train.Llama(train.DRAFT)

    def loss(x, y):
        return F.cross_entropy(draft(x)[0].reshape(-1, vocab), y.reshape(-1))
    seconds = train.train("draft_bpe", list(draft.parameters()), loss,
                          train_ids, args.steps, 3e-3, 32, 256, args.seed, log)
    draft.eval()
    val_loss = train.evaluate(loss, val_ids, 32, 256)
    tokens_per_byte = len(val_ids) / corpus["val_tokens"]

    tokenizer_path = os.path.join(args.out, "draft_bpe.tokenizer.json")
    with open(tokenizer_path, "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
        f.write("\n")
    canonical = json.dumps(tokenizer, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    fingerprint = "sha256:" + __import__("hashlib").sha256(
        canonical.encode()).hexdigest()
    meta = train.config_metadata(train.DRAFT, "draft", vocab=vocab,
                                 model_type="llama")
    meta["tokenizer_sha256"] = fingerprint
    size = train.export_decoder(draft, os.path.join(args.out,
                                                    "draft_bpe.onnx"),
                                meta, train.DRAFT["kv_heads"],
                                train.DRAFT["head_dim"])
    metrics = {
        "merges": len(merges), "vocab": vocab, "distinct_words": len(words),
        "params": sum(p.numel() for p in draft.parameters()),
        "steps": args.steps, "train_seconds": round(seconds),
        "val_loss_per_token": round(val_loss, 4),
        "val_tokens_per_byte": round(tokens_per_byte, 4),
        "val_loss_per_byte": round(val_loss * tokens_per_byte, 4),
        "tokenizer_sha256": fingerprint, "onnx_bytes": size,
        "total_seconds": round(time.time() - start)}
    with open(os.path.join(args.out, "draft_bpe.json"), "w") as f:
        json.dump(metrics, f, indent=2)
        f.write("\n")
    log(json.dumps(metrics))


if __name__ == "__main__":
    sys.exit(main())

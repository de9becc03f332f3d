"""Writes Hugging Face-style export folders (model.onnx without the
contract's metadata_props, config.json, generation_config.json,
tokenizer.json, tokenizer_config.json) for a target and a draft: Llama-style
decoders with seeded random weights and the vocabulary of a real tokenizer.

  make_export_folder.py TOKENIZER_DIR OUT [--extra-eos-from RUN.json] [--mtp]

TOKENIZER_DIR holds the tokenizer.json and tokenizer_config.json to ship
(test/tools/specc/export-folder.test uses Llama-2's, 32,000 tokens). Writes
OUT/target and OUT/draft (the draft's weights in model.onnx_data, as large
exports keep them). With --extra-eos-from, config.json's eos_token_id
is a list: the tokenizer's EOS and the first new token of a `spec-run --json`
result. With --mtp, OUT/deepseek instead: a DeepSeek-V3-style folder, the
target and its MTP module beside it (mtp_module.onnx, sharing the target's
embedding, final norm and output head), config.json declaring
num_nextn_predict_layers = 1. Needs python3-torch.
"""
import argparse
import json
import os
import shutil
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "models"))
import train  # noqa: E402  (the example models' architecture and export)

CONFIGS = {
    "target": {"dim": 64, "layers": 2, "heads": 2, "kv_heads": 1, "head_dim": 32, "ffn": 176},
    "draft": {"dim": 64, "layers": 1, "heads": 2, "kv_heads": 1, "head_dim": 32, "ffn": 176},
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tokenizer_dir")
    parser.add_argument("out")
    parser.add_argument("--extra-eos-from")
    parser.add_argument("--mtp", action="store_true")
    args = parser.parse_args()
    tokenizer_dir, out = args.tokenizer_dir, args.out
    with open(os.path.join(tokenizer_dir, "tokenizer.json"), encoding="utf-8") as f:
        tokenizer = json.load(f)
    with open(os.path.join(tokenizer_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        tokenizer_config = json.load(f)
    vocab = max(max(tokenizer["model"]["vocab"].values()),
                max((t["id"] for t in tokenizer["added_tokens"]), default=0)) + 1
    ids = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
    bos = ids[tokenizer_config["bos_token"]]
    eos = ids[tokenizer_config["eos_token"]]
    eos_ids = eos
    if args.extra_eos_from:
        with open(args.extra_eos_from, encoding="utf-8") as f:
            run = json.load(f)
        first = (run.get("speculative") or run["no_speculation"])["token_ids"][0]
        eos_ids = [eos, first]
    if args.mtp:
        train.VOCAB = vocab  # the MTP module's shared embedding and head
        folder = os.path.join(out, "deepseek")
        target = random_llama(CONFIGS["target"], vocab, seed=2)
        write_folder(folder, target, CONFIGS["target"], vocab, bos, eos, eos_ids,
                     tokenizer_dir, {"model_type": "deepseek_v3",
                                     "num_nextn_predict_layers": 1})
        torch.manual_seed(3)
        mtp = train.MTPModule(CONFIGS["target"], target)
        randomize(p for p in mtp.parameters() if p.requires_grad)
        train.export_mtp_module(mtp, os.path.join(folder, "mtp_module.onnx"),
                                CONFIGS["target"], metadata={})
        return
    for seed, (role, cfg) in enumerate(CONFIGS.items()):
        folder = os.path.join(out, role)
        write_folder(folder, random_llama(cfg, vocab, seed), cfg, vocab, bos, eos,
                     eos_ids, tokenizer_dir, {})
        if role == "draft":
            # As large exports come: the weights in an external data file.
            import onnx
            path = os.path.join(folder, "model.onnx")
            onnx.save(onnx.load(path), path, save_as_external_data=True,
                      all_tensors_to_one_file=True, location="model.onnx_data",
                      size_threshold=1024)


def randomize(parameters):
    with torch.no_grad():
        for parameter in parameters:
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.02)


def random_llama(cfg, vocab, seed):
    torch.manual_seed(seed)
    model = train.Llama(cfg)
    model.embed = nn.Embedding(vocab, cfg["dim"])
    model.lm_head = nn.Linear(cfg["dim"], vocab, bias=False)
    randomize(model.parameters())
    return model


def write_folder(folder, model, cfg, vocab, bos, eos, eos_ids, tokenizer_dir,
                 extra_config):
    """model.onnx without metadata_props, config.json,
    generation_config.json and the tokenizer's files."""
    os.makedirs(folder, exist_ok=True)
    train.export_decoder(model, os.path.join(folder, "model.onnx"), {},
                         cfg["kv_heads"], cfg["head_dim"])
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "vocab_size": vocab, "hidden_size": cfg["dim"],
              "intermediate_size": cfg["ffn"],
              "num_hidden_layers": cfg["layers"],
              "num_attention_heads": cfg["heads"],
              "num_key_value_heads": cfg["kv_heads"],
              "max_position_embeddings": 256, "bos_token_id": bos,
              "eos_token_id": eos_ids, "pad_token_id": None,
              "torch_dtype": "float32", **extra_config}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": bos, "eos_token_id": eos}, f, indent=2)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokenizer_dir, name), os.path.join(folder, name))

if __name__ == "__main__":
    main()

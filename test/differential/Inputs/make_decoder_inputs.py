"""Writes inputs for a decoder that follows the model contract:
input_ids and position_ids for `seq` new tokens after `past` cached ones,
an attention_mask over all of them where the model has one, and random past
keys/values for every layer, as input_N.pb in the model's
input order.

  make_decoder_inputs.py MODEL OUT_DIR --past P --seq S [--seed N]
"""
import argparse
import os

import numpy as np
import onnx
from onnx import numpy_helper

parser = argparse.ArgumentParser()
parser.add_argument("model")
parser.add_argument("out")
parser.add_argument("--past", type=int, required=True)
parser.add_argument("--seq", type=int, required=True)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

model = onnx.load(args.model, load_external_data=False)
meta = {p.key: p.value for p in model.metadata_props}
vocab = int(meta["vocab_size"])
rng = np.random.default_rng(args.seed)
os.makedirs(args.out, exist_ok=True)
for i, info in enumerate(model.graph.input):
    dims = [d.dim_value for d in info.type.tensor_type.shape.dim]
    name = info.name
    if name == "input_ids":
        value = rng.integers(0, vocab, size=(1, args.seq), dtype=np.int64)
    elif name == "attention_mask":
        # Key 1 masked out (padding) when that leaves every query a key.
        value = np.ones((1, args.past + args.seq), dtype=np.int64)
        if value.size >= 3:
            value[0, 1] = 0
    elif name == "position_ids":
        value = (np.arange(args.seq, dtype=np.int64) + args.past)[None]
    elif name.startswith("past_key_values."):
        value = rng.standard_normal((1, dims[1], args.past, dims[3])) \
            .astype(np.float32)
    elif name in ("hidden_states", "previous_hidden_states"):
        value = rng.standard_normal((1, args.seq, dims[2])).astype(np.float32)
    else:
        raise SystemExit(f"{args.model}: no generator for input '{name}'")
    with open(os.path.join(args.out, f"input_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(value, name).SerializeToString())

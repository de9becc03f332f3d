#!/usr/bin/env python3
"""Writes a Llama-style ONNX model of this project (models/train.py's
`Llama`, bench/make_large_model.py's) as a GGUF file that llama.cpp loads,
with the same weights at a chosen precision, so that both run the same
model (bench/llama_cpp.py).

    python3 bench/onnx_to_gguf.py model.onnx out.gguf [--type f32|f16|q8_0|q4_0]
        [--check]

The configuration comes from the model's metadata (hidden_size,
num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim,
vocab_size, ...), the weights from its initializers, each projection found
by the MatMul node that reads it (`/layers.N/attn/q/MatMul`, ...).
llama.cpp's `llama` architecture rotates interleaved pairs where the ONNX
model rotates halves (Hugging Face's layout), so the query and key rows are
permuted as llama.cpp's own converter does. q8_0 and q4_0 are llama.cpp's
Q8_0 and Q4_0 (blocks of 32 along each row, an f16 scale each), written as
its reference quantizer does; norms and the embedding table stay f32. The
vocabulary is the model's bytes as GPT-2's byte-level pieces (ids are fed
to llama.cpp directly, never tokenized).

Needs numpy and onnx (Debian's python3-numpy, python3-onnx).
"""

import argparse
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32
# GGUF metadata value types.
UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
# ggml tensor types.
TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 8}
PROJECTIONS = {"attn/q": "attn_q", "attn/k": "attn_k", "attn/v": "attn_v",
               "attn/o": "attn_output", "mlp/gate": "ffn_gate",
               "mlp/up": "ffn_up", "mlp/down": "ffn_down"}


def gguf_string(text):
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def gguf_value(value):
    """(type, bytes) of a metadata value: str, bool, int, float or a list
    of one of str or int."""
    if isinstance(value, str):
        return STRING, gguf_string(value)
    if isinstance(value, bool):
        return BOOL, struct.pack("<?", value)
    if isinstance(value, int):
        return UINT32, struct.pack("<I", value)
    if isinstance(value, float):
        return FLOAT32, struct.pack("<f", value)
    element = INT32 if value and isinstance(value[0], int) else STRING
    body = b"".join(gguf_string(v) if element == STRING
                    else struct.pack("<i", v) for v in value)
    return ARRAY, struct.pack("<IQ", element, len(value)) + body


def quantize_q8_0(rows):
    """llama.cpp's quantize_row_q8_0_ref over every row (a multiple of 32
    long): per block, d = max |x| / 127, q = roundf(x / d)."""
    blocks = rows.reshape(-1, 32).astype(np.float32)
    d = np.abs(blocks).max(axis=1) / 127.0
    inverse = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    scaled = blocks * inverse[:, None]
    # roundf: halves away from zero.
    q = np.trunc(scaled + np.copysign(0.5, scaled)).astype(np.int8)
    out = np.empty(len(blocks), dtype=[("d", "<f2"), ("q", "i1", 32)])
    out["d"], out["q"] = d.astype(np.float16), q
    return out.tobytes()


def quantize_q4_0(rows):
    """llama.cpp's quantize_row_q4_0_ref: per block, the value of largest
    magnitude m, d = m / -8, q = min(15, int(x / d + 8.5)); the first 16
    values in the low nibbles, the last 16 in the high ones."""
    blocks = rows.reshape(-1, 32).astype(np.float32)
    largest = blocks[np.arange(len(blocks)), np.abs(blocks).argmax(axis=1)]
    d = largest / -8.0
    inverse = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = np.minimum(15, (blocks * inverse[:, None] + 8.5).astype(np.int8))
    q = q.astype(np.uint8)
    out = np.empty(len(blocks), dtype=[("d", "<f2"), ("q", "u1", 16)])
    out["d"] = d.astype(np.float16)
    out["q"] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def tensor_bytes(array, kind):
    if kind == "f32":
        return array.astype("<f4").tobytes()
    if kind == "f16":
        return array.astype("<f2").tobytes()
    return (quantize_q8_0 if kind == "q8_0" else quantize_q4_0)(array)


def permute_rotary(weight, heads, head_dim):
    """Rows of a [heads * head_dim, in] query/key projection reordered from
    rotating halves to rotating interleaved pairs (llama.cpp's
    convert_hf_to_gguf `permute`)."""
    return (weight.reshape(heads, 2, head_dim // 2, -1).swapaxes(1, 2)
            .reshape(weight.shape))


def byte_pieces():
    """GPT-2's byte-to-unicode table: byte b's piece in a byte-level BPE."""
    printable = (list(range(ord("!"), ord("~") + 1)) +
                 list(range(ord("¡"), ord("¬") + 1)) +
                 list(range(ord("®"), ord("ÿ") + 1)))
    pieces, extra = {}, 0
    for b in range(256):
        if b in printable:
            pieces[b] = chr(b)
        else:
            pieces[b] = chr(256 + extra)
            extra += 1
    return [pieces[b] for b in range(256)]


def load_model(path):
    model = onnx.load(path)
    meta = {p.key: p.value for p in model.metadata_props}
    missing = [k for k in ("hidden_size", "num_hidden_layers",
                           "num_attention_heads", "num_key_value_heads",
                           "head_dim", "vocab_size") if k not in meta]
    if missing:
        sys.exit(f"error: {path}: no metadata {', '.join(missing)} "
                 "(a model of models/train.py is expected)")
    if meta.get("model_type") != "llama":
        sys.exit(f"error: {path}: model_type '{meta.get('model_type', '')}', "
                 "not llama (a Llama-style model of models/train.py is "
                 "expected)")
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:  # an exporter's shared equal weights
        if node.op_type == "Identity" and node.input[0] in weights:
            weights[node.output[0]] = weights[node.input[0]]
    tensors = {"token_embd.weight": weights["embed.weight"]}
    heads = int(meta["num_attention_heads"])
    kv_heads = int(meta["num_key_value_heads"])
    head_dim = int(meta["head_dim"])
    norms = {"attn_norm": "attn_norm", "mlp_norm": "ffn_norm"}
    for node in model.graph.node:
        if len(node.input) < 2 or node.input[1] not in weights:
            continue
        parts = node.name.strip("/").split("/")
        if node.op_type == "Mul" and parts[-1] == "Mul":
            # RMSNorm's scale (an exporter may share equal ones).
            if parts[0] == "norm":
                tensors["output_norm.weight"] = weights[node.input[1]]
            elif len(parts) == 3 and parts[1] in norms:
                layer = int(parts[0].split(".")[1])
                tensors[f"blk.{layer}.{norms[parts[1]]}.weight"] = \
                    weights[node.input[1]]
            continue
        if node.op_type != "MatMul":
            continue
        # MatMul weights are [in, out]; GGUF wants torch's [out, in] rows.
        weight = weights[node.input[1]].T
        if parts[0] == "lm_head":
            tensors["output.weight"] = weight
            continue
        layer = int(parts[0].split(".")[1])
        name = PROJECTIONS["/".join(parts[1:3])]
        if name == "attn_q":
            weight = permute_rotary(weight, heads, head_dim)
        elif name == "attn_k":
            weight = permute_rotary(weight, kv_heads, head_dim)
        tensors[f"blk.{layer}.{name}.weight"] = weight
    expected = 2 + 9 * int(meta["num_hidden_layers"]) + 1
    if len(tensors) != expected:
        sys.exit(f"error: {path}: found {len(tensors)} of the {expected} "
                 "tensors of a Llama-style model by their nodes' names")
    return meta, tensors


def metadata(meta, tensors, kind):
    vocab = int(meta["vocab_size"])
    pieces = byte_pieces() + [f"<|special_{i}|>" for i in range(vocab - 256)]
    return {
        "general.architecture": "llama",
        "general.name": "specula-" + meta.get("spec_role", "model"),
        "general.file_type": {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7}[kind],
        "general.alignment": ALIGNMENT,
        "llama.context_length": int(meta.get("max_position_embeddings", 2048)),
        "llama.embedding_length": int(meta["hidden_size"]),
        "llama.block_count": int(meta["num_hidden_layers"]),
        "llama.feed_forward_length": int(tensors["blk.0.ffn_up.weight"].shape[0]),
        "llama.attention.head_count": int(meta["num_attention_heads"]),
        "llama.attention.head_count_kv": int(meta["num_key_value_heads"]),
        "llama.rope.dimension_count": int(meta["head_dim"]),
        "llama.rope.freq_base": 10000.0,
        "llama.attention.layer_norm_rms_epsilon": 1e-5,
        "llama.vocab_size": vocab,
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.tokens": pieces,
        "tokenizer.ggml.token_type": [1] * 256 + [3] * (vocab - 256),
        "tokenizer.ggml.merges": [],
        "tokenizer.ggml.bos_token_id": int(meta.get("bos_token_id", 256)),
        "tokenizer.ggml.eos_token_id": int(meta.get("eos_token_id", 257)),
        "tokenizer.ggml.add_bos_token": False,
    }


def write_gguf(path, kv, tensors, kind):
    infos, blobs, offset = [], [], 0
    for name, array in tensors.items():
        matrix = array.ndim == 2 and name != "token_embd.weight"
        tensor_kind = kind if matrix else "f32"
        if tensor_kind in ("q8_0", "q4_0") and array.shape[-1] % 32:
            tensor_kind = "f16"
        data = tensor_bytes(np.ascontiguousarray(array), tensor_kind)
        dims = list(reversed(array.shape))  # ne0 is the contiguous one
        infos.append(gguf_string(name) + struct.pack("<I", len(dims)) +
                     b"".join(struct.pack("<Q", d) for d in dims) +
                     struct.pack("<IQ", TYPES[tensor_kind], offset))
        padding = -len(data) % ALIGNMENT
        blobs.append(data + b"\0" * padding)
        offset += len(data) + padding
    header = GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kv))
    for key, value in kv.items():
        kind_code, body = gguf_value(value)
        header += gguf_string(key) + struct.pack("<I", kind_code) + body
    header += b"".join(infos)
    header += b"\0" * (-len(header) % ALIGNMENT)
    with open(path, "wb") as out:
        out.write(header)
        for blob in blobs:
            out.write(blob)


def read_tensors(path):
    """The tensors of a GGUF file this script wrote, as f32 arrays (the
    quantized ones dequantized), by name: a reader for --check."""
    data = open(path, "rb").read()
    position = 0

    def take(fmt):
        nonlocal position
        values = struct.unpack_from(fmt, data, position)
        position += struct.calcsize(fmt)
        return values

    def string():
        nonlocal position
        (length,) = take("<Q")
        position += length
        return data[position - length:position].decode()

    def skip_value(kind):
        if kind == STRING:
            string()
        elif kind == ARRAY:
            element, count = take("<IQ")
            for _ in range(count):
                skip_value(element)
        else:
            take({UINT32: "<I", INT32: "<i", FLOAT32: "<f", BOOL: "<?"}[kind])

    magic, version, count, kvs = take("<4sIQQ")
    if magic != GGUF_MAGIC or version != GGUF_VERSION:
        sys.exit(f"error: {path} is not a GGUF v{GGUF_VERSION} file")
    for _ in range(kvs):
        string()
        skip_value(take("<I")[0])
    infos = []
    for _ in range(count):
        name = string()
        (dims,) = take("<I")
        shape = take(f"<{dims}Q")[::-1]
        kind, offset = take("<IQ")
        infos.append((name, shape, kind, offset))
    base = position + (-position % ALIGNMENT)
    tensors = {}
    for name, shape, kind, offset in infos:
        size = int(np.prod(shape))
        start = base + offset
        if kind in (TYPES["f32"], TYPES["f16"]):
            dtype = "<f4" if kind == TYPES["f32"] else "<f2"
            values = np.frombuffer(data, dtype, size, start).astype(np.float32)
        elif kind == TYPES["q8_0"]:
            blocks = np.frombuffer(data, [("d", "<f2"), ("q", "i1", 32)],
                                   size // 32, start)
            values = blocks["q"] * blocks["d"].astype(np.float32)[:, None]
        else:
            blocks = np.frombuffer(data, [("d", "<f2"), ("q", "u1", 16)],
                                   size // 32, start)
            q = np.concatenate([blocks["q"] & 15, blocks["q"] >> 4], axis=1)
            values = ((q.astype(np.float32) - 8) *
                      blocks["d"].astype(np.float32)[:, None])
        tensors[name] = (kind, values.reshape(shape))
    return tensors


def check(path, tensors):
    """Reads `path` back and compares every tensor with what was written:
    f32 exactly, f16 within its rounding, Q8_0 and Q4_0 within one step of
    their block's scale. Returns the largest error, or exits."""
    written = read_tensors(path)
    if sorted(written) != sorted(tensors):
        sys.exit(f"error: {path} holds other tensors than were written")
    worst = 0.0
    for name, array in tensors.items():
        stored_kind, values = written[name]
        expected = array.astype(np.float32)
        error = np.abs(values - expected)
        if stored_kind == TYPES["f32"]:
            bound = np.zeros_like(expected)
        elif stored_kind == TYPES["f16"]:
            bound = np.abs(expected) * 2.0 ** -10 + 2.0 ** -24
        else:
            blocks = np.abs(expected.reshape(-1, 32)).max(axis=1)
            step = blocks / (127.0 if stored_kind == TYPES["q8_0"] else 8.0)
            bound = np.repeat(step * 1.01, 32).reshape(expected.shape)
        if (error > bound).any():
            sys.exit(f"error: {path}: {name} read back differs from the "
                     f"weights by {error.max():g}")
        worst = max(worst, float(error.max()))
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--type", choices=sorted(TYPES), default="f32")
    parser.add_argument("--check", action="store_true",
                        help="read the file back and compare its tensors "
                        "with the model's weights")
    args = parser.parse_args()
    meta, tensors = load_model(args.model)
    write_gguf(args.out, metadata(meta, tensors, args.type), tensors, args.type)
    if args.check:
        worst = check(args.out, tensors)
        print(f"{args.out}: {len(tensors)} tensors ({args.type}) read back, "
              f"largest difference from the weights {worst:.3g}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Check ONNX models against Specula's model contract (README "Model contract").

  /usr/bin/python3 models/check_contract.py models/*.onnx

Each file must load, pass the ONNX checker at opset 17, carry the model
configuration in metadata_props, and have the inputs and outputs its
`spec_role` requires, with the symbolic (dynamic) axes the runtime relies on.
Prints one line per model and exits non-zero naming every violation.
"""

import argparse
import os
import sys

import numpy
import onnx

REQUIRED_METADATA = ["vocab_size", "bos_token_id", "eos_token_id",
                     "pad_token_id", "max_position_embeddings",
                     "tokenizer_sha256", "spec_role"]
ROLES = ("target", "draft", "medusa_head", "mtp_module")
INT64, FLOAT = onnx.TensorProto.INT64, onnx.TensorProto.FLOAT


def dims(value_info):
    return [d.dim_param or d.dim_value
            for d in value_info.type.tensor_type.shape.dim]


def check(path):
    """Returns (summary, [violations])."""
    name = os.path.basename(path)
    try:
        model = onnx.load(path)
        onnx.checker.check_model(model)
    except Exception as error:  # protobuf and checker errors alike
        return name, [f"does not load as a valid ONNX model: {error}"]
    problems = []
    opset = {o.domain: o.version for o in model.opset_import}.get("", 0)
    if opset != 17:
        problems.append(f"opset {opset}, expected 17")
    meta = {p.key: p.value for p in model.metadata_props}
    for key in REQUIRED_METADATA:
        if key not in meta:
            problems.append(f"metadata_props lacks '{key}'")
    if problems:
        return name, problems
    role = meta["spec_role"]
    vocab = int(meta["vocab_size"])
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if not 0 <= int(meta[key]) < vocab:
            problems.append(f"{key} {meta[key]} outside [0, {vocab})")
    if not meta["tokenizer_sha256"].startswith("sha256:"):
        problems.append("tokenizer_sha256 must start with 'sha256:'")
    if role not in ROLES:
        return name, problems + [f"spec_role '{role}' is not one of {ROLES}"]

    inputs = {i.name: i for i in model.graph.input}
    outputs = {o.name: o for o in model.graph.output}

    def expect(table, kind, tensor, elem, shape):
        if tensor not in table:
            problems.append(f"missing {kind} '{tensor}'")
            return
        info = table[tensor]
        if info.type.tensor_type.elem_type != elem:
            problems.append(f"{kind} '{tensor}' has element type "
                            f"{onnx.TensorProto.DataType.Name(info.type.tensor_type.elem_type)}"
                            f", expected {onnx.TensorProto.DataType.Name(elem)}")
        actual = dims(info)
        if len(actual) != len(shape) or any(
                want is not None and got != want
                for got, want in zip(actual, shape)):
            problems.append(f"{kind} '{tensor}' has shape {actual}, "
                            f"expected {[w if w is not None else '*' for w in shape]}")

    hidden = int(meta.get("hidden_size", 0)) or None
    kv_heads = int(meta.get("num_key_value_heads", 0)) or None
    head_dim = int(meta.get("head_dim", 0)) or None
    layers = int(meta.get("num_hidden_layers", 0))

    def expect_cache():
        for i in range(layers):
            for kv in ("key", "value"):
                expect(inputs, "input", f"past_key_values.{i}.{kv}", FLOAT,
                       ["batch", kv_heads, "past_sequence", head_dim])
                expect(outputs, "output", f"present.{i}.{kv}", FLOAT,
                       ["batch", kv_heads, "total_sequence", head_dim])

    if role in ("target", "draft"):
        if layers < 1:
            problems.append("metadata 'num_hidden_layers' must be at least 1")
        expect(inputs, "input", "input_ids", INT64, ["batch", "sequence"])
        expect(inputs, "input", "position_ids", INT64, ["batch", "sequence"])
        expect(outputs, "output", "logits", FLOAT,
               ["batch", "sequence", vocab])
        expect(outputs, "output", "hidden_states", FLOAT,
               ["batch", "sequence", hidden])
        expect_cache()
    else:
        if int(meta.get("spec_depth", 0)) < 1:
            problems.append("heads need metadata 'spec_depth' >= 1")
        if role == "medusa_head":
            expect(inputs, "input", "hidden_states", FLOAT,
                   ["batch", "sequence", hidden])
        else:
            expect(inputs, "input", "previous_hidden_states", FLOAT,
                   ["batch", "sequence", hidden])
            expect(inputs, "input", "input_ids", INT64, ["batch", "sequence"])
            expect(inputs, "input", "position_ids", INT64,
                   ["batch", "sequence"])
            expect(outputs, "output", "hidden_states", FLOAT,
                   ["batch", "sequence", hidden])
            expect_cache()
        expect(outputs, "output", "logits", FLOAT,
               ["batch", "sequence", vocab])
    params = sum(int(numpy.prod(t.dims))
                 for t in model.graph.initializer)
    summary = (f"{name}: {role}"
               + (f" depth {meta['spec_depth']}" if "spec_depth" in meta else "")
               + f", vocab {vocab}, {layers} layer(s), {params} parameters, "
               f"tokenizer {meta['tokenizer_sha256'][:15]}...")
    return summary, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+", help="ONNX files to check")
    args = parser.parse_args()
    failures = 0
    for path in args.models:
        summary, problems = check(path)
        if problems:
            failures += 1
            print(f"{summary}: FAILS the contract", file=sys.stderr)
            for problem in problems:
                print(f"  {os.path.basename(path)}: {problem}",
                      file=sys.stderr)
        else:
            print(f"{summary}: ok")
    print(f"{len(args.models) - failures} of {len(args.models)} models "
          f"follow the contract")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

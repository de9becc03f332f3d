"""Writes a copy of an ONNX model that breaks the contract in one way.

  break_model.py MODE IN OUT
  MODE: no-tokenizer   drop the tokenizer fingerprint from metadata_props
        no-hidden      rename the hidden_states output
        truncate       keep only the first half of the file's bytes
        extra-input    add an input the contract does not name (unused)
        static-cache   give past_key_values.0.key a static sequence length
        bad-vocab      make vocab_size not an integer
"""
import sys

import onnx

mode, source, dest = sys.argv[1:]
if mode == "truncate":
    data = open(source, "rb").read()
    open(dest, "wb").write(data[:len(data) // 2])
    sys.exit(0)
model = onnx.load(source)
if mode == "no-tokenizer":
    kept = [p for p in model.metadata_props if p.key != "tokenizer_sha256"]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
elif mode == "no-hidden":
    for node in model.graph.node:
        node.output[:] = ["hidden" if o == "hidden_states" else o
                          for o in node.output]
        node.input[:] = ["hidden" if i == "hidden_states" else i
                         for i in node.input]
    for output in model.graph.output:
        if output.name == "hidden_states":
            output.name = "hidden"
elif mode == "extra-input":
    model.graph.input.append(onnx.helper.make_tensor_value_info(
        "token_type_ids", onnx.TensorProto.INT64, ["batch", "sequence"]))
elif mode == "static-cache":
    for value in model.graph.input:
        if value.name == "past_key_values.0.key":
            value.type.tensor_type.shape.dim[2].dim_value = 7
elif mode == "bad-vocab":
    for prop in model.metadata_props:
        if prop.key == "vocab_size":
            prop.value = "259x"
else:
    sys.exit(f"unknown mode {mode}")
onnx.save(model, dest)

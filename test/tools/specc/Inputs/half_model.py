"""Writes a half-precision export of an ONNX model, in one of two forms
exporters produce: float16, every float32 tensor stored as float16
(initializers, constants, inputs, outputs and casts: a model run in
half precision), or bfloat16-weights, the weight matrices (what MatMul
multiplies by) stored as bfloat16 and cast to float32 where they are used
(ONNX's Cos and Sin take no bfloat16).

    python3 half_model.py source.onnx destination.onnx [float16|bfloat16-weights]
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def to_half(tensor, kind):
    """`tensor` (float32) as a TensorProto of `kind`."""
    value = numpy_helper.to_array(tensor)
    if kind == TensorProto.FLOAT16:
        half = numpy_helper.from_array(value.astype(np.float16), tensor.name)
    else:  # bfloat16: the upper 16 bits, rounded to nearest even
        bits = value.astype(np.float32).view(np.uint32)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        half = helper.make_tensor(tensor.name, TensorProto.BFLOAT16,
                                  value.shape, rounded.tobytes(), raw=True)
    return half


def bfloat16_weights(graph):
    """Stores the float32 weight matrices as bfloat16, cast back where
    used."""
    matrices = {name for node in graph.node if node.op_type == "MatMul"
                for name in node.input}
    casts = []
    for i, init in enumerate(graph.initializer):
        if init.data_type == TensorProto.FLOAT and init.name in matrices:
            name = init.name
            graph.initializer[i].CopyFrom(to_half(init, TensorProto.BFLOAT16))
            graph.initializer[i].name = name + ".bf16"
            casts.append(helper.make_node("Cast", [name + ".bf16"], [name],
                                          to=TensorProto.FLOAT))
    nodes = casts + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)


def main(source, destination, kind_name="float16"):
    model = onnx.load(source)
    graph = model.graph
    if kind_name == "bfloat16-weights":
        bfloat16_weights(graph)
        onnx.checker.check_model(model)
        onnx.save(model, destination)
        return
    kind = TensorProto.FLOAT16
    for i, init in enumerate(graph.initializer):
        if init.data_type == TensorProto.FLOAT:
            graph.initializer[i].CopyFrom(to_half(init, kind))
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and \
                    attr.t.data_type == TensorProto.FLOAT:
                attr.t.CopyFrom(to_half(attr.t, kind))
            if node.op_type == "Cast" and attr.name == "to" and \
                    attr.i == TensorProto.FLOAT:
                attr.i = kind
    for value in list(graph.input) + list(graph.output) + \
            list(graph.value_info):
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            value.type.tensor_type.elem_type = kind
    onnx.checker.check_model(model)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.save(model, destination)


if __name__ == "__main__":
    main(*sys.argv[1:])

"""Writes malformed ONNX models that crashed libonnx's shape inference (or
would mislead the importer) when loaded unchecked; each must be refused with
a message instead.

usage: make_malformed.py OUTDIR
"""

import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper


def save(graph, name, opset=17):
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, os.path.join(sys.argv[1], name + ".onnx"))


def short_shape_tensor():
    # (a) Reshape's shape: an int64 tensor declared [2] with 8 bytes of data.
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1, 6])
    shape.raw_data = np.array([6], dtype=np.int64).tobytes()
    del shape.int64_data[:]
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        "short_shape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
        [shape])
    save(graph, "short-shape")


def short_typed_data():
    # The typed field with fewer values than the dims say.
    w = helper.make_tensor("w", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])
    del w.float_data[2:]
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        "short_typed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [w])
    save(graph, "short-typed")


def short_constant():
    # The same inside a Constant node's value attribute.
    value = helper.make_tensor("c", TensorProto.INT64, [3], [1, 2, 3])
    value.raw_data = b"\x01"
    del value.int64_data[:]
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["shape"], name="const", value=value),
         helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        "short_constant",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c"])])
    save(graph, "short-constant")


def negative_dim():
    w = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    w.dims[0] = -2
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        "negative_dim",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [w])
    save(graph, "negative-dim")


def huge_dims():
    # 2^31 x 2^31 x 2^31 elements: the byte count overflows 64 bits.
    w = helper.make_tensor("w", TensorProto.FLOAT, [1], [1.0])
    w.dims[:] = [2**31, 2**31, 2**31]
    graph = helper.make_graph(
        [helper.make_node("Identity", ["w"], ["y"], name="id")],
        "huge_dims", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c"])],
        [w])
    save(graph, "huge-dims")


def huge_dim_beside_zero():
    # Found by the ONNX fuzzer's structure-aware mutator: no elements (one
    # dim is 0), but a dim near 2^63, which a Concat of the tensor with
    # itself doubled into a negative size.
    e = helper.make_tensor("e", TensorProto.FLOAT, [0], [])
    e.dims[:] = [2, 0, 2**62]
    graph = helper.make_graph(
        [helper.make_node("Concat", ["e", "e"], ["y"], name="concat", axis=2)],
        "huge_dim_beside_zero", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c"])],
        [e])
    save(graph, "huge-dim-beside-zero")


def layernorm_axis():
    # (b) LayerNormalization with its Mean and InvStdDev outputs and an axis
    # below -rank.
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [4], [1.0] * 4)
    graph = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "scale"],
                          ["y", "mean", "inv"], name="ln", axis=-3)],
        "layernorm_axis",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["p"]),
         helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["a"]),
         helper.make_tensor_value_info("inv", TensorProto.FLOAT, ["a"])],
        [scale])
    save(graph, "layernorm-axis")


def layernorm_sparse_input():
    # The same node with its statistics outputs on a sparse-tensor graph
    # input (onnx-import-fuzzer): libonnx's inference reads the tensor type
    # it does not have.
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [4], [1.0] * 4)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    sparse = x.type.sparse_tensor_type
    sparse.elem_type = TensorProto.FLOAT
    sparse.shape.CopyFrom(x.type.tensor_type.shape)
    x.type.ClearField("tensor_type")
    x.type.sparse_tensor_type.CopyFrom(sparse)
    graph = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "scale"],
                          ["y", "mean"], name="ln")],
        "layernorm_sparse_input", [x],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["p"]),
         helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["a"])],
        [scale])
    save(graph, "layernorm-sparse-input")


def shape_of_failed():
    # (c) Shape of a value whose inference failed (Gather's axis 5 on a
    # rank-3 input).
    idx = helper.make_tensor("idx", TensorProto.INT64, [1], [0])
    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "idx"], ["g"], name="gather", axis=5),
         helper.make_node("Shape", ["g"], ["y"], name="shape")],
        "shape_of_failed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["n"])],
        [idx])
    save(graph, "shape-of-failed")


def declared_dims(name, *dims):
    # A LayerNormalization whose scale (a graph input) is declared with
    # dims that no tensor has.
    graph = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "scale"], ["y"],
                          name="ln", axis=-1)],
        "declared_dims",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("scale", TensorProto.FLOAT, list(dims))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    save(graph, name)


def slice_many_starts():
    # Slice's starts declared with 100,000 elements on rank-2 data (import
    # cost grew with the declared length).
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "starts", "ends"], ["y"],
                          name="slice")],
        "slice_many_starts",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("starts", TensorProto.INT64, [100000]),
         helper.make_tensor_value_info("ends", TensorProto.INT64, [100000])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])])
    save(graph, "slice-many-starts")


def slice_scalar_starts():
    # Slice's starts of rank 0 (found by onnx-import-fuzzer: the importer
    # read its first dim).
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "starts", "ends"], ["y"],
                          name="slice")],
        "slice_scalar_starts",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("starts", TensorProto.INT64, []),
         helper.make_tensor_value_info("ends", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])])
    save(graph, "slice-scalar-starts")


def gather_scalar_data():
    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["y"], name="gather")],
        "gather_scalar_data",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("i", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a"])])
    save(graph, "gather-scalar-data")


def slice_zero_step():
    # Slice with steps given at run time (0, which ONNX forbids) and a
    # dynamic output: the compiled division by the step trapped (SIGFPE).
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"],
                          ["y"], name="slice")],
        "slice_zero_step",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8]),
         helper.make_tensor_value_info("steps", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor("starts", TensorProto.INT64, [1], [1]),
         helper.make_tensor("ends", TensorProto.INT64, [1], [5]),
         helper.make_tensor("axes", TensorProto.INT64, [1], [0])])
    save(graph, "slice-zero-step")
    for name, array in (("x", np.arange(8, dtype=np.float32)),
                        ("steps", np.array([0], dtype=np.int64))):
        tensor = onnx.numpy_helper.from_array(array, name)
        with open(os.path.join(sys.argv[1], "slice-zero-step-%s.pb" % name),
                  "wb") as f:
            f.write(tensor.SerializeToString())


def transpose_negative_perm():
    # Found by mutating the example target's attributes: a perm holding -1
    # where libonnx's inference does not check it (SIGSEGV).
    here = os.path.dirname(os.path.abspath(__file__))
    model = onnx.load(os.path.join(here, "..", "..", "..", "..", "models",
                                   "target.onnx"))
    node = next(n for n in model.graph.node if n.op_type == "Transpose")
    perm = next(a for a in node.attribute if a.name == "perm")
    perm.ints[0] = -1
    onnx.save(model, os.path.join(sys.argv[1], "transpose-negative-perm.onnx"))


def reshape_huge_shape():
    # Found by mutating the example target's constants: a Reshape to
    # [2.6e18] made a later node's shape inference add 2.6e18 dimensions
    # (minutes of allocations).
    here = os.path.dirname(os.path.abspath(__file__))
    model = onnx.load(os.path.join(here, "..", "..", "..", "..", "models",
                                   "target.onnx"))
    reshape = next(n for n in model.graph.node
                   if n.name == "/layers.0/attn/Reshape_3")
    constant = next(n for n in model.graph.node
                    if n.op_type == "Constant" and n.output[0] == reshape.input[1])
    value = constant.attribute[0].t
    shape = onnx.numpy_helper.to_array(value).copy()
    shape[0] = 2600000000000000000
    value.CopyFrom(onnx.numpy_helper.from_array(shape, value.name))
    onnx.save(model, os.path.join(sys.argv[1], "reshape-huge-shape.onnx"))


def reshape_other_count():
    # A constant shape of 7 elements for 6: refused at the node, not passed
    # on as IR that does not verify.
    shape = helper.make_node(
        "Constant", [], ["shape"], name="shape",
        value=helper.make_tensor("v", TensorProto.INT64, [2], [7, 1]))
    graph = helper.make_graph(
        [shape, helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        "reshape_other_count",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])])
    save(graph, "reshape-other-count")


def future_opset():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "future",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    save(graph, "opset-99", opset=99)


os.makedirs(sys.argv[1], exist_ok=True)
declared_dims("declared-negative", -2)
declared_dims("declared-2p31", 2**31)
declared_dims("declared-2p40", 2**40)
declared_dims("declared-huge-beside-zero", 0, 2**62)
declared_dims("declared-2p60-elements", 2**30, 2**30)
for make in (short_shape_tensor, short_typed_data, short_constant,
             negative_dim, huge_dims, huge_dim_beside_zero, layernorm_axis,
             layernorm_sparse_input,
             shape_of_failed,
             slice_many_starts, slice_scalar_starts, gather_scalar_data,
             slice_zero_step, transpose_negative_perm, reshape_huge_shape,
             reshape_other_count, future_opset):
    make()

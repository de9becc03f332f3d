"""Writes binary ONNX models for the importer's tests.

  make_binary.py OUT_DIR

OUT_DIR/linear.onnx         y = x @ w + b, w (4x3) and b inline
OUT_DIR/external.onnx       the same with w and b in OUT_DIR/weights.bin
OUT_DIR/truncated.onnx      linear.onnx cut in half
OUT_DIR/no-weights.onnx     external.onnx whose weights file is missing
OUT_DIR/escape/*.onnx       external data locations that are refused
OUT_DIR/x.pb, OUT_DIR/y.pb  an input and the output numpy computes for it
OUT_DIR/x3.pb               an input of the wrong width
OUT_DIR/claims-<rows>.onnx  linear.onnx whose output claims <rows> rows
                            (2, 2^31, 2^40) whatever the input's
OUT_DIR/x1.pb               a one-row input
OUT_DIR/strided.onnx        y = x[:, ::step] with the step an input
OUT_DIR/step2.pb            a step of 2
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w")
b = numpy_helper.from_array(np.array([0.5, -0.5, 1.0], dtype=np.float32), "b")
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w"], ["xw"], name="matmul"),
     helper.make_node("Add", ["xw", "b"], ["y"], name="bias")],
    "linear",
    [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 3])],
    initializer=[w, b])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, os.path.join(out, "linear.onnx"))
for rows in (2, 2**31, 2**40):
    claims = onnx.ModelProto()
    claims.CopyFrom(model)
    claims.graph.output[0].type.tensor_type.shape.dim[0].dim_value = rows
    onnx.save(claims, os.path.join(out, "claims-%d.onnx" % rows))
data = open(os.path.join(out, "linear.onnx"), "rb").read()
open(os.path.join(out, "truncated.onnx"), "wb").write(data[:len(data) // 2])

onnx.save_model(model, os.path.join(out, "external.onnx"),
                save_as_external_data=True, all_tensors_to_one_file=True,
                location="weights.bin", size_threshold=0)
missing = os.path.join(out, "missing")
os.makedirs(missing, exist_ok=True)
external = onnx.load(os.path.join(out, "external.onnx"), load_external_data=False)
onnx.save(external, os.path.join(missing, "no-weights.onnx"))

# External data that points out of the model's directory, or at what is not
# a regular file, or with a malformed offset: all refused.
escape = os.path.join(out, "escape")
os.makedirs(os.path.join(escape, "folder"), exist_ok=True)
if not os.path.lexists(os.path.join(escape, "link.bin")):
    os.symlink(os.path.join(out, "weights.bin"),
               os.path.join(escape, "link.bin"))


def with_external(name, **entries):
    broken = onnx.ModelProto()
    broken.CopyFrom(external)
    for key, value in entries.items():
        for entry in broken.graph.initializer[0].external_data:
            if entry.key == key:
                entry.value = value
    onnx.save(broken, os.path.join(escape, name))


with_external("dotdot.onnx", location="../weights.bin")
with_external("absolute.onnx",
              location=os.path.abspath(os.path.join(out, "weights.bin")))
with_external("symlink.onnx", location="link.bin")
with_external("directory.onnx", location="folder")
with_external("bad-offset.onnx", offset="12abc")

x = np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(2, 4)
with open(os.path.join(out, "x.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())
y = x @ numpy_helper.to_array(w) + numpy_helper.to_array(b)
with open(os.path.join(out, "y.pb"), "wb") as f:
    f.write(numpy_helper.from_array(y.astype(np.float32), "y").SerializeToString())
with open(os.path.join(out, "x3.pb"), "wb") as f:
    f.write(numpy_helper.from_array(np.zeros((2, 3), np.float32), "x").SerializeToString())
with open(os.path.join(out, "x1.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x[:1], "x").SerializeToString())

strided = helper.make_graph(
    [helper.make_node("Slice", ["x", "zero", "end", "one", "step"], ["y"])],
    "strided",
    [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 4]),
     helper.make_tensor_value_info("step", onnx.TensorProto.INT64, [1])],
    [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", "M"])],
    initializer=[numpy_helper.from_array(np.array([v], np.int64), name)
                 for name, v in (("zero", 0), ("end", 4), ("one", 1))])
strided_model = helper.make_model(strided,
                                  opset_imports=[helper.make_opsetid("", 17)])
strided_model.ir_version = 8
onnx.save(strided_model, os.path.join(out, "strided.onnx"))
with open(os.path.join(out, "step2.pb"), "wb") as f:
    f.write(numpy_helper.from_array(np.array([2], np.int64),
                                    "step").SerializeToString())

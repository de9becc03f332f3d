"""Exports, with torch.onnx.export, grouped-query attention's repetition of
keys and values by `repeat_interleave` (dim 1, a dynamic sequence axis), and
writes inputs for it in the ONNX test-data format.

  export_repeat_interleave.py OUT.onnx INPUT_DIR SEQ...

INPUT_DIR/seq_N.pb holds a [1, 2, N, 4] input for each SEQ. torch 1.13's
export builds Expand's shape operand from Split, Concat and Where(Equal(shape,
-1), 1, shape) and reshapes with [1, -1, 0, 4], which is not what torch
computes when N != 2 (ONNX Runtime agrees with the ONNX graph, not torch);
the test compares with ONNX Runtime, which runs the graph as written.
"""
import os
import sys

import numpy as np
import torch
from onnx import numpy_helper


class RepeatKeys(torch.nn.Module):
    def forward(self, k):
        return k.repeat_interleave(2, dim=1) * 2.0


def main():
    out, input_dir, seqs = sys.argv[1], sys.argv[2], sys.argv[3:]
    torch.onnx.export(RepeatKeys(), (torch.zeros(1, 2, 5, 4),), out,
                      input_names=["k"], output_names=["y"],
                      dynamic_axes={"k": {2: "s"}, "y": {2: "s"}},
                      opset_version=17)
    os.makedirs(input_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    for seq in seqs:
        k = rng.standard_normal((1, 2, int(seq), 4)).astype(np.float32)
        with open(os.path.join(input_dir, f"seq_{seq}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(k, "k").SerializeToString())


if __name__ == "__main__":
    main()

// REQUIRES: ptxas
// RUN: spec-opt %S/spec-to-cuda.mlir --spec-to-cuda -o %t.sm90.mlir
// RUN: %python %S/Inputs/check_ptx.py %t.sm90.mlir --ptxas %ptxas --arch sm_90 --expect-version 7.8 | FileCheck %s --check-prefix=SM90
// RUN: spec-opt %S/spec-to-cuda.mlir --pass-pipeline='builtin.module(spec-to-cuda{chip=sm_80})' -o %t.sm80.mlir
// RUN: %python %S/Inputs/check_ptx.py %t.sm80.mlir --ptxas %ptxas --arch sm_80 --expect-version 7.0 | FileCheck %s --check-prefix=SM80
// RUN: not %python %S/Inputs/check_ptx.py %t.sm90.mlir --ptxas %ptxas --arch sm_80 2>&1 | FileCheck %s --check-prefix=OLDER

// Every kernel spec-to-cuda emits is PTX the CUDA toolkit's assembler
// accepts for the chip it was compiled for (the example decoders' kernels
// are checked in test/tools/specc/cuda-artifact.test); PTX for sm_90 is
// refused for an older chip.

// SM90: {{[1-9][0-9]*}} kernel modules pass ptxas -arch=sm_90
// SM80: {{[1-9][0-9]*}} kernel modules pass ptxas -arch=sm_80
// OLDER: error: ptxas -arch=sm_80 rejects

// RUN: spec-opt %s --spec-externalize-weights='path=%t.bin' -split-input-file -verify-diagnostics
// RUN: not spec-opt %s --spec-externalize-weights -split-input-file 2>&1 | FileCheck %s --check-prefix=NOPATH
// RUN: not spec-opt %s --spec-externalize-weights='path=%t.missing/dir/w.bin' -split-input-file 2>&1 | FileCheck %s --check-prefix=UNWRITABLE

// NOPATH: error: spec-externalize-weights needs path=<weights file>
// UNWRITABLE: error: cannot write the weights file: {{.*}}No such file or directory

// A resource whose data was elided (printed with --elide-resource-strings)
// cannot be written.
// expected-error @below {{the data of resource '__elided__' is missing (elided?); cannot write it to the weights file}}
llvm.mlir.global private constant @elided(dense_resource<__elided__> : tensor<1024xf32>) {addr_space = 0 : i32} : !llvm.array<1024 x f32>

// -----

// Running the pass twice would point code at a base the first run owns.
// expected-error @below {{the module already defines @spec_weights_base (weights externalized twice?)}}
module {
  llvm.mlir.global external @spec_weights_base() {addr_space = 0 : i32} : !llvm.ptr {
    %0 = llvm.mlir.zero : !llvm.ptr
    llvm.return %0 : !llvm.ptr
  }
}

// -----

// Nothing wrong here: the UNWRITABLE run fails on this split's file.
llvm.mlir.global private constant @weights(dense<1.0> : tensor<4xf32>) {addr_space = 0 : i32} : !llvm.array<4 x f32>

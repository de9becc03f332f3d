// RUN: spec-opt %s --spec-to-cpu | FileCheck %s
// RUN: spec-opt %s --spec-to-cpu | FileCheck %s --check-prefix=NOSPEC
// RUN: spec-opt %s --spec-to-cpu=capacity=16 | FileCheck %s --check-prefix=CAPACITY
// RUN: spec-opt %s --spec-to-cpu='weights-file=%t.bin min-weight-bytes=16' | FileCheck %s --check-prefix=WEIGHTS
// RUN: spec-opt %s --spec-to-cpu=runtime-allocator=false | FileCheck %s --check-prefix=MALLOC
// RUN: spec-opt %s --spec-to-cpu='line-tables=%t.lines.mlir' --mlir-print-debuginfo | FileCheck %s --check-prefix=LINES
// RUN: FileCheck %s --check-prefix=SNAPSHOT < %t.lines.mlir
// RUN: spec-opt %s --spec-to-cpu --mlir-print-debuginfo | FileCheck %s --check-prefix=NOLINES

// The spec-to-cpu pipeline takes a composition as specc builds it (a target
// and a draft with functional caches) to the LLVM dialect: the models with
// in-place caches, the speculative and target-only decode loops.

func.func @target(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                  %pos: tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                  %past_k: tensor<?x1x?x4xf32> {spec.io = #spec.io<past_key, index = 0>},
                  %past_v: tensor<?x1x?x4xf32> {spec.io = #spec.io<past_value, index = 0>})
    -> (tensor<?x?x8xf32> {spec.io = #spec.io<logits>},
        tensor<?x1x?x4xf32> {spec.io = #spec.io<present_key, index = 0>},
        tensor<?x1x?x4xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 8, eos_token_id = 7, max_context = 64>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %ids, %c0 : tensor<?x?xi64>
  %s = tensor.dim %ids, %c1 : tensor<?x?xi64>
  %new = tensor.empty(%b, %s) : tensor<?x1x?x4xf32>
  %k = tensor.concat dim(2) %past_k, %new : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %v = tensor.concat dim(2) %past_v, %new : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %logits = tensor.empty(%b, %s) : tensor<?x?x8xf32>
  return %logits, %k, %v : tensor<?x?x8xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>
}

func.func @draft(%ids: tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                 %pos: tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                 %past_k: tensor<?x1x?x4xf32> {spec.io = #spec.io<past_key, index = 0>},
                 %past_v: tensor<?x1x?x4xf32> {spec.io = #spec.io<past_value, index = 0>})
    -> (tensor<?x?x8xf32> {spec.io = #spec.io<logits>},
        tensor<?x1x?x4xf32> {spec.io = #spec.io<present_key, index = 0>},
        tensor<?x1x?x4xf32> {spec.io = #spec.io<present_value, index = 0>})
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 8, eos_token_id = 7, max_context = 64>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %ids, %c0 : tensor<?x?xi64>
  %s = tensor.dim %ids, %c1 : tensor<?x?xi64>
  %new = tensor.empty(%b, %s) : tensor<?x1x?x4xf32>
  %k = tensor.concat dim(2) %past_k, %new : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %v = tensor.concat dim(2) %past_v, %new : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %logits = tensor.empty(%b, %s) : tensor<?x?x8xf32>
  return %logits, %k, %v : tensor<?x?x8xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>
}

spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 3>) verify(#spec.greedy)

// CHECK-DAG: llvm.func @target(
// CHECK-DAG: llvm.func @draft(
// The decode loops are exported through MLIR's C interface and say how many
// positions their sequence buffer holds: max_context (64), or the capacity
// given.
// CHECK-DAG: llvm.func @decoder_generate({{.*}} attributes {llvm.emit_c_interface, spec.context_capacity = 64 : i64}
// CHECK-DAG: llvm.func @decoder_target_only({{.*}} attributes {llvm.emit_c_interface, spec.context_capacity = 64 : i64}
// CHECK-DAG: llvm.func @_mlir_ciface_decoder_generate(
// CHECK-DAG: llvm.mlir.constant(64 : index)
// CAPACITY-DAG: llvm.func @decoder_generate({{.*}}spec.context_capacity = 16 : i64
// CAPACITY-DAG: llvm.mlir.constant(16 : index)
// No spec op or type is left.
// NOSPEC-NOT: {{^ *spec\.|= spec\.|!spec\.}}

// Buffers come from the runtime's allocator unless asked otherwise.
// CHECK-DAG: llvm.call @_mlir_memref_to_llvm_alloc(
// MALLOC-NOT: _mlir_memref_to_llvm_alloc
// MALLOC: llvm.call @malloc(

// With a weights file, large constants are read from it.
// WEIGHTS: llvm.mlir.global external @spec_weights_base()
// CHECK-NOT: @spec_weights_base

// With line-tables, the IR as its loops are scheduled is written out and the
// LLVM functions get line tables whose lines are that file's ops: what a
// profiler of the compiled code reports time against.
// SNAPSHOT: func.func private @target(
// SNAPSHOT: func.func @decoder_generate(
// LINES-DAG: #di_file = #llvm.di_file<"{{.*}}.lines.mlir" in
// LINES-DAG: #di_compile_unit = #llvm.di_compile_unit<{{.*}}file = #di_file,{{.*}}emissionKind = LineTablesOnly>
// LINES-DAG: #di_subprogram{{[0-9]*}} = #llvm.di_subprogram<{{.*}}name = "decoder_generate"{{.*}}file = #di_file,
// LINES-DAG: loc("{{.*}}.lines.mlir":{{[0-9]+}}:{{[0-9]+}})
// NOLINES-NOT: di_subprogram

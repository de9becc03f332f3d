// RUN: spec-opt %s --spec-to-cuda -mlir-disable-threading -mlir-print-ir-after=convert-parallel-loops-to-gpu 2>&1 >/dev/null | FileCheck %s --check-prefix=LAUNCH
// RUN: spec-opt %s --spec-to-cuda -mlir-disable-threading -mlir-print-ir-after=convert-gpu-to-nvvm 2>&1 >/dev/null | FileCheck %s --check-prefix=NVVM
// RUN: spec-opt %s --spec-to-cuda | FileCheck %s
// RUN: spec-opt %s --pass-pipeline='builtin.module(spec-to-cuda{chip=sm_80 threads=64 capacity=16})' | FileCheck %s --check-prefix=SM80
// RUN: spec-opt %s --pass-pipeline='builtin.module(spec-to-cuda{weights-file=%t.bin})' | FileCheck %s --check-prefix=WEIGHTS
// RUN: spec-opt %s --pass-pipeline='builtin.module(spec-to-cuda{async-launches=false})' | FileCheck %s --check-prefix=SYNC
// RUN: not spec-opt %s --pass-pipeline='builtin.module(spec-to-cuda{threads=100})' 2>&1 | FileCheck %s --check-prefix=THREADS

// spec-to-cuda takes the same composition as spec-to-cpu. The device split:
// the models' linalg ops and copies become kernels (one thread per output,
// the innermost dimension across a block's threads), the decode loops'
// control stays on the host.

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

// LAUNCH: func.func private @target(
// LAUNCH: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}})
// LAUNCH: func.func @decoder_generate(
// LAUNCH: scf.while
// LAUNCH: gpu.launch

// Kernels are outlined into gpu.modules for the chip and lowered to NVVM.
// NVVM: gpu.module @{{.*}} [#nvvm.target<O = 3, chip = "sm_90">]
// NVVM: llvm.func @{{.*}}(%{{.*}}) attributes {gpu.kernel
// NVVM: nvvm.read.ptx.sreg.tid.x

// The result: host functions in the LLVM dialect that launch the kernels,
// buffers from the runtime's allocator, the kernels as embedded PTX.
// CHECK-DAG: llvm.func @decoder_generate({{.*}}attributes {llvm.emit_c_interface, spec.context_capacity = 64 : i64}
// CHECK-DAG: llvm.func @_mlir_ciface_decoder_target_only(
// CHECK-DAG: llvm.call @_mlir_memref_to_llvm_alloc(
// Launches are chained on one stream, synchronized where the host needs
// their results (spec-gpu-async-launches).
// CHECK-DAG: %[[S:.*]] = llvm.call @mgpuStreamCreate()
// CHECK-DAG: gpu.launch_func <%{{.*}} : !llvm.ptr> @{{.*}} blocks in
// CHECK-DAG: llvm.call @mgpuStreamSynchronize(
// CHECK-DAG: gpu.binary @{{.*}} [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, properties = {{.*}}, assembly = "{{.*}}.version 7.8{{.*}}.target sm_90
// CHECK-NOT: memrefCopy
// CHECK-NOT: gpu.module

// SM80-DAG: assembly = "{{.*}}.version 7.0{{.*}}.target sm_80
// SM80-DAG: llvm.func @decoder_generate({{.*}}spec.context_capacity = 16 : i64
// SM80-DAG: gpu.launch_func {{.*}} threads in (%{{.*}}, %{{.*}}, %{{.*}})
// SM80-DAG: llvm.mlir.constant(64 : index)

// With a weights file every constant moves there, splats included: kernels
// cannot read the host's globals.
// WEIGHTS: llvm.mlir.global external @spec_weights_base()
// WEIGHTS-NOT: llvm.mlir.global private constant

// Without async launches each launch synchronizes on its own.
// SYNC: gpu.launch_func @{{.*}} blocks in
// SYNC-NOT: mgpuStreamSynchronize

// THREADS: threads must be a multiple of 32 in [32, 1024], got 100

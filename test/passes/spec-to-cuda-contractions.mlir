// RUN: spec-opt %s --spec-to-cuda -mlir-disable-threading -mlir-print-ir-after=convert-parallel-loops-to-gpu 2>&1 >/dev/null | FileCheck %s --check-prefix=TILES
// RUN: spec-opt %s --pass-pipeline='builtin.module(spec-to-cuda{split-min-bytes=0})' -mlir-disable-threading -mlir-print-ir-after=convert-parallel-loops-to-gpu 2>&1 >/dev/null | FileCheck %s --check-prefix=SPLIT
// RUN: spec-opt %s --pass-pipeline='builtin.module(spec-to-cuda{contractions=false})' -mlir-disable-threading -mlir-print-ir-after=convert-parallel-loops-to-gpu 2>&1 >/dev/null | FileCheck %s --check-prefix=OFF
// RUN: spec-opt %s --spec-to-cuda | FileCheck %s --check-prefix=PTX

// The models' output heads as spec-to-cuda schedules them: logits =
// hidden x w, with w a [64, 8] constant that every row of a forward reads.

// By default (spec-gpu-contractions) a thread computes 4 columns of a tile
// of rows: one 16-byte load of w per step of the reduction serves every row
// of the tile. w is 2 KiB, under split-min-bytes: the reduction is not split.
// TILES-LABEL: func.func private @target(
// TILES: %[[W:.*]] = memref.get_global @__constant_0 : memref<64x8xf32>
// TILES-NOT: memref<2x?x?x8xf32>
// TILES: gpu.launch
// TILES: %[[VEC:.*]] = vector.load %[[W]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<64x8xf32>, vector<4xf32>
// TILES: vector.fma %{{.*}}, %[[VEC]], %{{.*}} : vector<4xf32>
// TILES-NOT: memref<2x?x?x8xf32>
// TILES: return

// split-min-bytes=0: every weight is large enough to split; the reduction of
// 64 becomes 2 slices of 32 steps, each into its own partial sums, added to
// the logits in slice order by a second kernel.
// SPLIT-LABEL: func.func private @target(
// SPLIT: %[[W:.*]] = memref.get_global @__constant_0 : memref<64x8xf32>
// SPLIT: %[[PARTIALS:.*]] = memref.alloc(%{{.*}}, %{{.*}}) {alignment = 64 : i64} : memref<2x?x?x8xf32>
// SPLIT: gpu.launch
// SPLIT: vector.load %[[W]]
// SPLIT: vector.store %{{.*}}, %[[PARTIALS]]
// SPLIT: gpu.launch
// SPLIT: memref.load %[[PARTIALS]]
// SPLIT: memref.dealloc %[[PARTIALS]]

// contractions=false: one thread per output, reading w one element at a
// time.
// OFF-LABEL: func.func private @target(
// OFF: %[[W:.*]] = memref.get_global @__constant_0 : memref<64x8xf32>
// OFF-NOT: vector.
// OFF: gpu.launch
// OFF-NOT: vector.
// OFF: memref.load %[[W]]
// OFF-NOT: vector.
// OFF: return

// The tiles' loads are 128-bit loads in the PTX.
// PTX: gpu.binary @{{.*}}ld.global.v4.b32

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
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]> : tensor<64x8xf32>
  %hidden_init = tensor.empty(%b, %s) : tensor<?x?x64xf32>
  %hidden = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<?x?xi64>) outs(%hidden_init : tensor<?x?x64xf32>) {
  ^bb0(%id: i64, %h: f32):
    %f = arith.sitofp %id : i64 to f32
    linalg.yield %f : f32
  } -> tensor<?x?x64xf32>
  %logits_init = tensor.empty(%b, %s) : tensor<?x?x8xf32>
  %logits_zero = linalg.fill ins(%zero : f32) outs(%logits_init : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %logits = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%hidden, %w : tensor<?x?x64xf32>, tensor<64x8xf32>) outs(%logits_zero : tensor<?x?x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %o: f32):
    %p = arith.mulf %in, %in_1 : f32
    %a = arith.addf %o, %p : f32
    linalg.yield %a : f32
  } -> tensor<?x?x8xf32>
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
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]> : tensor<64x8xf32>
  %hidden_init = tensor.empty(%b, %s) : tensor<?x?x64xf32>
  %hidden = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<?x?xi64>) outs(%hidden_init : tensor<?x?x64xf32>) {
  ^bb0(%id: i64, %h: f32):
    %f = arith.sitofp %id : i64 to f32
    linalg.yield %f : f32
  } -> tensor<?x?x64xf32>
  %logits_init = tensor.empty(%b, %s) : tensor<?x?x8xf32>
  %logits_zero = linalg.fill ins(%zero : f32) outs(%logits_init : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %logits = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%hidden, %w : tensor<?x?x64xf32>, tensor<64x8xf32>) outs(%logits_zero : tensor<?x?x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %o: f32):
    %p = arith.mulf %in, %in_1 : f32
    %a = arith.addf %o, %p : f32
    linalg.yield %a : f32
  } -> tensor<?x?x8xf32>
  return %logits, %k, %v : tensor<?x?x8xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>
}

spec.decoder @decoder target(@target) proposer(#spec.draft<@draft, gamma = 3>) verify(#spec.greedy)

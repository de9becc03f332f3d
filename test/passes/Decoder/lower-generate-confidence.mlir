// RUN: spec-opt %s --spec-lower-generate | FileCheck %s

// A draft whose drafting stops at the first token it gives a probability
// below 0.25 (#spec.draft's min_confidence): the round verifies only what
// was proposed.

func.func private @target(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                          tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                          !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>},
                          index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<2x2x64x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 16, eos_token_id = 15>}
func.func private @draft(tensor<?x?xi64> {spec.io = #spec.io<token_ids>},
                         tensor<?x?xi64> {spec.io = #spec.io<position_ids>},
                         !spec.kv_cache<1x1x32x8xf32> {spec.io = #spec.io<kv_cache>},
                         index {spec.io = #spec.io<past_length>})
    -> (tensor<?x?x16xf32> {spec.io = #spec.io<logits>},
        !spec.kv_cache<1x1x32x8xf32> {spec.io = #spec.io<kv_cache>})
    attributes {spec.role = #spec.role<draft>}

spec.decoder @stopping target(@target) proposer(#spec.draft<@draft, gamma = 3, min_confidence = 0.25>) verify(#spec.greedy)

// The proposals start as -1, a token no argmax is; the gamma steps carry
// whether drafting goes on and how many tokens it proposed.
// CHECK-LABEL: func.func @stopping_generate(
// CHECK: %[[NONE:.*]] = linalg.fill ins(%c-1_i64 : i64) outs(%{{.*}} : tensor<3xi64>) -> tensor<3xi64>
// CHECK: %[[STEPS:.*]]:7 = scf.for %[[K:[^ ]*]] = {{.*}} iter_args({{.*}} = %[[NONE]], {{.*}}, %[[ACTIVE:[^ ]*]] = %true, %[[MADE:[^ ]*]] = %{{.*}}) -> (!spec.kv_cache<1x1x32x8xf32>, index, tensor<3xi64>, tensor<3x16xf32>, i64, i1, index) {
// CHECK-NEXT: scf.if %[[ACTIVE]] -> (!spec.kv_cache<1x1x32x8xf32>, index, tensor<3xi64>, tensor<3x16xf32>, i64, i1, index) {
// CHECK: func.call @draft(
// CHECK: %[[TOKEN:.*]] = tensor.extract %{{.*}} : tensor<1xi64>
// The draft's probability of its token, sum(exp(l - l_token)) <= 1 / 0.25.
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "reduction"]
// CHECK: math.exp
// CHECK: %[[BOUND:.*]] = arith.constant 4.000000e+00 : f32
// CHECK: %[[SURE:.*]] = arith.cmpf ole, %{{.*}}, %[[BOUND]] : f32
// CHECK: %[[PROPOSED:.*]] = arith.select %[[SURE]], %[[TOKEN]], %c-1_i64{{.*}} : i64
// CHECK: tensor.insert %[[PROPOSED]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[K]], %{{.*}} : index
// CHECK: %[[COUNT:.*]] = arith.select %[[SURE]], %[[NEXT]], %[[MADE]] : index
// CHECK: scf.yield {{.*}}, %[[SURE]], %[[COUNT]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield
// The forward verifies last + the proposed tokens; its rows fill the first
// of 4 zero rows that spec.accept reads.
// CHECK: %[[ROWS:.*]] = arith.addi %[[STEPS]]#6, %{{.*}} : index
// CHECK: tensor.extract_slice %{{.*}}[0] [%[[ROWS]]] [1] : tensor<4xi64> to tensor<?xi64>
// CHECK: spec.verify @target(
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [%[[ROWS]], 16] [1, 1] : tensor<?x16xf32> into tensor<4x16xf32>
// CHECK: spec.accept

// A speculative decoder pairing a target with an external draft, in the
// spec dialect. Both models are small byte-level language models (259 tokens:
// 256 bytes + BOS/EOS/PAD) written in upstream linalg: an embedding lookup,
// one hidden projection with SiLU, and an output projection. Weights are
// splat constants to keep the file short; imported ONNX models carry real
// ones.
//
//   spec-opt examples/draft-decoder.mlir --spec-choose-gamma
//
// picks how many tokens the draft proposes per step from the models' weight
// bytes and the acceptance rate below, and explains its choice in a remark.

#embed_map = affine_map<(i, d) -> (i)>
#row_map = affine_map<(i, d) -> (i, d)>

func.func @target(%ids: tensor<?xi64>) -> tensor<?x259xf32>
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 259,
                    bos_token_id = 256, eos_token_id = 257, pad_token_id = 258,
                    max_context = 512, tokenizer = "bytes-v1">} {
  %embedding = arith.constant dense<0.01> : tensor<259x256xf32>
  %hidden_w = arith.constant dense<0.02> : tensor<256x256xf32>
  %output_w = arith.constant dense<0.03> : tensor<256x259xf32>
  %h = func.call @embed_256(%ids, %embedding)
      : (tensor<?xi64>, tensor<259x256xf32>) -> tensor<?x256xf32>
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %ids, %c0 : tensor<?xi64>
  %hidden_init = tensor.empty(%n) : tensor<?x256xf32>
  %hidden_acc = linalg.fill ins(%zero : f32) outs(%hidden_init : tensor<?x256xf32>) -> tensor<?x256xf32>
  %proj = linalg.matmul ins(%h, %hidden_w : tensor<?x256xf32>, tensor<256x256xf32>)
                        outs(%hidden_acc : tensor<?x256xf32>) -> tensor<?x256xf32>
  %act = linalg.generic {indexing_maps = [#row_map, #row_map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%proj : tensor<?x256xf32>) outs(%hidden_init : tensor<?x256xf32>) {
  ^bb0(%x: f32, %out: f32):
    // SiLU: x * sigmoid(x)
    %neg = arith.negf %x : f32
    %exp = math.exp %neg : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %exp : f32
    %y = arith.divf %x, %den : f32
    linalg.yield %y : f32
  } -> tensor<?x256xf32>
  %logits_init = tensor.empty(%n) : tensor<?x259xf32>
  %logits_acc = linalg.fill ins(%zero : f32) outs(%logits_init : tensor<?x259xf32>) -> tensor<?x259xf32>
  %logits = linalg.matmul ins(%act, %output_w : tensor<?x256xf32>, tensor<256x259xf32>)
                          outs(%logits_acc : tensor<?x259xf32>) -> tensor<?x259xf32>
  return %logits : tensor<?x259xf32>
}

func.func @draft(%ids: tensor<?xi64>) -> tensor<?x259xf32>
    attributes {spec.role = #spec.role<draft>,
                spec.config = #spec.model_config<vocab_size = 259,
                    bos_token_id = 256, eos_token_id = 257, pad_token_id = 258,
                    max_context = 512, tokenizer = "bytes-v1">} {
  %embedding = arith.constant dense<0.01> : tensor<259x64xf32>
  %output_w = arith.constant dense<0.03> : tensor<64x259xf32>
  %h = func.call @embed_64(%ids, %embedding)
      : (tensor<?xi64>, tensor<259x64xf32>) -> tensor<?x64xf32>
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %ids, %c0 : tensor<?xi64>
  %logits_init = tensor.empty(%n) : tensor<?x259xf32>
  %logits_acc = linalg.fill ins(%zero : f32) outs(%logits_init : tensor<?x259xf32>) -> tensor<?x259xf32>
  %logits = linalg.matmul ins(%h, %output_w : tensor<?x64xf32>, tensor<64x259xf32>)
                          outs(%logits_acc : tensor<?x259xf32>) -> tensor<?x259xf32>
  return %logits : tensor<?x259xf32>
}

// Embedding lookup: row ids[i] of the table.
func.func private @embed_256(%ids: tensor<?xi64>, %table: tensor<259x256xf32>)
    -> tensor<?x256xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %ids, %c0 : tensor<?xi64>
  %init = tensor.empty(%n) : tensor<?x256xf32>
  %rows = linalg.generic {indexing_maps = [#embed_map, #row_map],
                          iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<?xi64>) outs(%init : tensor<?x256xf32>) {
  ^bb0(%id: i64, %out: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<259x256xf32>
    linalg.yield %v : f32
  } -> tensor<?x256xf32>
  return %rows : tensor<?x256xf32>
}

func.func private @embed_64(%ids: tensor<?xi64>, %table: tensor<259x64xf32>)
    -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %ids, %c0 : tensor<?xi64>
  %init = tensor.empty(%n) : tensor<?x64xf32>
  %rows = linalg.generic {indexing_maps = [#embed_map, #row_map],
                          iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<?xi64>) outs(%init : tensor<?x64xf32>) {
  ^bb0(%id: i64, %out: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<259x64xf32>
    linalg.yield %v : f32
  } -> tensor<?x64xf32>
  return %rows : tensor<?x64xf32>
}

// Greedy verification: the output is exactly the target's greedy decoding.
// The acceptance rate is the draft's measured per-token agreement.
spec.decoder @decoder target(@target)
    proposer(#spec.draft<@draft, gamma = 1>) verify(#spec.greedy)
    {acceptance_rate = 0.7}

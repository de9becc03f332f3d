// A speculative decoder whose proposals come from Medusa-style heads on the
// target's last hidden state. The target returns its logits and its hidden
// states; each head maps a hidden state to logits for one position further
// ahead. `spec-fuse-mtp-heads` will fuse the heads into the target's forward.
// Weights are splat constants to keep the file short.
//
//   spec-opt examples/mtp-decoder.mlir

#row_map = affine_map<(i, d) -> (i, d)>
#embed_map = affine_map<(i, d) -> (i)>

func.func @target(%ids: tensor<?xi64>) -> (tensor<?x259xf32>, tensor<?x128xf32>)
    attributes {spec.role = #spec.role<target>,
                spec.config = #spec.model_config<vocab_size = 259,
                    bos_token_id = 256, eos_token_id = 257, pad_token_id = 258,
                    max_context = 512, tokenizer = "bytes-v1">} {
  %embedding = arith.constant dense<0.01> : tensor<259x128xf32>
  %output_w = arith.constant dense<0.03> : tensor<128x259xf32>
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %ids, %c0 : tensor<?xi64>
  %init = tensor.empty(%n) : tensor<?x128xf32>
  %hidden = linalg.generic {indexing_maps = [#embed_map, #row_map],
                            iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<?xi64>) outs(%init : tensor<?x128xf32>) {
  ^bb0(%id: i64, %out: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %embedding[%row, %col] : tensor<259x128xf32>
    linalg.yield %v : f32
  } -> tensor<?x128xf32>
  %logits_init = tensor.empty(%n) : tensor<?x259xf32>
  %logits_acc = linalg.fill ins(%zero : f32) outs(%logits_init : tensor<?x259xf32>) -> tensor<?x259xf32>
  %logits = linalg.matmul ins(%hidden, %output_w : tensor<?x128xf32>, tensor<128x259xf32>)
                          outs(%logits_acc : tensor<?x259xf32>) -> tensor<?x259xf32>
  return %logits, %hidden : tensor<?x259xf32>, tensor<?x128xf32>
}

// Head k: logits = W_out (h + SiLU(W_k h)), predicting token t + 1 + k.
func.func @head1(%h: tensor<?x128xf32>) -> tensor<?x259xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 1>} {
  %w = arith.constant dense<0.02> : tensor<128x128xf32>
  %out = arith.constant dense<0.03> : tensor<128x259xf32>
  %logits = func.call @medusa_block(%h, %w, %out)
      : (tensor<?x128xf32>, tensor<128x128xf32>, tensor<128x259xf32>) -> tensor<?x259xf32>
  return %logits : tensor<?x259xf32>
}

func.func @head2(%h: tensor<?x128xf32>) -> tensor<?x259xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 2>} {
  %w = arith.constant dense<0.04> : tensor<128x128xf32>
  %out = arith.constant dense<0.03> : tensor<128x259xf32>
  %logits = func.call @medusa_block(%h, %w, %out)
      : (tensor<?x128xf32>, tensor<128x128xf32>, tensor<128x259xf32>) -> tensor<?x259xf32>
  return %logits : tensor<?x259xf32>
}

func.func @head3(%h: tensor<?x128xf32>) -> tensor<?x259xf32>
    attributes {spec.role = #spec.role<medusa_head, depth = 3>} {
  %w = arith.constant dense<0.05> : tensor<128x128xf32>
  %out = arith.constant dense<0.03> : tensor<128x259xf32>
  %logits = func.call @medusa_block(%h, %w, %out)
      : (tensor<?x128xf32>, tensor<128x128xf32>, tensor<128x259xf32>) -> tensor<?x259xf32>
  return %logits : tensor<?x259xf32>
}

func.func private @medusa_block(%h: tensor<?x128xf32>, %w: tensor<128x128xf32>,
                                %out: tensor<128x259xf32>) -> tensor<?x259xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %h, %c0 : tensor<?x128xf32>
  %init = tensor.empty(%n) : tensor<?x128xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<?x128xf32>) -> tensor<?x128xf32>
  %proj = linalg.matmul ins(%h, %w : tensor<?x128xf32>, tensor<128x128xf32>)
                        outs(%acc : tensor<?x128xf32>) -> tensor<?x128xf32>
  %res = linalg.generic {indexing_maps = [#row_map, #row_map, #row_map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%proj, %h : tensor<?x128xf32>, tensor<?x128xf32>)
      outs(%init : tensor<?x128xf32>) {
  ^bb0(%x: f32, %skip: f32, %o: f32):
    %neg = arith.negf %x : f32
    %exp = math.exp %neg : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %exp : f32
    %silu = arith.divf %x, %den : f32
    %y = arith.addf %skip, %silu : f32
    linalg.yield %y : f32
  } -> tensor<?x128xf32>
  %logits_init = tensor.empty(%n) : tensor<?x259xf32>
  %logits_acc = linalg.fill ins(%zero : f32) outs(%logits_init : tensor<?x259xf32>) -> tensor<?x259xf32>
  %logits = linalg.matmul ins(%res, %out : tensor<?x128xf32>, tensor<128x259xf32>)
                          outs(%logits_acc : tensor<?x259xf32>) -> tensor<?x259xf32>
  return %logits : tensor<?x259xf32>
}

// Three heads propose three tokens per step; sampling at temperature 0.8 is
// verified losslessly by rejection sampling.
spec.decoder @decoder target(@target) proposer(#spec.mtp<[@head1, @head2, @head3]>)
    verify(#spec.rejection<temperature = 0.8, top_k = 50, top_p = 0.95>)

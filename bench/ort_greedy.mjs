// Greedy decoding of a target model with ONNX Runtime (CPU): the baseline of
// bench/target_vs_ort.py. Feeds the prompt once (prefill), then one token per
// step with the present key/value tensors as the next step's past.
//
//   node ort_greedy.mjs MODEL.onnx PROMPT_IDS(comma-separated) NEW_TOKENS THREADS
//
// Prints JSON: the generated token ids, total seconds (prefill + decode) and
// decode-only seconds.

import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ort = require(process.env.ORT_NODE_PATH || "onnxruntime-node");

const [model, promptArg, newTokensArg, threadsArg] = process.argv.slice(2);
if (!model || !promptArg || !newTokensArg) {
  console.error("usage: node ort_greedy.mjs MODEL.onnx IDS NEW_TOKENS [THREADS]");
  process.exit(2);
}
const prompt = promptArg.split(",").map((s) => BigInt(s));
const newTokens = Number(newTokensArg);
const threads = Number(threadsArg || 1);

const session = await ort.InferenceSession.create(model, {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: "all",
});
const layers = session.inputNames.filter((n) => n.endsWith(".key")).length;
// past_key_values.N.key: [batch, kv_heads, past, head_dim]
const meta = session.inputMetadata
  ? session.inputMetadata.find?.((m) => m.name === "past_key_values.0.key")
  : undefined;
const kvHeads = meta?.shape?.[1] ?? 2, headDim = meta?.shape?.[3] ?? 32;

function argmaxLast(logits) {
  const [, seq, vocab] = logits.dims;
  const data = logits.data, base = (seq - 1) * vocab;
  let best = 0;
  for (let v = 1; v < vocab; ++v)
    if (data[base + v] > data[base + best]) best = v;  // first maximum
  return BigInt(best);
}

function emptyPast() {
const past = {};
for (let l = 0; l < layers; ++l)
  for (const part of ["key", "value"])
    past[`past_key_values.${l}.${part}`] =
      new ort.Tensor("float32", new Float32Array(0), [1, kvHeads, 0, headDim]);
return past;
}

// One untimed run first (ORT allocates and plans on the first calls), as
// spec-run --warmup does.
async function generate() {
const generated = [];
let past = emptyPast();
let ids = prompt, position = 0;
const start = process.hrtime.bigint();
let decodeStart = start;
for (let step = 0; step < newTokens; ++step) {
  const feeds = {
    input_ids: new ort.Tensor("int64", BigInt64Array.from(ids), [1, ids.length]),
    position_ids: new ort.Tensor(
      "int64", BigInt64Array.from(ids.map((_, i) => BigInt(position + i))),
      [1, ids.length]),
    ...past,
  };
  const out = await session.run(feeds);
  position += ids.length;
  const token = argmaxLast(out.logits);
  generated.push(Number(token));
  past = {};
  for (let l = 0; l < layers; ++l)
    for (const part of ["key", "value"])
      past[`past_key_values.${l}.${part}`] = out[`present.${l}.${part}`];
  ids = [token];
  if (step === 0) decodeStart = process.hrtime.bigint();
  if (token === 257n) break;  // EOS of the example models
}
const end = process.hrtime.bigint();
return {
  tokens: generated,
  seconds: Number(end - start) / 1e9,
  decode_seconds: Number(end - decodeStart) / 1e9,
  threads,
};
}
await generate();
console.log(JSON.stringify(await generate()));

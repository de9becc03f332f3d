// Greedy decoding of a GGUF model with llama.cpp (npm's node-llama-cpp,
// its prebuilt CPU binaries), timed per token, for bench/llama_cpp.py.
//
//   node bench/llama_cpp.mjs model.gguf --prompt-ids 1,2,3 --max-new-tokens N
//       [--threads 1] [--repeats 3] [--draft draft.gguf --draft-tokens K]
//
// Prints one JSON object: the generated token ids and, per repeat, the
// seconds of the prompt's evaluation and of the generated tokens after the
// first. With --draft, llama.cpp's speculative decoding proposes K tokens
// with the draft model (node-llama-cpp's DraftSequenceTokenPredictor).
// node-llama-cpp is found in the node_modules folder LLAMA_CPP_MODULES
// names (bench/llama_cpp.py installs it under build/), else as usual.

import {createRequire} from "node:module";
import {resolve} from "node:path";
import {pathToFileURL} from "node:url";

const modules = process.env.LLAMA_CPP_MODULES;
const {getLlama, DraftSequenceTokenPredictor} = await import(
    modules ? pathToFileURL(createRequire(resolve(modules) + "/").resolve(
                  "node-llama-cpp")).href
            : "node-llama-cpp");

function parse(argv) {
  const args = {threads: 1, repeats: 3, maxNewTokens: 64, draftTokens: 5};
  // --name value or --name=value.
  argv = argv.flatMap((arg) => arg.startsWith("--") && arg.includes("=")
                                   ? [arg.slice(0, arg.indexOf("=")),
                                      arg.slice(arg.indexOf("=") + 1)]
                                   : [arg]);
  for (let i = 0; i < argv.length; ++i) {
    const value = () => argv[++i];
    switch (argv[i]) {
    case "--prompt-ids": args.promptIds = value().split(",").map(Number); break;
    case "--max-new-tokens": args.maxNewTokens = Number(value()); break;
    case "--threads": args.threads = Number(value()); break;
    case "--repeats": args.repeats = Number(value()); break;
    case "--draft": args.draft = value(); break;
    case "--draft-tokens": args.draftTokens = Number(value()); break;
    default:
      if (args.model) throw new Error(`unexpected argument '${argv[i]}'`);
      args.model = argv[i];
    }
  }
  if (!args.model || !args.promptIds)
    throw new Error("usage: llama_cpp.mjs model.gguf --prompt-ids 1,2,3 ...");
  return args;
}

async function generate(context, args, draftContext) {
  const options = {};
  const draftSequence = draftContext?.getSequence();
  if (draftSequence)
    options.tokenPredictor = new DraftSequenceTokenPredictor(
        draftSequence, {minTokens: args.draftTokens,
                        maxTokens: args.draftTokens});
  const sequence = context.getSequence(options);
  const tokens = [];
  const start = performance.now();
  let first = 0;
  for await (const token of sequence.evaluate(args.promptIds,
                                              {temperature: 0})) {
    if (tokens.length === 0) first = performance.now();
    tokens.push(token);
    if (tokens.length >= args.maxNewTokens) break;
  }
  const end = performance.now();
  sequence.dispose();
  if (draftSequence && !draftSequence.disposed)
    draftSequence.dispose();
  return {tokens, prompt_seconds: (first - start) / 1e3,
          decode_seconds: (end - first) / 1e3};
}

const args = parse(process.argv.slice(2));
const llama = await getLlama({gpu: false, build: "never", logLevel: process.env.LLAMA_CPP_LOG ?? "error"});
const contextOptions = {contextSize: 512, threads: args.threads,
                        batchSize: 512, sequences: 1};
const model = await llama.loadModel({modelPath: args.model, gpuLayers: 0});
const context = await model.createContext(contextOptions);
let draftContext;
if (args.draft) {
  const draft = await llama.loadModel({modelPath: args.draft, gpuLayers: 0});
  draftContext = await draft.createContext(contextOptions);
}
const runs = [];
let tokens;
// One untimed run first: pages the weights in.
for (let i = 0; i <= args.repeats; ++i) {
  const run = await generate(context, args, draftContext);
  if (i > 0) runs.push({prompt_seconds: run.prompt_seconds,
                        decode_seconds: run.decode_seconds});
  tokens = run.tokens;
}
console.log(JSON.stringify({token_ids: tokens, runs,
                            threads: args.threads}));
await llama.dispose();

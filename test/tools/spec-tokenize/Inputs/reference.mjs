// Encodes files with Hugging Face's JavaScript tokenizers (the reference),
// printing one JSON line per file: {"ids": [...], "text": decode(ids)}.
//
//   node reference.mjs TOKENIZERS_PACKAGE_DIR TOKENIZER_DIR [--benchmark N] FILE...
//
// --benchmark N: one untimed round, then N timed rounds; prints throughput.
//
// TOKENIZER_DIR holds tokenizer.json and tokenizer_config.json. Files are read
// as bytes and decoded as TextDecoder does (ill-formed UTF-8 becomes U+FFFD;
// a byte order mark is kept), as spec-tokenize reads them.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [packageDir, tokenizerDir, ...rest] = process.argv.slice(2);
const { Tokenizer } = await import(
  pathToFileURL(path.join(packageDir, "dist", "tokenizers.mjs")).href);
const read = (name) => JSON.parse(fs.readFileSync(path.join(tokenizerDir, name), "utf8"));
const tokenizer = new Tokenizer(read("tokenizer.json"), read("tokenizer_config.json"));

let rounds = 0;
if (rest[0] === "--benchmark") {
  rounds = Number(rest[1]);
  rest.splice(0, 2);
}
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
const texts = rest.map((file) => decoder.decode(fs.readFileSync(file)));

if (rounds > 0) {
  // One untimed warm-up round (the JIT, the BPE cache), as spec-tokenize.
  for (const text of texts) tokenizer.encode(text, { add_special_tokens: false });
  let bytes = 0, tokens = 0;
  const sizes = rest.map((file) => fs.statSync(file).size);
  const start = process.hrtime.bigint();
  for (let round = 0; round < rounds; ++round)
    texts.forEach((text, i) => {
      bytes += sizes[i];
      tokens += tokenizer.encode(text, { add_special_tokens: false }).ids.length;
    });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(`encoded ${bytes} bytes into ${tokens} tokens in ${seconds.toFixed(3)} s: ` +
              `${(bytes / seconds / 1e6).toFixed(2)} MB/s, ${(tokens / seconds).toFixed(0)} tokens/s`);
} else {
  for (const text of texts) {
    const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
    const decoded = ids.length ? tokenizer.decode(ids) : "";
    console.log(JSON.stringify({ ids, text: decoded }));
  }
}

// Runs an ONNX model with ONNX Runtime (CPU) on inputs in the ONNX test-data
// format (serialized TensorProto .pb files) and writes its outputs the same
// way, as the reference for differential checks.
//
//   node ort_run.mjs MODEL OUT_DIR INPUT.pb...
//
// Inputs are matched to the model's inputs in order; outputs are written as
// OUT_DIR/output_N.pb in the model's output order. Only the TensorProto
// fields Specula writes are handled: dims, data_type, name, raw_data.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ort = require(process.env.ORT_NODE_PATH || "onnxruntime-node");

const TYPES = { 1: "float32", 6: "int32", 7: "int64", 9: "bool", 11: "float64" };
const ARRAYS = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array,
                 bool: Uint8Array, float64: Float64Array };

function readVarint(buf, pos) {
  let value = 0n, shift = 0n;
  for (;;) {
    const byte = buf[pos++];
    value |= BigInt(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return [value, pos];
    shift += 7n;
  }
}

function decodeTensor(buf) {
  const tensor = { dims: [], dataType: 0, raw: Buffer.alloc(0) };
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      if (field === 1) tensor.dims.push(Number(BigInt.asIntN(64, v)));
      else if (field === 2) tensor.dataType = Number(v);
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      const bytes = buf.subarray(pos, pos + Number(len));
      pos += Number(len);
      if (field === 1) {  // packed dims
        let p = 0;
        while (p < bytes.length) {
          let v;
          [v, p] = readVarint(bytes, p);
          tensor.dims.push(Number(BigInt.asIntN(64, v)));
        }
      } else if (field === 9) {
        tensor.raw = Buffer.from(bytes);
      }
    } else {
      throw new Error(`unsupported protobuf wire type ${wire}`);
    }
  }
  return tensor;
}

function writeVarint(out, value) {
  let v = BigInt.asUintN(64, BigInt(value));
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v) byte |= 0x80;
    out.push(byte);
  } while (v);
}

function encodeTensor(name, dataType, dims, raw) {
  const out = [];
  for (const d of dims) { writeVarint(out, 8); writeVarint(out, d); }
  writeVarint(out, 16); writeVarint(out, dataType);
  const nameBytes = Buffer.from(name);
  writeVarint(out, 66); writeVarint(out, nameBytes.length);
  out.push(...nameBytes);
  const head = Buffer.from(out);
  const rawHead = [];
  writeVarint(rawHead, 74); writeVarint(rawHead, raw.length);
  return Buffer.concat([head, Buffer.from(rawHead), raw]);
}

const [modelPath, outDir, ...inputPaths] = process.argv.slice(2);
const session = await ort.InferenceSession.create(modelPath);
const feeds = {};
inputPaths.forEach((file, i) => {
  const t = decodeTensor(fs.readFileSync(file));
  const type = TYPES[t.dataType];
  if (!type) throw new Error(`${file}: unsupported data type ${t.dataType}`);
  const Array = ARRAYS[type];
  const copy = Buffer.from(t.raw);  // aligned
  const data = new Array(copy.buffer, copy.byteOffset,
                         copy.length / Array.BYTES_PER_ELEMENT);
  feeds[session.inputNames[i]] = new ort.Tensor(type, data, t.dims);
});
const results = await session.run(feeds);
fs.mkdirSync(outDir, { recursive: true });
session.outputNames.forEach((name, i) => {
  const t = results[name];
  const code = Number(Object.keys(TYPES).find((k) => TYPES[k] === t.type));
  const raw = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  fs.writeFileSync(path.join(outDir, `output_${i}.pb`),
                   encodeTensor(name, code, t.dims, raw));
});

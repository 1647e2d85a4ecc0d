#!/usr/bin/env node
// Cross-check the expected outputs under models/ with ONNX Runtime (onnxruntime-node).
//
//   mkdir -p /tmp/ort && (cd /tmp/ort && ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node)
//   NODE_PATH=/tmp/ort/node_modules node models/check_with_ort.js [MODELS_DIR]
//
// For every MODELS_DIR/<name>/model.onnx (bad/ is skipped) and each test_data_set_K: feeds
// input_N.pb (by tensor name), runs the model with graph optimizations off, and compares every
// output with output_N.pb and with expected/<name>.npy (rtol 1e-3, atol 1e-4, shapes exact).
// It also checks that inputs/<name>.npy holds the same tensor as input_N.pb.
// Prints the max abs error per model, then "N passed, N failed"; exits 1 on any failure.
'use strict';

const fs = require('fs');
const path = require('path');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error('cannot load onnxruntime-node; set NODE_PATH to a node_modules that has it\n' +
                '  (mkdir -p /tmp/ort && cd /tmp/ort && ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node)');
  process.exit(2);
}

const RTOL = 1e-3;
const ATOL = 1e-4;

// ---- minimal protobuf reader for onnx.TensorProto ------------------------------------------

function readVarint(buf, pos) {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const b = buf[pos++];
    result |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) break;
    shift += 7n;
  }
  return [result, pos];
}

const toSigned64 = (v) => BigInt.asIntN(64, v);

// TensorProto fields: dims=1, data_type=2, float_data=4, int32_data=5, int64_data=7, name=8,
// raw_data=9, double_data=10, uint64_data=11, data_location=14.
function parseTensorProto(buf) {
  const t = { dims: [], dataType: 0, name: '', raw: null, floatData: [], int32Data: [],
              int64Data: [], doubleData: [] };
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    const pushVarint = (arr, v) => arr.push(toSigned64(v));
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      if (field === 1) pushVarint(t.dims, v);
      else if (field === 2) t.dataType = Number(v);
      else if (field === 5) t.int32Data.push(Number(BigInt.asIntN(32, v)));
      else if (field === 7) pushVarint(t.int64Data, v);
      else if (field === 14 && v !== 0n) throw new Error('external data not supported');
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      const end = pos + Number(len);
      const body = buf.subarray(pos, end);
      if (field === 1 || field === 5 || field === 7) {          // packed varints
        let p = 0;
        while (p < body.length) {
          let v;
          [v, p] = readVarint(body, p);
          if (field === 1) t.dims.push(toSigned64(v));
          else if (field === 5) t.int32Data.push(Number(BigInt.asIntN(32, v)));
          else t.int64Data.push(toSigned64(v));
        }
      } else if (field === 4) {                                   // packed floats
        const dv = new DataView(body.buffer, body.byteOffset, body.length);
        for (let i = 0; i < body.length; i += 4) t.floatData.push(dv.getFloat32(i, true));
      } else if (field === 10) {                                  // packed doubles
        const dv = new DataView(body.buffer, body.byteOffset, body.length);
        for (let i = 0; i < body.length; i += 8) t.doubleData.push(dv.getFloat64(i, true));
      } else if (field === 8) {
        t.name = body.toString('utf8');
      } else if (field === 9) {
        t.raw = Buffer.from(body);
      }
      pos = end;
    } else if (wire === 5) {
      if (field === 4) t.floatData.push(buf.readFloatLE(pos));
      pos += 4;
    } else if (wire === 1) {
      if (field === 10) t.doubleData.push(buf.readDoubleLE(pos));
      pos += 8;
    } else {
      throw new Error(`unsupported wire type ${wire}`);
    }
  }
  return t;
}

// ONNX data type -> [ort type, TypedArray, bytes per element]
const DTYPES = {
  1: ['float32', Float32Array, 4],
  2: ['uint8', Uint8Array, 1],
  3: ['int8', Int8Array, 1],
  6: ['int32', Int32Array, 4],
  7: ['int64', BigInt64Array, 8],
  9: ['bool', Uint8Array, 1],
  11: ['float64', Float64Array, 8],
};

function typedFromBytes(Ctor, bytes) {
  const copy = Buffer.from(bytes);   // aligned copy
  return new Ctor(copy.buffer, copy.byteOffset, copy.length / Ctor.BYTES_PER_ELEMENT);
}

function tensorFromPb(file) {
  const t = parseTensorProto(fs.readFileSync(file));
  const dt = DTYPES[t.dataType];
  if (!dt) throw new Error(`${file}: unsupported data_type ${t.dataType}`);
  const [type, Ctor] = dt;
  const dims = t.dims.map(Number);
  let data;
  if (t.raw) data = typedFromBytes(Ctor, t.raw);
  else if (type === 'float32') data = Float32Array.from(t.floatData);
  else if (type === 'float64') data = Float64Array.from(t.doubleData);
  else if (type === 'int64') data = BigInt64Array.from(t.int64Data);
  else data = Ctor.from(t.int32Data);
  return { name: t.name, type, dims, data };
}

// ---- minimal .npy reader ---------------------------------------------------------------------

const NPY_DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i4': ['int32', Int32Array], '<i8': ['int64', BigInt64Array],
  '|b1': ['bool', Uint8Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
};

function tensorFromNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not an npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',')
    .map((s) => s.trim()).filter((s) => s.length).map(Number);
  const dt = NPY_DTYPES[descr];
  if (!dt) throw new Error(`${file}: unsupported dtype ${descr}`);
  return { type: dt[0], dims: shape, data: typedFromBytes(dt[1], buf.subarray(hstart + hlen)) };
}

// ---- comparison ------------------------------------------------------------------------------

const sameDims = (a, b) => a.length === b.length && a.every((d, i) => Number(d) === Number(b[i]));

function identical(a, b) {
  if (a.type !== b.type || !sameDims(a.dims, b.dims) || a.data.length !== b.data.length) return false;
  for (let i = 0; i < a.data.length; i++) {
    const x = a.data[i];
    const y = b.data[i];
    if (!(x === y || (Number.isNaN(x) && Number.isNaN(y)))) return false;
  }
  return true;
}

// returns [ok, maxAbsErr, message]
function compare(actual, expected) {
  if (!sameDims(actual.dims, expected.dims)) {
    return [false, Infinity, `shape [${actual.dims}] != expected [${expected.dims}]`];
  }
  if (actual.data.length !== expected.data.length) return [false, Infinity, 'size mismatch'];
  let maxErr = 0;
  let bad = -1;
  for (let i = 0; i < expected.data.length; i++) {
    const a = Number(actual.data[i]);
    const e = Number(expected.data[i]);
    const err = Math.abs(a - e);
    if (Number.isNaN(err) ? !(Number.isNaN(a) && Number.isNaN(e)) : err > ATOL + RTOL * Math.abs(e)) {
      if (bad < 0) bad = i;
    }
    if (err > maxErr) maxErr = err;
  }
  if (bad >= 0) {
    return [false, maxErr, `element ${bad}: got ${actual.data[bad]}, expected ${expected.data[bad]}`];
  }
  return [true, maxErr, ''];
}

// ---- main ------------------------------------------------------------------------------------

async function checkModel(dir, name) {
  const sets = fs.readdirSync(dir).filter((d) => /^test_data_set_\d+$/.test(d))
    .sort((a, b) => Number(a.split('_').pop()) - Number(b.split('_').pop()));
  const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'),
                                                    { graphOptimizationLevel: 'disabled' });
  let maxErr = 0;
  const problems = [];
  for (const set of sets) {
    const sdir = path.join(dir, set);
    const files = fs.readdirSync(sdir);
    const feeds = {};
    for (const f of files.filter((f) => /^input_\d+\.pb$/.test(f))) {
      const t = tensorFromPb(path.join(sdir, f));
      const npyFile = path.join(sdir, 'inputs', `${t.name}.npy`);
      if (!fs.existsSync(npyFile)) problems.push(`${set}: missing inputs/${t.name}.npy`);
      else if (!identical(tensorFromNpy(npyFile), t)) problems.push(`${set}: inputs/${t.name}.npy != ${f}`);
      feeds[t.name] = new ort.Tensor(t.type, t.data, t.dims);
    }
    const results = await session.run(feeds);
    for (const f of files.filter((f) => /^output_\d+\.pb$/.test(f))) {
      const exp = tensorFromPb(path.join(sdir, f));
      const npyFile = path.join(sdir, 'expected', `${exp.name}.npy`);
      if (!fs.existsSync(npyFile)) problems.push(`${set}: missing expected/${exp.name}.npy`);
      else if (!identical(tensorFromNpy(npyFile), exp)) problems.push(`${set}: expected/${exp.name}.npy != ${f}`);
      const got = results[exp.name];
      if (!got) {
        problems.push(`${set}: ORT produced no output '${exp.name}'`);
        continue;
      }
      const [ok, err, msg] = compare({ dims: got.dims, data: got.data }, exp);
      if (err > maxErr) maxErr = err;
      if (!ok) problems.push(`${set}: output '${exp.name}': ${msg}`);
    }
  }
  return { sets: sets.length, maxErr, problems };
}

async function main() {
  const root = path.resolve(process.argv[2] || __dirname);
  const names = fs.readdirSync(root).filter((n) => n !== 'bad' &&
    fs.existsSync(path.join(root, n, 'model.onnx'))).sort();
  let passed = 0;
  let failed = 0;
  const w = Math.max(...names.map((n) => n.length), 5);
  console.log(`${'model'.padEnd(w)}  sets  max_abs_err  result`);
  for (const name of names) {
    let r;
    try {
      r = await checkModel(path.join(root, name), name);
    } catch (e) {
      r = { sets: 0, maxErr: NaN, problems: [`error: ${e.message.split('\n')[0]}`] };
    }
    const ok = r.problems.length === 0;
    if (ok) passed++; else failed++;
    console.log(`${name.padEnd(w)}  ${String(r.sets).padStart(4)}  ${r.maxErr.toExponential(3).padStart(11)}  ${ok ? 'ok' : 'FAIL'}`);
    for (const p of r.problems) console.log(`    ${p}`);
  }
  console.log(`onnxruntime-node ${require('onnxruntime-node/package.json').version}, rtol ${RTOL}, atol ${ATOL}`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

// Its TensorProto reader serves models/patterns/expected_with_ort.js too.
module.exports = { tensorFromPb, DTYPES };

if (require.main === module) {
  main().catch((e) => {
    console.error(e);
    process.exit(2);
  });
}

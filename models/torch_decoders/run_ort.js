#!/usr/bin/env node
// ONNX Runtime outputs for models/torch_decoders/ (called by make_torch_decoders.py).
//
//   NODE_PATH=/work/main/build/bench/node_modules node models/torch_decoders/run_ort.js \
//       MODEL.onnx SET_DIR OUT_DIR [disabled|all]
//
// Feeds SET_DIR/input_N.pb (by tensor name, read with models/check_with_ort.js's reader), runs
// MODEL.onnx on the CPU with graphOptimizationLevel 'disabled' (default) or 'all', one intra-op
// and one inter-op thread, and writes every output as OUT_DIR/<output name>.npy.
'use strict';

const fs = require('fs');
const path = require('path');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error('cannot load onnxruntime-node; set NODE_PATH, e.g. NODE_PATH=/work/main/build/bench/node_modules');
  process.exit(2);
}
const { tensorFromPb } = require('../check_with_ort.js');

const NPY_DESCR = { float32: '<f4', float64: '<f8', int32: '<i4', int64: '<i8', bool: '|b1',
                    uint8: '|u1', int8: '|i1' };

function npyBytes(type, dims, data) {
  const descr = NPY_DESCR[type];
  if (!descr) throw new Error(`cannot write ${type} as npy`);
  const shape = dims.length === 0 ? '()' : dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.concat([head, Buffer.from(header, 'latin1'), body]);
}

async function main() {
  const [model, setDir, outDir, level = 'disabled'] = process.argv.slice(2);
  if (!outDir) {
    console.error('usage: run_ort.js MODEL.onnx SET_DIR OUT_DIR [disabled|all]');
    process.exit(2);
  }
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: level, intraOpNumThreads: 1, interOpNumThreads: 1,
    executionMode: 'sequential' });
  const feeds = {};
  for (const f of fs.readdirSync(setDir).filter((f) => /^input_\d+\.pb$/.test(f))) {
    const t = tensorFromPb(path.join(setDir, f));
    feeds[t.name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const results = await session.run(feeds);
  fs.mkdirSync(outDir, { recursive: true });
  for (const name of session.outputNames) {
    const t = results[name];
    fs.writeFileSync(path.join(outDir, `${name}.npy`), npyBytes(t.type, t.dims.map(Number), t.data));
  }
}

main().catch((e) => {
  console.error(String(e.message || e).split('\n')[0]);
  process.exit(1);
});

#!/usr/bin/env node
// Runs one model with ONNX Runtime (onnxruntime-node, CPU) for memplan's benchmark (bench.py).
//
//   node ort_bench.js MODEL --input NAME=FILE.npy ... [--threads T] [--repeat N] [--concurrent K] [--output-dir D]
//                     [--optimization all|disabled]
//   node ort_bench.js --baseline        (loads the runtime only: the empty process for peak RSS)
//
// Session: CPU, intraOpNumThreads T, interOpNumThreads 1, sequential execution, ONNX Runtime's
// default graph optimizations and memory arena (what a user gets). One warm-up inference, then N
// timed ones (N may be 0: load plus one inference, for peak RSS). Writes every output of the
// warm-up run to D/<output name>.npy (characters outside [A-Za-z0-9._-] become _, as memplan does)
// and prints one JSON object: load_ms, run_ms {min, median, max}, runs, throughput_per_s, outputs.
// --concurrent K: K loops of N runs each on the one session at the same time (each run is an async
// call that ONNX Runtime executes on a worker thread), as a server would serve K requests at once;
// throughput_per_s is then all K*N runs over the wall time of the timed part.
// Resolve onnxruntime-node with NODE_PATH (bench.py points it at build/bench/node_modules).
'use strict';

const fs = require('fs');
const path = require('path');

// ---- .npy (format 1.0-3.0, little-endian, C order) --------------------------------------------

// npy descr -> [ONNX Runtime tensor type, typed array]. Bool travels as bytes.
const NPY_TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<f2': ['float16', Uint16Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '<i2': ['int16', Int16Array],
  '|i1': ['int8', Int8Array], '<u8': ['uint64', BigUint64Array], '<u4': ['uint32', Uint32Array],
  '<u2': ['uint16', Uint16Array], '|u1': ['uint8', Uint8Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shape || /'fortran_order':\s*True/.test(header)) throw new Error(`${file}: unsupported header ${header}`);
  const type = NPY_TYPES[descr[1]];
  if (!type) throw new Error(`${file}: unsupported dtype ${descr[1]}`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const bytes = new Uint8Array(buf.subarray(start + headerLen));  // a copy, aligned for the typed array
  const data = new type[1](bytes.buffer, 0, bytes.byteLength / type[1].BYTES_PER_ELEMENT);
  return { type: type[0], dims, data };
}

function writeNpy(file, tensor) {
  const entry = Object.entries(NPY_TYPES).find(([, t]) => t[0] === tensor.type);
  if (!entry) throw new Error(`cannot write output of type ${tensor.type}`);
  const dims = tensor.dims.map(Number);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${entry[0]}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';  // pad to a multiple of 64
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const d = tensor.data;
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(header, 'latin1'),
                                        Buffer.from(d.buffer, d.byteOffset, d.byteLength)]));
}

// ---- command line -------------------------------------------------------------------------------

function parseArgs(argv) {
  const a = { model: null, inputs: [], threads: 1, repeat: 10, concurrent: 1, outputDir: null, baseline: false, optimization: 'all' };
  for (let i = 0; i < argv.length; ++i) {
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`);
      return argv[++i];
    };
    if (argv[i] === '--baseline') a.baseline = true;
    else if (argv[i] === '--input') a.inputs.push(next());
    else if (argv[i] === '--threads') a.threads = Number(next());
    else if (argv[i] === '--repeat') a.repeat = Number(next());
    else if (argv[i] === '--concurrent') a.concurrent = Number(next());
    else if (argv[i] === '--output-dir') a.outputDir = next();
    else if (argv[i] === '--optimization') a.optimization = next();
    else if (!a.model && !argv[i].startsWith('-')) a.model = argv[i];
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!a.baseline && !a.model) throw new Error('usage: ort_bench.js MODEL --input NAME=FILE.npy ... | --baseline');
  return a;
}

const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const msSince = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const ort = require('onnxruntime-node');
  if (a.baseline) {
    console.log(JSON.stringify({ baseline: true, ort: ort.env.versions }));
    return;
  }
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, {
    executionProviders: ['cpu'], intraOpNumThreads: a.threads, interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: a.optimization,
  });
  const loadMs = msSince(t0);
  const feeds = {};
  a.inputs.forEach((spec, k) => {
    const eq = spec.indexOf('=');
    const name = eq >= 0 ? spec.slice(0, eq) : session.inputNames[k];
    const t = readNpy(eq >= 0 ? spec.slice(eq + 1) : spec);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  });
  const outputs = await session.run(feeds);  // warm-up
  const times = [];
  const loop = async () => {
    for (let r = 0; r < a.repeat; ++r) {
      const t = process.hrtime.bigint();
      await session.run(feeds);
      times.push(msSince(t));
    }
  };
  const wall0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: a.concurrent }, loop));
  const wallMs = msSince(wall0);
  const written = [];
  if (a.outputDir) {
    fs.mkdirSync(a.outputDir, { recursive: true });
    for (const [name, tensor] of Object.entries(outputs)) {
      const file = path.join(a.outputDir, name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy');
      writeNpy(file, tensor);
      written.push(file);
    }
  }
  const run = times.length ? { min: Math.min(...times), median: median(times), max: Math.max(...times) } : null;
  const throughput = wallMs > 0 && times.length ? times.length * 1000 / wallMs : null;
  console.log(JSON.stringify({ load_ms: loadMs, run_ms: run, runs: times.length, throughput_per_s: throughput,
                               concurrent: a.concurrent, outputs: written,
                               ort: ort.env.versions }));
}

main().catch((e) => {
  console.error(`ort_bench: ${e && e.message ? e.message : e}`);
  process.exit(1);
});

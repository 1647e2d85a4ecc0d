#!/usr/bin/env node
// Expected outputs from ONNX Runtime (onnxruntime-node, CPU) for a folder of model folders laid out
// like models/patterns/ and models/opsets/ (each made by its generator first):
//
//   /usr/bin/python3 models/patterns/make_patterns.py           (model.onnx, input_N.pb, SOURCE.json)
//   NODE_PATH=/work/main/build/bench/node_modules node models/expected_with_ort.js models/patterns [--check] [FOLDER...]
//   /usr/bin/python3 models/opsets/make_opset_models.py
//   NODE_PATH=/work/main/build/bench/node_modules node models/expected_with_ort.js models/opsets [--check] [FOLDER...]
//
// For every ROOT/<name>/ holding a model.onnx (or only the FOLDERs named), and each of its
// test_data_set_K/: feeds input_N.pb (by tensor name), runs model.onnx with
// graphOptimizationLevel 'disabled', intraOpNumThreads 1, interOpNumThreads 1, sequential, and
// writes output_N.pb (onnx.TensorProto: dims, data_type, name, raw_data; N = the graph output's
// index). It also reruns the model (same settings; 2 threads; all graph optimizations at 1 and 2
// threads) and records in SOURCE.json how far those runs land from the reference
// ("tolerance_evidence"), plus each output's shape and min/max/mean/max_abs/fraction of zeros
// (data_sets[K].outputs), and prints those statistics so that degenerate outputs show.
//
// Outputs may be int8/uint8/int32/int64/bool as well as float32. Where SOURCE.json declares
// "outputs_declared" (models/opsets), each output's element type and shape must equal it, in the
// same order; an output is reported as degenerate when it is constant, unless it has one element
// or is listed in SOURCE.json's "constant_outputs" (ConstantOfShape's); a rerun configuration that
// ONNX Runtime itself cannot run is recorded in tolerance_evidence, not fatal. A model ONNX Runtime
// refuses prints ORT's error line.
//
// --check writes nothing: it compares ONNX Runtime's outputs with the output_N.pb on disk at the
// folder's SOURCE.json "suggested_tolerance" (shapes exact) and exits 1 on any mismatch or
// missing file.
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
const ORT_VERSION = require('onnxruntime-node/package.json').version;

// ---- onnx.TensorProto: read with models/check_with_ort.js's reader, and write ------------------

const { tensorFromPb, DTYPES } = require('./check_with_ort.js');

function varint(n) {
  const out = [];
  let v = BigInt.asUintN(64, BigInt(n));
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}

// The bytes onnx.numpy_helper.from_array(a, name).SerializeToString() gives: dims (unpacked, field
// 1), data_type (2), name (8), raw_data (9).
function tensorToPb(name, tensor) {
  const code = Number(Object.keys(DTYPES).find((k) => DTYPES[k][0] === tensor.type));
  if (!code) throw new Error(`cannot write output '${name}' of type ${tensor.type}`);
  const d = tensor.data;
  const raw = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  const nameBytes = Buffer.from(name, 'utf8');
  const head = [];
  for (const dim of tensor.dims) head.push(0x08, ...varint(dim));
  head.push(0x10, ...varint(code));
  head.push(0x42, ...varint(nameBytes.length));
  return Buffer.concat([Buffer.from(head), nameBytes, Buffer.from([0x4a, ...varint(raw.length)]), raw]);
}

// ---- comparison and statistics -------------------------------------------------------------------

const sameDims = (a, b) => a.length === b.length && a.every((x, i) => Number(x) === Number(b[i]));

// max |a - ref| and the smallest atol for which |a - ref| <= atol + rtol * |ref| holds everywhere
function difference(a, ref, rtol) {
  let maxAbs = 0;
  let atolNeeded = 0;
  for (let i = 0; i < ref.length; i++) {
    const r = Number(ref[i]);
    const e = Math.abs(Number(a[i]) - r);
    if (Number.isNaN(e)) {
      if (!(Number.isNaN(Number(a[i])) && Number.isNaN(r))) return { maxAbs: Infinity, atolNeeded: Infinity };
      continue;
    }
    maxAbs = Math.max(maxAbs, e);
    atolNeeded = Math.max(atolNeeded, e - rtol * Math.abs(r));
  }
  return { maxAbs, atolNeeded };
}

function stats(data) {
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let zeros = 0;
  let nonFinite = 0;
  for (const x0 of data) {
    const x = Number(x0);
    if (!Number.isFinite(x)) { nonFinite++; continue; }
    if (x < min) min = x;
    if (x > max) max = x;
    sum += x;
    if (x === 0) zeros++;
  }
  const n = data.length;
  return { min, max, mean: sum / (n - nonFinite), max_abs: Math.max(Math.abs(min), Math.abs(max)),
           fraction_zero: zeros / n, non_finite: nonFinite };
}

const round = (x) => Number(x.toPrecision(7));

// ---- main --------------------------------------------------------------------------------------

const CONFIGS = {
  reference_rerun: { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 },
  threads_2_disabled: { graphOptimizationLevel: 'disabled', intraOpNumThreads: 2 },
  optimization_all_threads_1: { graphOptimizationLevel: 'all', intraOpNumThreads: 1 },
  optimization_all_threads_2: { graphOptimizationLevel: 'all', intraOpNumThreads: 2 },
};

function session(model, cfg) {
  return ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], interOpNumThreads: 1, executionMode: 'sequential', ...cfg,
  });
}

function dataSets(dir) {
  return fs.readdirSync(dir).filter((d) => /^test_data_set_\d+$/.test(d))
    .sort((a, b) => Number(a.split('_').pop()) - Number(b.split('_').pop()));
}

function feedsOf(sdir) {
  const feeds = {};
  const files = fs.readdirSync(sdir).filter((f) => /^input_\d+\.pb$/.test(f)).sort();
  for (const f of files) {
    const t = tensorFromPb(path.join(sdir, f));
    feeds[t.name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  return feeds;
}

function printStats(set, name, dims, s) {
  console.log(`    ${set} ${name} [${dims}]  min ${s.min.toPrecision(5)}  max ${s.max.toPrecision(5)}  ` +
              `mean ${s.mean.toPrecision(5)}  zeros ${(100 * s.fraction_zero).toFixed(1)}%` +
              (s.non_finite ? `  NON-FINITE ${s.non_finite}` : ''));
}

async function processFolder(dir, check) {
  const model = path.join(dir, 'model.onnx');
  const sourceFile = path.join(dir, 'SOURCE.json');
  const source = fs.existsSync(sourceFile) ? JSON.parse(fs.readFileSync(sourceFile, 'utf8')) : null;
  const tol = (source && source.suggested_tolerance) || { rtol: 1e-3, atol: 1e-4 };
  const ref = await session(model, CONFIGS.reference_rerun);
  const problems = [];
  const evidence = {};
  let maxErr = 0;
  const sets = dataSets(dir);
  for (const set of sets) {
    const sdir = path.join(dir, set);
    const feeds = feedsOf(sdir);
    const out = await ref.run(feeds);
    const names = ref.outputNames;  // graph output order
    const declared = (source && source.outputs_declared) || null;
    if (declared && JSON.stringify(Object.keys(declared)) !== JSON.stringify(names)) {
      problems.push(`outputs [${names}] != SOURCE.json outputs_declared [${Object.keys(declared)}]`);
    }
    for (const n of names) {
      const d = declared && declared[n];
      const t = out[n];
      if (d && (d[0] !== t.type || !sameDims(d[1], t.dims))) {
        problems.push(`${set}: output '${n}' is ${t.type} [${t.dims}], model.onnx declares ${d[0]} [${d[1]}]`);
      }
    }
    const outStats = {};
    for (let k = 0; k < names.length; k++) {
      const t = out[names[k]];
      const s = stats(t.data);
      printStats(set, names[k], t.dims, s);
      if (s.non_finite) problems.push(`${set}: output '${names[k]}' has ${s.non_finite} non-finite values`);
      const constantOk = t.data.length <= 1 || (source && (source.constant_outputs || []).includes(names[k]));
      if (s.min === s.max && !constantOk) problems.push(`${set}: output '${names[k]}' is constant (${s.min})`);
      outStats[names[k]] = { dtype: t.type, shape: t.dims.map(Number), min: round(s.min), max: round(s.max),
                             mean: round(s.mean), max_abs: round(s.max_abs), fraction_zero: round(s.fraction_zero) };
      const file = path.join(sdir, `output_${k}.pb`);
      if (check) {
        if (!fs.existsSync(file)) { problems.push(`${set}: missing output_${k}.pb`); continue; }
        const exp = tensorFromPb(file);
        if (exp.name !== names[k]) problems.push(`${set}: output_${k}.pb is named '${exp.name}', not '${names[k]}'`);
        if (!sameDims(exp.dims, t.dims)) { problems.push(`${set}: output '${names[k]}' shape [${t.dims}] != [${exp.dims}]`); continue; }
        const d = difference(t.data, exp.data, tol.rtol);
        maxErr = Math.max(maxErr, d.maxAbs);
        if (d.atolNeeded > tol.atol) problems.push(`${set}: output '${names[k]}' max abs err ${d.maxAbs} exceeds rtol ${tol.rtol}/atol ${tol.atol}`);
        else if (!tensorToPb(names[k], t).equals(fs.readFileSync(file))) console.log(`    ${set}: output_${k}.pb is within tolerance but not bit-identical to this run`);
      } else {
        const bytes = tensorToPb(names[k], t);
        if (!fs.existsSync(file) || !bytes.equals(fs.readFileSync(file))) fs.writeFileSync(file, bytes);
      }
    }
    if (check) continue;
    if (source && source.data_sets) {
      const ds = source.data_sets.find((d) => d.index === Number(set.split('_').pop()));
      if (ds) ds.outputs = outStats;
    }
    // How far other ORT configurations land from the reference run.
    const setIndex = set.split('_').pop();
    for (const [label, cfg] of Object.entries(CONFIGS)) {
      let other;
      try {
        other = await (await session(model, cfg)).run(feeds);
      } catch (e) {
        const line = String(e.message || e).split('\n')[0];
        console.log(`    ${set}: ${label}: ONNX Runtime fails: ${line}`);
        evidence[label] = evidence[label] || {};
        evidence[label][`ds${set.split('_').pop()}`] = { onnxruntime_error: line };
        continue;
      }
      let worst = { maxAbs: 0, atolNeeded: 0, name: names[0] };
      let identical = true;
      for (const n of names) {
        const d = difference(other[n].data, out[n].data, tol.rtol);
        if (!tensorToPb(n, other[n]).equals(tensorToPb(n, out[n]))) identical = false;
        if (d.maxAbs > worst.maxAbs || (d.maxAbs === worst.maxAbs && d.atolNeeded > worst.atolNeeded)) worst = { ...d, name: n };
      }
      evidence[label] = evidence[label] || {};
      evidence[label][`ds${setIndex}`] = { max_abs_diff: worst.maxAbs, worst_output: worst.name,
                                           [`atol_needed_at_rtol_${tol.rtol}`]: Math.max(0, worst.atolNeeded),
                                           bit_identical: identical };
      if (worst.atolNeeded > tol.atol) problems.push(`${set}: ${label} needs atol ${worst.atolNeeded} > ${tol.atol}`);
    }
  }
  if (!check && source) {
    source.expected_outputs_from = `onnxruntime-node ${ORT_VERSION} CPU EP, graphOptimizationLevel=disabled, ` +
      'intraOpNumThreads=1 (NOT from a converter or model author: written by expected_with_ort.js)';
    source.tolerance_evidence = {
      method: 'max |a - ref| over all outputs between the reference run (optimizations disabled, 1 thread) and ' +
              `another onnxruntime-node ${ORT_VERSION} run of the same inputs; atol_needed = smallest atol for which ` +
              '|a - ref| <= atol + rtol*|ref| holds everywhere',
      ...evidence,
    };
    let worstAtol = 0;
    for (const perSet of Object.values(evidence)) {
      for (const e of Object.values(perSet)) {
        if (!('onnxruntime_error' in e)) worstAtol = Math.max(worstAtol, e[`atol_needed_at_rtol_${tol.rtol}`]);
      }
    }
    source.tolerance_rationale = worstAtol <= tol.atol
      ? `Default kept: every other ORT run above passes rtol ${tol.rtol}/atol ${tol.atol} (largest atol needed ${worstAtol.toExponential(2)}).`
      : `NOT met: another ORT run needs atol ${worstAtol.toExponential(2)} at rtol ${tol.rtol}; raise suggested_tolerance in the folder's generator.`;
    const text = JSON.stringify(source, null, 1) + '\n';
    if (fs.readFileSync(sourceFile, 'utf8') !== text) fs.writeFileSync(sourceFile, text);
  }
  return { sets: sets.length, maxErr, problems };
}

async function main() {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  const [root, ...named] = args.filter((a) => a !== '--check');
  if (!root || !fs.statSync(root, { throwIfNoEntry: false })?.isDirectory()) {
    console.error('usage: expected_with_ort.js ROOT [--check] [FOLDER...]   (ROOT: models/patterns or models/opsets)');
    process.exit(2);
  }
  let folders = named;
  if (!folders.length) {
    folders = fs.readdirSync(root).sort().map((n) => path.join(root, n))
      .filter((d) => fs.existsSync(path.join(d, 'model.onnx')));
  }
  let failed = 0;
  for (const dir of folders) {
    console.log(`${path.basename(dir)}:`);
    let r;
    try {
      r = await processFolder(path.resolve(dir), check);
    } catch (e) {
      r = { sets: 0, maxErr: NaN, problems: [`error: ${String(e.message || e).split('\n')[0]}`] };
      if (process.env.ORT_FULL_ERRORS) console.log(String(e.message || e));
    }
    if (r.problems.length) failed++;
    console.log(`  ${r.sets} data set(s)` + (check ? `, max abs err ${r.maxErr.toExponential(3)}` : ', outputs written') +
                `: ${r.problems.length ? 'FAIL' : 'ok'}`);
    for (const p of r.problems) console.log(`    ${p}`);
  }
  console.log(`onnxruntime-node ${ORT_VERSION}: ${folders.length - failed} ok, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});

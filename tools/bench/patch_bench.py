#!/usr/bin/python3
"""Patch regions: the smallest arena `--max-arena` reaches on each model, and what it costs.

For each model folder (model.onnx and test_data_set_0, as the zoo's): `memplan run` by default;
then `memplan compile --max-arena 1`, whose error names the smallest arena memplan can plan (with
the patch region that made it); then `memplan run --max-arena` that many bytes. Prints a markdown
table: both arenas, both latencies (median of --repeat runs at --threads, fixed), the patch
region (layers, tiles of rows, multiply-adds recomputed in halos) and how far its outputs are from
the default plan's. Run it with DNNL_MAX_CPU_ISA set to compare instruction sets.

Usage: patch_bench.py MEMPLAN [--threads N] [--repeat N] [--budget NAME=BYTES,...] MODEL_DIR|DIR...
  a DIR without a model.onnx is searched for */model.onnx; --budget: run the model NAME (its
  folder's name) at that budget instead of the smallest
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import bench_models


def run(memplan, case, extra, threads, repeat, out_dir):
    cmd = [memplan, "run", case.model, "--threads", str(threads), "--fixed-threads", "--warmup", "2", "--repeat",
           str(repeat), "--report", "json", "--output-dir", out_dir] + extra
    for name, npy, _ in case.inputs:
        cmd += ["--input", f"{name}={npy}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1])
    report = json.loads(r.stdout)
    return report, float(report["run_ms"]["median"])


def smallest_arena(memplan, case):
    shapes = [a for name, _, shape in case.inputs if shape for a in ("--shape", f"{name}={'x'.join(map(str, shape))}")]
    r = subprocess.run([memplan, "compile", case.model, "--max-arena", "1"] + shapes, capture_output=True, text=True)
    m = re.search(r"the smallest arena memplan can plan is (\d+) bytes", r.stderr)
    if not m:
        raise RuntimeError((r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1])
    return int(m.group(1))


def folders(paths):
    out = []
    for p in paths:
        if os.path.exists(os.path.join(p, "model.onnx")):
            out.append(p)
        else:
            out += bench_models.find_models([p])
    return out


def main():
    args = sys.argv[1:]
    threads, repeat, budgets = 1, 10, {}
    for flag in ("--threads", "--repeat", "--budget"):
        if flag in args:
            i = args.index(flag)
            if flag == "--budget":
                budgets = {k: int(v) for k, v in (kv.split("=") for kv in args[i + 1].split(","))}
            elif flag == "--threads":
                threads = int(args[i + 1])
            else:
                repeat = int(args[i + 1])
            del args[i:i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    memplan = args[0]
    isa = os.environ.get("DNNL_MAX_CPU_ISA", "native")
    print(f"oneDNN ISA {isa}, {threads} thread(s), median of {repeat} runs\n")
    print("| model | default arena MB | default ms | budget | arena MB there | arena ratio | ms there | slowdown "
          "| patch region | recomputed MACs | max abs diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for folder in folders(args[1:]):
        with tempfile.TemporaryDirectory() as tmp:
            name = os.path.basename(os.path.normpath(folder))
            try:
                case = bench_models.prepare(folder, tmp)
                base, base_ms = run(memplan, case, [], threads, repeat, os.path.join(tmp, "default"))
                budget = budgets.get(name) or smallest_arena(memplan, case)
                small, small_ms = run(memplan, case, ["--max-arena", str(budget)], threads, repeat,
                                      os.path.join(tmp, "small"))
            except (RuntimeError, ValueError) as e:
                print(f"| {name} | {str(e)[:160]} |")
                continue
            regions = small.get("patch_regions", [])
            region, recomputed = "none", "-"
            if regions:
                r = regions[0]
                region = f"{r['layers']} layers, {r['tiles']} tiles of {r['tile_rows']} rows" + (", rows kept" if r.get('keep_rows') else "")
                recomputed = f"{100.0 * r['recomputed_macs'] / max(r['macs'], 1):.0f}%"
            ref = bench_models.load_outputs(os.path.join(tmp, "default"))
            diff = bench_models.max_abs_diff(os.path.join(tmp, "small"), ref)
            a0, a1 = base["arena_bytes"], small["arena_bytes"]
            told = f"{budget / 1e6:.2f} MB" if name in budgets else "smallest"
            print(f"| {name} | {a0 / 1e6:.2f} | {base_ms:.2f} | {told} | {a1 / 1e6:.2f} | {a1 / a0:.2f} | {small_ms:.2f} "
                  f"| {small_ms / base_ms:.2f} | {region} | {recomputed} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()

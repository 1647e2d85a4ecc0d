#!/usr/bin/python3
"""Winograd convolutions: what they buy by preference, against a build without them and ONNX Runtime.

For each model folder (model.onnx and test_data_set_0): median latency of `memplan run` with the
BEFORE binary (default preference), with MEMPLAN by default (balanced) and with `--prefer speed`,
and of ONNX Runtime (tools/bench/ort_bench.js), in turn, at 1 and 2 threads (fixed); the arena of
each of MEMPLAN's two and the weight bytes their Winograd kernels add (the report's winograd_convs
that run). Prints one markdown row per model (the README's "Winograd convolutions" table). Run it
on an idle machine: the four runs of a cell are measured one after the other, so a busy moment
shows in one of them.

Usage: winograd_bench.py BEFORE MEMPLAN NODE_MODULES [--repeat N] MODEL_DIR...
"""
import argparse
import json
import os
import subprocess
import tempfile

import bench_models
from bench_run import OnnxRuntime


def memplan_run(binary, case, threads, repeat, extra, out_dir):
    cmd = [binary, "run", case.model, "--threads", str(threads), "--fixed-threads", "--warmup", "2", "--repeat",
           str(repeat), "--report", "json", "--output-dir", out_dir] + extra
    for name, npy, _ in case.inputs:
        cmd += ["--input", f"{name}={npy}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out[out.index("{"):out.rindex("}") + 1])


def added_mb(report):
    return sum(w["added_bytes"] for w in report.get("winograd_convs", []) if w["runs"]) / 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("before")
    p.add_argument("memplan")
    p.add_argument("node_modules")
    p.add_argument("folders", nargs="+")
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args()
    ort = OnnxRuntime(a.node_modules)
    for folder in a.folders:
        with tempfile.TemporaryDirectory() as work:
            case = bench_models.prepare(folder.rstrip("/"), work)
            out = os.path.join(work, "out")
            cells, reports = [], {}
            for threads in (1, 2):
                before = memplan_run(a.before, case, threads, a.repeat, [], out)["run_ms"]["median"]
                reports["balanced"] = memplan_run(a.memplan, case, threads, a.repeat, [], out)
                reports["speed"] = memplan_run(a.memplan, case, threads, a.repeat, ["--prefer", "speed"], out)
                ort_ms = ort.run(case, threads, a.repeat)["run_ms"]["median"]
                times = [before, reports["balanced"]["run_ms"]["median"], reports["speed"]["run_ms"]["median"], ort_ms]
                cells.append(", ".join(f"{t:.3g}" for t in times))
            arenas = " / ".join(f"{reports[k]['arena_bytes'] / 1e6:.2f}" for k in ("balanced", "speed"))
            added = " / ".join(f"{added_mb(reports[k]):.2f}" for k in ("balanced", "speed"))
            print(f"| {case.name} | {cells[0]} | {cells[1]} | {arenas} | {added} |", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The whole process's memory: peak resident set (GNU time's %M) of `memplan compile`, of
`memplan run --plan` (a saved plan) and of `memplan run` (compile included), each minus the
smallest of the three on models/real/wonnx_opt_mnist (its `run --plan`: the runtime's own
footprint; its compile times leaner kernels in an 8 MiB cache-stirring buffer, which would hide the
same cost in every other model's row), against the floor (the report's weights + arena) and
ONNX Runtime's (onnxruntime-node, the same inputs, minus its own on wonnx_opt_mnist). Prints a
markdown table, and per row whether run with a plan is within 1.1 x floor + 4 MB, run without
within 1.25 x floor + 4 MB, and neither above ONNX Runtime.

Usage: process_memory.py MEMPLAN NODE_MODULES [MODEL_DIR...]   (default: every models/real model)
MB = 10^6 bytes; 1 thread, one warm-up and one timed inference.
"""
import os
import sys
import tempfile

import bench_models
from bench_run import Memplan, OnnxRuntime, RunFailed, peak_rss_kb

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRIVIAL = os.path.join(ROOT, "models", "real", "wonnx_opt_mnist")


def measure(memplan, ort, case, work):
    """KiB peaks: compile, run with a plan, run without, ONNX Runtime; and the compile report."""
    plan = os.path.join(work, "plan.mplan")
    shapes = [a for name, _, shape in case.inputs for a in ("--shape", f"{name}={'x'.join(map(str, shape))}") if shape]
    report, _ = memplan.compile(case, {})
    out = os.path.join(work, "out")
    run = memplan.run_cmd(case, {}, 1, 1, out)
    return {
        "compile": peak_rss_kb([memplan.binary, "compile", case.model, "-o", plan] + shapes),
        "plan": peak_rss_kb(run + ["--plan", plan]),
        "run": peak_rss_kb(run),
        "ort": peak_rss_kb(ort.run_cmd(case, 1, 1, None), ort.env) if ort else None,
    }, report


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    memplan, ort = Memplan(sys.argv[1]), OnnxRuntime(sys.argv[2])
    folders = sys.argv[3:] or bench_models.find_models([os.path.join(ROOT, "models", "real")])
    with tempfile.TemporaryDirectory() as tmp:
        base, _ = measure(memplan, ort, bench_models.prepare(TRIVIAL, os.path.join(tmp, "base")), tmp)
        own = min(base["compile"], base["plan"], base["run"])
        base.update(compile=own, plan=own, run=own)
        print("| model | floor MB (weights + arena) | compile MB | run --plan MB | run MB | ONNX Runtime MB "
              "| run --plan / floor | run / floor | run / ONNX Runtime | within |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for folder in folders:
            name = os.path.basename(folder)
            work = os.path.join(tmp, name)
            try:
                peaks, report = measure(memplan, ort, bench_models.prepare(folder, work), work)
            except RunFailed as e:
                print(f"| {name} | {e} |||||||||")
                continue
            mb = {k: (v - base[k]) * 1024 / 1e6 for k, v in peaks.items()}
            floor = (report["weights_bytes"] + report["arena_bytes"]) / 1e6
            ok = (mb["plan"] <= 1.1 * floor + 4 and mb["run"] <= 1.25 * floor + 4 and mb["plan"] <= mb["ort"]
                  and mb["run"] <= mb["ort"])
            print(f"| {name} | {floor:.1f} | {mb['compile']:.1f} | {mb['plan']:.1f} | {mb['run']:.1f} | {mb['ort']:.1f} "
                  f"| {mb['plan'] / floor:.2f} | {mb['run'] / floor:.2f} | {mb['run'] / mb['ort']:.2f} "
                  f"| {'yes' if ok else 'no'} |", flush=True)


if __name__ == "__main__":
    main()

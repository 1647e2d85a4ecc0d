#!/usr/bin/python3
"""The whole process's memory: peak resident set (GNU time's %M) of `memplan compile`, of
`memplan run --plan` (a saved plan) and of `memplan run` (compile included), each minus the
smallest of the three on models/real/wonnx_opt_mnist (its `run --plan`: the runtime's own
footprint; its compile times leaner kernels in an 8 MiB cache-stirring buffer, which would hide the
same cost in every other model's row), against the floor (the report's weights + arena) and
ONNX Runtime's (onnxruntime-node, the same inputs, minus its own on wonnx_opt_mnist); each peak is the
median of --rounds runs (node's own peak moves by a megabyte between runs of the same command). Prints a
markdown table, and per row whether run with a plan is within 1.1 x floor + 4 MB, run without
within 1.25 x floor + 4 MB, and neither above ONNX Runtime.

Usage: process_memory.py MEMPLAN NODE_MODULES [--rounds N] [--out FILE [--command TEXT]] [MODEL_DIR...]
(default: every models/real model). MB = 10^6 bytes; 1 thread, one warm-up and one timed inference.
With --out, the table also becomes the section SECTION of the markdown FILE (docs/BENCHMARKS.md).
"""
import argparse
import datetime
import os
import statistics
import sys
import tempfile

import bench_models
import bench_report
from bench_run import Memplan, OnnxRuntime, RunFailed, peak_rss_kb

SECTION = "The whole process's memory"

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRIVIAL = os.path.join(ROOT, "models", "real", "wonnx_opt_mnist")


def median_peak_kb(rounds, cmd, env=None):
    return statistics.median(peak_rss_kb(cmd, env) for _ in range(rounds))


def measure(memplan, ort, case, work, rounds):
    """KiB peaks (medians of `rounds` runs): compile, run with a plan, run without, ONNX Runtime; and
    the compile report."""
    plan = os.path.join(work, "plan.mplan")
    shapes = [a for name, _, shape in case.inputs for a in ("--shape", f"{name}={'x'.join(map(str, shape))}") if shape]
    report, _ = memplan.compile(case, {})
    out = os.path.join(work, "out")
    run = memplan.run_cmd(case, {}, 1, 1, out)
    return {
        "compile": median_peak_kb(rounds, [memplan.binary, "compile", case.model, "-o", plan] + shapes),
        "plan": median_peak_kb(rounds, run + ["--plan", plan]),
        "run": median_peak_kb(rounds, run),
        "ort": median_peak_kb(rounds, ort.run_cmd(case, 1, 1, None), ort.env) if ort else None,
    }, report


def main():
    p = argparse.ArgumentParser(usage=__doc__.replace("%", "%%"))  # the docstring names GNU time's %M
    p.add_argument("memplan")
    p.add_argument("node_modules")
    p.add_argument("folders", nargs="*")
    p.add_argument("--rounds", type=int, default=3, help="runs per peak, the median kept (default 3)")
    p.add_argument("--out")
    p.add_argument("--command", default="tools/bench/process_memory.py")
    args = p.parse_intermixed_args()  # model folders may follow the options
    out, command = args.out, args.command
    memplan, ort = Memplan(args.memplan), OnnxRuntime(args.node_modules)
    # The trivial model is the baseline itself: its row would be the noise around zero.
    folders = args.folders or [f for f in bench_models.find_models([os.path.join(ROOT, "models", "real")])
                               if os.path.abspath(f) != TRIVIAL]
    lines = ["| model | floor MB (weights + arena) | compile MB | run --plan MB | run MB | ONNX Runtime MB "
             "| run --plan / floor | run / floor | run / ONNX Runtime | within |", "|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines))
    with tempfile.TemporaryDirectory() as tmp:
        base, _ = measure(memplan, ort, bench_models.prepare(TRIVIAL, os.path.join(tmp, "base")), tmp,
                          args.rounds)
        own = min(base["compile"], base["plan"], base["run"])
        base.update(compile=own, plan=own, run=own)
        for folder in folders:
            name = os.path.basename(folder)
            work = os.path.join(tmp, name)
            try:
                peaks, report = measure(memplan, ort, bench_models.prepare(folder, work), work, args.rounds)
            except RunFailed as e:
                lines.append(f"| {name} | {e} |||||||||")
                print(lines[-1])
                continue
            mb = {k: (v - base[k]) * 1024 / 1e6 for k, v in peaks.items()}
            floor = (report["weights_bytes"] + report["arena_bytes"]) / 1e6
            ok = (mb["plan"] <= 1.1 * floor + 4 and mb["run"] <= 1.25 * floor + 4 and mb["plan"] <= mb["ort"]
                  and mb["run"] <= mb["ort"])
            lines.append(f"| {name} | {floor:.1f} | {mb['compile']:.1f} | {mb['plan']:.1f} | {mb['run']:.1f} | "
                         f"{mb['ort']:.1f} | {mb['plan'] / floor:.2f} | {mb['run'] / floor:.2f} | "
                         f"{mb['run'] / mb['ort']:.2f} | {'yes' if ok else 'no'} |")
            print(lines[-1], flush=True)
    if out:
        intro = (f"Generated by `{command}` on {datetime.date.today().isoformat()}; do not edit by hand. Peak resident "
                 "memory (GNU time's %M) of `memplan compile`, `memplan run --plan` (a saved plan) and `memplan run` "
                 "(compile included), 1 thread, one warm-up and one inference, each the median of "
                 f"{args.rounds} runs, minus the smallest of the three on wonnx_opt_mnist; ONNX Runtime's minus its "
                 "own on wonnx_opt_mnist; floor = the report's weights + "
                 "arena. *within*: run with a plan at most 1.1 x floor + 4 MB, without one at most 1.25 x floor + "
                 "4 MB, and neither above ONNX Runtime.")
        bench_report.replace_section(out, SECTION, [f"## {SECTION}", "", intro, ""] + lines)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Measures libgomp's wait policies side by side: memplan's median latency at 1 thread and at 2
threads under each policy, on an idle machine and with one core kept busy, next to ONNX Runtime's.
The figures behind memplan's default spin count (lib/runtime/omp_wait_policy.cpp, docs/MEASUREMENTS.md).

Usage: wait_policies.py --memplan BIN [--node-modules DIR] [--repeat N] [--work DIR] MODEL_DIR...

Each MODEL_DIR is laid out like ONNX's backend tests (model.onnx, test_data_set_0/input_N.pb).
Policies (environment of the memplan process): libgomp's own default (GOMP_SPINCOUNT=300000),
OMP_WAIT_POLICY=passive (no spinning), GOMP_SPINCOUNT=1000 / 10000 / 100000, and memplan's default
(neither variable set). Prints one markdown table per model.
"""
import argparse
import contextlib
import os
import sys

import bench_models
from bench_run import Memplan, OnnxRuntime, RunFailed, busy_core, run_json

POLICIES = [
    ("libgomp default (GOMP_SPINCOUNT=300000)", {"GOMP_SPINCOUNT": "300000"}),
    ("OMP_WAIT_POLICY=passive", {"OMP_WAIT_POLICY": "passive"}),
    ("GOMP_SPINCOUNT=1000", {"GOMP_SPINCOUNT": "1000"}),
    ("GOMP_SPINCOUNT=10000", {"GOMP_SPINCOUNT": "10000"}),
    ("GOMP_SPINCOUNT=100000", {"GOMP_SPINCOUNT": "100000"}),
    ("memplan's default (no variable set)", {}),
]


def memplan_ms(memplan, case, threads, repeat, out, extra_env):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(extra_env)
    return run_json(memplan.run_cmd(case, {}, threads, repeat, out), env)[0]["run_ms"]["median"]


def main():
    p = argparse.ArgumentParser(usage=__doc__)
    p.add_argument("models", nargs="+")
    p.add_argument("--memplan", required=True)
    p.add_argument("--node-modules")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--work", default="build/bench/wait_policies")
    a = p.parse_args()
    memplan = Memplan(a.memplan)
    ort = OnnxRuntime(a.node_modules) if a.node_modules else None
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    for folder in a.models:
        name = os.path.basename(os.path.normpath(folder))
        work = os.path.join(a.work, name)
        case = bench_models.prepare(folder, os.path.join(work, "inputs"))
        out = os.path.join(work, "out")
        rows = []
        for busy in (False, True):
            ctx = busy_core() if busy else contextlib.nullcontext()
            with ctx:
                one = memplan_ms(memplan, case, 1, a.repeat, out, {})
                rows.append((busy, "memplan, 1 thread (memplan's default policy)", one))
                for label, env in POLICIES:
                    rows.append((busy, f"memplan, 2 threads, {label}", memplan_ms(memplan, case, 2, a.repeat, out, env)))
                if ort:
                    try:
                        rows.append((busy, "ONNX Runtime, 1 thread", ort.run(case, 1, a.repeat)["run_ms"]["median"]))
                        rows.append((busy, "ONNX Runtime, 2 threads", ort.run(case, 2, a.repeat)["run_ms"]["median"]))
                    except RunFailed as e:
                        print(f"{name}: ONNX Runtime: {e}", file=sys.stderr)
        print(f"\n### {name} (median of {a.repeat} runs, ms)\n")
        print("| configuration | idle | one core busy |")
        print("|---|---|---|")
        labels = [r[1] for r in rows if not r[0]]
        for label in labels:
            idle = next(r[2] for r in rows if r[1] == label and not r[0])
            loaded = next((r[2] for r in rows if r[1] == label and r[0]), None)
            print(f"| {label} | {idle:.1f} | {'—' if loaded is None else f'{loaded:.1f}'} |", flush=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())

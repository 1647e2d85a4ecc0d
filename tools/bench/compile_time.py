#!/usr/bin/python3
"""Compile time under the tuning budget: `memplan compile` with the default (--prefer balanced,
which times leaner kernels within --tuning-seconds) against --prefer speed (which times nothing),
per model and oneDNN instruction set, with each one's arena. Prints a markdown table and, for
each row, whether the default stayed within 3x the speed compile plus 2 seconds.

Usage: compile_time.py MEMPLAN [--isa native,AVX2] [--repeat N] MODEL.onnx|DIR...
  a DIR is searched for */model.onnx; --repeat N: the fastest of N compiles each (default 1)
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import bench_models


def shape_args(model):
    """--shape NAME=DIMS for each input of the model's test_data_set_0, where it has one (the
    models/real ones with symbolic dims compile for their test inputs' shapes)."""
    with tempfile.TemporaryDirectory() as tmp:
        case = bench_models.prepare(os.path.dirname(os.path.abspath(model)), tmp)
    return [a for name, _, shape in case.inputs if shape for a in ("--shape", f"{name}={'x'.join(map(str, shape))}")]


def compile_once(memplan, model, prefer, env, shapes):
    t0 = time.monotonic()
    r = subprocess.run([memplan, "compile", model, "--prefer", prefer, "--report", "json"] + shapes,
                       capture_output=True, text=True, env=env)
    seconds = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}")
    return seconds, json.loads(r.stdout)


def models_of(paths):
    out = []
    for p in paths:
        out += sorted(glob.glob(os.path.join(p, "**", "model.onnx"), recursive=True)) if os.path.isdir(p) else [p]
    return out


def main():
    args = sys.argv[1:]
    isas, repeat = ["native", "AVX2"], 1
    for flag in ("--isa", "--repeat"):
        if flag in args:
            i = args.index(flag)
            if flag == "--isa":
                isas = args[i + 1].split(",")
            else:
                repeat = int(args[i + 1])
            del args[i:i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    memplan, models = args[0], models_of(args[1:])
    print("| model | oneDNN ISA | speed s | default s | default / (3 x speed + 2) | speed arena | default arena "
          "| timed | not run | tuning s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for isa in isas:
        env = dict(os.environ)
        if isa != "native":
            env["DNNL_MAX_CPU_ISA"] = isa
        for m in models:
            name = os.path.basename(os.path.dirname(m)) or m
            try:
                shapes = shape_args(m)
                speed = min((compile_once(memplan, m, "speed", env, shapes) for _ in range(repeat)), key=lambda r: r[0])
                default = min((compile_once(memplan, m, "balanced", env, shapes) for _ in range(repeat)),
                              key=lambda r: r[0])
            except RuntimeError as e:
                print(f"| {name} | {isa} | {e} |||||||")
                continue
            share = default[0] / (3 * speed[0] + 2)
            worst = max(worst, share)
            t = default[1].get("kernel_tuning", {})
            print(f"| {name} | {default[1].get('isa', isa)} | {speed[0]:.2f} | {default[0]:.2f} | {share:.2f} "
                  f"| {speed[1]['arena_bytes']:,} | {default[1]['arena_bytes']:,} | {t.get('candidates_timed', 0)} "
                  f"| {t.get('candidates_skipped', 0)} | {t.get('seconds', 0):.2f} |", flush=True)
    print(f"\nworst default / (3 x speed + 2): {worst:.2f} (at most 1 is the bound)")


if __name__ == "__main__":
    main()

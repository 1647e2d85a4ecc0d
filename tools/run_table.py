#!/usr/bin/python3
"""Runs every model folder given (laid out like ONNX's backend tests) with `memplan run` at 1 and 2
threads, and prints a table: max abs error against the expected outputs, arena, lower bound and the
median inference time. Usage: run_table.py MEMPLAN MODEL_DIR... [--repeat N]"""
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, numpy_helper


def load_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def main():
    args = sys.argv[1:]
    repeat = "5"
    if "--repeat" in args:
        i = args.index("--repeat")
        repeat = args[i + 1]
        del args[i:i + 2]
    memplan, dirs = args[0], args[1:]
    print("| model | max abs error | arena bytes | lower bound | median ms, 1 thread | median ms, 2 threads |")
    print("|---|---|---|---|---|---|")
    for d in dirs:
        name = os.path.basename(d.rstrip("/"))
        data = sorted(glob.glob(os.path.join(d, "test_data_set_*")))[0]
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [memplan, "run", os.path.join(d, "model.onnx"), "--output-dir", tmp, "--report", "json",
                   "--repeat", repeat]
            for k, path in enumerate(sorted(glob.glob(os.path.join(data, "input_*.pb")))):
                tensor_name, array = load_pb(path)
                npy = os.path.join(tmp, f"input_{k}.npy")
                np.save(npy, array)
                cmd += ["--input", f"{tensor_name}={npy}" if tensor_name else npy]
            times, report = {}, None
            for threads in ("1", "2"):
                r = subprocess.run(cmd + ["--threads", threads], capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"| {name} | error: {r.stderr.strip()} |")
                    break
                report = json.loads(r.stdout)
                times[threads] = report["run_ms"]["median"]
            else:
                err = 0.0
                outputs = sorted(glob.glob(os.path.join(data, "output_*.pb")))
                files = sorted(glob.glob(os.path.join(tmp, "*.npy")))
                for path in outputs:
                    tensor_name, want = load_pb(path)
                    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in tensor_name)
                    got = np.load(os.path.join(tmp, safe + ".npy"))
                    err = max(err, float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0)
                print(f"| {name} | {err:.3g} | {report['arena_bytes']} | {report['lower_bound_bytes']} | "
                      f"{times['1']:.2f} | {times['2']:.2f} |")


if __name__ == "__main__":
    main()

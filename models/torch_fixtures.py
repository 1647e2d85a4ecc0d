"""What models/torch_decoders/make_torch_decoders.py and models/torch_dynamic/make_torch_dynamic.py
share: writing a model's data sets in make_models.py's layout (model.onnx, test_data_set_K/
input_N.pb, output_N.pb, inputs/<name>.npy, expected/<name>.npy) with ONNX Runtime's outputs as the
expected ones (graph optimizations off, checked against level 'all' and against torch), and running
a memplan binary on them for a report.

ONNX Runtime comes from onnxruntime-node: NODE_PATH (default <repo>/build/bench/node_modules, where
tools/benchmark.sh installs it) must hold it. The writes go through make_models.write_bytes:
idempotent, a file is rewritten only when its bytes change."""
import os
import subprocess
import tempfile

import numpy as np
import torch
from onnx import numpy_helper

import make_models

MODELS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(MODELS)
RUN_ORT = os.path.join(MODELS, "torch_decoders", "run_ort.js")
NODE_PATH = os.environ.get("NODE_PATH", os.path.join(REPO, "build", "bench", "node_modules"))

changed = make_models.changed
npy_bytes = make_models.npy_bytes


def write_bytes(path, data):
    """`path` relative to models/."""
    make_models.write_bytes(path, data)


def folder_writer(folder):
    """write_bytes for paths relative to models/<folder>/."""
    return lambda path, data: write_bytes(f"{folder}/{path}", data)


def shape_str(v):
    t = v.type.tensor_type
    if not t.HasField("shape"):
        return "?"
    return "[" + ",".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
                          for d in t.shape.dim) + "]"


def as_np(out):
    if isinstance(out, torch.Tensor):
        out = (out,)
    return [o.detach().numpy() for o in out]


def run_ort(model_path, set_dir, level):
    """ONNX Runtime's outputs on a data set's input_N.pb, at graph optimization `level`."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NODE_PATH=NODE_PATH)
        r = subprocess.run(["node", RUN_ORT, model_path, set_dir, tmp, level], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            err = (r.stderr.strip().splitlines() or ["?"])[-1]
            raise RuntimeError(f"onnxruntime ({level}) failed on {set_dir}: {err}")
        return {f[:-4]: np.load(os.path.join(tmp, f)) for f in os.listdir(tmp)}


def max_diff(a, b, what, float_tol):
    """The largest absolute difference; integers and bools must be equal, floats within float_tol."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        raise AssertionError(f"{what}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}")
    if a.size == 0:
        return 0.0
    d = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    limit = 0.0 if a.dtype.kind in "iub" else float_tol
    if d > limit:
        raise AssertionError(f"{what}: max abs difference {d} > {limit}")
    return d


def write_inputs(set_dir, in_names, arrays):
    """set_dir relative to models/; arrays by input name (numpy)."""
    for j, n in enumerate(in_names):
        a = np.asarray(arrays[n])
        write_bytes(f"{set_dir}/input_{j}.pb", numpy_helper.from_array(a, n).SerializeToString())
        write_bytes(f"{set_dir}/inputs/{n}.npy", npy_bytes(a))


def expect_ort(model_path, set_dir, out_names, torch_outputs, float_tol):
    """Runs ONNX Runtime on the written inputs, checks it against torch's outputs (a list in
    out_names' order) and against its own optimized run, writes its outputs as the expected
    ones, and returns (its outputs by name, a one-line report)."""
    full = os.path.join(MODELS, set_dir)
    ort = run_ort(model_path, full, "disabled")
    ort_all = run_ort(model_path, full, "all")
    report = []
    for j, n in enumerate(out_names):
        t = max_diff(ort[n], torch_outputs[j], f"{set_dir} {n} ORT vs torch", float_tol)
        o = max_diff(ort_all[n], ort[n], f"{set_dir} {n} ORT all vs disabled", float_tol)
        report.append(f"{n} {ort[n].dtype}{list(ort[n].shape)} torch-vs-ORT {t:.3g} (ORT all-vs-disabled {o:.3g})")
        write_bytes(f"{set_dir}/output_{j}.pb", numpy_helper.from_array(ort[n], n).SerializeToString())
        write_bytes(f"{set_dir}/expected/{n}.npy", npy_bytes(ort[n]))
    return ort, "; ".join(report)


def run_memplan(binary, model_path, set_dir, in_names, out_names):
    """Prints how `memplan run` (plain and --check-memory) does on a data set (set_dir relative
    to models/): each output matches (rtol 1e-3, atol 1e-4) or not, or memplan's error line."""
    full = os.path.join(MODELS, set_dir)
    for extra in ([], ["--check-memory"]):
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [binary, "run", model_path, "--output-dir", tmp] + extra
            for n in in_names:
                cmd += ["-i", f"{n}={os.path.join(full, 'inputs', n + '.npy')}"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            label = "memplan" + (" --check-memory" if extra else "")
            if r.returncode != 0:
                err = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
                print(f"         {label}: exit {r.returncode}: {err}")
                continue
            msgs = []
            for n in out_names:
                exp = np.load(os.path.join(full, "expected", n + ".npy"))
                path = os.path.join(tmp, n + ".npy")
                if not os.path.exists(path):
                    msgs.append(f"{n} missing")
                    continue
                got = np.load(path)
                if got.shape != exp.shape or got.dtype != exp.dtype:
                    msgs.append(f"{n} MISMATCH {got.dtype}{list(got.shape)} vs expected {exp.dtype}{list(exp.shape)}")
                    continue
                if exp.size == 0:
                    msgs.append(f"{n} matches (empty {list(exp.shape)})")
                    continue
                diff = np.abs(got.astype(np.float64) - exp.astype(np.float64))
                ok = float(np.max(diff)) == 0 if exp.dtype.kind in "iub" else bool(
                    np.all(diff <= 1e-4 + 1e-3 * np.abs(exp.astype(np.float64))))
                msgs.append(f"{n} {'matches' if ok else 'MISMATCH'} (max abs err {float(np.max(diff)):.3g})")
            print(f"         {label}: " + "; ".join(msgs))

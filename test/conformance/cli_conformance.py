#!/usr/bin/python3
"""Runs ONNX test folders through the `memplan run` command line, the way a user would: every
input_N.pb becomes an .npy file, memplan runs with `--input NAME=FILE.npy ... --output-dir DIR`
and nothing else, and the <output name>.npy files it writes are compared with output_N.pb.

  cli_conformance.py SUITE_DIR [--must-pass FILE] [--write-passing FILE] [--filter TEXT]
                     [--require-all] [--timeout S] [--jobs N] [--memplan PATH]

SUITE_DIR is the generated suite (its node/ folder holds the tests) or any folder of model
folders laid out the same way (model.onnx, test_data_set_K/{input,output}_N.pb), such as
../shared/models. The comparison is the API runner's (memplan_conformance): same dtype and shape,
|got - want| <= atol + rtol * |want|, NaN equals NaN; ONNX's node tests at rtol 1e-3, atol 1e-7,
real models at their SOURCE.json "suggested_tolerance" (rtol 1e-3, atol 1e-4 when it names none).

A memplan exit code 3 (unsupported) is a skip; any other failure to run, a crash, a timeout or a
mismatch is a failure. Data .npy cannot hold (bfloat16, strings, sequences, optionals) is
skipped: those tests stay covered by the API runner. The last line is
"N passed, N failed, N skipped"."""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter

import numpy as np
from onnx import TensorProto, load

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))
sys.dont_write_bytecode = True  # no __pycache__ left in tools/
import onnx_test_data  # noqa: E402  (the one reader of ONNX test data, shared with tools/)

NODE_TOLERANCE = (1e-3, 1e-7)   # ONNX's own runner
MODEL_TOLERANCE = (1e-3, 1e-4)  # real models: expected outputs come from another runtime
EXIT_UNSUPPORTED = 3


class Skip(Exception):
    """A test not run; `kind` groups it in the summary (default: the reason itself)."""

    def __init__(self, why, kind=None):
        super().__init__(why)
        self.kind = kind or why


class Fail(Exception):
    pass


def tolerance_for(test_dir, node_suite):
    """(rtol, atol) for a test folder; raises Fail naming SOURCE.json when it is malformed."""
    source = os.path.join(test_dir, "SOURCE.json")
    if not os.path.exists(source):
        return NODE_TOLERANCE if node_suite else MODEL_TOLERANCE
    try:
        with open(source, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise Fail(f"{source}: malformed JSON: {e}") from None
    if not isinstance(doc, dict):
        raise Fail(f"{source}: malformed JSON: not an object")
    if "suggested_tolerance" not in doc:
        return MODEL_TOLERANCE
    tol = doc["suggested_tolerance"]
    values = [tol.get(k) if isinstance(tol, dict) else None for k in ("rtol", "atol")]
    # bool is an int in Python, but not a number in JSON.
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < float("inf") for v in values):
        raise Fail(f'{source}: suggested_tolerance: not {{"rtol": R, "atol": A}} with non-negative numbers')
    return tuple(float(v) for v in values)


def tolerance_str(tol):
    return f"rtol {tol[0]:g}, atol {tol[1]:g}"


def npy_unfit_type(elem_type):
    """Why .npy (as memplan reads and writes it) cannot carry this element type, or None."""
    if elem_type == TensorProto.BFLOAT16:
        return "bfloat16 data (.npy has no bfloat16; tested through the API)"
    if elem_type == TensorProto.STRING:
        return "string data (memplan's .npy takes numbers only)"
    return None


def npy_unfit(values):
    """Why .npy cannot carry one of these declared graph inputs/outputs, or None."""
    for v in values:
        elem = onnx_test_data.element_type(v)
        if elem is None:
            return f"{v.type.WhichOneof('value').replace('_type', '')} data (memplan run takes tensors, sequences and optionals of them)"
        why = npy_unfit_type(elem)
        if why:
            return why
    return None


def output_file(name):
    """memplan run's file name for an output (README, "memplan run")."""
    out = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return ("_" + out if out in ("", ".", "..") else out) + ".npy"


def compare(got, want, tol):
    """None when equal within tolerance, else why not (one line)."""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    a, b = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
        ok = (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b)) | (diff <= tol[1] + tol[0] * np.abs(b))
    if ok.all():
        return None
    bad = np.flatnonzero(~ok)
    i = bad[0]
    return (f"element {i} is {a[i]:.9g}, expected {b[i]:.9g} ({len(bad)} of {a.size} elements out of "
            f"tolerance, max |diff| {np.nanmax(diff[bad]):.9g})")


def error_line(stderr):
    """The line of memplan's stderr that says what went wrong: its one-line error, a sanitizer's
    ERROR line, or else the first line (CLI11's usage errors come first, then "Run with --help")."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return next((line for line in lines if "error" in line.lower()), lines[0] if lines else "(no message)")


def run_data_set(args, model_path, data_dir, inputs, outputs, work, tol):
    """Runs memplan on one test_data_set_K; raises Skip or Fail."""
    in_dir, out_dir = os.path.join(work, "in"), os.path.join(work, "out")
    os.makedirs(in_dir)
    cmd = [args.memplan, "run", model_path]
    for i, (name, value, elem) in enumerate(onnx_test_data.read_values(data_dir, "input", inputs)):
        if npy_unfit_type(elem):
            raise Skip(npy_unfit_type(elem))
        # Files are named by position: tensor names may hold characters no file name can.
        path = onnx_test_data.save_value(os.path.join(in_dir, f"input_{i}"), value)
        cmd += ["--input", f"{name}={path if path else 'none'}"]
    cmd += ["--output-dir", out_dir]
    # Its own session, so that a timeout kills whatever it started too.
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                          start_new_session=True) as proc:
        try:
            stderr = proc.communicate(timeout=args.timeout)[1]
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise Fail(f"timeout: no result after {args.timeout} s") from None
    if proc.returncode == EXIT_UNSUPPORTED:
        raise Skip(error_line(stderr), skip_kind(error_line(stderr)))
    if proc.returncode < 0:
        raise Fail(f"crash: signal {-proc.returncode}: {error_line(stderr)}")
    if proc.returncode != 0:
        raise Fail(f"exit code {proc.returncode}: {error_line(stderr)}")
    for name, want, elem in onnx_test_data.read_values(data_dir, "output", outputs):
        if npy_unfit_type(elem):
            raise Skip(npy_unfit_type(elem))
        path = os.path.join(out_dir, output_file(name))
        folder = path[:-len(".npy")]
        if want is None:
            if os.path.exists(path) or os.path.exists(folder):
                raise Fail(f"output '{name}': memplan wrote a value, expected none")
            continue
        if isinstance(want, list):
            if not os.path.isdir(folder):
                raise Fail(f"output '{name}': memplan wrote no folder {os.path.basename(folder)}")
            got = [np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder), key=lambda f: int(f[:-4]))]
            if len(got) != len(want):
                raise Fail(f"output '{name}': a sequence of {len(got)} tensors, expected {len(want)}")
            for k, (g, w) in enumerate(zip(got, want)):
                diff = compare(g, w, tol)
                if diff:
                    raise Fail(f"output '{name}': tensor {k}: {diff}")
            continue
        if not os.path.exists(path):
            raise Fail(f"output '{name}': memplan wrote no {output_file(name)}")
        diff = compare(np.load(path), want, tol)
        if diff:
            raise Fail(f"output '{name}': {diff}")


def run_test(args, test_dir, node_suite, tmp):
    """(outcome, tolerance or None, reason, skip kind) for one test folder; outcome is PASS, FAIL
    or SKIP."""
    tol = None
    work = tempfile.mkdtemp(dir=tmp)
    try:
        tol = tolerance_for(test_dir, node_suite)
        model_path = os.path.join(test_dir, "model.onnx")
        inputs, outputs = onnx_test_data.graph_io(load(model_path, load_external_data=False))
        unfit = npy_unfit(inputs + outputs)
        if unfit:
            raise Skip(unfit)
        sets = sorted(d for d in os.listdir(test_dir) if d.startswith("test_data_set_"))
        if not sets:
            raise Skip("no test data")
        for k, data_set in enumerate(sets):
            run_data_set(args, model_path, os.path.join(test_dir, data_set), inputs, outputs,
                         os.path.join(work, str(k)), tol)
        return "PASS", tol, "", None
    except Skip as e:
        return "SKIP", tol, str(e), e.kind
    except Fail as e:
        return "FAIL", tol, str(e), None
    except Exception as e:  # a broken test folder is this test's failure, not the end of the run
        return "FAIL", tol, f"{type(e).__name__}: {e}".splitlines()[0], None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def skip_kind(why):
    """memplan's "unsupported" error shortened to what is unsupported, for the summary by kind."""
    for pattern in (r"no kernel for .*? opset \d+", r"opset \d+", r"IR version \d+", r"unknown ops?[^;]*"):
        m = re.search(pattern, why)
        if m:
            return m.group(0)
    if re.search(r"\b(sequence|optional|map)\b", why):
        return "sequence/map/optional types"
    return why.rsplit(": ", 1)[-1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("suite", help="the generated suite (holding node/) or a folder of model folders")
    p.add_argument("--must-pass", metavar="FILE", help="fail unless every test listed here passes")
    p.add_argument("--write-passing", metavar="FILE", help="write the passing tests' names here")
    p.add_argument("--filter", metavar="TEXT", default="", help="only tests whose name contains TEXT")
    p.add_argument("--require-all", action="store_true", help="fail unless every test passes (no skips)")
    p.add_argument("--timeout", type=int, default=60, metavar="S", help="seconds per memplan run (default 60)")
    p.add_argument("--jobs", type=int, default=2, metavar="N", help="tests run at once (default 2)")
    p.add_argument("--memplan", default=os.path.join(REPO, "build", "tools", "memplan"),
                   help="the memplan binary (default: build/tools/memplan)")
    args = p.parse_args()

    suite = os.path.join(args.suite, "node") if os.path.isdir(os.path.join(args.suite, "node")) else args.suite
    if not os.path.isdir(suite):
        sys.exit(f"cli_conformance: {suite} does not exist; generate it with tools/gen_conformance.sh")
    if not os.access(args.memplan, os.X_OK):
        sys.exit(f"cli_conformance: {args.memplan} is not an executable; build memplan first (tools/build.sh)")
    must_pass = set()
    if args.must_pass:
        try:
            with open(args.must_pass) as f:
                must_pass = {line.strip() for line in f if line.strip() and not line.startswith("#")}
        except OSError as e:
            sys.exit(f"cli_conformance: cannot read {args.must_pass}: {e.strerror}")
    # ONNX lays its node tests out as <suite>/node/<test>: those keep ONNX's own tolerance.
    node_suite = os.path.basename(os.path.realpath(suite)) == "node"
    tests = sorted(t for t in os.listdir(suite)
                   if args.filter in t and os.path.exists(os.path.join(suite, t, "model.onnx")))

    start = time.monotonic()
    counts, skip_kinds, passing = Counter(), Counter(), []
    with tempfile.TemporaryDirectory(prefix="memplan-cli-conformance-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        # memplan runs in its own process, so threads are enough to keep two of them busy.
        results = pool.map(lambda t: run_test(args, os.path.join(suite, t), node_suite, tmp), tests)
        for name, (outcome, tol, why, kind) in zip(tests, results):
            counts[outcome] += 1
            if outcome == "PASS":
                passing.append(name)
            elif outcome == "SKIP":
                skip_kinds[kind] += 1
                print(f"SKIP {name}: {why}", flush=True)
            else:
                print(f"FAIL {name}" + (f" ({tolerance_str(tol)})" if tol else "") + f": {why}", flush=True)
    seconds = time.monotonic() - start

    if skip_kinds:
        print("\nskipped, by reason:")
        for kind, n in sorted(skip_kinds.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n}  {kind}")
    exit_code = 0
    if args.must_pass:
        regressions = sorted(must_pass - set(passing))
        for t in regressions:
            print(f"MUST-PASS FAILED {t}")
        newly = [t for t in passing if t not in must_pass]
        if newly:
            print("passing but not on the must-pass list (add them): " + " ".join(newly))
        print(f"must-pass: {len(must_pass) - len(regressions)} of {len(must_pass)} pass")
        if regressions:
            exit_code = 1
    if args.write_passing:
        with open(args.write_passing, "w") as f:
            f.write("# ONNX node tests that must pass through memplan run "
                    "(generated with cli_conformance.py --write-passing)\n")
            f.writelines(t + "\n" for t in passing)
    if args.require_all and (counts["FAIL"] or counts["SKIP"] or not tests):
        print("--require-all: " + ("no tests found" if not tests else "not every test passed"))
        exit_code = 1
    print(f"cli conformance time: {seconds:.1f} s for {len(tests)} tests")
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return exit_code


if __name__ == "__main__":
    sys.exit(main())

"""Runs memplan and ONNX Runtime (through ort_bench.js) as child processes for the benchmark: wall
times, JSON reports, peak resident memory, and a one-line reason when a run fails."""
import json
import os
import re
import signal
import subprocess
import contextlib
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_SCRIPT = os.path.join(HERE, "ort_bench.js")
TIMEOUT_S = 1800


class RunFailed(Exception):
    """A child process failed; the message is one line fit for the table's notes."""


def _reason(cmd, rc, stderr):
    if rc < 0:
        return f"{os.path.basename(cmd[0])} crashed ({signal.Signals(-rc).name})"
    lines = [l.strip() for l in stderr.strip().splitlines() if l.strip()]
    last = lines[-1] if lines else f"exit code {rc}"
    return re.sub(r"^(memplan|ort_bench): (error: )?", "", last)


def run(cmd, env=None):
    """Runs cmd; returns (stdout, wall seconds). Raises RunFailed with the reason."""
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"timed out after {TIMEOUT_S} s") from None
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        raise RunFailed(_reason(cmd, r.returncode, r.stderr))
    return r.stdout, seconds


def run_json(cmd, env=None):
    out, seconds = run(cmd, env)
    return json.loads(out[out.index("{"):out.rindex("}") + 1]), seconds


def peak_rss_kb(cmd, env=None):
    """The peak resident set of `cmd` in KiB: GNU time's %M (ru_maxrss from wait4). GNU time is a
    tiny C program, so the copy of its own memory that the child starts from (fork, then exec) stays
    far below what the runtimes use; a Python parent would leak its tens of MB into the number."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as f:
        r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", f.name] + cmd, capture_output=True, text=True,
                           env=env, timeout=TIMEOUT_S)
        lines = f.read().strip().splitlines()
    if r.returncode != 0:
        killed = re.search(r"terminated by signal (\d+)", " ".join(lines))
        raise RunFailed(_reason(cmd, -int(killed.group(1)) if killed else r.returncode, r.stderr))
    return int(lines[-1])


@contextlib.contextmanager
def busy_core():
    """One core kept busy by a shell loop for the duration, as another process on the machine
    would (a phone's other apps, a server's other jobs)."""
    p = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.2)  # running before the timed process starts
        yield
    finally:
        p.kill()
        p.wait()


def dims_text(shape):
    """A shape as memplan's options spell it: 1x3x224x224, or `scalar`."""
    return "x".join(map(str, shape)) or "scalar"


def _bound_args(bounds):
    return [arg for name, shape in bounds.items() for arg in ("--bound", f"{name}={dims_text(shape)}")]


class Memplan:
    def __init__(self, binary):
        self.binary = os.path.abspath(binary)
        out, _ = run([self.binary, "--version"])
        self.version = out.strip()

    def compile(self, case, bounds):
        """(json report, wall seconds) of `memplan compile` with every input's shape fixed."""
        cmd = [self.binary, "compile", case.model, "--report", "json"] + _bound_args(bounds)
        for name, _, shape in case.inputs:
            cmd += ["--shape", f"{name}={dims_text(shape)}"]
        return run_json(cmd)

    def run_cmd(self, case, bounds, threads, repeat, out_dir, sessions=1, fixed_threads=False):
        cmd = [self.binary, "run", case.model, "--threads", str(threads), "--warmup", "1", "--repeat", str(repeat),
               "--output-dir", out_dir, "--report", "json"] + _bound_args(bounds)
        if fixed_threads:
            cmd.append("--fixed-threads")
        if sessions > 1:
            cmd += ["--sessions", str(sessions)]
        for name, npy, _ in case.inputs:
            cmd += ["--input", f"{name}={npy}"]
        return cmd

    def run(self, case, bounds, threads, repeat, out_dir, sessions=1, fixed_threads=False):
        return run_json(self.run_cmd(case, bounds, threads, repeat, out_dir, sessions, fixed_threads))[0]

    def baseline_cmd(self):
        return [self.binary, "--version"]


class OnnxRuntime:
    def __init__(self, node_modules, node="node"):
        self.env = dict(os.environ, NODE_PATH=os.path.abspath(node_modules))
        self.node = node
        info, _ = run_json(self.baseline_cmd(), self.env)
        self.version = info["ort"]["node"]
        self.node_version = run([node, "--version"])[0].strip()

    def run_cmd(self, case, threads, repeat, out_dir, concurrent=1):
        cmd = [self.node, ORT_SCRIPT, case.model, "--threads", str(threads), "--repeat", str(repeat)]
        if concurrent > 1:
            cmd += ["--concurrent", str(concurrent)]
        if out_dir:
            cmd += ["--output-dir", out_dir]
        for name, npy, _ in case.inputs:
            cmd += ["--input", f"{name}={npy}"]
        return cmd

    def run(self, case, threads, repeat, out_dir=None, concurrent=1):
        return run_json(self.run_cmd(case, threads, repeat, out_dir, concurrent), self.env)[0]

    def baseline_cmd(self):
        return [self.node, ORT_SCRIPT, "--baseline"]

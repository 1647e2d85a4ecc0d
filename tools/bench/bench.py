#!/usr/bin/python3
"""Benchmarks memplan against ONNX Runtime on folders of models and writes docs/BENCHMARKS.md.

Usage: bench.py --memplan BIN --node-modules DIR [options] "TITLE=DIR" ...

Each DIR holds model folders (model.onnx + test_data_set_0/input_N.pb, output_N.pb) and becomes one
table titled TITLE. For every model: memplan compile (time and memory report), memplan run and
ONNX Runtime at 1 and 2 threads on the same inputs, peak RSS of both, and the outputs compared with
each other and with the expected ones. A model that a runtime cannot run stays in the table with the
reason. Options:
  --repeat N            timed inferences per model and thread count (default 10)
  --rounds R            rounds of memplan then ONNX Runtime, in turn, per thread count; a cell is
                        the median of the rounds' medians (default 1)
  --fixed-threads       memplan's 1- and 2-thread cells at exactly that many threads, as ONNX
                        Runtime's intra-op pool runs (`memplan run --fixed-threads`); the busy-core
                        column keeps memplan's default adaptive threads
  --compile-repeat K    memplan compile runs, the fastest is kept (default 3)
  --filter REGEX        only models whose name matches
  --out FILE            the markdown (default docs/BENCHMARKS.md)
  --work DIR            inputs and outputs (default build/bench/work)
  --results FILE        also write the raw results as JSON (default <work>/results.json)
  --from-results FILE   write the markdown from a results file, running nothing
  --node NODE           the node binary (default node)
  --command TEXT        the command named in the markdown as the one that made it
  --no-load             skip the columns under load (2 threads with one core busy, 2 sessions)
  --section NAME        write the tables as the section NAME of the existing --out file (replacing
                        it, or at the end), not the whole file
  --overview FILE...    running nothing, write the page's overview (one row per table of these
                        results files) into --out
"""
import argparse
import json
import os
import re
import shutil
import statistics
import sys

import bench_models
import bench_report
from bench_run import Memplan, OnnxRuntime, RunFailed, busy_core, dims_text, peak_rss_kb

BOUND_HINT = re.compile(r"--bound (\S+)=<dims>")


def baseline_kb(cmd, env=None):
    return min(peak_rss_kb(cmd, env) for _ in range(3))


def compile_with_bounds(memplan, case, repeat):
    """memplan compile; when it asks for a --bound on a graph output, retries with the expected
    output's shape (as a user would). Returns (report, fastest seconds, bounds)."""
    bounds = {}
    while True:
        try:
            report, best = memplan.compile(case, bounds)
            break
        except RunFailed as e:
            hint = BOUND_HINT.search(str(e))
            if not hint or hint.group(1) not in case.expected or hint.group(1) in bounds:
                raise
            bounds[hint.group(1)] = case.expected[hint.group(1)].shape
    for _ in range(repeat - 1):
        best = min(best, memplan.compile(case, bounds)[1])
    return report, best, bounds


def _without_path(error, case):
    return str(error).replace(case.model + ": ", "")


def compile_memplan(memplan, case, args, r):
    """memplan compile's report into `r`; the bounds its runs need, or None when it failed."""
    try:
        report, r["compile_s"], bounds = compile_with_bounds(memplan, case, args.compile_repeat)
    except RunFailed as e:
        r["notes"].append(f"memplan compile: {_without_path(e, case)}")
        return None
    if bounds:
        r["notes"].append("memplan: " + ", ".join(f"--bound {k}={dims_text(v)}" for k, v in bounds.items()))
    for key in ("arena_bytes", "lower_bound_bytes", "naive_bytes", "weights_bytes"):
        r[key] = report[key]
    r["isa"] = report.get("isa", "")
    return bounds


def time_in_turn(memplan, ort, case, bounds, work, args, r):
    """Latency at 1 and 2 threads: per thread count, `args.rounds` rounds of one memplan run then one
    ONNX Runtime run (each a process: warm-up, `args.repeat` timed inferences, their median), and the
    median of the rounds. A shared machine drifts over a minute; taken in turn, both runtimes see
    the same drift, and one slow round does not decide a cell. A runtime that fails stops being
    timed (its note says why); the other goes on."""
    runners = {  # name: (whether it can run, one timed process at t threads, its failure's note)
        "memplan": (bounds is not None,
                    lambda t: memplan.run(case, bounds, int(t), args.repeat, os.path.join(work, f"memplan_{t}"),
                                          fixed_threads=args.fixed_threads),
                    lambda e: f"memplan run: {_without_path(e, case)}"),
        "ort": (True, lambda t: ort.run(case, int(t), args.repeat, os.path.join(work, "ort_1") if t == "1" else None),
                lambda e: f"ONNX Runtime: {e}"),
    }
    ok = {name: can for name, (can, _, _) in runners.items()}
    for t in ("1", "2"):
        times = {name: [] for name in runners}
        for _ in range(args.rounds):
            for name, (_, run, note) in runners.items():
                if not ok[name]:
                    continue
                try:
                    rep = run(t)
                except RunFailed as e:
                    r["notes"].append(note(e))
                    ok[name] = False
                    continue
                times[name].append(rep["run_ms"]["median"])
                if t == "1":
                    r[f"{name}_per_s"]["1"] = rep.get("throughput_per_s")
        for name, got in times.items():
            if ok[name] and got:
                r[f"{name}_ms"][t], r[f"{name}_ms_rounds"][t] = statistics.median(got), got
    return ok["memplan"], ok["ort"]


def bench_memplan(memplan, case, bounds, work, args, r, base_kb):
    """The columns under load, peak RSS and the outputs against the expected ones."""
    try:
        if not args.no_load:
            with busy_core():
                rep = memplan.run(case, bounds, 2, args.repeat, os.path.join(work, "memplan_busy"))
            r["memplan_ms"]["2busy"] = rep["run_ms"]["median"]
            rep = memplan.run(case, bounds, 1, args.repeat, os.path.join(work, "memplan_sessions"), sessions=2)
            r["memplan_per_s"]["2x1"] = rep["throughput_per_s"]
        cmd = memplan.run_cmd(case, bounds, 1, 1, os.path.join(work, "memplan_rss"))
        r["memplan_rss_bytes"] = (peak_rss_kb(cmd) - base_kb) * 1024
        r["diff_vs_expected"] = bench_models.max_abs_diff(os.path.join(work, "memplan_1"), case.expected)
    except (RunFailed, ValueError) as e:
        r["notes"].append(f"memplan run: {_without_path(e, case)}")


def bench_ort(ort, case, args, r, base_kb):
    try:
        if not args.no_load:
            with busy_core():
                r["ort_ms"]["2busy"] = ort.run(case, 2, args.repeat)["run_ms"]["median"]
            r["ort_per_s"]["2x1"] = ort.run(case, 1, args.repeat, concurrent=2)["throughput_per_s"]
        r["ort_rss_bytes"] = (peak_rss_kb(ort.run_cmd(case, 1, 0, None), ort.env) - base_kb) * 1024
    except RunFailed as e:
        r["notes"].append(f"ONNX Runtime: {e}")


def bench_case(folder, memplan, ort, bases, args):
    work = os.path.join(args.work, os.path.basename(folder))
    shutil.rmtree(work, ignore_errors=True)
    r = {"name": os.path.basename(folder), "nodes": 0, "weights_bytes": None, "notes": [], "memplan_ms": {},
         "ort_ms": {}, "memplan_ms_rounds": {}, "ort_ms_rounds": {}, "memplan_per_s": {}, "ort_per_s": {}}
    try:
        case = bench_models.prepare(folder, os.path.join(work, "inputs"))
    except bench_models.NotTensors as e:
        r["notes"].append(str(e))
        return r
    r.update(nodes=case.nodes, weights_bytes=case.weights_bytes)
    bounds = compile_memplan(memplan, case, args, r)
    memplan_ok, ort_ok = time_in_turn(memplan, ort, case, bounds, work, args, r)
    if memplan_ok:
        bench_memplan(memplan, case, bounds, work, args, r, bases["memplan"])
    if ort_ok:
        bench_ort(ort, case, args, r, bases["ort"])
    if r["memplan_ms"].get("1") is not None and r["ort_ms"].get("1") is not None:
        try:
            ort_outputs = bench_models.load_outputs(os.path.join(work, "ort_1"))
            r["diff_vs_ort"] = bench_models.max_abs_diff(os.path.join(work, "memplan_1"), ort_outputs)
        except ValueError as e:
            r["notes"].append(f"memplan vs ONNX Runtime: {e}")
    return r


def parse_args():
    p = argparse.ArgumentParser(usage=__doc__)
    p.add_argument("sets", nargs="*")
    p.add_argument("--memplan")
    p.add_argument("--node-modules")
    p.add_argument("--node", default="node")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--fixed-threads", action="store_true")
    p.add_argument("--compile-repeat", type=int, default=3)
    p.add_argument("--filter", default="")
    p.add_argument("--out", default="docs/BENCHMARKS.md")
    p.add_argument("--work", default="build/bench/work")
    p.add_argument("--results")
    p.add_argument("--from-results")
    p.add_argument("--command", default="tools/benchmark.sh")
    p.add_argument("--no-load", action="store_true", help="skip the busy-core and 2-session columns")
    p.add_argument("--section", default="")
    p.add_argument("--overview", nargs="+", default=[])
    a = p.parse_args()
    if not a.from_results and not a.overview and not (a.memplan and a.node_modules and a.sets):
        p.error("give --memplan, --node-modules and at least one TITLE=DIR (or --from-results)")
    return a


def write(args, info, groups, repeat, rounds, fixed_threads=False):
    timed = bench_report.timing(repeat, rounds, fixed_threads)
    if args.section:
        bench_report.write_section(args.out, args.section, info, groups, timed, args.command)
    else:
        bench_report.write(args.out, info, groups, timed, args.command)


def main():
    args = parse_args()
    if args.overview:
        bench_report.replace_section(args.out, bench_report.OVERVIEW, bench_report.overview(args.overview))
        return
    if args.from_results:
        with open(args.from_results) as f:
            saved = json.load(f)
        write(args, saved["machine"], saved["groups"], saved["repeat"], saved.get("rounds", 1),
              saved.get("fixed_threads", False))
        return
    memplan, ort = Memplan(args.memplan), OnnxRuntime(args.node_modules, args.node)
    print(f"bench: load average {os.getloadavg()[0]:.2f} at the start (timings need an idle machine)", flush=True)
    bases = {"memplan": baseline_kb(memplan.baseline_cmd()), "ort": baseline_kb(ort.baseline_cmd(), ort.env)}
    print(f"bench: empty-process peak RSS: memplan {bases['memplan']} KiB, node + ONNX Runtime {bases['ort']} KiB",
          flush=True)
    groups = []
    for spec in args.sets:
        title, _, folder = spec.rpartition("=")
        results = []
        for model_dir in bench_models.find_models([folder]):
            if args.filter and not re.search(args.filter, os.path.basename(model_dir)):
                continue
            print(f"bench: {model_dir}", flush=True)
            r = bench_case(model_dir, memplan, ort, bases, args)
            print("  " + " | ".join(bench_report.row(r)), flush=True)
            results.append(r)
        groups.append((title or folder, results))
    info = bench_report.machine(memplan.version, ort.version, ort.node_version)
    isas = sorted({r.get("isa", "") for _, results in groups for r in results} - {""})
    info["oneDNN ISA"] = ", ".join(isas) + (" (DNNL_MAX_CPU_ISA=" + os.environ["DNNL_MAX_CPU_ISA"] + ")"
                                            if os.environ.get("DNNL_MAX_CPU_ISA") else "")
    results_path = args.results or os.path.join(args.work, "results.json")
    with open(results_path, "w") as f:
        json.dump({"machine": info, "groups": groups, "repeat": args.repeat, "rounds": args.rounds,
                   "fixed_threads": args.fixed_threads, "baselines_kib": bases}, f, indent=1)
    write(args, info, groups, args.repeat, args.rounds, args.fixed_threads)
    print(f"bench: wrote {args.out} and {results_path}")


if __name__ == "__main__":
    sys.exit(main())

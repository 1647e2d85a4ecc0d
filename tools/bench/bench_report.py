"""Writes docs/BENCHMARKS.md from the benchmark's results: the machine, the method of every column,
one table per model set, and a summary of geometric means."""
import datetime
import json
import math
import os
import platform
import subprocess

MB = 1e6


def _cmd(args):
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return ""


def _deb_version(package):
    return _cmd(["dpkg-query", "-W", "-f=${Version}", package]) or "not installed"


def machine(memplan_version, ort_version, node_version):
    """name -> value, describing where the numbers were taken."""
    cpu = next((l.split(":", 1)[1].strip() for l in _cmd(["lscpu"]).splitlines() if l.startswith("Model name")), "?")
    with open("/proc/meminfo") as f:
        ram_kb = int(next(l for l in f if l.startswith("MemTotal")).split()[1])
    os_name = "?"
    if os.path.exists("/etc/os-release"):
        with open("/etc/os-release") as f:
            os_name = next((l.split("=", 1)[1].strip().strip('"') for l in f if l.startswith("PRETTY_NAME")), "?")
    return {
        "CPU": f"{cpu}, {os.cpu_count()} logical CPUs",
        "memory": f"{ram_kb / 1024 / 1024:.1f} GiB",
        "OS": f"{os_name}, Linux {platform.release()}",
        "memplan": f"{memplan_version} (oneDNN {_deb_version('libdnnl2')} from Debian)",
        "ONNX Runtime": f"{ort_version} (npm onnxruntime-node, CPU execution provider, Node {node_version})",
        "torch (exports, expected outputs)": f"{_deb_version('python3-torch')}, torchvision {_deb_version('python3-torchvision')} (Debian)",
        "date": datetime.date.today().isoformat(),
        "load average (1 min) at the end of the run": f"{os.getloadavg()[0]:.2f} (timings are only meaningful on an idle machine)",
    }


def _mb(b):
    if b is None:
        return "—"
    if b == 0:
        return "0"
    x = b / MB
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 0.01 else f"{x:.2g}"


def _ms(x):
    return "—" if x is None else f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.2g}"


def _ratio(a, b):
    if a is None or b is None or b <= 0:
        return "—"
    return f"{a / b:.0f}" if a / b >= 100 else f"{a / b:.2f}"


def _rate(x):
    return "—" if x is None else f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.2g}"


def _diff(x):
    return "—" if x is None else "0" if x == 0 else f"{x:.1e}"


COLUMNS = ["model", "nodes", "weights MB", "naive MB", "lower bound MB", "memplan arena MB", "arena / lower bound",
           "peak RSS memplan MB", "peak RSS ORT MB", "memplan 1T ms", "ORT 1T ms", "memplan / ORT 1T",
           "memplan 2T ms", "ORT 2T ms", "memplan / ORT 2T", "memplan 2T busy ms", "ORT 2T busy ms",
           "memplan 2×1T /s", "ORT 2×1T /s", "memplan 2×1T / 1×1T", "max abs diff vs ORT", "max abs diff vs expected",
           "compile s", "notes"]


def row(r):
    mp, ort = r.get("memplan_ms", {}), r.get("ort_ms", {})
    mps, orts = r.get("memplan_per_s", {}), r.get("ort_per_s", {})
    return [r["name"], str(r["nodes"]), _mb(r.get("weights_bytes")), _mb(r.get("naive_bytes")),
            _mb(r.get("lower_bound_bytes")), _mb(r.get("arena_bytes")),
            _ratio(r.get("arena_bytes"), r.get("lower_bound_bytes")),
            _mb(r.get("memplan_rss_bytes")), _mb(r.get("ort_rss_bytes")),
            _ms(mp.get("1")), _ms(ort.get("1")), _ratio(mp.get("1"), ort.get("1")),
            _ms(mp.get("2")), _ms(ort.get("2")), _ratio(mp.get("2"), ort.get("2")),
            _ms(mp.get("2busy")), _ms(ort.get("2busy")), _rate(mps.get("2x1")), _rate(orts.get("2x1")),
            _ratio(mps.get("2x1"), mps.get("1")),
            _diff(r.get("diff_vs_ort")), _diff(r.get("diff_vs_expected")),
            "—" if r.get("compile_s") is None else f"{r['compile_s']:.2f}",
            "; ".join(r.get("notes", [])).replace("|", "\\|")]


def _geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def summary(results):
    ok = [r for r in results if r.get("arena_bytes") is not None]
    ran = sum(1 for r in results if r.get("memplan_ms", {}).get("1") is not None)
    lines = [f"- memplan compiled {len(ok)} of {len(results)} models and ran {ran}."]

    def add(label, pairs):
        g = _geomean([a / b for a, b in pairs if a is not None and b])
        if g is not None:
            lines.append(f"- {label}: {g:.2f} (geometric mean over {len(pairs)} models)")

    add("arena / lower bound", [(r["arena_bytes"], r["lower_bound_bytes"]) for r in ok])
    add("arena / naive sum", [(r["arena_bytes"], r["naive_bytes"]) for r in ok])
    both = [r for r in results if r.get("memplan_rss_bytes") and r.get("ort_rss_bytes")]
    add("peak RSS over baseline, memplan / ONNX Runtime", [(r["memplan_rss_bytes"], r["ort_rss_bytes"]) for r in both])
    for t in ("1", "2"):
        timed = [r for r in results if r.get("memplan_ms", {}).get(t) and r.get("ort_ms", {}).get(t)]
        label = f"latency at {t} thread{'s' if t != '1' else ''}, memplan / ONNX Runtime (below 1: memplan is faster)"
        add(label, [(r["memplan_ms"][t], r["ort_ms"][t]) for r in timed])
        # Toy models take microseconds, where a runtime's fixed cost per call decides the ratio.
        add(label + ", models where ONNX Runtime takes 1 ms or more at 1 thread",
            [(r["memplan_ms"][t], r["ort_ms"][t]) for r in timed if r["ort_ms"]["1"] >= 1])
    busy = [r for r in results if r.get("memplan_ms", {}).get("2busy") and r.get("ort_ms", {}).get("2busy")]
    add("latency at 2 threads with one core busy, memplan / ONNX Runtime",
        [(r["memplan_ms"]["2busy"], r["ort_ms"]["2busy"]) for r in busy])
    add("latency at 2 threads with one core busy over memplan's own 1-thread latency",
        [(r["memplan_ms"]["2busy"], r["memplan_ms"]["1"]) for r in busy if r["memplan_ms"].get("1")])
    two = [r for r in results if r.get("memplan_per_s", {}).get("2x1") and r.get("memplan_per_s", {}).get("1")]
    add("throughput of 2 sessions × 1 thread over 1 session × 1 thread, memplan",
        [(r["memplan_per_s"]["2x1"], r["memplan_per_s"]["1"]) for r in two])
    both2 = [r for r in results if r.get("memplan_per_s", {}).get("2x1") and r.get("ort_per_s", {}).get("2x1")]
    add("throughput of 2 concurrent runs × 1 thread, memplan / ONNX Runtime",
        [(r["memplan_per_s"]["2x1"], r["ort_per_s"]["2x1"]) for r in both2])
    return lines


METHOD = """\
How each column is measured (MB = 10^6 bytes; ms = milliseconds of one inference):

- **nodes**: ONNX nodes in the file, subgraphs of If/Loop/Scan included.
- **weights MB**: memplan's `weights_bytes` (read-only constants outside the arena, after constant
  folding; `ConstantOfShape`-made weights of the light_* models count); the file's initializers
  when memplan cannot compile the model.
- **naive MB, lower bound MB, memplan arena MB**: `memplan compile --report json` (`naive_bytes`:
  every intermediate tensor its own memory; `lower_bound_bytes`: the most bytes live at any step;
  `arena_bytes`: the one planned arena, kernel scratchpads included), for the test input's shapes.
- **peak RSS**: the process's peak resident set (`ru_maxrss` from `wait4`, read by GNU time) over
  loading the model and one inference at 1 thread, minus the peak of an empty process of the same
  runtime (memplan: `memplan --version`; ONNX Runtime: node loading onnxruntime-node). It holds
  the weights, the inputs and outputs, the runtime's working memory and code pages touched; for
  memplan also the compilation, which `memplan run` does in the same process. ONNX
  Runtime does not report its arena, so this is the one number measured the same way for both.
- **1T / 2T ms**: median inference time at 1 and 2 threads, inputs already in memory. memplan:
  `memplan run --threads T --warmup 1 --repeat N` (oneDNN over OpenMP), one warm-up and the median
  of N timed runs; ONNX Runtime: `tools/bench/ort_bench.js` (intraOpNumThreads T, interOpNumThreads 1,
  sequential execution, default graph optimizations and memory arena), one warm-up and N timed runs.
  Both runtimes get the same .npy inputs. **memplan / ORT** below 1 means memplan is faster.
  Where a table's heading names rounds, the two took turns: per thread count, R rounds of one
  memplan process then one ONNX Runtime process, and each cell is the median of the R medians (the
  shared machine's drift hits both, and one slow round decides nothing).
  Where it names `--fixed-threads`, memplan ran each inference at exactly T threads, as ONNX
  Runtime's intra-op pool does; elsewhere at its default, which runs a 2-thread session's
  inferences at one thread while other processes hold a core or one thread measures faster
  (runtime/run_threads.h), so a 2T cell can be memplan's 1-thread time.
- **2T busy ms**: the 2-thread median (as above) while a shell loop (`sh -c 'while :; do :; done'`)
  keeps one core busy, as another process would.
- **2×1T /s**: inferences per second of two concurrent streams of 1-thread inferences on one
  loaded model, over the wall time of all N timed runs of both. memplan: `memplan run --threads 1
  --sessions 2 --warmup 1 --repeat N` (two sessions of one compiled model, each on its own
  thread); ONNX Runtime: `ort_bench.js --threads 1 --concurrent 2` (two concurrent `run` calls
  on one session). **memplan 2×1T / 1×1T**: that over the throughput of one session's N runs at 1
  thread (2.00 is perfect scaling on 2 cores).
- **max abs diff vs ORT**: largest absolute difference between memplan's and ONNX Runtime's outputs
  (1 thread). **vs expected**: against the data set's `output_N.pb`: torch's outputs for the zoo,
  ONNX Runtime 1.30 (graph optimizations off) for shared/models, the numpy reference for models/.
- **compile s**: wall time of `memplan compile` (process start, import, shape inference, kernel
  selection, planning with every strategy, verification), the fastest of the runs.
- **notes**: why a column is empty (the runtime's one-line error).
"""


def _tables(groups, heading):
    """A table per group under `heading` ("##", "###") titles, then the summary over all of them."""
    out, everything = [], []
    for title, results in groups:
        everything += results
        out += [f"{heading} {title}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        out += ["| " + " | ".join(row(r)) + " |" for r in results]
        out.append("")
    return out + [f"{heading} Summary", ""] + summary(everything)


def _section_marks(name):
    return f"<!-- generated section: {name} -->", f"<!-- end of generated section: {name} -->"


def _write_atomically(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def replace_section(path, name, lines):
    """`lines` (a "## name" heading first) as the section `name` of the markdown at `path`:
    replaced where the file has it, else added at the end."""
    begin, end = _section_marks(name)
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        text = "# Benchmarks\n"
    block = "\n".join([begin] + lines + ["", end])
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    _write_atomically(path, text)


def timing(repeat, rounds=1, fixed_threads=False):
    """How a latency cell was taken, as a phrase."""
    out = f"{repeat} timed runs per model and thread count"
    if rounds > 1:
        out += f"; each cell the median of {rounds} rounds of memplan then ONNX Runtime, in turn"
    if fixed_threads:
        out += "; memplan at exactly 1 and 2 threads (`--fixed-threads`), as ONNX Runtime's intra-op pool runs"
    return out


def write_section(path, name, info, groups, timed, command):
    """The tables of `groups` as the section `name` of the existing markdown at `path`."""
    out = [f"## {name}", "", f"Generated by `{command}` on {info.get('date', '')} "
           f"({info.get('CPU', '')}; oneDNN at {info.get('oneDNN ISA', '?')}); do not edit by hand. Columns as in [Method](#method); "
           f"{timed}.", ""]
    replace_section(path, name, out + _tables(groups, "###"))


OVERVIEW = "Overview"


def _worst(results, t):
    """The model with the highest memplan / ONNX Runtime latency at `t` threads, as text."""
    timed = [(r["memplan_ms"][t] / r["ort_ms"][t], r["name"]) for r in results
             if r.get("memplan_ms", {}).get(t) and r.get("ort_ms", {}).get(t)]
    if not timed:
        return "—"
    ratio, name = max(timed)
    return f"{ratio:.2f} ({name})"


def overview(results_files):
    """The page's overview: one row per table of every results file (bench.py --results)."""
    here = os.path.dirname(os.path.abspath(__file__))
    commit = _cmd(["git", "-C", here, "rev-parse", "--short", "HEAD"]) or "?"
    out = [f"## {OVERVIEW}", "",
           f"Every table of this page is from one run of memplan built at commit `{commit}` (the checkout's HEAD). One row per",
           "table below: geometric means over its models of memplan / ONNX Runtime (below 1: memplan is",
           "smaller or faster), and the slowest model against ONNX Runtime.", "",
           "| table | oneDNN ISA | models run | arena / lower bound | peak RSS memplan / ORT | latency 1T | "
           "latency 2T | slowest at 1T | slowest at 2T |", "|---|---|---|---|---|---|---|---|---|"]
    for path in results_files:
        with open(path) as f:
            saved = json.load(f)
        isa = saved["machine"].get("oneDNN ISA", "?")
        for title, results in saved["groups"]:
            ran = [r for r in results if r.get("memplan_ms", {}).get("1") is not None]

            def mean(pairs):
                g = _geomean([a / b for a, b in pairs if a is not None and b])
                return "—" if g is None else f"{g:.2f}"

            ok = [r for r in results if r.get("arena_bytes")]
            out.append("| " + " | ".join([
                title.split(" (")[0], isa, f"{len(ran)} of {len(results)}",
                mean([(r["arena_bytes"], r.get("lower_bound_bytes")) for r in ok]),
                mean([(r.get("memplan_rss_bytes"), r.get("ort_rss_bytes")) for r in results]),
                mean([(r.get("memplan_ms", {}).get("1"), r.get("ort_ms", {}).get("1")) for r in results]),
                mean([(r.get("memplan_ms", {}).get("2"), r.get("ort_ms", {}).get("2")) for r in results]),
                _worst(results, "1"), _worst(results, "2")]) + " |")
    return out


def write(path, info, groups, timed, command):
    """The whole page: machine, method, a placeholder for the overview (overview() fills it once
    every table is made) and the tables of `groups`. groups: [(title, [result...])]."""
    out = ["# Benchmarks", "",
           "memplan against ONNX Runtime on the same machine, in the same run, on the same inputs. Generated by",
           f"`{command}`; do not edit by hand. (Figures measured by hand along the way are in",
           "[MEASUREMENTS.md](MEASUREMENTS.md).)", "", "## Machine", ""]
    out += [f"- **{k}**: {v}" for k, v in info.items()]
    out += [f"- **timing**: {timed}", "", "## Method", "", METHOD]
    begin, end = _section_marks(OVERVIEW)
    out += [begin, f"## {OVERVIEW}", "", "(made at the end of the run)", end, ""]
    out += _tables(groups, "##") + [""]
    _write_atomically(path, "\n".join(out))

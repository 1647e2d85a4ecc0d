#!/usr/bin/python3
"""Arena of every model under two memplan builds, side by side: what a memory change did.

Usage: arena_compare.py BEFORE_MEMPLAN AFTER_MEMPLAN [--prefer balanced|memory|speed] [--after-flag FLAG]...
                         MODEL.onnx...

Prints a Markdown table (model, arena before and after, after/before, the no-alias lower bound, the
bound with storage groups and the largest scratchpad, from the after build) and the geometric mean
of after/before, and names every model whose arena grew. `--prefer balanced` (the default) times
kernels at compile, so run it on a quiet machine and repeat a surprising row. DNNL_MAX_CPU_ISA is
passed through: run it once per ISA. `--after-flag` gives the after build one more compile flag
(repeatable): the same build twice with `--after-flag --external-inputs` shows what that option saves.
"""
import json
import math
import subprocess
import sys


def report(memplan, model, prefer, flags=()):
    r = subprocess.run([memplan, "compile", model, "--report", "json", "--prefer", prefer, *flags],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
    return json.loads(r.stdout), ""


def name_of(model):
    parts = model.split("/")
    return parts[-2] if len(parts) > 1 else parts[-1]


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    before, after, rest = argv[1], argv[2], argv[3:]
    prefer = "balanced"
    after_flags = []
    while rest[:1] in (["--prefer"], ["--after-flag"]) and len(rest) > 1:
        if rest[0] == "--prefer":
            prefer = rest[1]
        else:
            after_flags.append(rest[1])
        rest = rest[2:]
    print(f"prefer {prefer}" + (f"; after with {' '.join(after_flags)}" if after_flags else "") + "\n")
    print("| model | arena before | arena after | after / before | no-alias bound | aliased bound | scratchpad |")
    print("|---|---|---|---|---|---|---|")
    ratios, grew = [], []
    for model in rest:
        (b, berr), (a, aerr) = report(before, model, prefer), report(after, model, prefer, after_flags)
        if not a or not b:
            print(f"| {name_of(model)} | {berr or b['arena_bytes']} | {aerr or a['arena_bytes']} | | | | |")
            continue
        ratio = a["arena_bytes"] / b["arena_bytes"] if b["arena_bytes"] else 1.0
        ratios.append(ratio)
        if ratio > 1:
            grew.append(name_of(model))
        print(f"| {name_of(model)} | {b['arena_bytes']:,} | {a['arena_bytes']:,} | {ratio:.3f} | "
              f"{a['lower_bound_bytes']:,} | {a['aliased_bound_bytes']:,} | {a['scratchpad_bytes']:,} |")
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if all(r > 0 for r in ratios) else 0
        print(f"\ngeometric mean of after / before over {len(ratios)} models: {geo:.3f}")
    print("arenas that grew: " + (", ".join(grew) if grew else "none"))


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/python3
"""Prints the memory table of the closing notes: for each model, naive, per-subgraph, lower bound,
the arena of every strategy, and arena / lower bound. Usage: plan_table.py MEMPLAN MODEL.onnx..."""
import json
import subprocess
import sys

memplan, models = sys.argv[1], sys.argv[2:]
cols = ["naive", "best-fit", "greedy-by-size", "greedy-by-breadth"]
print("| model | naive | per-subgraph | lower bound | " + " | ".join(cols[1:]) + " | auto | auto/LB |")
print("|---" * 9 + "|")
for m in models:
    r = subprocess.run([memplan, "compile", m, "--report", "json"], capture_output=True, text=True)
    name = m.split("/")[-2]
    if r.returncode != 0:
        print(f"| {name} | error: {r.stderr.strip()} |")
        continue
    j = json.loads(r.stdout)
    s = j["strategies"]
    lb = j["lower_bound_bytes"]
    ratio = j["arena_bytes"] / lb if lb else 1.0
    print(f"| {name} | {j['naive_bytes']} | {j['per_subgraph_bytes']} | {lb} | "
          + " | ".join(str(s[c]) for c in cols[1:]) + f" | {j['arena_bytes']} | {ratio:.4f} |")

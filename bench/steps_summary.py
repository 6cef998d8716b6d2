"""Summarize steps.csv files (ddpsim train, or bench/pytorch/ddp_mlp.py):
mean per-step step, compute, comm and exposed comm over all ranks, skipping
warm-up steps, side by side, and the ratio of step times to the first file.
A run whose comm_s is empty (PyTorch without --time-comm) shows "-" there.

  python3 bench/steps_summary.py [--skip N] LABEL=FILE [LABEL=FILE ...]
"""
import csv
import statistics
import sys


def load(path, skip):
    rows = [r for r in csv.DictReader(open(path)) if int(r["step"]) >= skip]
    if not rows:
        raise SystemExit(f"{path}: no steps after skipping {skip}")
    cols = ("step_s", "compute_s", "comm_s", "exposed_comm_s")
    return {c: statistics.mean(float(r[c]) for r in rows) if all(r[c] for r in rows) else None
            for c in cols}, len(rows)


def main():
    args = sys.argv[1:]
    skip = 3
    if args[:1] == ["--skip"]:
        skip, args = int(args[1]), args[2:]
    runs = []
    for a in args:
        label, path = a.split("=", 1)
        runs.append((label, *load(path, skip)))
    print(f"{'run':<22}{'step_ms':>10}{'compute_ms':>12}{'comm_ms':>10}{'exposed_ms':>12}{'hidden':>9}{'vs first':>10}")
    base = runs[0][1]["step_s"]
    for label, m, n in runs:
        if m["comm_s"] is None:
            comm, hidden = "-", "-"
        else:
            h = 1 - m["exposed_comm_s"] / m["comm_s"] if m["comm_s"] > 0 else 0.0
            comm, hidden = f"{m['comm_s'] * 1e3:.1f}", f"{max(0.0, min(1.0, h)):.0%}"
        print(f"{label:<22}{m['step_s']*1e3:>10.1f}{m['compute_s']*1e3:>12.1f}{comm:>10}"
              f"{m['exposed_comm_s']*1e3:>12.1f}{hidden:>9}{m['step_s']/base:>10.3f}")


if __name__ == "__main__":
    main()

"""Step-time error of a validation CSV (the rows `ddpsim validate --append`
writes): mean absolute percentage error, the worst run, and optionally the
MAPE grouped by columns. Shared by the bench/validate-*.sh scripts.

  python3 bench/mape.py RESULTS.csv WHAT [COLUMN ...]

Repeated runs of one point carry labels LABEL-rK (K = 1, 2, ...). Then each
point's measured step time is the median of its repetitions (the prediction
is the same for all of them): on a machine whose testbed hosts share two
cores, one run can be slowed by whatever else the machine did meanwhile, and
the median of repetitions taken in separate rounds is what a quiet machine
would show. The figures of single runs are printed too, with the spread of
each point's repetitions, so that noise and model error can be told apart.
"""
import csv
import re
import statistics
import sys


def summary(what, labels, errs):
    worst = max(range(len(errs)), key=lambda i: errs[i])
    return (f"{len(errs)} {what}: step-time MAPE {100 * sum(errs) / len(errs):.2f}%, "
            f"worst {100 * errs[worst]:.2f}% ({labels[worst]})")


def by_columns(rows, errs, by):
    for key in by:
        groups = {}
        for r, e in zip(rows, errs):
            groups.setdefault(r[key], []).append(e)
        print(f"  by {key:<14} " + "  ".join(f"{k}: {100 * sum(v) / len(v):.1f}%" for k, v in groups.items()))


def main():
    path, what, by = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = list(csv.DictReader(open(path)))
    points = {}
    for r in rows:
        points.setdefault(re.sub(r"-r\d+$", "", r["label"]), []).append(r)
    if len(points) == len(rows):
        errs = [abs(float(r["err_step"])) for r in rows]
        print("\n" + summary(what, [r["label"] for r in rows], errs))
        by_columns(rows, errs, by)
        return
    reps = sorted({len(v) for v in points.values()})
    labels, errs, firsts, spreads = [], [], [], []
    for label, runs in points.items():
        meas = [float(r["meas_step_s"]) for r in runs]
        pred = float(runs[0]["pred_step_s"])
        med = statistics.median(meas)
        labels.append(label)
        errs.append(abs(pred / med - 1))
        firsts.append(runs[0])
        spreads.append(max(meas) / min(meas) - 1)
    print(f"\n{what}, {len(points)} points x {'/'.join(map(str, reps))} repetitions, each point's median:")
    print("  " + summary("points", labels, errs))
    by_columns(firsts, errs, by)
    single = [abs(float(r["err_step"])) for r in rows]
    print("  single runs: " + summary("runs", [r["label"] for r in rows], single))
    print(f"  spread of a point's repetitions (slowest / fastest - 1): median "
          f"{100 * statistics.median(spreads):.1f}%, largest {100 * max(spreads):.1f}% "
          f"({labels[max(range(len(spreads)), key=lambda i: spreads[i])]})")


if __name__ == "__main__":
    main()

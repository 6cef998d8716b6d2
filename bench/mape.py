"""Step-time error of a validation CSV (the rows `ddpsim validate --append`
writes): mean absolute percentage error, the worst run, and optionally the
MAPE grouped by columns. Shared by the bench/validate-*.sh scripts.

  python3 bench/mape.py [--steal STEAL.csv] RESULTS.csv WHAT [COLUMN ...]

Repeated runs of one point carry labels LABEL-rK (K = 1, 2, ...). Then each
point's measured step time is the median of its repetitions, and so is its
prediction where each round was predicted from its own calibration: on a machine whose testbed hosts share two
cores, one run can be slowed by whatever else the machine did meanwhile, and
the median of repetitions taken in separate rounds is what a quiet machine
would show. The figures of single runs are printed too, with the spread of
each point's repetitions, so that noise and model error can be told apart.

--steal names a CSV (label,steal) of the share of CPU time the hypervisor
took from this machine during each run (bench/steal.sh); its spread is
printed, and the error of the runs that lost under 5% beside that of all.
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


STEAL_QUIET = 0.05  # a run that lost less than this share of its CPU time


def steal_report(path, rows):
    steal = {r["label"]: float(r["steal"]) for r in csv.DictReader(open(path))}
    known = [(steal[r["label"]], r) for r in rows if r["label"] in steal]
    if not known:
        return
    v = sorted(s for s, _ in known)
    worst = max(known, key=lambda k: k[0])
    print(f"  CPU time stolen by the hypervisor during a run: median {100 * statistics.median(v):.1f}%, "
          f"largest {100 * worst[0]:.1f}% ({worst[1]['label']})")
    quiet = [r for s, r in known if s < STEAL_QUIET]
    if quiet:
        errs = [abs(float(r["err_step"])) for r in quiet]
        print(f"  runs that lost under {100 * STEAL_QUIET:.0f}%: " +
              summary("runs", [r["label"] for r in quiet], errs))


def main():
    args = sys.argv[1:]
    steal = None
    if args[:1] == ["--steal"]:
        steal, args = args[1], args[2:]
    path, what, by = args[0], args[1], args[2:]
    rows = list(csv.DictReader(open(path)))
    points = {}
    for r in rows:
        points.setdefault(re.sub(r"-r\d+$", "", r["label"]), []).append(r)
    if len(points) == len(rows):
        errs = [abs(float(r["err_step"])) for r in rows]
        print("\n" + summary(what, [r["label"] for r in rows], errs))
        by_columns(rows, errs, by)
        if steal:
            steal_report(steal, rows)
        return
    reps = sorted({len(v) for v in points.values()})
    labels, errs, firsts, spreads, pspreads = [], [], [], [], []
    for label, runs in points.items():
        meas = [float(r["meas_step_s"]) for r in runs]
        # One prediction per repetition when each round had its own
        # calibration: the median of those against the median measured.
        preds = [float(r["pred_step_s"]) for r in runs]
        labels.append(label)
        errs.append(abs(statistics.median(preds) / statistics.median(meas) - 1))
        firsts.append(runs[0])
        spreads.append(max(meas) / min(meas) - 1)
        pspreads.append(max(preds) / min(preds) - 1)
    print(f"\n{what}, {len(points)} points x {'/'.join(map(str, reps))} repetitions, each point's median:")
    print("  " + summary("points", labels, errs))
    by_columns(firsts, errs, by)
    single = [abs(float(r["err_step"])) for r in rows]
    print("  single runs: " + summary("runs", [r["label"] for r in rows], single))
    print(f"  spread of a point's repetitions (slowest / fastest - 1): median "
          f"{100 * statistics.median(spreads):.1f}%, largest {100 * max(spreads):.1f}% "
          f"({labels[max(range(len(spreads)), key=lambda i: spreads[i])]})")
    if max(pspreads) > 0:
        print(f"  spread of a point's predictions, one calibration a round: median "
              f"{100 * statistics.median(pspreads):.1f}%, largest {100 * max(pspreads):.1f}% "
              f"({labels[max(range(len(pspreads)), key=lambda i: pspreads[i])]})")
    if steal:
        steal_report(steal, rows)


if __name__ == "__main__":
    main()

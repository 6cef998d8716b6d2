"""Step-time error of a validation CSV (the rows `ddpsim validate --append`
writes): mean absolute percentage error, the worst run, and optionally the
MAPE grouped by columns. Shared by the bench/validate-*.sh scripts.

  python3 bench/mape.py RESULTS.csv WHAT [COLUMN ...]
"""
import csv
import sys


def main():
    path, what, by = sys.argv[1], sys.argv[2], sys.argv[3:]
    rows = list(csv.DictReader(open(path)))
    errs = [abs(float(r["err_step"])) for r in rows]
    worst = max(range(len(rows)), key=lambda i: errs[i])
    print(f"\n{len(rows)} {what}: step-time MAPE {100 * sum(errs) / len(errs):.2f}%, "
          f"worst {100 * errs[worst]:.2f}% ({rows[worst]['label']})")
    for key in by:
        groups = {}
        for r, e in zip(rows, errs):
            groups.setdefault(r[key], []).append(e)
        print(f"  by {key:<14} " + "  ".join(f"{k}: {100 * sum(v) / len(v):.1f}%" for k, v in groups.items()))


if __name__ == "__main__":
    main()

"""Predicted against measured single-GPU step times: joins the CSV of
`ddpsim simulate scenarios/h200-1gpu.cfg` with the CSV of
bench/pytorch/gpu_step.py on (model, precision, batch) and prints each
point's error, the MAPE and the worst point. ResNet-50 is compared in each
measured layout (channels_last is the one its tensor-core kernels want);
the MAPE is over the best layout of each point, as a user would run it.

  python3 bench/gpu_compare.py PREDICTED.csv MEASURED.csv
"""
import csv
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    pred = {}
    with open(sys.argv[1]) as f:
        for r in csv.DictReader(f):
            key = (r["model"], r["precision"], int(r["batch"]))
            if key in pred:
                sys.exit(f"gpu_compare: {sys.argv[1]}: two points for {key}; sweep one value of the "
                         "other columns (one node, one GPU, one network)")
            if r["status"] != "ok":
                sys.exit(f"gpu_compare: {sys.argv[1]}: point {key} has status {r['status']}")
            pred[key] = float(r["step_s"]) * 1e3
    best = {}
    print(f"{'model':10} {'prec':5} {'layout':13} {'batch':>5} {'measured ms':>12} {'predicted ms':>13} {'error':>8}")
    with open(sys.argv[2]) as f:
        for r in csv.DictReader(f):
            key = (r["model"], r["precision"], int(r["batch"]))
            if key not in pred:
                sys.exit(f"gpu_compare: {sys.argv[2]}: no predicted point for {key} in {sys.argv[1]}; "
                         "simulate a scenario with that model, precision and batch")
            m = float(r["median_ms"])
            err = (pred[key] - m) / m
            print(f"{key[0]:10} {key[1]:5} {r['layout']:13} {key[2]:5d} {m:12.2f} {pred[key]:13.2f} {100 * err:+7.1f}%")
            if key not in best or m < best[key][0]:
                best[key] = (m, err)
    if not best:
        sys.exit(f"gpu_compare: {sys.argv[2]} holds no measured steps")
    errs = [abs(e) for _, e in best.values()]
    worst = max(best, key=lambda k: abs(best[k][1]))
    print(f"{len(errs)} points (fastest layout each): step-time MAPE {100 * sum(errs) / len(errs):.1f}%, "
          f"worst {100 * best[worst][1]:+.1f}% ({' '.join(map(str, worst))})")


if __name__ == "__main__":
    main()

"""Predicted against measured single-GPU step times: joins the CSV of
`ddpsim simulate scenarios/h200-1gpu.cfg` with the CSV of
bench/pytorch/gpu_step.py on (model, precision, batch) and prints each
point's error, the MAPE and the worst point. Measured rows named "bf16"
(older runs of gpu_step.py, whose bf16 is autocast) are the simulator's
amp_bf16. The points at ResNet-50 batch 128, BERT-large batch 16 and
ResNet-50 bf16 batch 64 are the configurations the compute model's
constants were fitted on (sim/compute.c, docs/compute-model.md); the MAPE
of the other points, the check, is printed apart. ResNet-50 is compared in each
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
            # A point that cannot run (timeout, oom) is refused only where a
            # measured step is compared with it: the scenario predicts more.
            pred[key] = float(r["step_s"]) * 1e3 if r["status"] == "ok" else r["status"]
    best = {}
    print(f"{'model':10} {'prec':8} {'layout':13} {'batch':>5} {'measured ms':>12} {'predicted ms':>13} {'error':>8}")
    with open(sys.argv[2]) as f:
        for r in csv.DictReader(f):
            prec = "amp_bf16" if r["precision"] == "bf16" else r["precision"]
            key = (r["model"], prec, int(r["batch"]))
            if key not in pred:
                sys.exit(f"gpu_compare: {sys.argv[2]}: no predicted point for {key} in {sys.argv[1]}; "
                         "simulate a scenario with that model, precision and batch")
            if isinstance(pred[key], str):
                sys.exit(f"gpu_compare: {sys.argv[1]}: point {key} was measured but has status {pred[key]}")
            m = float(r["median_ms"])
            err = (pred[key] - m) / m
            print(f"{key[0]:10} {key[1]:8} {r['layout']:13} {key[2]:5d} {m:12.2f} {pred[key]:13.2f} {100 * err:+7.1f}%")
            if key not in best or m < best[key][0]:
                best[key] = (m, err)
    if not best:
        sys.exit(f"gpu_compare: {sys.argv[2]} holds no measured steps")
    errs = [abs(e) for _, e in best.values()]
    worst = max(best, key=lambda k: abs(best[k][1]))
    print(f"{len(errs)} points (fastest layout each): step-time MAPE {100 * sum(errs) / len(errs):.1f}%, "
          f"worst {100 * best[worst][1]:+.1f}% ({' '.join(map(str, worst))})")
    check = {k: v for k, v in best.items() if not fitted(k)}
    if check:
        worst = max(check, key=lambda k: abs(check[k][1]))
        print(f"{len(check)} points not fitted on: MAPE {100 * sum(abs(e) for _, e in check.values()) / len(check):.1f}%, "
              f"worst {100 * check[worst][1]:+.1f}% ({' '.join(map(str, worst))})")


def fitted(key):
    """The configurations sim/compute.c's constants were fitted on."""
    model, prec, batch = key
    return (model, batch) in (("resnet50", 128), ("bert-large", 16)) or key == ("resnet50", "amp_bf16", 64)


if __name__ == "__main__":
    main()

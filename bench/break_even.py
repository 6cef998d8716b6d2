"""PowerSGD's break-even link rate, measured vs predicted, with the spread of
each (bench/validate-compression.sh).

  python3 bench/break_even.py MEASURED.csv PREDICTED.csv [PREDICTED.csv ...]

MEASURED.csv has a row per shaping and repetition (shaping, busbw_GBps, rep,
none_s, powersgd_s: each run's mean step); the shapings' bus bandwidths in
units of the first row's (the 1gbit link the profiles were calibrated on)
put them on the predictions' axis. Each PREDICTED.csv is `ddpsim simulate`'s
output over rescaled rates from one calibration.

The crossing, where the speedup of PowerSGD over none falls through 1, is
taken from the median speedup at each rate (measured: over repetitions;
predicted: over calibrations), and from each repetition and each calibration
alone: on a machine that drifts, one calibration's prediction and one
round's runs each carry that drift, and their ranges say how far apart two
crossings may lie before they disagree. The measured crossing is interpolated
(linearly in log rate) between the rates run, which errs where the curve
bends; the prediction is also read at those rates alone and interpolated the
same way, and the ranges compared are of those like-for-like crossings.
"""
import csv
import math
import statistics
import sys


def crossing(points):
    """Rate where the speedup (none / powersgd) falls through 1, linear in log rate."""
    points = sorted(points)
    for (g0, s0), (g1, s1) in zip(points, points[1:]):
        if s0 > 1 >= s1:
            f = (s0 - 1) / (s0 - s1)
            return math.exp(math.log(g0) + f * (math.log(g1) - math.log(g0)))
    return None


def interp(points, g):
    """The speedup at rate g, linear in log rate between swept rates."""
    points = sorted(points)
    for (g0, s0), (g1, s1) in zip(points, points[1:]):
        if g0 <= g <= g1:
            return s0 + (s1 - s0) * (math.log(g) - math.log(g0)) / (math.log(g1) - math.log(g0))
    return float("nan")


def span(xs):
    """'median [min-max]' of the crossings found; those beyond the rates run are counted apart."""
    found = sorted(x for x in xs if x is not None)
    beyond = len(xs) - len(found)
    if not found:
        return "beyond the rates run in every one"
    s = f"{statistics.median(found):.2f}x [{found[0]:.2f}-{found[-1]:.2f}]"
    return s + (f", {beyond} of {len(xs)} beyond the rates run" if beyond else "")


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(argv[1])))
    shapings = list(dict.fromkeys(r["shaping"] for r in rows))
    bw = {r["shaping"]: float(r["busbw_GBps"]) for r in rows}
    ref = bw[shapings[0]]
    reps = sorted({int(r["rep"]) for r in rows})
    meas = {}  # shaping -> {rep: speedup}
    for r in rows:
        meas.setdefault(r["shaping"], {})[int(r["rep"])] = float(r["none_s"]) / float(r["powersgd_s"])
    preds = []  # per calibration: [(rate, speedup)]
    for path in argv[2:]:
        step = {}
        for r in csv.DictReader(open(path)):
            step.setdefault(float(r["gbps"]), {})[r["compression"]] = float(r["step_s"])
        preds.append([(g, v["none"] / v["powersgd:1"]) for g, v in step.items()])
    rates = sorted(g for g, _ in preds[0])
    pred_med = [(g, statistics.median(interp(p, g) for p in preds)) for g in rates]

    print(f"{'shaping':>8} {'busbw Gb/s':>11} {'rate x 1gbit':>13} {'measured':>18} {'predicted':>18}")
    meas_med = []
    for s in shapings:
        g = bw[s] / ref
        m = list(meas[s].values())
        p = [interp(pp, g) for pp in preds]
        meas_med.append((g, statistics.median(m)))
        print(f"{s:>8} {8 * bw[s]:11.2f} {g:13.2f} {statistics.median(m):6.2f} [{min(m):.2f}-{max(m):.2f}] "
              f"{statistics.median(p):6.2f} [{min(p):.2f}-{max(p):.2f}]")
    print(f"(measured: median [range] over {len(reps)} repetitions; predicted: over {len(preds)} calibrations)")

    fmt = lambda x: "beyond the rates run" if x is None else f"{x:.2f}x the 1gbit link ({8 * ref * x:.2f} Gb/s of busbw)"
    m, p = crossing(meas_med), crossing(pred_med)
    print(f"speedup of PowerSGD:1 over none falls below 1 at: measured {fmt(m)}; predicted {fmt(p)}")
    # Like for like: the prediction read at the measured rates only and
    # interpolated between them as the measurements are, so that where the
    # curve bends between two rates run both crossings carry the same error.
    at = [bw[s] / ref for s in shapings]
    sampled = [[(g, interp(pp, g)) for g in at] for pp in preds]
    p_at = crossing([(g, statistics.median(sp[i][1] for sp in sampled)) for i, g in enumerate(at)])
    mc = [crossing([(bw[s] / ref, meas[s][k]) for s in shapings if k in meas[s]]) for k in reps]
    pc = [crossing(sp) for sp in sampled]
    print(f"  predicted at the measured rates only: {fmt(p_at)}")
    print(f"  each repetition alone: {span(mc)}; each calibration alone, at the measured rates: {span(pc)}")
    # A crossing not found lies beyond the fastest rate run (at the slowest,
    # PowerSGD pays off several times over): it widens its range upwards.
    lo = lambda xs: min((x for x in xs if x is not None), default=math.inf)
    hi = lambda xs: math.inf if None in xs else max(xs)
    if m is not None and p_at is not None:
        print(f"  predicted / measured - 1 (at the measured rates): {100 * (p_at / m - 1):+.1f}%; ranges "
              + ("overlap" if lo(pc) <= hi(mc) and lo(mc) <= hi(pc) else "do not overlap"))


if __name__ == "__main__":
    main(sys.argv)

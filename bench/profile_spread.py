"""How far predictions move between calibrations of one machine, and which
part of the profile moves them. Used by bench/calibration-spread.sh.

  python3 bench/profile_spread.py DDPSIM WORKDIR MODEL HOOK[,HOOK...] PROFILE...

Each PROFILE (a profile written by `ddpsim calibrate --model ...`, with the
measured model PROFILE-without-.cfg.MODEL.cfg beside it) predicts a 2 x 1
data-parallel step of MODEL with each hook. Printed per hook: the
predictions, their spread (largest / smallest - 1) and, per part of the
profile, the spread when only that part comes from each calibration and the
rest from the first: the part whose spread is largest is the measurement to
make steadier. Parts are the profile's top-level groups (device, compute,
collectives, interference, hooks, ...) and the measured layer times.
"""
import csv
import os
import re
import subprocess
import sys


def groups(path):
    """The profile's lines, each tagged with the top-level group it is in."""
    out, cur = [], None
    for line in open(path).read().split("\n"):
        m = re.match(r"  (\w+) = ", line)
        if m:
            cur = m.group(1)
        out.append((cur, line))
    return out


def hybrid(base, other, key, dst):
    """base with group `key` taken from other, written to dst."""
    b, o = groups(base), groups(other)
    lines, done = [], False
    for k, line in b:
        if k != key:
            lines.append(line)
        elif not done:
            lines += [l for kk, l in o if kk == key]
            done = True
    if not done:  # a group only other has goes before the closing brace
        lines[-2:-2] = [l for kk, l in o if kk == key]
    open(dst, "w").write("\n".join(lines))


def model_of(profile, model):
    return re.sub(r"\.cfg$", "", profile) + f".{model}.cfg"


def predict(dd, work, profile, layers, hook):
    cfg = os.path.join(work, "spread.cfg")
    with open(cfg, "w") as f:
        f.write(f'profile = "{profile}";\nmodel = "{layers}";\n'
                'training = { batch = 32; precision = "fp32"; optimizer = "sgd_momentum"; };\n'
                "cluster = { nodes = 2; devices_per_node = 1; };\n"
                'networks = ( { name = "tb"; from_profile = true; } );\n'
                f'ddp = {{ backend = "gloo"; bucket_cap_mb = 25.0; compression = "{hook}"; }};\n'
                'simulation = { steps = 20; ranks = "every"; };\n')
    out = os.path.join(work, "spread-out")
    subprocess.run([dd, "simulate", cfg, "-o", out, "-q"], check=True)
    return float(next(csv.DictReader(open(os.path.join(out, "spread.csv"))))["step_s"])


def spread(v):
    return max(v) / min(v) - 1


def main():
    dd, work, model, hooks, profiles = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(","), sys.argv[5:]
    if len(profiles) < 2:
        sys.exit("profile_spread.py: needs two profiles or more")
    keys = sorted({k for p in profiles for k, _ in groups(p) if k and k not in ("format", "name", "provenance", "meta")})
    first = profiles[0]
    tmp = os.path.join(work, "spread-hybrid.cfg")
    totals = []
    for hook in hooks:
        preds = [predict(dd, work, p, model_of(p, model), hook) for p in profiles]
        totals.append(spread(preds))
        parts = {}
        for key in keys:
            v = []
            for p in profiles:
                hybrid(first, p, key, tmp)
                v.append(predict(dd, work, tmp, model_of(first, model), hook))
            parts[key] = spread(v)
        parts["layer times"] = spread([predict(dd, work, first, model_of(p, model), hook) for p in profiles])
        shown = sorted(((s, k) for k, s in parts.items() if s >= 0.005), reverse=True)
        print(f"{hook:>11}: " + " ".join(f"{1e3 * x:.1f}" for x in preds) +
              f" ms, spread {100 * spread(preds):.1f}%; by part: " +
              (", ".join(f"{k} {100 * s:.1f}%" for s, k in shown) or "none over 0.5%"))
    totals.sort()
    print(f"spread of a hook's predictions over {len(profiles)} calibrations: "
          f"median {100 * totals[len(totals) // 2]:.1f}%, largest {100 * totals[-1]:.1f}%")


if __name__ == "__main__":
    main()

"""Where the host blocked at copies to the host, traced against replayed:
for each user annotation of a Kineto trace that holds a device-to-host copy,
the time its first such copy's cudaMemcpyAsync took (the host blocked there,
the copy waiting for its stream), median over the trace's ProfilerStep spans;
beside it the replayed step's first sync inside the same annotation, from the
trace `ddpsim simulate JOB.cfg --trace FILE` wrote of the traced job (the
first rank's host track). Later copies in an annotation are left out.

  python3 bench/trace_syncs.py TRACE.json[.gz] REPLAY.json
"""
import gzip
import json
import statistics
import sys


def load(path):
    d = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    return d["traceEvents"] if isinstance(d, dict) else d


def innermost(annotations, ev, tol=0.0):
    inside = [a for a in annotations if a["ts"] <= ev["ts"] + tol
              and ev["ts"] + ev["dur"] <= a["ts"] + a["dur"] + tol]
    return min(inside, key=lambda a: a["dur"])["name"] if inside else None


def traced(path):
    """{annotation: [ms blocked at its first copy to the host, one per step]}, in order met"""
    ev = load(path)
    d2h = {e["args"]["correlation"] for e in ev if e.get("cat") == "gpu_memcpy"
           and "DtoH" in str(e.get("name"))}
    ua = [e for e in ev if e.get("cat") == "user_annotation" and "dur" in e]
    steps = [e for e in ua if str(e["name"]).startswith("ProfilerStep#")]
    copies = sorted((e for e in ev if e.get("cat") == "cuda_runtime" and e.get("name") == "cudaMemcpyAsync"
                     and e.get("args", {}).get("correlation") in d2h), key=lambda e: e["ts"])
    out = {}
    for s in steps:
        anns = [a for a in ua if a not in steps and a.get("tid") == s.get("tid")]
        seen = set()
        for c in copies:
            if not s["ts"] <= c["ts"] <= s["ts"] + s["dur"]:
                continue
            name = innermost(anns, c)
            if name is None or name in seen:
                continue
            seen.add(name)
            out.setdefault(name, []).append(c["dur"] / 1e3)
    return out


def replayed(path):
    """{annotation: ms of the replayed host's first sync inside it}"""
    ev = [e for e in load(path) if e.get("cat") == "host" and e.get("ph") == "X"]
    pid = min(e["pid"] for e in ev)
    ev = [e for e in ev if e["pid"] == pid]
    anns = [e for e in ev if str(e["name"]).startswith("## ")]
    out = {}
    for s in sorted((e for e in ev if e["name"] == "sync"), key=lambda e: e["ts"]):
        name = innermost(anns, s, 1e-3)
        if name is not None and name not in out:
            out[name] = s["dur"] / 1e3
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    t, r = traced(sys.argv[1]), replayed(sys.argv[2])
    print(f"{'annotation':44} {'steps':>5} {'trace median ms':>15} {'replayed ms':>11}")
    for name, ms in t.items():
        rep = f"{r[name]:.2f}" if name in r else "-"
        print(f"{name:44} {len(ms):5d} {statistics.median(ms):15.2f} {rep:>11}")


if __name__ == "__main__":
    main()

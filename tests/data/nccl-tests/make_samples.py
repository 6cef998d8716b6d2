#!/usr/bin/env python3
"""Write the nccl-tests sample outputs of this directory (test data for
`ddpsim import nccl-tests`; python3 make_samples.py rewrites them).

The files are SYNTHETIC, not measured: they reproduce the stdout layout of
nccl-tests 2.17 (NVIDIA/nccl-tests src/util.cu: writeDeviceReport,
writeResultHeader, writeBenchmarkLinePreamble/Body, writeResultFooter; the
time column formatted by getFloatStr), with times from a plausible model of
NCCL on DGX H100 nodes: for every size the fastest of NCCL's three protocols
(LL, LL128, Simple), each a latency plus size over bandwidth, times a seeded
1% noise. Bandwidths: NVLink 4 busbw about 360 GB/s inside a node, 8 NDR
NICs (400 GB/s nominal) across two; latencies in the range of NCCL's own
tuning constants (src/graph/tuning.cc). busbw = algbw x factor as
doc/PERFORMANCE.md defines it.
"""
import random

HOSTS = ["dgx-h100-07", "dgx-h100-08"]
BUS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]  # DGX H100 GPU PCI buses
DEVICE = "NVIDIA H100 80GB HBM3"

# op: (binary, redop, root, size/count ratio is p?, busbw factor(p), protocols [(lat_us, algbw_GBps)])
OPS = {
    "all_reduce_perf": ("sum", -1, False, lambda p: 2.0 * (p - 1) / p),
    "all_gather_perf": ("none", -1, True, lambda p: (p - 1) / p),
    "reduce_scatter_perf": ("sum", -1, True, lambda p: (p - 1) / p),
    "broadcast_perf": ("none", 0, False, lambda p: 1.0),
}


def ffloat(v, width):
    """nccl-tests getFloatStr: the most decimals (2, 1, 0) that fit the width."""
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        s = fmt % (width, v)
        if len(s) <= width:
            return s
    return "%*.1e" % (width, v)


def write(path, binary, nodes, protos, seed, pid0):
    redop, root, gathered, factor = OPS[binary]
    p = 8 * nodes
    rng = random.Random(seed)
    lines = []
    pr = lines.append
    pr("# ddpsim test sample: SYNTHETIC output in the nccl-tests 2.17 layout (see make_samples.py); not measured")
    pr("# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703")
    pr("# Collective test starting: %s" % binary)
    pr("# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 "
       "agg iters: 1 validation: 1 graph: 0")
    pr("#")
    pr("# Using devices")
    for r in range(p):
        host = HOSTS[r // 8]
        pr("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0000:%s:00] %s"
           % (r, 0, pid0 + r, host, r % 8, BUS[r % 8], DEVICE))
    pr("#")
    pr("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
       % ("", "", "", "", ""))
    pr("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s"
       % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
          "time", "algbw", "busbw", "#wrong", ""))
    pr("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s"
       % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
          "(GB/s)", "", ""))
    bws = []
    size = 8
    while size <= 134217728:
        count = size // 4  # float
        if gathered:  # all_gather / reduce_scatter: per-rank count, total bytes
            per = count // p
            nbytes, ncount = per * p * 4, per
        else:
            nbytes, ncount = count * 4, count
        row = "%12d  %12d  %8s  %6s  %6s" % (nbytes, ncount, "float", redop, "%6i" % root)
        for _half in range(2):
            if nbytes == 0:
                t = 0.15 + 0.05 * rng.random()  # no data: NCCL returns at once
            else:
                t = min(lat + nbytes / (bw * 1e3) for lat, bw in protos)
                t *= 1.0 + 0.01 * rng.gauss(0.0, 1.0)
            algbw = nbytes / 1e9 / (t * 1e-6)
            busbw = algbw * factor(p)
            bws.append(busbw)
            row += "  %7s  %6s  %6s  %6g" % (ffloat(t, 7), ffloat(algbw, 6), ffloat(busbw, 6), 0)
        pr(row)
        size *= 2
    pr("# Out of bounds values : 0 OK")
    pr("# Avg bus bandwidth    : %g " % (sum(bws) / len(bws)))
    pr("#")
    pr("# Collective test concluded: %s" % binary)
    pr("")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


# (LL, LL128, Simple): latency in us, algorithm bandwidth in GB/s.
write("all_reduce_perf.txt", "all_reduce_perf", 1, [(10.0, 20.0), (18.0, 110.0), (35.0, 205.0)], 1, 41210)
write("all_gather_perf.txt", "all_gather_perf", 1, [(8.0, 40.0), (12.0, 200.0), (22.0, 411.0)], 2, 41530)
write("reduce_scatter_perf.txt", "reduce_scatter_perf", 1, [(9.0, 38.0), (13.0, 190.0), (24.0, 400.0)], 3, 41850)
write("broadcast_perf.txt", "broadcast_perf", 1, [(8.0, 30.0), (12.0, 120.0), (20.0, 190.0)], 4, 42170)
write("all_reduce_perf-2nodes.txt", "all_reduce_perf", 2, [(20.0, 12.0), (30.0, 70.0), (60.0, 181.0)], 5, 52210)

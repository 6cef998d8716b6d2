#!/usr/bin/env python3
"""Write a synthetic PyTorch profiler (Kineto) trace of about SIZE_MB megabytes.

    python3 bench/synth_trace.py SIZE_MB OUT.json

The steps are copies of the real training step in
tests/data/torch-trace/mlp-small-b32.json (its cpu_op and user_annotation
events, args and Input Dims included), one after the other, each as a GPU job
would show it: every op that computes launches a kernel (a cuda_runtime
cudaLaunchKernel inside the op, a kernel on stream 7 of device 0 tied to it by
correlation id, and the ac2g flow pair that links them), the way Kineto writes
them (one key group per line, timestamps in microseconds since the epoch with
three decimals). So `ddpsim import torch-trace` reads every step of it, and
the trace readers see the event mix and the text of a real GPU trace. Python
standard library only; written as a stream, never held whole.
"""
import json
import os
import sys

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "torch-trace",
                        "mlp-small-b32.json")
# Ops whose work a GPU job would run as a kernel (the rest are views and
# bookkeeping on the host).
LAUNCHING = {"aten::addmm", "aten::mm", "aten::clamp_min", "aten::add_", "aten::mul", "aten::copy_", "aten::fill_",
             "aten::sum", "aten::mse_loss", "aten::mse_loss_backward", "aten::threshold_backward", "aten::mean",
             "aten::div_", "aten::zero_", "aten::_foreach_add_", "aten::add"}
BASE_NS = 1745981234567890123  # since the epoch: 16 digits of µs and 3 of ns, as Kineto writes them


def us(ns):
    """Integer ns as the µs text Kineto writes, exact (no binary rounding at 16 digits)."""
    return "%d.%03d" % divmod(ns, 1000)


def step_template():
    """The first ProfilerStep's cpu_op and user_annotation events, times from its start."""
    with open(TEMPLATE) as f:
        trace = json.load(f)
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    step = next(e for e in events if e["name"].startswith("ProfilerStep#"))
    t0, t1 = step["ts"], step["ts"] + step["dur"]
    kept = sorted((e for e in events if t0 <= e["ts"] <= t1), key=lambda e: e["ts"])
    out = []
    for e in kept:
        args = {k: v for k, v in e.get("args", {}).items() if k != "External id"}
        out.append((e["cat"], json.dumps(e["name"]), e["tid"], round((e["ts"] - t0) * 1e3), round(e["dur"] * 1e3),
                    json.dumps(args)[1:-1], e["name"] in LAUNCHING))
    return out, round((t1 - t0) * 1e3)


def write_step(f, template, k, t0, ext, corr, pid):
    """Step k starting at t0 ns; External ids from ext, correlation ids from corr."""
    for cat, name, tid, dt, dur, args, launches in template:
        ts = t0 + dt
        if name.startswith('"ProfilerStep#'):
            name = '"ProfilerStep#%d"' % k
        f.write('  {\n    "ph": "X", "cat": "%s", "name": %s, "pid": %d, "tid": %d,\n'
                '    "ts": %s, "dur": %s,\n    "args": {\n      "External id": %d%s%s\n    }\n  },\n'
                % (cat, name, pid, tid, us(ts), us(dur), ext, ", " if args else "", args))
        if launches:
            lts, kts = ts + min(1000, dur // 4), ts + dur + 2000
            f.write('  {\n    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": %d, "tid": %d,\n'
                    '    "ts": %s, "dur": %s,\n    "args": {\n      "External id": %d, "cbid": 211, '
                    '"correlation": %d\n    }\n  },\n' % (pid, tid, us(lts), us(min(3500, dur // 2)), ext, corr))
            f.write('  {\n    "ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel'
                    '<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, '
                    'at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", "pid": 0, "tid": 7,\n'
                    '    "ts": %s, "dur": %s,\n    "args": {\n      "External id": %d, "queued": 0, '
                    '"device": 0, "context": 1, "stream": 7, "correlation": %d, "registers per thread": 16, '
                    '"shared memory": 0, "blocks per SM": 0.14, "warps per SM": 0.56, "grid": [16, 1, 1], '
                    '"block": [128, 1, 1], "est. achieved occupancy %%": 1\n    }\n  },\n'
                    % (us(kts), us(max(dur // 2, 1000)), ext, corr))
            f.write('  {\n    "ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", '
                    '"name": "ac2g"\n  },\n' % (corr, pid, tid, us(lts)))
            f.write('  {\n    "ph": "f", "id": %d, "pid": 0, "tid": 7, "ts": %s, "cat": "ac2g", '
                    '"name": "ac2g", "bp": "e"\n  },\n' % (corr, us(kts)))
            corr += 1
        ext += 1
    return ext, corr


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: synth_trace.py SIZE_MB OUT.json")
    target = float(sys.argv[1]) * 1e6
    template, span = step_template()
    pid = template[0][2]
    with open(sys.argv[2], "w") as f:
        f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {\n      "id": 0, "name": "NVIDIA H100 80GB '
                'HBM3", "totalGlobalMem": 85045870592,\n      "computeMajor": 9, "computeMinor": 0,\n'
                '      "maxThreadsPerBlock": 1024, "numSms": 132\n    }\n  ],\n'
                '  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1, "nccl_version": "2.21.5"},\n'
                '  "traceEvents": [\n')
        f.write('  {\n    "name": "process_name", "ph": "M", "ts": %s, "pid": %d, "tid": 0,\n'
                '    "args": {\n      "name": "python"\n    }\n  },\n' % (us(BASE_NS), pid))
        k, t0, ext, corr = 1, BASE_NS + 500000, 1, 1
        while f.tell() < target:
            ext, corr = write_step(f, template, k, t0, ext, corr, pid)
            k, t0 = k + 1, t0 + span + 250000
        f.write('  {\n    "name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": %s\n  }\n'
                '],\n  "traceName": "%s",\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": 1745980000000000000\n}\n'
                % (us(t0), os.path.basename(sys.argv[2])))
    print("%s: %d steps, %.0f MB" % (sys.argv[2], k - 1, os.path.getsize(sys.argv[2]) / 1e6))


if __name__ == "__main__":
    main()

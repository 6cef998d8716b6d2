"""Time real single-GPU training steps of the shipped ResNet-50 and BERT-large
models with PyTorch, for comparison with `ddpsim simulate` on a profile that
`ddpsim calibrate --backend nccl` measured on the same GPU (see
bench/validate-gpu.sh, which runs both halves).

Each step is forward, loss, backward and an SGD-with-momentum update on
synthetic data already on the device (no data loading), as the simulator's
step counts it. Precisions as ddpsim names them: fp32 (TF32 off), tf32
(TF32 matmuls and convolutions), amp_bf16 (autocast to bfloat16, fp32 master
weights). ResNet-50 runs in channels_last as well, the layout its tensor-core
kernels want. Steps are timed with CUDA events after warm-up (cudnn.benchmark
chooses its algorithms during the warm-up); the median, 10th and 90th
percentiles go to a CSV:

  python3 bench/pytorch/gpu_step.py --out gpu-steps.csv

--ops OPS.csv then profiles a few more steps of each run with torch.profiler
and writes where the device's time went: each aten op's self device time per
step (the kernels it launched), and the steps' device-busy time against their
wall time (what launch overhead leaves idle).
"""
import argparse
import csv
import statistics
import sys
import time

import torch
import torch.nn as nn


def set_precision(prec):
    tf32 = prec == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def time_steps(step, warmup, steps):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return times


def profile_ops(step, steps):
    """Per-op self device time (ms a step) and device-busy ms a step."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(steps):
            step()
        b.record()
        b.synchronize()
    wall = a.elapsed_time(b) / steps
    ops = []
    for e in prof.key_averages():
        dev = getattr(e, "self_device_time_total", None)
        if dev is None:
            dev = e.self_cuda_time_total
        if dev > 0 and e.key.startswith("aten::"):
            ops.append((e.key, dev / 1000.0 / steps, e.count / steps))
    # Kernels' own time, whatever op launched them: the device's busy time.
    busy = 0.0
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            busy += e.time_range.elapsed_us()
    ops.sort(key=lambda o: -o[1])
    return wall, busy / 1000.0 / steps, ops


def sgd_step(model, prec, loss_of):
    """One training step: forward and loss_of(model) under bf16 autocast when
    prec is amp_bf16 (or bf16, the name older CSVs use), backward, an
    SGD-with-momentum update."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=prec in ("amp_bf16", "bf16")):
            loss = loss_of(model)
        loss.backward()
        opt.step()

    return step


def resnet_step(batch, prec, layout):
    import torchvision

    model = torchvision.models.resnet50().cuda()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    if layout == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    loss_fn = nn.CrossEntropyLoss()
    return sgd_step(model, prec, lambda m: loss_fn(m(x), y))


def bert_step(batch, prec, seq):
    from transformers import BertConfig, BertForPreTraining

    # bert-large-uncased's configuration (scenarios/models/bert-large.cfg).
    cfg = BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24,
                     num_attention_heads=16, intermediate_size=4096,
                     max_position_embeddings=512)
    model = BertForPreTraining(cfg).cuda().train()
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
    labels = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
    nsp = torch.randint(0, 2, (batch,), device="cuda")
    return sgd_step(model, prec, lambda m: m(input_ids=ids, labels=labels, next_sentence_label=nsp).loss)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="CSV to write")
    ap.add_argument("--resnet-batch", type=int, default=128)
    ap.add_argument("--bert-batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--models", default="resnet50,bert-large")
    ap.add_argument("--ops", help="also profile each run: per-op device time CSV")
    ap.add_argument("--precisions", default="fp32,tf32,amp_bf16")
    ap.add_argument("--layouts", default="nchw,channels_last", help="ResNet-50's memory formats")
    a = ap.parse_args()
    if a.steps < 2 or a.warmup < 0:
        sys.exit("gpu_step.py: --steps needs at least 2 (for the percentiles) and --warmup 0 or more")
    if not torch.cuda.is_available():
        sys.exit("gpu_step.py: no CUDA device; this benchmark needs a GPU")
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    runs = []
    for m in a.models.split(","):
        for prec in a.precisions.split(","):
            if m == "resnet50":
                for layout in a.layouts.split(","):
                    runs.append((m, prec, layout, a.resnet_batch))
            elif m == "bert-large":
                runs.append((m, prec, "-", a.bert_batch))
            else:
                sys.exit(f"gpu_step.py: unknown model {m}; the models are resnet50 and bert-large")
    print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"cuDNN {torch.backends.cudnn.version()}", flush=True)
    opsf = open(a.ops, "w", newline="") if a.ops else None
    ow = csv.writer(opsf) if opsf else None
    if ow:
        ow.writerow(["model", "precision", "layout", "op", "self_device_ms", "calls"])
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "precision", "layout", "batch", "median_ms", "p10_ms", "p90_ms", "steps"])
        for m, prec, layout, batch in runs:
            set_precision(prec)
            t0 = time.time()
            step = resnet_step(batch, prec, layout) if m == "resnet50" else bert_step(batch, prec, a.seq)
            t = sorted(time_steps(step, a.warmup, a.steps))
            q = statistics.quantiles(t, n=10)
            row = [m, prec, layout, batch, f"{statistics.median(t):.3f}", f"{q[0]:.3f}", f"{q[-1]:.3f}", len(t)]
            w.writerow(row)
            f.flush()
            print(f"{m:10s} {prec:5s} {layout:13s} batch {batch:4d}: median {statistics.median(t):8.2f} ms "
                  f"(p10 {q[0]:.2f}, p90 {q[-1]:.2f}; {time.time() - t0:.1f} s)", flush=True)
            if ow:
                try:
                    wall, busy, ops = profile_ops(step, 3)
                except Exception as ex:  # keep the timings when the profiler's API differs
                    print(f"    profiling failed: {ex!r}", flush=True)
                    wall, busy, ops = 0.0, 0.0, []
                ow.writerow([m, prec, layout, "(step wall)", f"{wall:.3f}", 1])
                ow.writerow([m, prec, layout, "(device busy)", f"{busy:.3f}", 1])
                for op, ms, calls in ops:
                    ow.writerow([m, prec, layout, op, f"{ms:.4f}", f"{calls:g}"])
                opsf.flush()
                top = ", ".join(f"{op[6:]} {ms:.1f}" for op, ms, _ in ops[:6])
                print(f"    profiled: wall {wall:.2f} ms, device busy {busy:.2f} ms a step; top ops (ms): {top}",
                      flush=True)
            del step
            torch.cuda.empty_cache()
    if opsf:
        opsf.close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch's peak of allocated tensor bytes in a steady-state DDP training step.

Builds torchvision's resnet50 and vgg16 (224x224 images, 1000 classes) and
HuggingFace's BertForPreTraining with the bert-large-uncased configuration
(512-token sequences, masked-LM plus next-sentence loss; random weights,
nothing downloaded; attention dropout 0 unless --attn-dropout, so that the
CPU runs attention fused as a GPU does), wraps each in DistributedDataParallel on the CPU with
Gloo (world size 1, default DDP settings; --bucket-view sets
gradient_as_bucket_view) and trains it in fp32 with
torch.optim.SGD(momentum=0.9) or torch.optim.Adam, foreach=True (the
default on CUDA, the devices ddpsim's estimate is for; on the CPU PyTorch
defaults to the for-loop), zero_grad(set_to_none=True) (PyTorch 2's
default). Steps 1 and 2 are warm-up (the optimizer creates its state in
step 1, DDP rebuilds its buckets in step 2); step 3 is measured.

How the peak is measured: torch.profiler with profile_memory=True reports
every allocation and free of PyTorch's CPU allocator (c10's
ProfiledCPUMemoryReporter: the tensors' storages, exact byte counts) as
"[memory]" events. The profiler is started once the model is built, so
the bytes live then are the model's parameters and buffers and the batch
(counted from their storages); the running sum of the events from there gives the
allocated bytes at every event, and its highest value between the
measured step's start and end is the peak. It counts tensors only: not
oneDNN's scratchpads, Gloo's buffers nor the interpreter, as a CUDA
device's torch.cuda.max_memory_allocated() would not either.

Prints one CSV line per point:
model,batch,optimizer,peak_bytes,state_bytes,backward_peak_bytes,step_peak_bytes
where state_bytes is what is allocated at the measured step's start, after
zero_grad (weights, optimizer state, DDP's buckets, the batch), backward_peak_bytes the peak
up to the end of backward and step_peak_bytes that of optimizer.step().

With --zero, two ranks on 127.0.0.1 (torch.multiprocessing, Gloo) train
the model under DDP with torch.distributed.optim.ZeroRedundancyOptimizer
wrapping the same optimizer (ZeRO stage 1: each rank keeps the state of,
and steps, its shard of the parameters, then broadcasts it); rank 0's
allocations are measured and printed.

Usage: memfit_steps.py --model resnet50 --batch 4 --optimizer adam [--bucket-view]
                       [--attn-dropout P] [--zero]
"""

import argparse
import json
import os
import socket
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import ProfilerActivity, profile, record_function


def build(name, batch, attn_dropout=0.0):
    """The model, the batch's tensors and a function computing a step's loss."""
    torch.manual_seed(0)
    if name in ("resnet50", "vgg16"):
        import torchvision
        m = getattr(torchvision.models, name)(weights=None)
        x = torch.randn(batch, 3, 224, 224)
        y = torch.randint(0, 1000, (batch,))
        return m, (x, y), lambda mod: nn.functional.cross_entropy(mod(x), y)
    if name == "bert-large":
        from transformers import BertConfig, BertForPreTraining
        # bert-large-uncased's config.json, hidden dropout 0.1 as in
        # pretraining. Attention (HF's default, torch's SDPA) is fused on a
        # GPU with or without dropout, keeping no score matrices; on the CPU
        # SDPA fuses only without dropout, else its math path keeps three
        # 512x512 tensors a head: attention dropout is attn_dropout.
        cfg = BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24,
                         num_attention_heads=16, intermediate_size=4096,
                         max_position_embeddings=512, type_vocab_size=2,
                         attention_probs_dropout_prob=attn_dropout)
        m = BertForPreTraining(cfg)
        ids = torch.randint(0, 30522, (batch, 512))
        labels = torch.randint(0, 30522, (batch, 512))
        nsp = torch.randint(0, 2, (batch,))
        return m, (ids, labels, nsp), lambda mod: mod(input_ids=ids, labels=labels,
                                                       next_sentence_label=nsp).loss
    sys.exit("memfit_steps.py: unknown model " + name)


def live_bytes(tensors):
    """Bytes of the distinct storages of tensors."""
    seen = {}
    for t in tensors:
        s = t.untyped_storage()
        seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())


def spans(trace, names):
    """(start, end) in µs of the user annotations named in names."""
    out = {}
    for e in trace:
        if e.get("cat") == "user_annotation" and e.get("name") in names:
            out[e["name"]] = (e["ts"], e["ts"] + e["dur"])
    return out


def peaks(trace, base):
    """Allocated bytes at the measured step's start, and its peaks."""
    sp = spans(trace, ("memfit_step", "memfit_backward", "memfit_optimizer"))
    mem = sorted((e["ts"], e["args"]["Bytes"]) for e in trace
                 if e.get("name") == "[memory]" and e["args"].get("Device Type", 0) == 0)
    cur, start, peak, bwd, opt = base, None, 0, 0, 0
    s0, s1 = sp["memfit_step"]
    for ts, nbytes in mem:
        if ts >= s0 and start is None:
            start = cur
        cur += nbytes
        if s0 <= ts <= s1:
            peak = max(peak, cur)
            if ts <= sp["memfit_backward"][1]:
                bwd = max(bwd, cur)
            if sp["memfit_optimizer"][0] <= ts <= sp["memfit_optimizer"][1]:
                opt = max(opt, cur)
    return start, peak, bwd, opt


def make_optimizer(args, params):
    """The optimizer, under ZeroRedundancyOptimizer with --zero."""
    if args.optimizer == "adam":
        cls, kw = torch.optim.Adam, dict(lr=1e-4, foreach=True)
    else:
        cls, kw = torch.optim.SGD, dict(lr=1e-3, momentum=0.9, foreach=True)
    if args.zero:
        from torch.distributed.optim import ZeroRedundancyOptimizer
        return ZeroRedundancyOptimizer(params, optimizer_class=cls, **kw)
    return cls(params, **kw)


def run(rank, world, args):
    """One rank's three steps; rank 0 measures and prints its figures."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29519")
    if world > 1:
        torch.set_num_threads(1)  # one core each, not both ranks on every core
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model, batch, loss_of = build(args.model, args.batch, args.attn_dropout)
    model.train()
    base = live_bytes(list(model.parameters()) + list(model.buffers()) + list(batch))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        ddp = DDP(model, gradient_as_bucket_view=args.bucket_view)
        opt = make_optimizer(args, ddp.parameters())
        for i in range(3):
            opt.zero_grad(set_to_none=True)
            with record_function("memfit_step" if i == 2 else "warmup"):
                with record_function("memfit_backward" if i == 2 else "warmup_bwd"):
                    loss_of(ddp).backward()
                with record_function("memfit_optimizer" if i == 2 else "warmup_opt"):
                    opt.step()
    if rank == 0:
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            prof.export_chrome_trace(f.name)
            with open(f.name) as g:
                trace = json.load(g)["traceEvents"]
        start, peak, bwd, step = peaks(trace, base)
        print("%s,%d,%s,%d,%d,%d,%d" % (args.model, args.batch, args.optimizer, peak, start, bwd, step),
              flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--optimizer", choices=("sgd_momentum", "adam"), required=True)
    ap.add_argument("--bucket-view", action="store_true",
                    help="DDP with gradient_as_bucket_view=True")
    ap.add_argument("--attn-dropout", type=float, default=0.0,
                    help="BERT's attention_probs_dropout_prob (default 0: fused attention, as on a GPU)")
    ap.add_argument("--zero", action="store_true",
                    help="two ranks, ZeroRedundancyOptimizer; rank 0 measured")
    args = ap.parse_args()
    if args.zero:
        if "MASTER_PORT" not in os.environ:
            # A port free now on 127.0.0.1, so that runs side by side do not meet.
            with socket.socket() as so:
                so.bind(("127.0.0.1", 0))
                os.environ["MASTER_PORT"] = str(so.getsockname()[1])
        torch.multiprocessing.spawn(run, args=(2, args), nprocs=2)
    else:
        run(0, 1, args)


if __name__ == "__main__":
    main()

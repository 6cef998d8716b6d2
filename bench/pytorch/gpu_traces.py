#!/usr/bin/env python3
"""Profile training steps of real models with torch.profiler and write the
gzip-compressed Kineto traces that `ddpsim import torch-trace` reads.

Models (random weights, built from their configurations; nothing is
downloaded): torchvision's ResNet-50 on ImageNet-sized images,
HuggingFace's BertForPreTraining with bert-large-uncased's configuration
(as bench/pytorch/buckets.py builds it: masked-LM plus next-sentence loss),
and GPT2LMHeadModel with the configuration of GPT-2 small (12 layers, width
768, 12 heads, 1,024 positions: Radford et al. 2019, "Language Models are
Unsupervised Multitask Learners", Table 2, and transformers' GPT2Config
defaults) or, with --gpt2 medium, GPT-2 medium (24 layers, width 1,024, 16
heads). Dropout is off in BERT and GPT-2, as in buckets.py.

Each model runs without DDP and under DistributedDataParallel over a
one-rank process group (nccl on --device cuda, gloo on --device cpu; a
file store in a temporary directory): a training step is zero_grad,
forward and loss (under bf16 autocast with --precision amp_bf16), backward,
an SGD-with-momentum update, and loss.item() as a loop that logs its loss
does (it makes each ProfilerStep span the step the device ran; --no-sync
leaves it out). --warmup unprofiled steps first (cudnn.benchmark chooses
its algorithms there), then torch.profiler with CPU and CUDA activities,
record_shapes=True (the importer takes the batch and tensor sizes from the
shapes) and schedule(wait=1, warmup=1, active=--steps): one ProfilerStep#N
span per active step. Each trace also carries a "ddpsim_run" metadata
entry (model, DDP, device, batch, sequence, precision, steps, versions).

  python3 bench/pytorch/gpu_traces.py --out DIR [--device cuda|cpu]
      [--models resnet50,bert-large,gpt2] [--modes noddp,ddp]
      [--precision fp32|tf32|amp_bf16] [--steps 5] [--warmup 3] ...

writes DIR/MODEL-ddp|noddp-TAG.json.gz, TAG being the device (the GPU's
name without "NVIDIA", e.g. "h200"; "cpu") and the precision when it is not
fp32 (--tag replaces it), then checks each (as --check does; --no-check
leaves that to the caller).

  python3 bench/pytorch/gpu_traces.py --check TRACE.json.gz...

checks traces without torch: gzip and JSON valid, as many ProfilerStep
spans as the run profiled, shapes recorded, distributedInfo (one rank, the
run's backend) and DDP's forward in the DDP traces and neither in the
others, and kernels in a GPU trace (of a trace without the "ddpsim_run"
entry, which this script did not write, its ProfilerStep spans only).
Prints one line per trace; exits 1 when any fails.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ("resnet50", "bert-large", "gpt2")
GPT2_POSITIONS = 1024
GPT2 = {"small": dict(n_layer=12, n_embd=768, n_head=12), "medium": dict(n_layer=24, n_embd=1024, n_head=16)}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="directory to write the traces to")
    ap.add_argument("--check", nargs="+", metavar="TRACE", help="check these traces and exit")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--models", default=",".join(MODELS), help="subset of " + ",".join(MODELS))
    ap.add_argument("--modes", default="noddp,ddp", help="noddp, ddp or both")
    ap.add_argument("--precision", choices=("fp32", "tf32", "amp_bf16"), default="fp32",
                    help="fp32: TF32 off; tf32: TF32 matmuls and convolutions; amp_bf16: bf16 autocast")
    ap.add_argument("--resnet-batch", type=int, default=64)
    ap.add_argument("--image", type=int, default=224, help="ResNet-50's image side")
    ap.add_argument("--bert-batch", type=int, default=8)
    ap.add_argument("--gpt2-batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512, help="BERT's and GPT-2's sequence length")
    ap.add_argument("--gpt2", choices=sorted(GPT2), default="small")
    ap.add_argument("--warmup", type=int, default=3, help="unprofiled steps first")
    ap.add_argument("--steps", type=int, default=5, help="profiled (active) steps")
    ap.add_argument("--no-sync", action="store_true", help="no loss.item() at the end of a step")
    ap.add_argument("--tag", help="file name tag in place of the device's (and precision's)")
    ap.add_argument("--no-check", action="store_true", help="leave the checks of the traces written to the caller")
    a = ap.parse_args(argv)
    if not a.check and not a.out:
        ap.error("give --out DIR (or --check TRACE...)")
    bad = [m for m in a.models.split(",") if m not in MODELS]
    if bad:
        ap.error("unknown model(s) %s; the models are %s" % (",".join(bad), ",".join(MODELS)))
    if not set(a.modes.split(",")) <= {"noddp", "ddp"}:
        ap.error("--modes takes noddp, ddp or noddp,ddp")
    if a.steps < 1 or a.warmup < 0 or min(a.resnet_batch, a.bert_batch, a.gpt2_batch, a.seq, a.image) < 1:
        ap.error("--steps, batches, --seq and --image need at least 1, --warmup 0 or more")
    if "gpt2" in a.models.split(",") and a.seq > GPT2_POSITIONS:
        ap.error("GPT-2 takes sequences of at most %d tokens; --seq %d" % (GPT2_POSITIONS, a.seq))
    return a


# ---- models ---------------------------------------------------------------------


def build(name, a, dev):
    """(model on dev, loss_of(model), batch, sequence or None) for one model."""
    import torch

    torch.manual_seed(0)
    with torch.device(dev):  # parameters made where they train: no copy of a large model
        return build_on(name, a, dev)


def build_on(name, a, dev):
    """build's models and inputs, under torch.device(dev)."""
    import torch
    import torch.nn as nn

    if name == "resnet50":
        import torchvision

        m = torchvision.models.resnet50()
        x = torch.randn(a.resnet_batch, 3, a.image, a.image, device=dev)
        y = torch.randint(0, 1000, (a.resnet_batch,), device=dev)
        return m, lambda mod: nn.functional.cross_entropy(mod(x), y), a.resnet_batch, None
    if name == "bert-large":
        from transformers import BertForPreTraining

        sys.path.insert(0, HERE)
        from buckets import bert_large_config

        cfg = bert_large_config()
        m = BertForPreTraining(cfg)
        ids = torch.randint(0, cfg.vocab_size, (a.bert_batch, a.seq), device=dev)
        labels = torch.randint(0, cfg.vocab_size, (a.bert_batch, a.seq), device=dev)
        nsp = torch.randint(0, 2, (a.bert_batch,), device=dev)
        return (m, lambda mod: mod(input_ids=ids, labels=labels, next_sentence_label=nsp).loss,
                a.bert_batch, a.seq)
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=50257, n_positions=GPT2_POSITIONS, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     **GPT2[a.gpt2])
    m = GPT2LMHeadModel(cfg)
    ids = torch.randint(0, cfg.vocab_size, (a.gpt2_batch, a.seq), device=dev)
    return m, lambda mod: mod(input_ids=ids, labels=ids).loss, a.gpt2_batch, a.seq


def model_name(name, a):
    return "gpt2-medium" if name == "gpt2" and a.gpt2 == "medium" else name


def make_step(model, loss_of, a):
    """One training step as the module docstring says."""
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.precision == "amp_bf16"):
            loss = loss_of(model)
        loss.backward()
        opt.step()
        if not a.no_sync:
            loss.item()

    return step


# ---- one profiled run --------------------------------------------------------------


def device_tag(a):
    if a.tag:
        return a.tag
    if a.device == "cpu":
        tag = "cpu"
    else:
        import torch

        gpu = re.sub(r"^nvidia\s+", "", torch.cuda.get_device_name(0).strip(), flags=re.I)
        tag = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-") or "cuda"
    return tag if a.precision == "fp32" else tag + "-" + a.precision


def init_group(a, store_dir):
    """A one-rank process group: nccl on a GPU, gloo on the CPU."""
    import torch
    import torch.distributed as dist

    backend = "nccl" if a.device == "cuda" else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(0)
    dist.init_process_group(backend, init_method="file://" + os.path.join(store_dir, "store"), rank=0,
                            world_size=1)
    return backend


def run_meta(name, ddp, backend, batch, seq, a):
    import torch

    meta = {"model": model_name(name, a), "ddp": ddp, "backend": backend, "device": a.device, "batch": batch,
            "seq": seq, "precision": a.precision, "steps": a.steps, "warmup": a.warmup, "sync": not a.no_sync,
            "torch": torch.__version__}
    if a.device == "cuda":
        meta["gpu"] = torch.cuda.get_device_name(0)
    if name != "resnet50":
        import transformers

        meta["transformers"] = transformers.__version__
    return meta


def profile_steps(step, meta, path, a):
    """--warmup plain steps, then the profiled ones; the trace to path (.json.gz)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    for _ in range(a.warmup):
        step()
    if a.device == "cuda":
        torch.cuda.synchronize()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if a.device == "cuda" else [])
    tmp = path + ".tmp.gz"  # export_chrome_trace gzips a name ending in .gz; not a *.json.gz until whole
    wait, warm = 1, 1
    with profile(activities=acts, record_shapes=True, schedule=schedule(wait=wait, warmup=warm, active=a.steps),
                 on_trace_ready=lambda p: p.export_chrome_trace(tmp)) as prof:
        for i in range(wait + warm + a.steps):
            if i == wait + warm:  # the first recorded step: the trace is open
                prof.add_metadata_json("ddpsim_run", json.dumps(meta))
            step()
            prof.step()
    os.replace(tmp, path)


def trace_one(name, ddp, a, tag):
    """Builds, runs and profiles one model with or without DDP; the trace's path."""
    path = os.path.join(a.out, "%s-%s-%s.json.gz" % (model_name(name, a), "ddp" if ddp else "noddp", tag))
    t0 = time.time()
    store_dir = tempfile.mkdtemp(prefix="gpu-traces-") if ddp else None
    try:
        backend = init_group(a, store_dir) if ddp else None
        model, loss_of, batch, seq = build(name, a, a.device)
        if ddp:
            from torch.nn.parallel import DistributedDataParallel as DDP

            model = DDP(model, device_ids=[0] if a.device == "cuda" else None)
        profile_steps(make_step(model, loss_of, a), run_meta(name, ddp, backend, batch, seq, a), path, a)
    finally:
        if ddp:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
            shutil.rmtree(store_dir, ignore_errors=True)
    print("wrote %s (%.1f MB, %.1f s)" % (path, os.path.getsize(path) / 1e6, time.time() - t0), flush=True)
    return path


# ---- checks (no torch needed) ------------------------------------------------------


def load_trace(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


def check_events(ev, meta):
    """Problems with the events and the step spans (ms) of one trace; meta
    None (a trace gpu_traces.py did not write): its step spans only."""
    bad = []
    steps = [e["dur"] / 1e3 for e in ev if e.get("cat") == "user_annotation" and e.get("ph") == "X"
             and str(e.get("name", "")).startswith("ProfilerStep#")]
    want = meta.get("steps") if meta else None
    if not steps or (want is not None and len(steps) != want):
        bad.append("%d ProfilerStep spans, expected %s" % (len(steps), want or "1 or more"))
    if meta is None:
        return bad, steps
    if not any(e.get("cat") == "cpu_op" and "Input Dims" in (e.get("args") or {}) for e in ev):
        bad.append("no recorded shapes (record_shapes=True)")
    ddp_fwd = any(e.get("name") == "DistributedDataParallel.forward" for e in ev)
    if ddp_fwd != bool(meta.get("ddp")):
        bad.append("DDP's forward %s" % ("missing" if meta.get("ddp") else "in a run without DDP"))
    if meta.get("device") == "cuda" and not any(e.get("cat") == "kernel" for e in ev):
        bad.append("no GPU kernels")
    return bad, steps


def check_dist(d, meta):
    info = d.get("distributedInfo")
    if not meta.get("ddp"):
        return ["distributedInfo in a run without DDP"] if info else []
    if not isinstance(info, dict):
        return ["no distributedInfo"]
    want = meta.get("backend") or ("nccl" if meta.get("device") == "cuda" else "gloo")
    bad = []
    if info.get("backend") != want:
        bad.append("distributedInfo backend %s, expected %s" % (info.get("backend"), want))
    if int(info.get("world_size", -1)) != 1 or int(info.get("rank", -1)) != 0:
        bad.append("distributedInfo rank %s of %s, expected 0 of 1" % (info.get("rank"), info.get("world_size")))
    return bad


def check_trace(path):
    """(problems, one-line summary) of one trace (path: .json.gz)."""
    try:
        d = load_trace(path)
    except (OSError, EOFError, ValueError) as ex:
        return ["not a gzip-compressed JSON trace: %s" % ex], ""
    if not isinstance(d, dict) or not isinstance(d.get("traceEvents"), list) or not d["traceEvents"]:
        return ["no traceEvents"], ""
    meta = d.get("ddpsim_run")
    meta = meta if isinstance(meta, dict) else None
    bad, steps = check_events(d["traceEvents"], meta)
    if meta:
        bad += check_dist(d, meta)
    info = d.get("distributedInfo") or {}
    what = "%d events, %d steps" % (len(d["traceEvents"]), len(steps))
    if steps:
        what += ", median step %.3f ms" % statistics.median(steps)
    if info:
        what += ", %s world %s" % (info.get("backend"), info.get("world_size"))
    if meta is None:
        what += " (not written by gpu_traces.py: its step spans checked only)"
    return bad, what


def check_all(paths):
    failed = 0
    for p in paths:
        bad, what = check_trace(p)
        size = os.path.getsize(p) / 1e6 if os.path.exists(p) else 0.0
        if bad:
            failed += 1
            print("FAIL %s: %s" % (os.path.basename(p), "; ".join(bad)), flush=True)
        else:
            print("ok   %s (%.2f MB): %s" % (os.path.basename(p), size, what), flush=True)
    return 1 if failed else 0


# ---- main ----------------------------------------------------------------------------


def main(argv=None):
    a = parse_args(argv)
    if a.check:
        return check_all(a.check)
    import torch

    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_traces.py: no CUDA device; run with --device cpu for a smoke run")
    torch.backends.cudnn.benchmark = True
    if a.device == "cuda":
        sys.path.insert(0, HERE)
        from gpu_step import set_precision

        set_precision(a.precision)
    os.makedirs(a.out, exist_ok=True)
    tag = device_tag(a)
    print("# %s, torch %s, %s" % (torch.cuda.get_device_name(0) if a.device == "cuda" else "CPU",
                                  torch.__version__, a.precision), flush=True)
    paths, failed = [], 0
    for m in a.models.split(","):
        for mode in a.modes.split(","):
            try:
                paths.append(trace_one(m, mode == "ddp", a, tag))
            except Exception as ex:  # one run's failure (memory, an API of another version) spares the rest
                print("FAIL %s %s: %r" % (m, mode, ex), flush=True)
                failed += 1
            if a.device == "cuda":
                torch.cuda.empty_cache()  # the last model's memory, before the next is built
    return (0 if a.no_check else check_all(paths)) or (1 if failed else 0)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""PyTorch DDP's real gradient buckets, as the CSV `ddpsim model` prints.

Builds torchvision's resnet50 and vgg16 and HuggingFace's BertForPreTraining
with the bert-large-uncased configuration (random weights, nothing
downloaded), wraps each in DistributedDataParallel on the CPU with Gloo
(world size 1), and records every bucket through a communication hook
(GradBucket.index(), .parameters(), .buffer()) in a first and in later
training iterations. Writes one CSV per model, DDP setting and iteration:

  DIR/MODEL-CAP-first.csv    default DDP, the first iteration
  DIR/MODEL-CAP-rebuilt.csv  default DDP, once the reducer rebuilt its buckets
  DIR/MODEL-CAP-unused.csv   find_unused_parameters=True (every iteration)

CAP is "default" (bucket_cap_mb left unset: 25 MiB with a 1 MiB first
bucket) or the bucket_cap_mb passed, e.g. "25" or "1". Columns:
bucket,bytes,params (parameter names as named_parameters() gives them,
space-separated, in the bucket's order).

It also checks what the comparison relies on and exits 1 when it does not
hold: later iterations keep the rebuilt buckets, find_unused_parameters=True
keeps its first buckets, and static_graph=True uses the default's one
bucket in its first two iterations and the default's rebuilt buckets from
the third on.

Usage: buckets.py --out DIR [--models resnet50,vgg16,bert-large]
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

CAPS = [("default", None), ("25", 25), ("1", 1)]


def bert_large_config():
    """bert-large-uncased's config.json, dropout off so steps are exact."""
    from transformers import BertConfig
    return BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24,
                      num_attention_heads=16, intermediate_size=4096,
                      max_position_embeddings=512, type_vocab_size=2,
                      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def build(name):
    """The model and a function running one training step's forward and loss."""
    torch.manual_seed(0)
    if name in ("resnet50", "vgg16"):
        import torchvision
        m = getattr(torchvision.models, name)(weights=None)
        # The bucket assignment does not depend on the image size: 64x64 keeps
        # the CPU steps short (both models pool adaptively before the head).
        x = torch.randn(2, 3, 64, 64)
        y = torch.tensor([1, 2])
        return m, lambda mod: nn.functional.cross_entropy(mod(x), y)
    if name == "bert-large":
        from transformers import BertForPreTraining
        m = BertForPreTraining(bert_large_config())
        ids = torch.randint(0, 30522, (1, 16))
        labels = torch.randint(0, 30522, (1, 16))
        nsp = torch.tensor([1])
        # A pretraining step: masked-LM plus next-sentence loss.
        return m, lambda mod: mod(input_ids=ids, labels=labels, next_sentence_label=nsp).loss
    sys.exit("buckets.py: unknown model " + name)


def record(model, step, cap_mb, iterations, **ddp_kw):
    """Buckets of each iteration: [(index, bytes, [names])] per iteration."""
    names = {id(p): n for n, p in model.named_parameters()}
    ddp = DDP(model, bucket_cap_mb=cap_mb, **ddp_kw)
    seen = []

    def hook(state, bucket):
        buf = bucket.buffer()
        seen.append((bucket.index(), buf.numel() * buf.element_size(),
                     [names[id(p)] for p in bucket.parameters()]))
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut

    ddp.register_comm_hook(None, hook)
    out = []
    for _ in range(iterations):
        seen.clear()
        ddp.zero_grad(set_to_none=True)
        step(ddp).backward()
        out.append(sorted(seen))
        # Each bucket once per iteration, indices 0..n-1.
        assert [b[0] for b in out[-1]] == list(range(len(seen))), out[-1]
    return out


def to_csv(buckets):
    lines = ["bucket,bytes,params"]
    lines += ["%d,%d,%s" % (i, nbytes, " ".join(ps)) for i, nbytes, ps in buckets]
    return "\n".join(lines) + "\n"


def write(path, buckets):
    with open(path + ".tmp", "w") as f:
        f.write(to_csv(buckets))
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="resnet50,vgg16,bert-large")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("gloo", rank=0, world_size=1)
    print("torch %s, world size 1, gloo" % torch.__version__)
    bad = 0
    for name in args.models.split(","):
        for tag, cap in CAPS:
            model, step = build(name)
            first, rebuilt, later = record(model, step, cap, 3)
            model, step = build(name)
            static = record(model, step, cap, 3, static_graph=True)
            model, step = build(name)
            unused = record(model, step, cap, 2, find_unused_parameters=True)
            checks = [("later iterations keep the rebuilt buckets", later == rebuilt),
                      ("static_graph: one bucket twice, then the rebuilt ones",
                       static == [first, first, rebuilt]),
                      ("find_unused_parameters never rebuilds", unused[0] == unused[1])]
            for what, ok in checks:
                if not ok:
                    print("%s cap %s: NOT %s" % (name, tag, what))
                    bad += 1
            base = os.path.join(args.out, "%s-%s" % (name, tag))
            write(base + "-first.csv", first)
            write(base + "-rebuilt.csv", rebuilt)
            write(base + "-unused.csv", unused[0])
            print("%-10s cap %-7s first %2d bucket(s), rebuilt %2d, find_unused %2d"
                  % (name, tag, len(first), len(rebuilt), len(unused[0])))
    dist.destroy_process_group()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

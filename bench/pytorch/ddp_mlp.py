"""PyTorch DDP (Gloo, CPU) training the same MLP as `ddpsim train`, for the
comparison benchmark. Run one process per rank under `ddpsim launch`, which
sets RANK, WORLD_SIZE and DDPSIM_RDZV (a shared directory used here for a
file:// rendezvous). Writes per-step metrics with the columns of
`ddpsim train`'s steps.csv:

  rank,attempt,step,step_s,compute_s,comm_s,exposed_comm_s,loss

Definitions match ddpsim's: compute is forward + backward computation (up to
the moment the last gradient exists) + optimizer; exposed = step - compute.

By default DDP runs as users run it, with its built-in C++ allreduce, and
comm_s is left empty (not measured). --time-comm registers a Python
communication hook that times each bucket's allreduce and writes comm_s as
the sum; that hook changes what it measures (it holds the GIL on the
autograd thread to launch each bucket and on Gloo's thread to finish it, and
divides the bucket in a pass of its own where the built-in path divides
while copying gradients in), so step times for validation come from runs
without it.
"""
import argparse
import os
import re
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def layers_of(model_file):
    """(in, out, relu) of each linear layer of a ddpsim model file."""
    text = open(model_file).read()
    out = []
    for m in re.finditer(r'\{[^{}]*type\s*=\s*"linear"[^{}]*\}', text):
        g = m.group(0)
        i = int(re.search(r'\bin\s*=\s*(\d+)', g).group(1))
        o = int(re.search(r'\bout\s*=\s*(\d+)', g).group(1))
        act = re.search(r'activation\s*=\s*"(\w+)"', g)
        out.append((i, o, bool(act and act.group(1) == "relu")))
    if not out:
        raise SystemExit(f"{model_file}: no linear layers found")
    return out


def mlp_of(model_file):
    """The model as nn.Linear layers, with ReLU where the model file says so."""
    mods = []
    for i, o, relu in layers_of(model_file):
        mods.append(nn.Linear(i, o))
        if relu:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--time-comm", action="store_true",
                    help="time each bucket's allreduce through a Python comm hook (slows the step)")
    ap.add_argument("--out", required=True, help="CSV file of this rank")
    a = ap.parse_args()

    torch.set_num_threads(1)  # one thread per rank, as ddpsim train runs
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    rdzv = os.environ["DDPSIM_RDZV"]
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "eth0" if os.path.exists("/sys/class/net/eth0") else "lo")
    dist.init_process_group("gloo", init_method=f"file://{rdzv}/torch-store", rank=rank, world_size=world)

    net = mlp_of(a.model)
    # Passing bucket_cap_mb makes it the first bucket's cap too: PyTorch's
    # 1 MiB first bucket is only for the default (torch 2.15,
    # torch/nn/parallel/distributed.py); predictions set first_bucket_mb.
    model = DDP(net, bucket_cap_mb=a.bucket_cap_mb)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)

    spans = []

    def timed_allreduce(state, bucket):
        t0 = time.perf_counter()
        fut = dist.all_reduce(bucket.buffer().div_(world), async_op=True).get_future()

        def done(f):
            spans.append((t0, time.perf_counter()))
            return f.value()[0]

        return fut.then(done)

    if a.time_comm:
        model.register_comm_hook(None, timed_allreduce)
    last_grad = [0.0]
    first_linear = next(m for m in net if isinstance(m, nn.Linear))
    # The first layer's weight gradient is the last one backward produces.
    first_linear.weight.register_hook(lambda g: last_grad.__setitem__(0, time.perf_counter()) or g)

    lin = [m for m in net if isinstance(m, nn.Linear)]
    x = torch.randn(a.batch, lin[0].in_features, generator=torch.Generator().manual_seed(rank))
    y = torch.randn(a.batch, lin[-1].out_features, generator=torch.Generator().manual_seed(100 + rank))
    loss_fn = nn.MSELoss()
    with open(a.out, "w") as f:
        f.write("rank,attempt,step,step_s,compute_s,comm_s,exposed_comm_s,loss\n")
        for step in range(a.steps):
            spans.clear()
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=False)
            out = model(x)
            loss = loss_fn(out, y)
            t_fwd = time.perf_counter()
            loss.backward()
            t_bwd = time.perf_counter()
            opt.step()
            t_end = time.perf_counter()
            compute = (t_fwd - t0) + (last_grad[0] - t_fwd) + (t_end - t_bwd)
            comm = f"{sum(e - s for s, e in spans):.9f}" if a.time_comm else ""
            step_s = t_end - t0
            f.write(f"{rank},0,{step},{step_s:.9f},{compute:.9f},{comm},{step_s - compute:.9f},{loss.item():.9g}\n")
            f.flush()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

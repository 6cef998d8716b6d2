"""Profile training steps of the MLP of a ddpsim model file with
torch.profiler and export the Chrome trace that `ddpsim import torch-trace`
reads. The model is built as bench/pytorch/ddp_mlp.py builds it (nn.Linear
layers, ReLU where the model file says so, MSE loss, SGD with momentum),
here on the CPU with one thread. A few warm-up steps run first; the profiled
steps carry ProfilerStep#N spans (torch.profiler.schedule), with
record_shapes=True so the importer can check the layers' sizes.

  bench/.venv/bin/python bench/pytorch/trace_mlp.py \
      --model scenarios/models/mlp-small.cfg --batch 32 --out trace.json

Profiled steps come in cycles of at most --cycle active steps
(torch.profiler.schedule with repeat), one trace file per cycle when there
is more than one: OUT with "-1.json", "-2.json", ... for ".json", all
read together by `ddpsim import torch-trace OUT-*.json`. Long sessions
distort what they measure: with 30 active steps in one session the
reference MLP's steps took 58-86 ms for the first five and 143-184 ms from
the sixth on, where cycles of five stayed at 61-123 ms (torch 2.15, CPU,
measured on the project's test machine).

--ddp wraps the model in DistributedDataParallel over a one-rank Gloo group
(a file store in a temporary directory), so the trace shows DDP's reducer
as a real DDP job has it. A trace that is too large for test data can be
trimmed to the events the importer reads (complete events of the ops, the
backward and the step spans) with:

  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); \
d['traceEvents']=[e for e in d['traceEvents'] if e.get('ph')=='X' and \
e.get('cat') in ('cpu_op','user_annotation')]; json.dump(d,open(sys.argv[2],'w'))" IN OUT
"""
import argparse
import os
import sys
import tempfile

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_mlp import mlp_of  # noqa: E402  (the same model as the DDP benchmark)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="ddpsim model file (linear layers)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=3, help="unprofiled steps first")
    ap.add_argument("--steps", type=int, default=1, help="profiled steps (rounded up to whole cycles)")
    ap.add_argument("--cycle", type=int, default=5, help="active steps per profiling cycle")
    ap.add_argument("--ddp", action="store_true", help="wrap in DDP over a one-rank Gloo group")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="Chrome trace JSON to write")
    a = ap.parse_args()

    torch.set_num_threads(1)  # one thread, as `ddpsim train` runs a rank
    torch.manual_seed(a.seed)
    net = mlp_of(a.model)
    model = net
    store_dir = None
    if a.ddp:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        store_dir = tempfile.mkdtemp(prefix="trace-mlp-")
        dist.init_process_group("gloo", init_method=f"file://{store_dir}/store", rank=0, world_size=1)
        model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    lin = [m for m in net if isinstance(m, nn.Linear)]
    x = torch.randn(a.batch, lin[0].in_features)
    y = torch.randn(a.batch, lin[-1].out_features)
    loss_fn = nn.MSELoss()

    def step():
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    # schedule: one more warm-up step inside the profiler in each cycle (it
    # starts the profiler's own machinery), then the active steps, each a
    # ProfilerStep#N.
    active = max(1, min(a.cycle, a.steps))
    cycles = -(-a.steps // active)
    stem = a.out[:-5] if a.out.endswith(".json") else a.out
    written = []

    def export(p):
        path = a.out if cycles == 1 else f"{stem}-{len(written) + 1}.json"
        p.export_chrome_trace(path)
        written.append(path)

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=active, repeat=cycles),
                 on_trace_ready=export) as prof:
        for _ in range(cycles * (1 + active)):
            step()
            prof.step()
    if a.ddp:
        import torch.distributed as dist

        dist.destroy_process_group()
        for f in os.listdir(store_dir):
            os.unlink(os.path.join(store_dir, f))
        os.rmdir(store_dir)
    print("wrote " + " ".join(written), file=sys.stderr)


if __name__ == "__main__":
    main()

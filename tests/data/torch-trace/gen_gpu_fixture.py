#!/usr/bin/env python3
"""Write gpu-ddp.json: a small Kineto trace of a DDP job on GPUs, in the layout
torch.profiler writes (ProfilerStep#N spans, cpu_op / cuda_runtime events on the
host threads, kernel / gpu_memcpy events on the streams, tied by correlation id;
the autograd engine's evaluate_function spans on a thread of their own; DDP's
reducer ops), with timings chosen so that the tests know every figure the
importer must find. Standard library only; deterministic.

The job: rank 0 of 2 (NCCL), one host with 8 GPUs, a model of three layers run
in this order -- conv (weight 4,608 elements, no bias), batch_norm (weight and
bias of 64), linear (weight 640,000 and bias 1,000) -- at batch 32, DDP with
its default buckets: bucket 0 the linear layer's bias and weight (the first
1 MiB), bucket 1 the rest. Four steps: the first a warm-up of twice the time.

Per step, in microseconds (host spans; kernels in brackets):
  zero_grad 20                                    [ -- ]
  DDP broadcast of the buffers 30                 [broadcast kernel 10, stream 20]
  conv 100 [150]   batch_norm 50 [40]   linear 80 [60] + loss 40 [10]
  backward, on the engine's thread, in this order:
    loss backward 30 [10]
    linear: AddmmBackward 60 [50], AccumulateGrad of the bias 20
            (DDP copy into the bucket 5 [2]), TBackward 10,
            AccumulateGrad of the weight 25 (copy 5 [20]; bucket 0 full:
            c10d::allreduce_ 15, allreduce kernel 400 on stream 20)
    batch_norm: CudnnBatchNormBackward 40 [70], AccumulateGrad weight 20
            (copy 5 [2]), AccumulateGrad bias 20 (copy 5 [2])
    conv: ConvolutionBackward 90 [200], AccumulateGrad weight 30
            (copy 5 [3]; bucket 1 full: allreduce_ 15, kernel 300)
    DDP finalize: copy_bucket_to_grad x5, 10 each [memcpy 5 each]
  optimizer 500 [100]
Kernels are named as NVIDIA's and PyTorch's libraries name them, so that
the importer classes them (calibrate/kclass.h) as it would a real trace's:
conv, linear and their backward GEMMs compute-bound (conv and linear also by
their recorded shapes against the A100's roofs), batch norm, the loss, the
optimizer and DDP's copies memory-bound, and the copies of 3 us or less
launch-bound (the shortest kernel is 2 us). All compute in fp32.
The step span ends 50 after the optimizer, on the host: the device's work
(about 0.7 ms a step, host-bound) carries on into the next step where it must.
Streams run their work in order; the allreduce kernels wait for the compute
stream's work launched before them, DDP's copies back for the allreduces.

gpu-side.json is the same job with two kernels on a third stream (22): in the
loss, one of 5 us launched 20 after its start that starts 3 later, except in
step 1, where it starts 2 after the loss's compute kernel ends (as if it
waited for it); in the optimizer, one of 20 us launched while the optimizer's
kernel runs that starts 4 before that kernel ends (held back by it).

gpu-ddp-1rank.json is gpu-ddp.json's job on one rank (world size 1): DDP copies
the gradients into its buckets and back, but allreduces nothing.

gpu-unattributed.json is gpu-ddp.json's job with a parameter of 50 elements
that no layer owns, as a DLRM's per-feature weights: an aten::gather of 10 us
before the convolution reads it (outside any layer), and in backward, after the
convolution's, its GatherBackward0 node 10 then its AccumulateGrad 30 (copy 5
[2]; bucket 1 full there: allreduce_ 15, kernel 300), then a sixth copy back.

gpu-3buckets.json is gpu-ddp.json's job with three buckets of distinct sizes,
not rising in bucket order, as DDP packs them with bucket_cap_mb = 0.002
(2,097 bytes, the first bucket's cap too): bucket 0 the linear layer's bias
alone (4,000 bytes; allreduce_ 15 and kernel 21 after the bias's copy),
bucket 1 its weight (2,560,000 bytes, kernel 660), bucket 2 batch norm's
weight and bias and conv's weight (18,944 bytes, kernel 24.736). The three
times lie on one line, 20 us plus the bytes at 4 GB/s, so an alpha-beta fit
of them is known exactly.

gpu-skew.json is gpu-3buckets.json's job with the ranks out of step: after the
warm-up, each bucket's allreduce kernel also spans a wait for the later rank of
0, 400 or 900 us, a different one each step (step 1: 0, 400, 900 for buckets
0, 1, 2; step 2: 900, 0, 400; step 3: 400, 900, 0), so that each bucket's
fastest step is its transfer alone (on the line above) and its median 400 us
more.

  python3 tests/data/torch-trace/gen_gpu_fixture.py          # writes all six beside it
  python3 tests/data/torch-trace/gen_gpu_fixture.py --check  # exit 1 if any differs
"""

import json
import os
import sys

MAIN, BWD = 1000, 1001          # host threads: the step's, the autograd engine's
COMPUTE, NCCL, SIDE = 7, 20, 22  # streams
T0 = 1_700_000_000_000.0        # µs


class Trace:
    def __init__(self):
        self.ev = []
        self.corr = 100
        self.ext = 1

    def op(self, name, tid, ts, dur, cat="cpu_op", **args):
        a = {"External id": self.ext}
        self.ext += 1
        a.update(args)
        self.ev.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid,
                        "ts": round(ts, 3), "dur": dur, "args": a})

    def launch(self, tid, ts, kind, name, stream, start, dur, nbytes=None):
        """A runtime call at ts (2 µs) launching a GPU activity at start."""
        self.corr += 1
        call = "cudaMemcpyAsync" if kind == "gpu_memcpy" else "cudaLaunchKernel"
        self.ev.append({"ph": "X", "cat": "cuda_runtime", "name": call, "pid": 1, "tid": tid,
                        "ts": round(ts, 3), "dur": 2, "args": {"correlation": self.corr}})
        args = {"device": 0, "stream": stream, "correlation": self.corr}
        if nbytes is not None:
            args["bytes"] = nbytes
        self.ev.append({"ph": "X", "cat": kind, "name": name, "pid": 0, "tid": stream,
                        "ts": round(start, 3), "dur": dur, "args": args})


SKEW = {1: (0, 400, 900), 2: (900, 0, 400), 3: (400, 900, 0)}  # µs, per step, per bucket (gpu-skew.json)


def step(tr, n, t0, scale, ends, side=False, world=2, extra=False, three=False, skew=False):
    """One step from t0; scale stretches every time (the warm-up). Returns its
    end on the host; ends holds each stream's end across steps. side: also the
    side-stream kernels of gpu-side.json (see side_kernel). world 1: DDP on one
    rank, which allreduces nothing (gpu-ddp-1rank.json). extra: a parameter no
    layer owns (gpu-unattributed.json). three: three buckets of distinct
    sizes (gpu-3buckets.json). skew: their kernels also wait SKEW[n]
    (gpu-skew.json)."""
    s = lambda x: x * scale
    t, seq = t0, 1000 * n
    def k(tid, at, dur, name="void kernel<float>", stream=COMPUTE, kind="kernel", nbytes=None, after_comm=False):
        # a stream runs its work in order; NCCL's waits for the compute stream's
        # work launched before it, DDP's copies back for the allreduces
        start = max(at + 3, ends[stream])
        if stream == NCCL:
            start = max(start, ends[COMPUTE])
        if after_comm:
            start = max(start, ends[NCCL])
        tr.launch(tid, at, kind, name, stream, start, s(dur), nbytes)
        ends[stream] = start + s(dur)
        return start + s(dur)

    tr.op("Optimizer.zero_grad#SGD.zero_grad", MAIN, t, s(20), cat="user_annotation")
    t += s(20)
    tr.op("DistributedDataParallel.forward", MAIN, t, s(30 + 100 + 50 + 80 + (10 if extra else 0)),
          cat="user_annotation")
    tr.op("c10d::broadcast_", MAIN, t, s(30))
    k(MAIN, t + 1, 10, "ncclKernel_Broadcast_RING_LL_Sum_int8_t", NCCL)
    t += s(30)
    if extra:
        tr.op("aten::gather", MAIN, t, s(10), **{"Sequence number": seq, "Input Dims": [[50], [], [500], []]})
        t += s(10)
    dims = {"aten::conv2d": [[32, 8, 16, 16], [64, 8, 3, 3], []],
            "aten::batch_norm": [[32, 64, 16, 16], [64], [64], [64], [64], [], [], [], []],
            "aten::linear": [[32, 640], [1000, 640], [1000]]}
    kernels = {"aten::conv2d": "cudnn_infer_ampere_scudnn_128x64_relu_small_nn_v1",
               "aten::batch_norm": "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1, true>",
               "aten::linear": "ampere_sgemm_128x64_tn"}
    for name, host, dev, sq in (("aten::conv2d", 100, 150, 1), ("aten::batch_norm", 50, 40, 2),
                                ("aten::linear", 80, 60, 3)):
        tr.op(name, MAIN, t, s(host), **{"Sequence number": seq + sq, "Input Dims": dims[name]})
        k(MAIN, t + 1, dev, kernels[name])
        t += s(host)
    tr.op("aten::cross_entropy_loss", MAIN, t, s(40), **{"Sequence number": seq + 4})
    loss_end = k(MAIN, t + 1, 10, "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float>")
    if side:  # no wait: at once, but in step 1 just after the loss kernel ends
        side_kernel(tr, t + 20, loss_end + 2 if n == 1 else t + 23, 5, ends)
    t += s(40)
    b = t  # backward, on the engine's thread

    bwd_kernels = {"NllLossBackward0": "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float>",
                   "AddmmBackward0": "ampere_sgemm_64x64_nt",
                   "CudnnBatchNormBackward0": "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>",
                   "ConvolutionBackward0": "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>"}

    def node(name, host, dev, sq):
        nonlocal b
        tr.op("autograd::engine::evaluate_function: " + name, BWD, b, s(host), **{"Sequence number": sq})
        if dev:
            k(BWD, b + 1, dev, bwd_kernels[name])
        b += s(host)

    buckets = [0]

    def accum(host, copy_dev, nbytes_launch=None, comm=None):
        nonlocal b
        tr.op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", BWD, b, s(host))
        tr.op("torch::autograd::AccumulateGrad", BWD, b + 1, s(4))
        tr.op("torch::distributed::reducer::mul_out", BWD, b + s(5), s(5))
        k(BWD, b + s(5) + 1, copy_dev, "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>")
        if comm:
            nbytes, dur = comm
            tr.op("c10d::allreduce_", BWD, b + s(10), s(15))
            tr.op("record_param_comms", BWD, b + s(10) + 1, s(10),
                  **{"Collective name": "allreduce", "dtype": "Float", "In msg nelems": nbytes // 4,
                     "Out msg nelems": nbytes // 4})
            wait = SKEW.get(n, (0, 0, 0))[buckets[0]] / scale if skew else 0
            buckets[0] += 1
            k(BWD, b + s(10) + 2, dur + wait, "ncclKernel_AllReduce_RING_LL_Sum_float", NCCL)
        b += s(host)

    node("NllLossBackward0", 30, 10, seq + 4)
    node("AddmmBackward0", 60, 50, seq + 3)
    accum(20, 2, comm=(4 * 1000, 21) if three else None)
    node("TBackward0", 10, 0, seq + 3)
    linear_bucket = (4 * 640000, 660) if three else (4 * (1000 + 640000), 400)
    accum(25, 20, comm=linear_bucket if world > 1 else None)
    node("CudnnBatchNormBackward0", 40, 70, seq + 2)
    accum(20, 2)
    accum(20, 2)
    node("ConvolutionBackward0", 90, 200, seq + 1)
    bucket1 = (4 * (64 + 64 + 4608 + (50 if extra else 0)), 24.736 if three else 300) if world > 1 else None
    accum(30, 3, comm=None if extra else bucket1)
    if extra:
        node("GatherBackward0", 10, 0, seq)
        accum(30, 2, comm=bucket1)
    for nbytes in (4 * 1000, 4 * 640000, 4 * 64, 4 * 64, 4 * 4608) + ((4 * 50,) if extra else ()):  # arrival order
        tr.op("torch.distributed.ddp.reducer::copy_bucket_to_grad", BWD, b, s(10))
        k(BWD, b + 1, 5, "Memcpy DtoD (Device -> Device)", kind="gpu_memcpy", nbytes=nbytes, after_comm=True)
        b += s(10)
    t = b
    tr.op("Optimizer.step#SGD.step", MAIN, t, s(500), cat="user_annotation")
    tr.op("aten::_foreach_add_", MAIN, t + 1, s(490))
    opt_end = k(MAIN, t + 2, 100,
                "void at::native::multi_tensor_apply_kernel<TensorListMetadata<2>, BinaryOpListAlphaFunctor<float>>")
    if side:  # launched while the optimizer's kernel runs, started in its last 4 us
        at = max(t + 10, opt_end - s(100) + 10)
        assert at + 2 + 5 < opt_end - 4
        side_kernel(tr, at, opt_end - 4, 20, ends)
    t += s(500) + s(50)
    tr.op("ProfilerStep#%d" % n, MAIN, t0, t - t0, cat="user_annotation")
    return t


def side_kernel(tr, at, start, dur, ends):
    """A kernel launched at `at` on the side stream, starting at `start`."""
    tr.launch(MAIN, at, "kernel", "void fbgemm_gpu::permute_2D_lengths_kernel<int>", SIDE, start, dur)
    ends[SIDE] = start + dur


def build(side=False, world=2, extra=False, three=False, skew=False):
    tr = Trace()
    t, ends = T0, {COMPUTE: T0, NCCL: T0, SIDE: T0}
    for n in range(4):
        t = step(tr, n, t, 2.0 if n == 0 else 1.0, ends, side, world, extra, three, skew)
    return {"schemaVersion": 1,
            "deviceProperties": [{"id": i, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85_000_000_000,
                                  "computeMajor": 8, "computeMinor": 0, "numSms": 108} for i in range(8)],
            "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": world, "nccl_version": "2.17.1"},
            "traceEvents": tr.ev}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    same = True
    for name, side, world, extra, three, skew in (("gpu-ddp.json", False, 2, False, False, False),
                                                   ("gpu-side.json", True, 2, False, False, False),
                                                   ("gpu-ddp-1rank.json", False, 1, False, False, False),
                                                   ("gpu-unattributed.json", False, 2, True, False, False),
                                                   ("gpu-3buckets.json", False, 2, False, True, False),
                                                   ("gpu-skew.json", False, 2, False, True, True)):
        out = os.path.join(here, name)
        text = json.dumps(build(side, world, extra, three, skew), indent=None, separators=(",", ":")) + "\n"
        if "--check" in sys.argv:
            with open(out) as f:
                same = same and f.read() == text
            continue
        with open(out, "w") as f:
            f.write(text)
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()

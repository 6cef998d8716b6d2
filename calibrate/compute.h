/*
 * compute — what one CPU rank computes, measured: achieved FLOP/s of fp32
 * GEMMs (CBLAS, OpenBLAS) over a range of sizes; the bandwidth of the two
 * memory-bound kernels DDP runs (the scaled copy of gradients into buckets,
 * and a += b, the host reduction Gloo performs); per-layer forward and
 * backward times of a model as the runtime executes it; and how much slower
 * GEMMs run while collectives are in flight on a communication thread.
 */
#ifndef CALIBRATE_COMPUTE_H
#define CALIBRATE_COMPUTE_H

#include "runtime/comm.h"

#include "core/model.h"

#include <stddef.h>

/* Square n x n x n sgemms for each n: FLOPs per call and achieved TFLOP/s
 * (median of iterations after one warm-up, at least `budget_s` per size). */
int cal_gemm_sweep(const int *sizes, int n, double budget_s, double *flops, double *tflops);

/* Bytes moved per second by dst = s * src (read + write; the DDP engine's
 * own rt_scale_copy), and bytes of result per second by a += b, over
 * buffers of `bytes`. */
int cal_memory_bandwidth(size_t bytes, double *copy_GBps, double *reduce_GBps);

/* Bytes moved per second by the DDP engine's optimizer step over `bytes` of
 * parameters: the averaged gradients copied out of their bucket (memcpy, 8
 * bytes a parameter), then rt_sgd_update with momentum (20 bytes). */
int cal_update_bandwidth(size_t bytes, double *GBps);
/* The gradient of the first training step of m (an MLP the runtime trains)
 * at batch on rank `rank` of `world`, from ddpsim train's data and seed:
 * *grad (malloc'd) of *n values. */
int cal_model_gradient(const core_model *m, int batch, int rank, int world, float **grad, int64_t *n);
/* The backend's host sums (runtime/gloo_shim.h rt_gloo_sum) for fp32, fp16
 * and bf16 over `bytes` of each, on vals x scale plus peer x scale (both
 * cycled, n_vals each; zeros when n_vals is 0): bytes of output per second,
 * sustained. */
int cal_sum_rates(const float *vals, const float *peer, int64_t n_vals, double scale, size_t bytes, double GBps[3]);

/* Mean per-layer forward and backward seconds of model m at a batch size,
 * as runtime/mlp executes them in a training step (backward without the
 * bucket copy, which the simulator adds from the copy bandwidth), over at
 * least `iters` whole passes lasting at least min_s. */
int cal_layer_times(const core_model *m, int batch, int iters, double min_s, double *fwd_s, double *bwd_s);

/* One training step's compute of model m (forward, loss, backward) `n`
 * times: step seconds into samples (step-time jitter without the network). */
int cal_step_samples(const core_model *m, int batch, int n, double *samples);

/* GEMMs and allreduces of `bytes` over comm, each alone and then at once
 * (GEMMs here, allreduces on another thread; every rank calls it together):
 * how much slower each runs beside the other, factors >= 1; the median time
 * of an allreduce alone (the rate the factors belong to), and the CPUs this
 * process kept busy meanwhile (CPU seconds of all its threads, user and
 * system, per second). */
int cal_interference(rt_comm *comm, double bytes, int allreduces, double *compute_slowdown, double *comm_slowdown,
    double *alone_s, double *comm_cpus);

/* The CPUs one rank may use: its CPU affinity shared among the `sharing`
 * ranks on its machine, or less where its cgroup (v2 cpu.max, v1
 * cpu.cfs_quota_us, this one's or an ancestor's) caps it. */
double cal_rank_cpus(int sharing);

/* GEMMs on this thread for secs seconds alone, then as long again with a
 * second thread of this process running GEMMs too: how much slower the
 * first runs (>= 1). On CPUs a hook's callbacks on the communication thread
 * are such a second thread beside backward; with a core per rank they share
 * it. Every rank calls it together, so ranks sharing cores count too. */
int cal_cpu_interference(double secs, double *cpu_slowdown);

#endif

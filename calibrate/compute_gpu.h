/*
 * compute_gpu — what one GPU rank computes, measured through runtime/gpu.h
 * (cuBLAS and the CUDA runtime stay behind it): achieved FLOP/s of square
 * GEMMs per precision (fp32, TF32 tensor cores, fp16 and bf16 with fp32
 * accumulation, as PyTorch runs them); device memory bandwidth and
 * host-device copy bandwidth; step-time jitter samples drawn from repeated
 * bursts of one fixed GEMM; and how much slower GEMMs run while NCCL
 * allreduces are in flight on another host thread, over a communicator of
 * their own, and how much slower those allreduces run beside the GEMMs
 * (NCCL kernels and GEMMs share SMs and memory bandwidth).
 *
 * The GPU counterpart of calibrate/compute.h, used by `ddpsim calibrate
 * --backend nccl`. Per-layer times of models are not measured here: the
 * runtime executes models on CPUs only. Every function returns 0 or a
 * negative core_err code; without a device, or in a build without CUDA,
 * CORE_EUNSUPPORTED with runtime/gpu.h's message.
 */
#ifndef CALIBRATE_COMPUTE_GPU_H
#define CALIBRATE_COMPUTE_GPU_H

#include "runtime/comm.h"
#include "runtime/gpu.h"

#include <stddef.h>

/* The burst behind each jitter sample, and the GEMM of the interference
 * test: fp32 (every CUDA device has it, cuBLAS picks no tensor-core path
 * that could differ between ranks), n = 2048 (17.2 GFLOP, a fraction of a
 * millisecond to a few milliseconds per GEMM on data-center GPUs, so a burst
 * of 50 lasts about as long as a small model's step), 50 back-to-back GEMMs
 * per sample, timed with CUDA events by rt_gpu_gemm_rate. */
enum { CAL_GPU_PROBE_N = 2048, CAL_GPU_BURST = 50 };

/* Square n x n x n GEMMs at precision math for each n of sizes (ascending):
 * FLOPs of one GEMM and achieved TFLOP/s, the median over reps calls of
 * rt_gpu_gemm_rate, each timing back-to-back GEMMs (about target_flops of
 * work, 10 to 2000 GEMMs) after 2 warm-up ones. *measured gets the number of
 * sizes done: a size the device memory cannot hold (CORE_ENOMEM) ends the
 * sweep there unless it is the first. A precision the device lacks (TF32 and
 * bf16 before compute capability 8.0) is CORE_EUNSUPPORTED. */
int cal_gpu_gemm_sweep(int device, enum core_prec math, const int *sizes, int n, int reps, double target_flops,
    double *flops, double *tflops, int *measured);

/* Device memory bandwidth in bytes of traffic per second (device-to-device
 * copies, read + write, as CUDA's bandwidthTest counts), and host-to-device
 * and device-to-host bytes per second from pinned memory, over buffers of
 * `bytes`, iters copies each after 2 warm-up ones. */
int cal_gpu_bandwidths(int device, size_t bytes, int iters, double *memory_Bps, double *h2d_Bps, double *d2h_Bps);

/* n step-time jitter samples in seconds: each the GPU time of one burst of
 * CAL_GPU_BURST fp32 GEMMs of CAL_GPU_PROBE_N (after one warm-up GEMM; one
 * whole burst is run and discarded first). Every rank calls it at once, as
 * ranks compute at once in training. */
int cal_gpu_step_samples(int device, int n, double *samples);

/* The GEMM rate of device alone, then while comm (an NCCL communicator used
 * by nothing else meanwhile) runs allreduces of `bytes` back to back on
 * another thread: compute_slowdown = alone / with, at least 1; and the
 * allreduces' median time beside the GEMMs over their median alone:
 * comm_slowdown, at least 1 (a lower bound: "beside" includes the moments
 * each GEMM measurement spends allocating and filling its matrices).
 * Collective: every rank of comm calls it together. The number of
 * allreduces is agreed from the slowest rank's probe times so that the
 * background lasts at least min_s and 3 GEMM measurements; only GEMM
 * measurements that ended while it still ran count (the first one if none
 * did). */
int cal_gpu_interference(
    rt_comm *comm, int device, double bytes, double min_s, double *compute_slowdown, double *comm_slowdown);

#endif

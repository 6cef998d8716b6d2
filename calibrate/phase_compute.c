/*
 * phase_compute — a calibration's compute rates, rank 0 alone: fp32 GEMMs
 * on CPUs; on GPUs cuBLAS GEMMs per precision, device memory, the host link
 * and the host's reduction (docs/calibration.md, "Compute").
 */
#include "calibrate/calibrate_int.h"

#include "calibrate/compute.h"
#include "calibrate/compute_gpu.h"

#include "runtime/gpu.h"

#include "core/err.h"

#include <stdlib.h>

static int compute_part(cal_ctx *r) {
  const cal_opts *o = r->o;
  static const int full[] = {64, 128, 256, 512, 1024, 2048}, quick[] = {128, 512, 1024};
  const int *sizes = o->quick ? quick : full;
  int ns = o->quick ? 3 : 6, rc;
  core_prof_rate *rt = &r->prof->rate[CORE_PREC_FP32];
  rt->gemm_flops = malloc(sizeof(double) * (size_t)ns);
  rt->tflops = malloc(sizeof(double) * (size_t)ns);
  if (!rt->gemm_flops || !rt->tflops)
    return core_err_set(CORE_ENOMEM, "out of memory");
  cal_say(r, "compute: fp32 GEMMs of %d to %d", sizes[0], sizes[ns - 1]);
  if ((rc = cal_gemm_sweep(sizes, ns, o->quick ? 0.05 : 0.2, rt->gemm_flops, rt->tflops)) != 0)
    return rc;
  rt->n = ns;
  rt->present = 1;
  for (int i = 0; i < ns; i++)
    cal_say(r, "  %5d^3: %7.2f GFLOP/s", sizes[i], rt->tflops[i] * 1e3);
  return 0;
}

/* The GPU's compute (NCCL path, rank 0 alone, as compute_part): cuBLAS GEMM
 * rates per precision over square sizes, device memory and host-link
 * bandwidth, and the host reduction rate (what Gloo would add on this
 * host), at every precision of core/vocab.h. */
static int gpu_compute_part(cal_ctx *r) {
  const cal_opts *o = r->o;
  static const int full[] = {512, 1024, 2048, 4096, 8192}, quick[] = {1024, 4096, 8192};
  const int *sizes = o->quick ? quick : full;
  int ns = o->quick ? 3 : 5, rc;
  /* About 2 TFLOP of GEMMs per measurement (0.5 with --quick): tens of
   * milliseconds on data-center GPUs, long against CUDA events' resolution. */
  double target = o->quick ? 0.5e12 : 2e12;
  cal_say(r, "compute: cuBLAS GEMMs of %d to %d on device %d (%s)", sizes[0], sizes[ns - 1], r->device,
      r->prof->device_name);
  for (int k = 0; k < CORE_N_PREC; k++) {
    enum core_prec prec = (enum core_prec)k;
    core_prof_rate *rt = &r->prof->rate[prec];
    rt->gemm_flops = malloc(sizeof(double) * (size_t)ns);
    rt->tflops = malloc(sizeof(double) * (size_t)ns);
    if (!rt->gemm_flops || !rt->tflops)
      return core_err_set(CORE_ENOMEM, "out of memory");
    int m = 0;
    rc = cal_gpu_gemm_sweep(r->device, prec, sizes, ns, o->quick ? 1 : 3, target, rt->gemm_flops, rt->tflops, &m);
    if (rc == CORE_EUNSUPPORTED) {
      cal_say(r, "  %s: skipped (%s)", core_prec_name(prec), core_err_msg());
      continue;
    }
    if (rc)
      return rc;
    rt->n = m;
    rt->present = m > 0;
    for (int i = 0; i < m; i++)
      cal_say(r, "  %-4s %5d^3: %9.2f TFLOP/s", core_prec_name(prec), sizes[i], rt->tflops[i]);
  }
  double mem, h2d, d2h;
  size_t bytes = o->quick ? (64u << 20) : (256u << 20);
  if ((rc = cal_gpu_bandwidths(r->device, bytes, o->quick ? 10 : 20, &mem, &h2d, &d2h)) != 0)
    return rc;
  r->prof->memory_GBps = mem / 1e9;
  /* A staged transfer goes down and back up: the rate that moves the same
   * bytes both ways in the same time is the harmonic mean of the two. */
  r->prof->host_link_GBps = 2.0 / (1.0 / h2d + 1.0 / d2h) / 1e9;
  cal_say(r, "  device memory %.1f GB/s moved; host link %.2f GB/s to the device, %.2f GB/s back", r->prof->memory_GBps,
      h2d / 1e9, d2h / 1e9);
  double copy, reduce;
  if ((rc = cal_memory_bandwidth(o->quick ? (16u << 20) : (64u << 20), &copy, &reduce)) != 0)
    return rc;
  r->prof->reduce_GBps = reduce;
  cal_say(r, "  host reduction %.2f GB/s", reduce);
  if (o->n_models)
    cal_say(r,
        "  per-layer times: skipped on GPUs (the runtime executes models on CPUs; the simulator uses the GEMM rates)");
  return 0;
}

int cal_phase_compute(cal_ctx *r) { return r->nccl ? gpu_compute_part(r) : compute_part(r); }

/*
 * profile — what calibration measured about a cluster, in the form the
 * simulator reads: compute rate per precision and GEMM size, α–β fits per
 * collective, algorithm and scope (intra-node, inter-node) with the raw
 * points behind them, step-time jitter, storage bandwidth, restart costs and
 * compute/communication interference; with metadata saying where it came from.
 *
 * Format (libconfig; documented field by field in scenarios/profiles/README.md):
 *
 *   profile = {
 *     format = 1; name = "dgx-h100"; provenance = "datasheet-derived, not measured";
 *     meta = { source = "datasheet"; host = "..."; date = "2026-12-02"; backend = "nccl"; versions = "...";
 *              nodes = 2; ranks_per_node = 8; link_gbps = 200.0; nics_per_node = 8; };
 *     device = { kind = "gpu"; name = "H100 SXM5"; memory_GBps = 3350.0; host_link_GBps = 50.0;
 *                peak_memory_GBps = 3350.0; nvlink_GBps = 450.0; sms = 132;
 *                memory_GB = 80.0; };
 *     host = { reduce_GBps = 10.0; launch_us = 70.0; };
 *     compute = ( { precision = "bf16"; gemm_flops = [1e9, 1e12]; tflops = [400.0, 700.0];
 *                   peak_tflops = 989.4; } );
 *     collectives = ( { backend = "nccl"; op = "allreduce"; algorithm = "ring"; scope = "intra";
 *                       ranks = 8; nodes = 1;
 *                       fits = ( { min_bytes = 0.0; max_bytes = 1e12; alpha_us = 56.0;
 *                                  algbw_GBps = 200.0; r2 = 1.0; } );
 *                       points = { bytes = [...]; time_us = [...]; }; } );
 *     jitter = { distribution = "lognormal"; params = [0.0, 0.02]; samples = [...]; };
 *     storage = { write_GBps = 2.0; read_GBps = 4.0; };
 *     restart = { process_start_s = 5.0; rendezvous_s = 1.0; comm_init_s = 2.0; };
 *     interference = { compute_slowdown = 1.0; comm_slowdown = 1.0; cpu_slowdown = 1.0;
 *                      busbw_GBps = 0.12; comm_cpus = 0.1; rank_cpus = 0.5; };
 *     hooks = { cast_GBps = 8.0; cast_bf16_GBps = 12.0; orth_gflops = 2.0;
 *               sum_fp32_GBps = 4.0; sum_fp16_GBps = 0.5; sum_bf16_GBps = 2.0;
 *               psgd_gemm_GBps = 5.0; psgd_pass_GBps = 5.0;
 *               psgd_sync_us = 2000.0; };
 *     price = { node_hour_usd = 55.04; };    # or gpu_hour_usd; optional
 *   };
 *
 * A fit says T(S) = alpha + S / algbw for message sizes S in [min_bytes,
 * max_bytes), with S counted as nccl-tests counts it. The struct keeps the
 * file's own units so that writing a loaded profile reproduces it exactly.
 */
#ifndef CORE_PROFILE_H
#define CORE_PROFILE_H

#include <libconfig.h>

#include "core/vocab.h"

enum core_jitter_dist {
  CORE_JITTER_NONE = 0,
  CORE_JITTER_NORMAL,     /* params = [mean, sd] of the relative step time */
  CORE_JITTER_LOGNORMAL,  /* params = [zeta, sigma] of its logarithm */
  CORE_JITTER_SHIFTED_EXP /* params = [shift, mean_excess] */
};
const char *core_jitter_name(enum core_jitter_dist d);

typedef struct core_prof_rate {
  int present;
  int n;
  double *gemm_flops; /* FLOPs of one GEMM call, ascending */
  double *tflops;     /* achieved 1e12 FLOP/s */
  double peak_tflops; /* the datasheet's dense peak at this precision; 0 = not given */
} core_prof_rate;

typedef struct core_prof_fit {
  double min_bytes, max_bytes;
  double alpha_us, algbw_GBps;
  double r2;
  int has_ci;
  double alpha_us_lo, alpha_us_hi, algbw_GBps_lo, algbw_GBps_hi; /* 95% */
} core_prof_fit;

typedef struct core_prof_coll {
  char backend[8];    /* nccl | gloo */
  char op[16];        /* allreduce | allgather | reducescatter | broadcast */
  char algorithm[24]; /* ring, tree, ... as the backend names them */
  char scope[8];      /* intra | inter */
  int ranks, nodes;
  int n_fits;
  core_prof_fit *fits;
  int n_points;
  double *bytes, *time_us;
} core_prof_coll;

typedef struct core_profile {
  char path[4096];
  int format;
  char name[128];
  char provenance[256];
  /* Where the collectives' fits come from (meta.source): "datasheet" (NCCL's
   * Simple model on datasheet links), "calibrated" (measured by ddpsim
   * calibrate) or "imported" (nccl-tests output, a trace). Absent from a
   * file: "datasheet" when its provenance begins so (case aside), else
   * "calibrated". */
  char source[16];
  char host[128], date[64], backend[16], versions[256];
  int nodes, ranks_per_node;
  double link_gbps;    /* nominal line rate of the measured inter-node link; 0 = unknown */
  int nics_per_node;   /* the nodes' network adapters for the inter-node fabric; 0 = not given */
  char device_kind[8]; /* gpu | cpu */
  char device_name[128];
  double memory_GBps;      /* device memory bandwidth (optimizer, copies) */
  double peak_memory_GBps; /* the datasheet's memory bandwidth; 0 = not given */
  double nvlink_GBps;      /* GPU-to-GPU link bandwidth per direction per GPU (NVLink); 0 = none or not given */
  double memory_GB;        /* the device's memory capacity, 1e9 bytes (what the simulator checks a point against);
                            * 0 = unknown, not checked */
  int sms;                 /* the GPU's streaming multiprocessors (its datasheet); 0 = not given */
  int sweep_sms;           /* those of the GPU whose cuBLAS sweep compute[] holds (a datasheet profile's
                            * borrowed shares); 0 = sms, this GPU's own */
  double update_GBps;      /* the runtime's optimizer step on CPUs, bytes moved per second; 0 = memory_GBps */
  double host_link_GBps;   /* device<->host copies; Gloo stages GPU tensors through it */
  double reduce_GBps;      /* host reduction of two buffers, bytes of output per second */
  double launch_us;        /* host time eager PyTorch takes to issue one kernel of a training step; 0 = not given */
  core_prof_rate rate[CORE_N_PREC];
  int n_colls;
  core_prof_coll *colls;
  enum core_jitter_dist jitter;
  double jitter_params[2];
  int n_jitter_samples;
  double *jitter_samples;
  double write_GBps, read_GBps;
  double process_start_s, rendezvous_s, comm_init_s;
  double compute_slowdown;
  double comm_slowdown; /* collectives running while ranks compute take this factor longer */
  double cpu_slowdown;  /* two CPU-bound threads of one rank (a hook's callbacks beside backward) each
                           * take this factor longer than one alone */
  /* Where compute_slowdown and comm_slowdown were measured: the bus
   * bandwidth of the allreduces alone, the CPUs they kept busy, and the CPUs
   * a rank may use (its cgroup quota, or its share of the host's CPUs). All
   * three or none (0). Where recorded, the simulator scales the two factors
   * with each collective's CPU demand at its own rate (sim/step.h); where
   * not, they hold at every rate. */
  double interf_busbw_GBps, interf_comm_cpus, interf_rank_cpus;
  double
      cast_GBps; /* hooks: fp32 <-> fp16 casts (and bf16's without cast_bf16_GBps), bytes moved per second; 0 = unknown */
  double cast_bf16_GBps; /* hooks: fp32 <-> bf16 casts; 0 = as cast_GBps */
  double orth_gflops;    /* hooks: PowerSGD orthogonalization rate; 0 = unknown */
  /* hooks: the backend's host sum (Gloo's, for fp32, fp16, bf16), bytes of
   * output per second; 0 = unknown. */
  double sum_fp32_GBps, sum_fp16_GBps, sum_bf16_GBps;
  /* hooks: PowerSGD's rank-r GEMMs, bytes of their operands streamed per
   * second, and its error-feedback and gather passes, bytes moved per
   * second (as sim/predict.c counts them); 0 = unknown. */
  double psgd_gemm_GBps, psgd_pass_GBps;
  /* hooks: how much longer each of PowerSGD's small allreduces takes between
   * the hook's CPU work than the same allreduce back to back (the sweep's
   * regime), in microseconds: the threads that move its few kilobytes wake
   * up on a host whose CPUs were just busy, and wait for the peer that is
   * slower through the same work; 0 = unknown or none. */
  double psgd_sync_us;
  /* price: what this machine costs to run, per device-hour or per
   * node-hour (one of them; 0 = not priced), for the cost of a study
   * (sim/cost.h) when the scenario gives none. */
  double price_gpu_hour_usd, price_node_hour_usd;
} core_profile;

int core_profile_load(const char *path, core_profile **out);
int core_profile_from_setting(const config_setting_t *root, const char *path, core_profile **out);
core_profile *core_profile_new(void);
void core_profile_free(core_profile *p);

/* Write atomically (temp file, fsync, rename); numbers with 17 significant
 * digits so that load(write(p)) == p. */
int core_profile_write(const core_profile *p, const char *path);

/* Achieved FLOP/s for a GEMM of `flops` at precision p, interpolated linearly
 * in log(size) between measured points and clamped at the ends. Returns 0 when
 * the profile has no entry for p. */
double core_profile_flops(const core_profile *p, enum core_prec prec, double flops);

/* Whether the profile's collectives are NCCL's Simple model on datasheet
 * links (meta.source = "datasheet") rather than measurements. */
int core_profile_is_datasheet(const core_profile *p);

/* The datasheet peak at precision p in FLOP/s (compute[].peak_tflops); 0
 * when the profile does not give it. */
double core_profile_peak_flops(const core_profile *p, enum core_prec prec);

/* The collective entry for (backend, op, algorithm, scope), or NULL. */
const core_prof_coll *core_profile_coll(
    const core_profile *p, const char *backend, const char *op, const char *algorithm, const char *scope);
/* The allreduce measurement to derive a backend's per-link α and β from, for
 * scope "intra" or "inter": ring first, then the other algorithms. */
const core_prof_coll *core_profile_allreduce(const core_profile *p, const char *backend, const char *scope);
/* Devices (ranks) a node of this profile has: the larger of
 * meta.ranks_per_node and the ranks of its one-node collective entries. A
 * scenario may not put more on a node: the profile says nothing of such a
 * node (a GPU node has that many GPUs; a CPU rank's rates are its share of
 * the machine calibrated). */
int core_profile_node_devices(const core_profile *p);
/* The fit that covers `bytes` (the last one for sizes beyond the range). */
const core_prof_fit *core_prof_coll_fit(const core_prof_coll *c, double bytes);

#endif

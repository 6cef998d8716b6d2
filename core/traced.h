/*
 * traced — the step of a GPU job as a profiler trace measured it, beyond its
 * layers: the model file's optional `traced` group, written by `ddpsim import
 * torch-trace` and replayed by the simulator (sim/replay.h).
 *
 * A step is a sequence of *pieces* in the order the host ran them: the
 * forward of a layer, part of a layer's backward, the arrival of one
 * parameter's gradient (autograd's AccumulateGrad, with DDP's copy of it into
 * its bucket), DDP's finalize (the averaged gradients copied back), and any
 * other work of the step (zero_grad, data loading, the loss, the optimizer,
 * broadcasts), each with the host time it took to dispatch (time blocked in
 * the CUDA runtime left out) and the work it put on the compute stream.
 * Work it put on other streams (communication that is not DDP's bucket
 * allreduces, copies, side kernels) is kept as measured *side* work with the
 * point of the piece's host time at which it was launched; *syncs* are
 * points where the host waited for streams; *waits* mark pieces whose
 * compute-stream work waited for a side stream. DDP's bucket allreduces are
 * not pieces: the simulator places them from the bucket assignment, the
 * gradients' ready order and the network.
 *
 * File format (inside `model = { ... }`; times in µs, medians over the
 * trace's steady steps):
 *
 *   traced = {
 *     device = "NVIDIA A100-PG509-200"; device_memory_GB = 42.3; host_devices = 8;
 *     backend = "nccl"; world_size = 2; rank = 0; ddp = true;
 *     steps = 3; step_ms = 222.4; step_min_ms = 219.7; step_max_ms = 224.9;
 *     overlap_slowdown = 1.13;          # compute kernels beside DDP's allreduce kernels
 *     launch_host_us = 48.0;            # host work to launch one bucket's allreduce
 *     streams = 2;                      # side streams (numbered 1..streams; 0 is compute)
 *     precision = "tf32";               # what its compute-bound kernels computed in
 *     peak_tflops = 156.0; peak_memory_GBps = 1555.0;  # the traced GPU's roofs at it
 *     roofs_from = "NVIDIA A100 datasheet (...)";
 *     pieces = (
 *       { kind = "other"; label = "zero_grad"; host_us = 570.0; dev_us = 3.1; },
 *       { kind = "fwd"; layer = 0; host_us = 812.0; dev_us = 310.2;
 *         dev_compute_us = 290.0; dev_memory_us = 17.0; dev_launch_us = 3.2; },
 *       { kind = "bwd"; layer = 106; host_us = 640.0; dev_us = 95.0; },
 *       { kind = "grad"; tensor = 160; host_us = 165.0; dev_us = 4.0; copy_host_us = 60.0; copy_dev_us = 2.0; },
 *       { kind = "finalize"; host_us = 9000.0; dev_us = 410.0; },
 *       ...
 *     );
 *     side = ( { piece = 1; at = 0.5; stream = 1; us = 30.8; nccl = true; dep = -1; },
 *              { piece = 9; at = 0.2; stream = 3; us = 24.0; dep = -1; held = true; }, ... );
 *     syncs = ( { piece = 40; at = 0.3; streams = [0, 1]; }, ... );
 *     waits = ( { piece = 12; stream = 1; }, ... );
 *     buckets = ( { bytes = 8196000.0; us = 3307.0; min_us = 2520.6; }, ... );  # bytes when known
 *
 * A bucket's `us` is its allreduce kernel's median time over the steps and
 * `min_us` (default: us) its fastest step's: one rank's kernel runs from
 * its own launch until the last rank arrives, so the fastest step bounds
 * the transfer and the rest is taken as the ranks' skew (the replay keeps
 * it as a wait before the bucket; docs/gpu-traces.md).
 *   };
 *
 * `at` is the share of the piece's host time done before the launch or the
 * sync; `dep` the side stream (or 0, the compute stream) whose work the side
 * work waited for, -1 none; `held` (default false) that it was held back by
 * the compute stream's kernels occupying the GPU rather than by a wait: it
 * starts when the compute-stream work running when it could start is done. Every grad piece's copy_* time is part of its
 * host_us/dev_us (DDP's share of it).
 *
 * A piece's dev_compute_us, dev_memory_us and dev_launch_us (all three or
 * none; they add up to dev_us) split its compute-stream time by what bounds
 * each kernel (calibrate/kclass.h); with the traced GPU's roofs they let the
 * simulator retarget the step to another GPU (sim/replay.h). Files written
 * before they existed have none, and replay on their own GPU only.
 */
#ifndef CORE_TRACED_H
#define CORE_TRACED_H

#include "core/profile.h"

#include <libconfig.h>
#include <stdint.h>

enum core_piece_kind {
  CORE_PIECE_OTHER = 0,
  CORE_PIECE_FWD,
  CORE_PIECE_BWD,
  CORE_PIECE_GRAD,
  CORE_PIECE_FINALIZE,
  CORE_PIECE_N
};

typedef struct core_piece {
  enum core_piece_kind kind;
  int index;      /* FWD/BWD: layer; GRAD: tensor (parameter order); else -1 */
  char label[64]; /* OTHER: what it is; else "" */
  double host_s, dev_s;
  double copy_host_s, copy_dev_s; /* GRAD: DDP's copy into the bucket, inside host_s/dev_s */
  int classed;                    /* dev_class_s is known */
  double dev_class_s[3];          /* dev_s of compute-, memory- and launch-bound kernels (CORE_DEV_*) */
  int first_side, n_side;         /* into core_traced.side, in launch order */
  int first_sync, n_sync;         /* into core_traced.syncs */
  uint64_t waits;                 /* bit k: its compute work waited for side stream k (1..63) */
} core_piece;

enum { CORE_DEV_COMPUTE = 0, CORE_DEV_MEMORY, CORE_DEV_LAUNCH };

typedef struct core_side {
  double at;  /* share of the piece's host time before the launch */
  int stream; /* 1..streams */
  double dur_s;
  int dep;  /* stream it waited for: 0 compute, k side, -1 none */
  int held; /* held back by the compute stream's running work (the SMs it occupied) */
  int nccl; /* a communication kernel (measured, not rescaled) */
} core_side;

typedef struct core_sync {
  double at;
  uint64_t streams; /* bit 0: compute stream; bit k: side stream k */
} core_sync;

typedef struct core_traced {
  int line; /* where the model file's traced group starts; 0 unknown */
  char device[128];
  char backend[16];
  int world_size, rank;
  int host_devices;        /* GPUs the traced host listed (deviceProperties); 0 unknown */
  double device_memory_GB; /* the traced GPU's memory; 0 unknown */
  int ddp;                 /* DDP ran: its bucket allreduces are simulated; without it the job's
                                * communication is only its measured side work */
  int steps;
  double step_s, step_min_s, step_max_s;
  double overlap_slowdown;
  double launch_host_s;
  int streams;
  enum core_prec precision;           /* of the compute-bound kernels (fp32 when unknown) */
  double peak_flops, peak_memory_Bps; /* the traced GPU's roofs at that precision; 0 unknown */
  char roofs_from[256];
  int classed; /* every piece's device time is split by class */
  int n_pieces, n_side, n_syncs, n_buckets;
  core_piece *pieces;
  core_side *side;
  core_sync *syncs;
  double *bucket_bytes, *bucket_s; /* bytes 0 when the trace did not say; median time */
  double *bucket_min_s;            /* fastest step's time: the transfer's bound */
} core_traced;

/* Parse a model's `traced` group (g) for a model of n_layers layers and
 * n_tensors tensors; errors name file:line. *out is malloc'd. */
int core_traced_parse(const config_setting_t *g, int n_layers, int n_tensors, core_traced **out);
void core_traced_free(core_traced *t);
/* Add the `traced` group for t under parent (a model group). */
int core_traced_write(const core_traced *t, config_setting_t *parent);

#endif

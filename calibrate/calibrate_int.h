/*
 * calibrate_int — what the phases of a calibration share, inside calibrate/
 * only: the run's state (cal_ctx), its progress lines, the backend's
 * communicators, and the phases that cal_run (calibrate.c) calls in order,
 * each in a file of its own (phase_*.c). docs/calibration.md says what each
 * phase measures and why.
 *
 * Every rank calls every phase with the same arguments unless a phase says
 * otherwise; a phase that fills the profile fills it on rank 0 (r->prof is
 * NULL on the others). Functions return 0 or a negative core_err code.
 */
#ifndef CALIBRATE_CALIBRATE_INT_H
#define CALIBRATE_CALIBRATE_INT_H

#include "calibrate/calibrate.h"
#include "calibrate/sweep.h"

#include "runtime/comm.h"
#include "runtime/pg.h"

#include "core/clock.h"
#include "core/model.h"
#include "core/profile.h"

struct cal_windows;

/* One rank's calibration run. */
typedef struct cal_ctx {
  const cal_opts *o;
  rt_pg_info pg;
  int nodes; /* pg.world_size / pg.local_world_size */
  rt_comm *world;
  rt_comm *intra, *inter; /* the collectives' groups, kept open to the end of the run */
  int progress;
  core_profile *prof;                 /* rank 0 only */
  double t0;                          /* core_now() at the start, for progress lines */
  int nccl;                           /* --backend nccl: GPUs, NCCL communicators */
  int device;                         /* NCCL: this rank's CUDA device (LOCAL_RANK) */
  const cal_buf_ops *bufs;            /* where collective buffers live: host (Gloo), device (NCCL) */
  const char *spec;                   /* rendezvous store spec */
  const char *bind;                   /* Gloo's listen address (NULL for NCCL) */
  rt_store *store;                    /* the world's rendezvous store, kept open to the end of the run */
  struct cal_windows *win;            /* CPU memory rates and layer times (Gloo only; phase_windows.c) */
  char tmpdir[RT_PG_PRIVATE_DIR_MAX]; /* a lone rank's own rendezvous directory, removed at the end; "" if none */
  char bindbuf[256];                  /* bind's storage where it is the default address */
} cal_ctx;

/* A progress line on stderr, from rank 0 when progress is on. */
void cal_say(const cal_ctx *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The backend's communicator of rank of size, meeting through st: Gloo on
 * the run's listen address, or NCCL on this rank's device with the
 * allreduce algorithm fixed at creation (RT_ALGO_DEFAULT: NCCL's choice). */
int cal_connect(cal_ctx *r, rt_store *st, int rank, int size, enum rt_algo algo, rt_comm **out);
/* The same through a store of its own under prefix (a sub-group). */
int cal_sub_group(cal_ctx *r, const char *prefix, int rank, int size, enum rt_algo algo, rt_comm **out);

/* Every rank's `bytes` (a multiple of 4) at mine, gathered over the world
 * communicator into *all (malloc'd, world size x bytes, rank k's at k x
 * bytes): for reductions across ranks that differ field by field. */
int cal_gather_world(const cal_ctx *r, const void *mine, size_t bytes, void **all);
/* The reductions' steps: x where it is larger (smaller) than have, else
 * have (so a NaN never replaces a value). */
static inline double cal_larger(double have, double x) { return x > have ? x : have; }
static inline double cal_smaller(double have, double x) { return x < have ? x : have; }

/* ---- phases, in the order cal_run calls them ---------------------------- */

/* The rendezvous of every rank (r->store), the world communicator
 * (r->world) and what each cost, the slowest rank's; on rank 0 the profile
 * (r->prof) with where it came from. start_rt: this process's start,
 * CLOCK_REALTIME seconds. */
int cal_phase_startup(cal_ctx *r, double start_rt);

/* Memory rates and per-layer times in windows spread over the run (Gloo;
 * with NCCL all three do nothing). open loads the models and measures the
 * first window; each cal_window call measures the next one, up to three
 * (one with --quick); close (rank 0) puts the windows' medians into the
 * profile and writes the measured model files beside it. */
int cal_windows_open(cal_ctx *r);
/* Before any measurement: every measured model file can be written where
 * cal_windows_close will write it, none is an input (the models are loaded
 * here, and so noted as inputs), and no two models share a name. */
int cal_windows_check_outputs(const cal_opts *o);
int cal_window(cal_ctx *r);
int cal_windows_close(cal_ctx *r);
void cal_windows_free(struct cal_windows *w);
/* Model k's PowerSGD wait, for its measured model file (phase_hooks.c). */
void cal_windows_set_psgd_sync(cal_ctx *r, int k, double sync_us);

/* Collective sweeps of every group, one group at a time: inside each node,
 * across nodes, and with NCCL on one rank a data check of every operation;
 * r->intra and r->inter are left open. */
int cal_phase_collectives(cal_ctx *r);

/* GEMM rates (and on GPUs device memory, host link and host reduction):
 * rank 0 alone, while the others wait. */
int cal_phase_compute(cal_ctx *r);

/* Step-time samples on every rank at once, pooled; rank 0 fits their
 * distribution into the profile. */
int cal_phase_jitter(cal_ctx *r);

/* The communication hooks' costs on the first model's buckets, every rank
 * at once (Gloo; with NCCL it only says so), into the profile. */
int cal_phase_hooks(cal_ctx *r);
/* PowerSGD's wait per allreduce in model m's training steps beyond the same
 * allreduce back to back, *sync_us (the ranks' mean; 0 without allreduces);
 * every rank at once (phase_psgd_sync.c). */
int cal_psgd_sync(cal_ctx *r, const core_model *m, double *sync_us);

/* What the interference phase measures on each rank, and how ranks are
 * combined, field by field (the slowest or busiest rank sets the step). */
typedef struct cal_interf {
  double compute_slowdown; /* GEMMs beside allreduces, >= 1: the largest */
  double comm_slowdown;    /* allreduces beside GEMMs, >= 1: the largest */
  double cpu_slowdown;     /* GEMMs beside GEMMs on a second thread (CPUs; 1 on GPUs): the largest */
  double alone_s;          /* an allreduce's time alone (CPUs; 0 on GPUs): the largest */
  double comm_cpus;        /* the CPUs it kept busy (CPUs; 0 on GPUs): the largest */
  double rank_cpus;        /* the CPUs a rank may use (CPUs; 0 on GPUs): the smallest */
} cal_interf;

/* Every rank at once; *in gets the values combined over ranks, on every
 * rank. */
int cal_phase_interference(cal_ctx *r, cal_interf *in);
/* Rank 0: in into the profile. */
void cal_interference_record(cal_ctx *r, const cal_interf *in);

/* Checkpoint write and read bandwidth through the runtime's checkpoint
 * code, into the profile: rank 0 alone. */
int cal_phase_storage(cal_ctx *r);

#endif

/*
 * train — one rank of a real data-parallel training run, as `ddpsim train`
 * runs it: rank and world from the environment (runtime/pg.h), rendezvous,
 * DDP steps on CPUs (runtime/ddp.h) over a synthetic sharded dataset,
 * per-step metrics, checkpoints and resuming from them, the account of a
 * recovery after a failure (runtime/recovery.h), TensorBoard events.
 *
 * Files in opts.out: rank-R.attempt-A.csv, appended and flushed step by
 * step so that a killed rank keeps what it measured; at the end rank 0
 * merges every rank's into steps.csv (and recovery rows into recovery.csv).
 * With opts.trace also trace-rank-R.json. Attempt A is the launcher's
 * restart count (DDPSIM_RESTART_COUNT); after a restart the run resumes
 * from the newest valid checkpoint.
 */
#ifndef RUNTIME_TRAIN_H
#define RUNTIME_TRAIN_H

#include <stdint.h>

#include "runtime/comm.h"
#include "runtime/compress.h"

enum { RT_TRAIN_MAX_FAILS = 64 };

typedef struct rt_train_opts {
  const char *model;       /* model file of linear layers */
  const char *rdzv;        /* rendezvous spec; NULL: $DDPSIM_RDZV, else a lone rank's own */
  const char *bind;        /* listen address; NULL: $DDPSIM_BIND_ADDR, else routed */
  const char *out;         /* metrics directory (created) */
  const char *params_out;  /* rank 0 writes the final parameters (raw fp32); NULL: none */
  const char *ckpt_dir;    /* checkpoints; NULL: none */
  const char *tensorboard; /* event files in DIR/rank_R; NULL: none */
  long batch, steps, dataset, seed, threads;
  long ckpt_every, ckpt_keep;
  long fail_rank;                      /* rank that kills itself, -1: none */
  long fail_steps[RT_TRAIN_MAX_FAILS]; /* at which step, per attempt */
  int n_fail_steps;
  double process_start_rt; /* wall clock when the process started */
  double lr, momentum, bucket_cap_mb, first_bucket_mb, timeout_s;
  int overlap, shuffle, trace, resume;
  enum rt_algo algo;
  rt_compress_opts compress;
} rt_train_opts;

/* What the run did, for rank 0 to report. */
typedef struct rt_train_result {
  int rank, world_size;
  long first_step, steps_run; /* this attempt ran steps first_step .. first_step + steps_run - 1 */
  double mean_step_s, final_loss, rdzv_s;
  int64_t n_params;
  rt_compress_stats hook; /* rank 0's communication hook, all steps */
  long vanilla_steps;     /* of which in PowerSGD's vanilla phase */
} rt_train_result;

/* Run this rank to opts.steps. Usage errors found before training (a
 * --fail-rank outside the world, an unwritable --params-out, no rendezvous
 * for several ranks, a checkpoint directory of another run) are
 * CORE_EUSAGE; the others as the modules below report them. */
int rt_train_run(const rt_train_opts *opts, rt_train_result *res);

#endif

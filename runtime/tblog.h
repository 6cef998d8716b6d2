/*
 * tblog — the TensorBoard logger of a training rank (`ddpsim train
 * --tensorboard DIR`): one event file under DIR/rank_R/ (core/tbwriter.h),
 * as PyTorch's SummaryWriter(log_dir=f'logs/rank_{rank}') writes one.
 *
 * Logging never stalls a step: rt_tblog_step copies the step's figures into
 * a bounded queue (a single-producer, single-consumer ring of preallocated
 * slots: no lock, no allocation), signals the logger's condition variable
 * (at most a wake-up call) and returns; with the queue full the step's
 * record is dropped and counted. A logger thread drains the
 * queue, samples the system figures (runtime/sysstat.h), encodes one event
 * per step and appends the batch to the file; a write that fails (a full
 * disk) drops its records, counted, and the logger goes on. Drops are a
 * scalar (Logger/Dropped, the count so far) and in rt_tblog_stats. A rank
 * killed outright loses only what was still queued: the step or two handed
 * over while the logger was being woken.
 *
 * Scalars of each step (seconds where a time; see README.md):
 *   Train/Loss, Train/LR, Train/SamplesPerSec (batch x world / step time),
 *   Train/StepTime, Train/Attempt (restarts before this attempt),
 *   Dist/SyncTime (the bucket allreduces' time on the communication thread),
 *   Dist/ExposedComm (step - compute), Dist/CommRatio (SyncTime / StepTime),
 *   Dist/BucketAllreduce/<k> (bucket k's allreduce), Logger/Dropped;
 * and, every sys_every_s at most: System/CPUUtil (% of one CPU),
 *   System/MemoryRSS (MiB), System/NetRxGbps, System/NetTxGbps (the rank's
 *   network namespace), and with a GPU System/GPUUtil (%), System/GPUMemory
 *   (MiB in use).
 *
 * Restarts: an attempt after a restart (or a --resume) appends to the
 * rank's newest event file, after a SessionLog START at the step it resumes
 * from: TensorBoard then drops the earlier attempt's events from that step
 * on, so the curves continue across the failure with replayed steps shown
 * once, and Train/Attempt steps up there. A fresh run refuses a directory
 * that already holds an event file of the rank.
 */
#ifndef RUNTIME_TBLOG_H
#define RUNTIME_TBLOG_H

#include <stdint.h>

/* Steps the queue holds unless told otherwise: a disk may stall for that
 * many steps before any is dropped; a few hundred kilobytes. */
#define RT_TBLOG_QUEUE_STEPS 1024
/* System figures at most this often unless told otherwise (seconds). */
#define RT_TBLOG_SYS_EVERY_S 0.2

typedef struct rt_tblog_opts {
  const char *dir; /* --tensorboard DIR */
  int rank;
  int attempt;                 /* restarts before this attempt (DDPSIM_RESTART_COUNT) */
  int resume;                  /* continue the event file of an earlier run */
  int gpu;                     /* NVML device index for System/GPU*, or -1 */
  int queue_steps;             /* 0: RT_TBLOG_QUEUE_STEPS */
  double sys_every_s;          /* < 0: RT_TBLOG_SYS_EVERY_S; 0: with every step */
  struct core_made_dirs *made; /* if set, notes the directories open makes */
} rt_tblog_opts;

/* What the figures of every step share, known once the group is up. */
typedef struct rt_tblog_run {
  int world, batch, n_buckets;
  double lr;
  long first_step; /* where this attempt starts (after a checkpoint load) */
} rt_tblog_run;

typedef struct rt_tblog_figures {
  long step;
  double step_s, compute_s, comm_s, exposed_comm_s, loss;
  const double *bucket_s; /* n_buckets allreduce times */
} rt_tblog_figures;

typedef struct rt_tblog_stats {
  long logged;           /* steps written */
  long dropped_queue;    /* steps dropped with the queue full */
  long dropped_write;    /* steps dropped by failed writes */
  int64_t cut_bytes;     /* torn record cut from the end of the file appended to */
  char path[4400];       /* the event file */
  char write_error[600]; /* the first failed write's message, or "" */
  char gpu_why[600];     /* why GPU figures were asked for and are missing, or "" */
} rt_tblog_stats;

typedef struct rt_tblog rt_tblog;

/* Before training: DIR/rank_R made and its event file created (with the
 * file-version event written) or opened to append. Failures say what to do;
 * an unusable DIR is CORE_EUSAGE. */
int rt_tblog_open(const rt_tblog_opts *o, rt_tblog **out);
/* Allocate the queue and start the logger thread. */
int rt_tblog_start(rt_tblog *l, const rt_tblog_run *r);
/* Hand one step's figures to the logger; never blocks. */
void rt_tblog_step(rt_tblog *l, const rt_tblog_figures *s);
/* Drain the queue, stop the thread, close the file, free l; the counts in
 * st (may be NULL). A file rt_tblog_open made that got no step is removed
 * (the run failed before training). NULL l is a no-op. Returns the close's
 * error, if any. */
int rt_tblog_close(rt_tblog *l, rt_tblog_stats *st);

#endif

/*
 * job — the whole training run, above the step level (the job level of
 * docs/architecture.md): node failures (exponential or Weibull, per node or per GPU),
 * detection, replacement by a spare or a wait for repair, restart, checkpoint
 * load and the work lost since the last durable checkpoint; checkpoints every
 * N steps or T seconds, synchronous (blocking for the write) or asynchronous
 * (blocking for a snapshot to host memory, written in the background, never
 * two at once). Monte Carlo over independent replications, with means and 95%
 * confidence intervals, and Young's and Daly's optimal intervals beside them.
 *
 * Between failures the run advances analytically at the step level's mean
 * step time, checkpoint cycle by checkpoint cycle, so a 54-day run needs one
 * event per failure and repair, not one per step. Failures are events of the
 * discrete-event engine: one stream for exponential (failures of N nodes
 * with rate λ each form one Poisson process of rate Nλ), one clock per node
 * for Weibull, whose hazard depends on a node's age. Scheduled failures
 * (in the middle of given steps, like `ddpsim train --fail-at-step`) let a
 * prediction be checked against a real run with the same failures.
 */
#ifndef SIM_JOB_H
#define SIM_JOB_H

#include "sim/engine.h"

#include <stdint.h>

/* A run that has not finished after this many times its failure-free time
 * (plus an hour) makes no progress worth simulating further (failures faster
 * than restarts); it counts as unfinished. */
#define SIM_JOB_WALL_CAP_FACTOR 100.0

enum sim_fail_dist { SIM_FAIL_NONE = 0, SIM_FAIL_EXPONENTIAL, SIM_FAIL_WEIBULL, SIM_FAIL_SCHEDULED };

typedef struct sim_job_params {
  double step_s;      /* mean step time (step level) */
  double total_steps; /* steps to train */
  int nodes;
  enum sim_fail_dist dist;
  double node_mtbf_s;     /* exponential: mean time between failures of one node */
  double weibull_scale_s; /* Weibull, per node */
  double weibull_shape;
  const double *at_steps; /* scheduled: fail in the middle of these steps, in order */
  int n_at_steps;
  double detect_s;    /* failure to detection */
  double mttr_s;      /* repair of a failed node */
  int spares;         /* spare nodes at the start */
  double restart_s;   /* process start + rendezvous + communicator init */
  double load_s;      /* reading the checkpoint back */
  double every_steps; /* checkpoint interval; 0 = never */
  int async;
  double ckpt_block_s; /* sync: the write; async: the snapshot */
  double ckpt_write_s; /* async: the background write */
  int replications;
  int first_rep;       /* replications are numbered from here (more of the same study) */
  uint64_t seed;       /* replication i draws from a stream of (seed, i) */
  uint64_t max_events; /* events the whole Monte Carlo may take; 0: no bound */
  /* Called now and then from the running Monte Carlo with the events run
   * since the last call (progress reports); may be NULL. */
  void (*progress)(void *ctx, uint64_t events);
  void *progress_ctx;
} sim_job_params;

/* Per replication: wall time to train (h); goodput, the failure-free time
 * over the wall time; ettr, the effective training time ratio as large
 * training reports publish it: the wall time spent training on data whose
 * progress is kept, over the wall time, i.e. the wall time less checkpoint
 * stalls, work lost to failures and the time down (detection, waiting for
 * a node, restart, checkpoint load) (Kokolis et al., "Revisiting
 * Reliability in Large-Scale Machine Learning Research Clusters", 2024,
 * arXiv:2410.21680, "ETTR"; PyTorch blog, "Optimizing Effective Training
 * Time for Meta's Internal Recommendation/Ranking Workloads": "the
 * percentage of E2E wall time spent on consuming new data"). Kept training
 * is the failure-free time, so a finished run's ettr equals its goodput.
 * Then failures, and the hours lost to checkpoint stalls, lost work and
 * downtime. Past these printed metrics each row keeps the seconds the two
 * ratios are made of: the failure-free time trained, the kept training
 * time, and the wall time (projected alike for an unfinished run).
 *
 * Over the replications, time, failures and waste are means; goodput and
 * ettr are ratios of means (total useful time over total wall time), so
 * that goodput x time_to_train_h is the mean failure-free time trained: the
 * fraction of the machine's time that trained, not the mean of the runs'
 * fractions, which long runs would weigh no more than short ones. */
enum {
  SIM_JOB_TIME_H = 0,
  SIM_JOB_GOODPUT,
  SIM_JOB_ETTR,
  SIM_JOB_FAILURES,
  SIM_JOB_WASTE_CKPT_H,
  SIM_JOB_WASTE_LOST_H,
  SIM_JOB_WASTE_RESTART_H,
  SIM_JOB_N_METRICS,
  SIM_JOB_USEFUL_S = SIM_JOB_N_METRICS, /* goodput's numerator */
  SIM_JOB_KEPT_S,                       /* ettr's numerator */
  SIM_JOB_WALL_S,                       /* both ratios' denominator */
  SIM_JOB_N_COLS
};

/* Every replication's metrics are kept (reps, one row of SIM_JOB_N_COLS
 * per replication, in replication order) so that more replications can be
 * added to a point and points compared replication by replication: the
 * same replication number draws the same failures in every point seeded
 * alike (common random numbers).
 *
 * A replication still running at the wall-time cap (SIM_JOB_WALL_CAP_FACTOR)
 * is unfinished: its goodput is the durable progress over the wall time so
 * far, and its time to train, failures and waste are projected from that
 * rate of progress (the failure process is stationary); one that saved no
 * progress at all (stalled) cannot be projected and keeps its values at the
 * cap, a lower bound. */
typedef struct sim_job_result {
  /* Means (goodput, ettr: ratios of means) and 95% confidence intervals
   * (Student t, n - 1 degrees; the ratios' by the delta method). */
  double mean[SIM_JOB_N_METRICS], lo[SIM_JOB_N_METRICS], hi[SIM_JOB_N_METRICS];
  double mtti_s;          /* mean time between interruptions of the job */
  double young_s, daly_s; /* optimal checkpoint intervals, seconds of training */
  int replications;
  int unfinished; /* replications that did not finish within the wall-time cap */
  int stalled;    /* of those, the ones that saved no progress before it */
  double cap_h;   /* the cap, hours of wall time */
  uint64_t events;
  double *reps; /* replications x SIM_JOB_N_COLS, malloc'd */
} sim_job_result;

/* Young's interval sqrt(2 delta M); Daly's higher-order one (Daly 2006, as
 * in LLNL/scr scr_ckpt_interval.py). delta: checkpoint cost, M: mean time to
 * interrupt. */
double sim_job_young(double delta_s, double mtti_s);
double sim_job_daly(double delta_s, double mtti_s);

/* Returns 0, or CORE_EINVAL when the Monte Carlo would take more than
 * p->max_events (message: how far it got; the caller names the scenario key).
 * r->reps is allocated: sim_job_result_free. */
int sim_job_run(const sim_job_params *p, sim_engine *e, sim_job_result *r);
void sim_job_result_free(sim_job_result *r);
/* Append more's replications (run with first_rep = into's count) to into,
 * recompute its means and intervals, and free more. */
int sim_job_merge(sim_job_result *into, sim_job_result *more);

/* Metric k of a and b compared replication by replication (the same
 * replication numbers, the same seeds: paired): the difference of the two
 * results' figures (means, or for goodput and ettr ratios of means) and the
 * half-width of its 95% confidence interval (Student t; for the ratios over
 * the replications' linearized differences, as sim_job_result's intervals).
 * Both need the same replications; returns -1 otherwise. */
int sim_job_paired(const sim_job_result *a, const sim_job_result *b, int k, double *mean, double *half);

/* The work before it is done: the expected events of the whole Monte Carlo
 * (two per interruption, failure and repair, over a replication's expected
 * wall time), and that wall time in *wall_s (may be NULL). The wall time is
 * Daly's complete model of a run with exponential interruptions of mean M and
 * restarts of R seconds, checkpoint cycles of c seconds (Daly 2006, "A higher
 * order estimate of the optimum checkpoint interval for restart dumps", FGCS
 * 22, its complete model): M e^(R/M) (e^(c/M) - 1) per cycle, capped where sim_job_run
 * gives a replication up. *capped is set when the cap binds: most runs would
 * not finish. */
double sim_job_estimate_events(const sim_job_params *p, double *wall_s, int *capped);

/* Mean time between interruptions of the whole job, seconds (INFINITY
 * without failures). */
double sim_job_mtti(const sim_job_params *p);

/* Seconds a failure costs before training resumes, as the estimate counts
 * them: detection, a wait for repair when there is no spare, restart and
 * checkpoint load. */
double sim_job_recovery_s(const sim_job_params *p);

#endif

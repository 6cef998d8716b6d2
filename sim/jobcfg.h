/*
 * jobcfg — the scenario's groups job, failures and checkpoint: how long the
 * run is (steps, failure-free hours, or samples whatever the cluster), how
 * nodes fail, how long a failure takes to detect, repair and recover from,
 * and how checkpoints are taken. Every number of failures, and the
 * checkpoint's interval, mode and cost, is a sweep dimension (sim/scenario.h
 * lists their order). A job group alone asks for the time to train without
 * failures or checkpoints. Checked with file:line like the rest of the
 * scenario; the format is documented in scenarios/README.md.
 */
#ifndef SIM_JOBCFG_H
#define SIM_JOBCFG_H

#include "core/profile.h"

#include <libconfig.h>

typedef struct sim_job_cfg {
  int present;                  /* a job group: the run as a whole is simulated */
  int has_failures;             /* a failures group */
  int has_checkpoints;          /* a checkpoint group */
  double steps, hours, samples; /* length of the run: one of them */
  int fail_dist;                /* enum sim_fail_dist */
  double *at_steps;             /* scheduled failures */
  int n_at_steps;
  /* Sweepable numbers, one array per dimension (sizes in sim_scenario.n):
   * mtbf_h or weibull_scale_h, weibull_shape, detect_s (< 0: the backend's
   * collective timeout), mttr_h, restart_s (< 0: from the profile), load_s
   * (< 0: from the storage and the fabric), checkpoint cost_s (< 0: from the
   * storage), spares, checkpoint mode (1 = async) and interval. */
  double *rate_h, *shape, *detect_s, *mttr_h, *restart_s, *load_s, *cost_s;
  long long *spares;
  int *async;
  double *every;      /* checkpoint interval values; 0: no checkpoints */
  int every_in_steps; /* every_steps instead of every_s */
  int per_gpu;
  int sharded;
  double state_GB;      /* checkpoint size; 0: the model's parameters and optimizer state in fp32 */
  double storage_GBps;  /* aggregate cap of the checkpoint storage; 0 = none */
  double snapshot_GBps; /* async snapshot to host memory; 0 = the profile's */
  int replications;     /* simulation.replications: Monte Carlo runs per point to start with */
  int max_replications; /* simulation.max_replications: up to this many to tell the best interval */
  double tie_goodput;   /* simulation.tie_goodput: goodput differences below this are ties */
  double max_events;    /* simulation.max_events: events one point's Monte Carlo may take */
  /* For errors about the work: the key setting the failure rate (mtbf_h,
   * weibull_scale_h, at_steps; else the failures group) and
   * simulation.max_events (NULL when not given). Borrowed from the file. */
  const config_setting_t *rate_key, *max_events_key;
} sim_job_cfg;

/* Parse the groups from the scenario's root. n_dims receives the length of
 * each job dimension, in the order of sim_scenario's SIM_DIM_FAIL_RATE ..
 * SIM_DIM_CKPT_EVERY (10 of them). pr and profile_path: the profile the
 * defaults come from. */
int sim_jobcfg_parse(
    const config_setting_t *root, const core_profile *pr, const char *profile_path, sim_job_cfg *j, int n_dims[10]);
void sim_jobcfg_free(sim_job_cfg *j);

#endif

/*
 * predict — one scenario point from end to end: the cluster topology and
 * per-link α–β from the profile and the network, per-layer compute times from
 * the profile's rates (or the model's measured times), PyTorch's bucket
 * assignment, each bucket's collective time, then the step simulation; out
 * come step time, its breakdown, throughput and scaling efficiency.
 */
#ifndef SIM_PREDICT_H
#define SIM_PREDICT_H

#include "sim/compute.h"
#include "sim/engine.h"
#include "sim/job.h"
#include "sim/scenario.h"

#include "core/trace.h"

typedef struct sim_point_result {
  sim_point pt;
  int n_buckets;
  double step_s, compute_s, comm_s, exposed_comm_s, step_sd_s;
  double samples_per_s, scaling_eff;
  double single_step_s;     /* one device, no DDP */
  double wire_bytes;        /* bytes each rank's collectives reduce per step (after compression) */
  double gbps;              /* the network's line rate per NIC (measured links: the profile's), 0 if unknown */
  char status[16];          /* "ok" or "timeout" */
  char note[320];
  uint64_t events;
  /* Job level, when the scenario has one. */
  int has_job;
  sim_job_result job;
  double ckpt_bytes, ckpt_block_s, ckpt_every_s, restart_s, load_s;
  double best_every_s;      /* the interval with the best goodput among its siblings */
} sim_point_result;


/* Topology and links for a point. */
int sim_predict_topo(const sim_scenario *s, const sim_point *p, sim_topo *t);

/* Per-bucket allreduce time, choosing the algorithm when p->algorithm is
 * auto (NCCL: the faster of ring and tree, as NCCL's tuner does; Gloo: the
 * segmented ring of gloo::allreduce, which PyTorch uses). */
double sim_predict_allreduce(const sim_point *p, const sim_topo *t, double bytes);

/* trace may be NULL; trace_ranks limits the ranks written. */
int sim_predict_point(const sim_scenario *s, const sim_point *p, sim_engine *e, core_trace *trace,
                      int trace_ranks, sim_point_result *r);

uint64_t sim_predict_seed(uint64_t seed, long index);

/* The job level's parameters of a point whose step level r already holds:
 * failures, recovery, checkpoint costs, replications and the bound on events
 * (simulation.max_events); no progress hook. */
int sim_predict_job_params(const sim_scenario *s, const sim_point *p, const sim_point_result *r,
                           sim_job_params *jp);

/* The job level of such a point (failures, checkpoints; Monte Carlo).
 * progress (may be NULL) is called with the events run since its last call. */
int sim_predict_job(const sim_scenario *s, const sim_point *p, sim_engine *e,
                    void (*progress)(void *ctx, uint64_t events), void *ctx, sim_point_result *r);

#endif

#include "jobpoint.h"

#include "sim/bounds.h"

#include "core/err.h"

#include <math.h>
#include <string.h>

/* Optimizer state per parameter in fp32: momentum one buffer, Adam two. */
static double optimizer_state_bytes(enum sim_optimizer o) {
  switch (o) {
  case SIM_OPT_SGD_MOMENTUM: return 4.0;
  case SIM_OPT_ADAM: return 8.0;
  default: return 0.0;
  }
}

static double min_cap(double bw, double cap) { return cap > 0 && cap < bw ? cap : bw; }

double sim_jobpoint_ckpt_bytes(const sim_scenario *s, const sim_point *p) {
  if (s->job.state_GB > 0)
    return s->job.state_GB * 1e9;
  return (double)p->model->n_params * (4.0 + optimizer_state_bytes(s->optimizer));
}

double sim_jobpoint_steps(const sim_scenario *s, const sim_point *p, double step_s) {
  const sim_job_cfg *j = &s->job;
  if (j->steps > 0)
    return j->steps;
  if (j->hours > 0)
    return j->hours * 3600.0 / step_s;
  return ceil(j->samples / ((double)p->nodes * p->per_node * p->batch));
}

/* Restart: process start, then rendezvous and communicator set-up, which
 * grow with the number of ranks; scaled from the calibrated world size by
 * log2 (tree- and ring-based bootstraps do log p rounds or p steps of small
 * messages; log p is the optimistic end, documented as such). DDP's
 * constructor then broadcasts rank 0's parameters (_sync_module_states), on
 * every start. */
static double restart_from_profile(const sim_scenario *s, const sim_point *p, const sim_topo *t) {
  const core_profile *pr = s->profile;
  double pw = (double)pr->nodes * pr->ranks_per_node, world = (double)p->nodes * p->per_node;
  double scale = pw > 1 && world > 1 ? log2(world) / log2(pw) : 1.0;
  return pr->process_start_s + (pr->rendezvous_s + pr->comm_init_s) * (scale > 1 ? scale : 1) +
         sim_coll_time(p->backend, CORE_COLL_BROADCAST, SIM_ALGO_RING, t,
             (double)p->model->n_params * sim_precision_grad_bytes(p->precision));
}

/* Reading the checkpoint back on restart, and (sharded) exchanging the
 * shares: every node reads the whole file, or only its share at its share
 * of the storage, then an allgather of the whole state (jobpoint.h). */
static void load_from_storage(
    const sim_scenario *s, const sim_point *p, const sim_topo *t, double bytes, double load[2]) {
  double rbw = s->profile->read_GBps * 1e9, cap = s->job.storage_GBps * 1e9;
  if (!s->job.sharded) {
    load[0] = bytes * p->nodes / min_cap(rbw * p->nodes, cap);
    load[1] = 0;
    return;
  }
  load[0] = bytes / p->nodes / min_cap(rbw, cap / p->nodes);
  load[1] = sim_coll_time(p->backend, CORE_COLL_ALLGATHER, SIM_ALGO_RING, t, bytes);
}

/* The checkpoint's blocking cost and background write (jobpoint.h). */
static void checkpoint_costs(const sim_scenario *s, const sim_point *p, double bytes, sim_job_params *jp) {
  const sim_job_cfg *j = &s->job;
  const core_profile *pr = s->profile;
  double wbw = pr->write_GBps * 1e9, cap = j->storage_GBps * 1e9;
  double write_s =
      p->ckpt_cost_s >= 0 ? p->ckpt_cost_s : bytes / (j->sharded ? min_cap(wbw * p->nodes, cap) : min_cap(wbw, cap));
  jp->every_steps = j->every_in_steps ? p->ckpt_every : p->ckpt_every / jp->step_s;
  jp->async = p->ckpt_async;
  if (!jp->async) {
    jp->ckpt_block_s = write_s;
    return;
  }
  double snap_bw = j->snapshot_GBps > 0                  ? j->snapshot_GBps * 1e9
                   : strcmp(pr->device_kind, "gpu") == 0 ? pr->host_link_GBps * 1e9
                                                         : pr->memory_GBps * 1e9;
  jp->ckpt_block_s = (j->sharded ? bytes / ((double)p->nodes * p->per_node) : bytes) / snap_bw;
  jp->ckpt_write_s = write_s;
}

/* Failures of the point: per-GPU failure processes of a node combine into
 * the node's (the minimum of g exponentials is exponential with g times the
 * rate, of g Weibulls a Weibull with scale divided by g^(1/shape)). */
static void failure_params(const sim_scenario *s, const sim_point *p, sim_job_params *jp) {
  const sim_job_cfg *j = &s->job;
  int g = p->per_node;
  jp->dist = (enum sim_fail_dist)j->fail_dist;
  jp->node_mtbf_s = p->fail_rate_h * 3600.0 / (j->per_gpu ? g : 1);
  jp->weibull_scale_s =
      jp->dist == SIM_FAIL_WEIBULL ? p->fail_rate_h * 3600.0 / (j->per_gpu ? pow(g, 1.0 / p->weibull_shape) : 1) : 0;
  jp->weibull_shape = p->weibull_shape;
  jp->at_steps = j->at_steps;
  jp->n_at_steps = j->n_at_steps;
  jp->detect_s = p->detect_s >= 0 ? p->detect_s : sim_scenario_timeout(s, p->backend);
  jp->mttr_s = p->mttr_h * 3600.0;
  jp->spares = (int)p->spares;
}

int sim_jobpoint_params(
    const sim_scenario *s, const sim_point *p, const sim_point_result *r, sim_job_params *out, double load[2]) {
  const sim_job_cfg *j = &s->job;
  sim_job_params jp;
  sim_topo t;
  double parts[2] = {0, 0};
  int rc;
  memset(&jp, 0, sizeof jp);
  jp.step_s = r->step_s;
  jp.total_steps = sim_jobpoint_steps(s, p, r->step_s);
  jp.nodes = p->nodes;
  /* A point that runs: with job.hours its steps are known only now. */
  if (strcmp(r->status, "ok") == 0 && (rc = sim_bounds_schedule_point(s, p, jp.total_steps, r->step_s)) != 0)
    return rc;
  if (j->has_failures) {
    failure_params(s, p, &jp);
    if ((p->restart_s < 0 || (p->load_s < 0 && j->has_checkpoints)) && (rc = sim_predict_topo(s, p, &t)) != 0)
      return rc;
    jp.restart_s = p->restart_s >= 0 ? p->restart_s : restart_from_profile(s, p, &t);
    if (p->load_s >= 0)
      parts[0] = p->load_s;
    else if (j->has_checkpoints)
      load_from_storage(s, p, &t, sim_jobpoint_ckpt_bytes(s, p), parts);
    jp.load_s = parts[0] + parts[1];
  }
  if (j->has_checkpoints)
    checkpoint_costs(s, p, sim_jobpoint_ckpt_bytes(s, p), &jp);
  jp.replications = j->replications;
  jp.seed = sim_predict_seed(s->seed ^ 0x5a5a5a5a5a5a5a5aULL, p->crn_index);
  jp.max_events = (uint64_t)j->max_events;
  *out = jp;
  if (load) {
    load[0] = parts[0];
    load[1] = parts[1];
  }
  return 0;
}

/* A point that cannot run (its status: a bucket allreduce that outlasts
 * the backend's timeout aborts it at its first step; one that does not fit
 * in the GPUs' memory never starts) has no run, and its run's figures do
 * not exist (empty cells). */
static void no_run(sim_job_result *j) {
  memset(j, 0, sizeof *j);
  for (int k = 0; k < SIM_JOB_N_METRICS; k++)
    j->mean[k] = j->lo[k] = j->hi[k] = NAN;
  j->mtti_s = j->young_s = j->daly_s = j->cap_h = NAN;
}

int sim_jobpoint_run(const sim_scenario *s, const sim_point *p, int first_rep, int replications, sim_engine *e,
    void (*progress)(void *ctx, uint64_t events), void *ctx, sim_point_result *r) {
  sim_job_params jp;
  double load[2];
  if (!s->job.present)
    return 0;
  int rc = sim_jobpoint_params(s, p, r, &jp, load);
  if (rc)
    return rc;
  jp.first_rep = first_rep;
  jp.replications = replications;
  jp.progress = progress;
  jp.progress_ctx = ctx;
  if (strcmp(r->status, "ok") != 0) {
    no_run(&r->job);
  } else {
    if ((rc = sim_job_run(&jp, e, &r->job)) != 0)
      return rc;
    r->has_job = 1;
  }
  r->ckpt_bytes = s->job.has_checkpoints ? sim_jobpoint_ckpt_bytes(s, p) : 0;
  r->ckpt_block_s = jp.ckpt_block_s;
  r->ckpt_every_s = jp.every_steps * r->step_s;
  r->restart_s = jp.restart_s;
  r->detect_s = jp.detect_s;
  r->mttr_h = jp.mttr_s / 3600.0;
  r->load_s = jp.load_s;
  r->load_read_s = load[0];
  r->load_exchange_s = load[1];
  return 0;
}

double sim_jobpoint_usd_per_hour(const sim_scenario *s, const sim_point *p) {
  if (!s->prices.priced)
    return 0;
  double ckpt = s->job.has_checkpoints ? sim_jobpoint_ckpt_bytes(s, p) : 0;
  return sim_cost_per_hour(&s->prices, p->network->node_hour_usd, p->nodes, p->per_node, p->spares, ckpt);
}

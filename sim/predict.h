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
#include "sim/fabric.h"
#include "sim/job.h"
#include "sim/scenario.h"

#include "core/trace.h"

typedef struct sim_point_result {
  sim_point pt;
  int n_buckets;
  double step_s, compute_s, comm_s, exposed_comm_s, step_sd_s;
  double samples_per_s, scaling_eff;
  double single_step_s; /* one device, no DDP */
  double wire_bytes;    /* bytes each rank's collectives reduce per step (after compression) */
  double gbps;          /* the network's line rate per NIC (measured links: the profile's), 0 if unknown */
  double mem_GB;        /* the memory each GPU needs, 1e9 bytes (sim/memfit.h) */
  char status[16];      /* "ok", "timeout", or "oom" when mem_GB exceeds the profile's device.memory_GB */
  char note[640];       /* why a point cannot run and what to change; room for the longest such note */
  uint64_t events;
  int has_fabric; /* the point has a fabric: fab holds what it made of the collectives */
  sim_fabric_result fab;
  /* Job level, when the scenario has one (sim/jobpoint.h). */
  int has_job;
  sim_job_result job;
  double ckpt_bytes, ckpt_block_s, ckpt_every_s, restart_s, detect_s, mttr_h;
  double load_s, load_read_s, load_exchange_s; /* the load: reading from storage, then exchanging shares */
  double usd_per_hour;                         /* with prices (sim/cost.h) */
  /* Among the points that differ only in the checkpoint interval: the best
   * interval's and its goodput's interval, and the intervals whose goodput
   * cannot be told from it (paired over the same failures), ';'-separated. */
  double best_every_s, best_goodput_lo, best_goodput_hi;
  char ties[96];
} sim_point_result;

/* Topology and links for a point (its allreduces). */
int sim_predict_topo(const sim_scenario *s, const sim_point *p, sim_topo *t);
/* The same for op on nodes x per_node ranks over network n with backend b:
 * links from the profile's measurement of op in each scope, or else from
 * its allreduce's (docs/cost-models.md; the network's own figures
 * unless it takes its link from the profile). NCCL on a datasheet profile
 * also costs NCCL's LL and LL128 protocols (t->nccl_hw). */
int sim_topo_build(const core_profile *pr, const char *profile_path, const sim_network *n, enum sim_backend b,
    enum core_coll op, int nodes, int per_node, sim_topo *t);

/* Per-bucket allreduce time, choosing the algorithm when p->algorithm is
 * auto (NCCL: the faster of ring and tree, as NCCL's tuner does; Gloo: the
 * segmented ring of gloo::allreduce, which PyTorch uses). On a fabric
 * (t->fabric) each algorithm has its own topology, and NCCL also chooses
 * among the in-network reductions the fabric offers (sim/fabric.h). */
double sim_predict_allreduce(const sim_point *p, const sim_topo *t, double bytes);

/* trace may be NULL; trace_ranks limits the ranks written. */
int sim_predict_point(
    const sim_scenario *s, const sim_point *p, sim_engine *e, core_trace *trace, int trace_ranks, sim_point_result *r);

uint64_t sim_predict_seed(uint64_t seed, long index);

/* Seconds of one step of one device alone, without DDP or jitter: the
 * layers' forward and backward and the optimizer (0 for a traced job). A
 * lower bound of the point's step time. */
double sim_predict_compute_s(const sim_scenario *s, const sim_point *p);

#endif

/*
 * predict — one scenario point from end to end: the cluster topology and
 * per-link α–β from the profile and the network, per-layer compute times from
 * the profile's rates (or the model's measured times), PyTorch's bucket
 * assignment, each bucket's collective time, then the step simulation; out
 * come step time, its breakdown, throughput and scaling efficiency.
 */
#ifndef SIM_PREDICT_H
#define SIM_PREDICT_H

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
  double single_step_s;     /* one device, no DDP */
  double wire_bytes;        /* bytes each rank's collectives reduce per step (after compression) */
  double gbps;              /* the network's line rate per NIC (measured links: the profile's), 0 if unknown */
  char status[16];          /* "ok" or "timeout" */
  char note[320];
  uint64_t events;
  int has_fabric;           /* the point has a fabric: fab holds what it made of the collectives */
  sim_fabric_result fab;
  /* Job level, when the scenario has one. */
  int has_job;
  sim_job_result job;
  double ckpt_bytes, ckpt_block_s, ckpt_every_s, restart_s, load_s;
  double best_every_s;      /* the interval with the best goodput among its siblings */
} sim_point_result;

/* Passes through memory of each layer's output activation (its fp32 size,
 * the model's act_bytes) that the elementwise work beside the FLOP-counted
 * GEMMs makes: normalization, activation functions, dropout, residual adds,
 * the loss, and their backwards. Measured with PyTorch on one H200
 * (bench/data/h200-gpu-ops.csv; every aten op but convolutions, matmuls,
 * attention and the optimizer, at the 3,522 GB/s calibrate measured): in
 * fp32, 23.7 ms a step of ResNet-50 at batch 128 (channels_last) and 22.6 ms
 * of BERT-large at 16 x 512 tokens, 7.3 passes of their activations each;
 * bf16 made 6.0 and 8.3 (autocast keeps normalization, softmax and the loss
 * in fp32, so the bytes stay near fp32's). Forward's share splits the 7.3:
 * 34-51% of ResNet-50's and 30-42% of BERT-large's, the ranges as add_,
 * fill_ and copy_ (either pass) count as one or the other, bias gradients'
 * sums as backward; 2.8 is 38%. */
#define SIM_ELEMENTWISE_FWD_PASSES 2.8
#define SIM_ELEMENTWISE_BWD_PASSES 4.5

/* Topology and links for a point. */
int sim_predict_topo(const sim_scenario *s, const sim_point *p, sim_topo *t);

/* Per-bucket allreduce time, choosing the algorithm when p->algorithm is
 * auto (NCCL: the faster of ring and tree, as NCCL's tuner does; Gloo: the
 * segmented ring of gloo::allreduce, which PyTorch uses). On a fabric
 * (t->fabric) each algorithm has its own topology, and NCCL also chooses
 * among the in-network reductions the fabric offers (sim/fabric.h). */
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

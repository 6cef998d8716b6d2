/*
 * step — one synchronous data-parallel training step, simulated event by
 * event with PyTorch DDP's mechanics (docs/cost-models.md): forward
 * layer by layer, backward in reverse; a bucket becomes ready when the
 * backward of every layer holding one of its gradients is done; bucket b's
 * allreduce is launched when it is ready and buckets 0..b-1 have been
 * launched; each rank has one communication stream, so collectives run one
 * after another, and a collective starts only when every rank has launched
 * it; the optimizer runs after the last allreduce, then post_step_comm_s,
 * a collective once every rank's step is done. With overlap off, nothing
 * is launched before the backward pass ends.
 *
 * Stragglers: each rank's compute is scaled per step by a draw from the
 * profile's jitter distribution (normalized to mean 1). Because a rank that
 * is slow is slow for the whole step, the critical path of a step is that of
 * its slowest rank; the default mode therefore simulates one representative
 * rank whose multiplier is the maximum of `world` draws, sampled directly as
 * F^-1(U^(1/world)). every_rank mode simulates each rank with its own draw
 * (the same distribution of step times, at world-times the cost).
 *
 * Interference: compute that runs while a collective is executing takes
 * compute_slowdown times longer, and a collective that runs while ranks
 * compute takes comm_slowdown times longer (both measured by calibration).
 * A bucket's communication-stream work may be partly CPU work (a hook's
 * callbacks: casts back, PowerSGD's GEMMs and passes); for that share,
 * bucket_cpu_frac, both it and the compute beside it take cpu_slowdown
 * times longer instead, as two CPU-bound threads of a rank share its cores.
 * Another share, bucket_idle_frac, is waiting with the CPUs idle (a hook's
 * small allreduces waking up between its CPU work): neither side slows the
 * other there. The factors blend by those shares: (1 - f - g) x the network
 * factor + f x cpu_slowdown + g.
 *
 * With random_idle, that waiting is not the same every step: each step
 * draws each bucket's wait afresh from an exponential distribution whose
 * mean is the bucket's idle share of bucket_comm_s. The draws are
 * stratified: the steps take the distribution's strata of equal
 * probability in a seeded random order, each its stratum's mean, so their
 * mean wait is the given one however few steps are simulated. What a long
 * wait costs the step is not won back by a short one, which the next
 * bucket's launch or the backward pass bounds, so the mean step is longer
 * than the step of the mean wait.
 *
 * On CPUs the network factors depend on how fast the collective moves bytes:
 * the communication's CPU time is spent per byte (copies, the TCP stack, the
 * reduction), so at k times the bus bandwidth at which the factors were
 * calibrated it needs k times the CPUs, which it takes from the compute
 * thread of its rank once the rank's CPUs run out.
 * sim_step_scale_interference derives a bucket's factors from the calibrated
 * ones and k; the per-bucket arrays carry them into the step.
 *
 * Where every factor of a step is exactly 1 (no interference, which is what
 * datasheet profiles say), no rank's compute depends on a collective or on
 * another rank: each rank's task ends are sums of its own work, and a
 * collective starts when the last rank has launched it and the one before
 * has ended. The step is then computed rank by rank with the same integer
 * arithmetic the events would do, with no event queue (the results, event
 * counts included, are the same bytes; tests/unit/test_step.c compares
 * them); a trace, or events_only, runs the events.
 *
 * Event by event, rank tasks scheduled one right after another for the same
 * end time share one engine event that runs them in that order, and a
 * change of rate cancels those events and schedules every task anew in rank
 * order: the tasks run in the order, and give the bytes, of one event each,
 * at a cost per distinct end time rather than per rank where ranks keep in
 * step.
 */
#ifndef SIM_STEP_H
#define SIM_STEP_H

#include "sim/engine.h"

#include "core/profile.h"
#include "core/trace.h"

#include <stdint.h>

typedef struct sim_step_cfg {
  int n_layers;
  const double *fwd_s;            /* [n_layers] forward time of a nominal rank */
  const double *bwd_s;            /* [n_layers] backward time */
  const double *copy_s;           /* [n_layers] copying its gradients into buckets; NULL = none */
  const char *const *layer_names; /* for the trace; may be NULL */
  int n_buckets;
  const int *bucket_ready_layer;  /* [n_buckets] lowest layer index holding one of its tensors */
  const double *bucket_comm_s;    /* [n_buckets] collective time */
  const double *bucket_bytes;     /* [n_buckets] for the trace */
  const double *bucket_cpu_frac;  /* [n_buckets] share of bucket_comm_s that is CPU work; NULL = none */
  const double *bucket_idle_frac; /* [n_buckets] share that is waiting on idle CPUs; NULL = none */
  int random_idle;                /* 1: that wait drawn afresh each step (above) */
  double finalize_s;              /* after the last allreduce: copy-out of averaged grads */
  double optimizer_s;
  /* A collective after every rank's optimizer step, on no rank's compute
   * (ZeroRedundancyOptimizer sending each rank's updated shard to the
   * others); 0: none. */
  double post_step_comm_s;
  int overlap;
  double compute_slowdown; /* >= 1 */
  double comm_slowdown;    /* >= 1: a collective while any rank computes */
  double cpu_slowdown;     /* >= 1: CPU work on the communication stream beside compute;
                                   * 0 is taken as 1 */
  /* [n_buckets] the network factors for each bucket's collective, in place
   * of compute_slowdown and comm_slowdown; NULL = those for every bucket. */
  const double *bucket_compute_slowdown;
  const double *bucket_comm_slowdown;
  int world;
  int every_rank;
  enum core_jitter_dist jitter;
  double jitter_params[2];
  int steps; /* steps to simulate; results are means */
  uint64_t seed;
  int trace_ranks; /* ranks written to the trace (first step only) */
  int events_only; /* 1: event by event even where nothing couples the ranks
                                   * (tests compare the two ways) */
} sim_step_cfg;

typedef struct sim_step_result {
  double step_s, compute_s, comm_s, exposed_comm_s; /* means over the simulated steps */
  double step_sd_s, step_min_s, step_max_s;
  uint64_t events;
  int ranks_simulated;
  int direct_steps; /* steps computed rank by rank, without events (decoupled) */
} sim_step_result;

/* The step's exposed communication, step_s - compute_s; a value under 1 ns
 * (or negative) reads 0. The two come from different sums (the step's events
 * or replay against its compute alone), whose rounding differs by less than
 * that where no rank waits. */
double sim_step_exposed(double step_s, double compute_s);

/* Mean of the jitter distribution, the divisor that normalizes draws. */
double sim_jitter_mean(enum core_jitter_dist d, const double params[2]);
/* Quantile of the maximum of n draws for upper-tail probability q = 1 - U^(1/n). */
double sim_jitter_upper_quantile(enum core_jitter_dist d, const double params[2], double q);

/* Interference factors at k times the bus bandwidth at which compute_sd and
 * comm_sd were measured, where that communication kept comm_cpus CPUs busy
 * and a rank may use rank_cpus (its quota, or its share of its host). At k
 * times the rate the communication asks for k x comm_cpus. While it and one
 * compute thread fit in rank_cpus, CPU time costs neither anything; beyond,
 * the two runnable threads share the rank's CPUs (Linux CFS), compute keeps
 * what the communication leaves, and the communication, short of what it
 * asks, slows by asked / granted. Each calibrated factor is scaled by the
 * ratio of that CPU slowdown at k to the one at the calibrated rate: what
 * the factors hold beyond CPU time (caches, memory bandwidth, waking up)
 * stays as measured. k = 1 returns the calibrated factors; nothing to scale
 * (comm_cpus or rank_cpus 0) returns them too; results are at least 1. */
void sim_step_scale_interference(
    double compute_sd, double comm_sd, double k, double comm_cpus, double rank_cpus, double *sc, double *sm);

/* e is reused between calls (reset inside). trace may be NULL. */
int sim_step_run(const sim_step_cfg *c, sim_engine *e, sim_step_result *r, core_trace *trace);

#endif

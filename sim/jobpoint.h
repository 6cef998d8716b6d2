/*
 * jobpoint — a scenario point's whole run: the job level's parameters
 * (sim/job.h) from the scenario, the profile and the point's own topology,
 * its Monte Carlo, and its price per hour (sim/cost.h).
 *
 * Checkpoints hold the parameters and the optimizer's state in fp32 (or
 * checkpoint.state_GB, a training state of another size).
 * Unsharded, rank 0 writes them all and every node reads the whole file
 * back on restart, through the storage's aggregate cap. Sharded (PyTorch's
 * distributed checkpoint), every node writes its share; on restart every
 * node reads only its share, at its share of the storage's bandwidth, and
 * the shares are exchanged over the fabric as an allgather of the whole
 * state (every replica needs all of it). checkpoint.cost_s sets the write
 * (blocking in sync mode, in the background after a snapshot in async
 * mode), failures.load_s and failures.restart_s the rest of a recovery.
 */
#ifndef SIM_JOBPOINT_H
#define SIM_JOBPOINT_H

#include "sim/engine.h"
#include "sim/job.h"
#include "sim/predict.h"
#include "sim/scenario.h"

/* The job level's parameters of a point whose step level r already holds
 * (r->step_s): failures, recovery, checkpoint costs, replications and the
 * bound on events (simulation.max_events); no progress hook. The seed is
 * the point's crn_index's, so points with the same nodes, devices per node
 * and failure distribution draw the same failures. load (may be NULL) receives
 * the load's two parts, reading and exchanging. */
int sim_jobpoint_params(
    const sim_scenario *s, const sim_point *p, const sim_point_result *r, sim_job_params *jp, double load[2]);

/* Steps the job trains: job.steps; job.hours at this step time; or
 * job.samples over this point's global batch. */
double sim_jobpoint_steps(const sim_scenario *s, const sim_point *p, double step_s);

/* The job level of such a point: its Monte Carlo of `replications` runs
 * from replication first_rep, into r (its job-level fields). progress (may
 * be NULL) is called with the events run since its last call. A point that
 * cannot run (r->status other than ok) has no run: r->has_job stays 0 and
 * its run's figures are NaN. */
int sim_jobpoint_run(const sim_scenario *s, const sim_point *p, int first_rep, int replications, sim_engine *e,
    void (*progress)(void *ctx, uint64_t events), void *ctx, sim_point_result *r);

/* Checkpoint bytes: checkpoint.state_GB, or the point's model's parameters
 * and optimizer state in fp32. */
double sim_jobpoint_ckpt_bytes(const sim_scenario *s, const sim_point *p);

/* Dollars per hour of the point with prices (0 without). */
double sim_jobpoint_usd_per_hour(const sim_scenario *s, const sim_point *p);

#endif

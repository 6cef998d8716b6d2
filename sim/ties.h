/*
 * ties — the best checkpoint interval of a group of points that differ only
 * in it, and the intervals that cannot be told from the best: each compared
 * with the best replication by replication over the same failures (common
 * random numbers: sim/jobpoint.h), by the 95% interval of the difference
 * in goodput (ratios of means, their linearized terms paired run by run:
 * sim_job_paired). An interval whose difference interval holds zero
 * is a tie; while such a difference is wider than the tolerance, more
 * replications could still tell them apart.
 */
#ifndef SIM_TIES_H
#define SIM_TIES_H

#include "sim/predict.h"

/* res[0..n) is one group (the same replications each). Writes
 * best_every_s, best_goodput_lo/hi and ties into every point of it; returns
 * 1 when some tie is wider than tol (more replications would help), else 0. */
int sim_ties_decide(sim_point_result *res, long n, double tol);

#endif

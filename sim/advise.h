/*
 * advise — search what a scenario lets the user change (its arrays of
 * nodes, devices per node, networks, backends, precisions, batches, bucket
 * caps, overlap, compression, algorithms, checkpoint intervals and modes,
 * spares) for the points that train its job fastest or cheapest, without
 * simulating the whole product when the objective is the time to train or
 * the cost:
 *
 * - The product splits into hardware configurations (network, backend,
 *   precision, batch, devices per node, nodes), the communication settings
 *   of DDP within one (bucket cap, overlap, compression, algorithm, unused
 *   parameters), and the job's (checkpoint mode, spares, interval).
 * - Within a hardware configuration the price per hour does not depend on
 *   DDP's settings and the time to train grows with the step time, so only
 *   the settings with the shortest step can be on the front of time against
 *   cost; the job level runs for those alone.
 * - Bounds prune: a hardware configuration's time to train is at least its
 *   steps at one device's compute time (sim_predict_compute_s), its cost at
 *   least that time at its price; a job setting's time at least the steps
 *   at the simulated step time. A region whose bounds an evaluated point
 *   beats in both time and cost cannot hold a point of the front, nor the
 *   best point under a deadline or a budget, and is not simulated.
 *   Configurations are taken in order of their bound, fastest first.
 * - For one job setting the price per hour is fixed, so only the interval
 *   with the shortest time counts: a local search over the intervals from
 *   the one nearest Daly's optimum, while the time falls.
 *
 * - At one node the inter-node network carries nothing (sim/predict.h
 *   builds no inter-node link), so its choice is collapsed to one: the
 *   cheapest network per node-hour (the first of equal price), and the
 *   other networks' one-node configurations are not simulated. Other
 *   settings stay distinct at one GPU: the step model still costs a
 *   compression hook's work and the buckets' copies there.
 *
 * For any other objective, and with `exhaustive`, every point of the
 * product that can run (and is not collapsed) is simulated (sim/advice.h then checks the search:
 * bench/advise-pareto.sh). Points are simulated with the same seeds as
 * `ddpsim simulate`, so a point's numbers are the same whichever way it was
 * reached, and the result does not depend on the number of workers: the
 * search runs in batches of a fixed size, each decided from the points
 * before it.
 */
#ifndef SIM_ADVISE_H
#define SIM_ADVISE_H

#include "sim/predict.h"
#include "sim/scenario.h"

typedef struct sim_advise_opts {
  int jobs;                /* worker threads; <= 0: one per online CPU */
  int exhaustive;          /* every point of the product, nothing pruned */
  int progress;            /* report on stderr (core/progress.h) once the search runs progress_after_s */
  double progress_after_s; /* CORE_PROGRESS_AFTER_S for the command; 0 in tests */
} sim_advise_opts;

/* Parts of a run's wall time, the bottlenecks a recommendation removes. */
enum sim_advice_part {
  SIM_PART_COMPUTE = 0,
  SIM_PART_EXPOSED_COMM,
  SIM_PART_CKPT,
  SIM_PART_LOST,
  SIM_PART_DOWN,
  SIM_N_PARTS
};

/* One simulated point: its step and job levels (the replications
 * themselves not kept), and what sim/advice.h makes of it. */
typedef struct sim_advised {
  sim_point_result r;
  double steps;                /* steps it trains */
  double parts_h[SIM_N_PARTS]; /* its wall time in parts, hours */
  int feasible;                /* within the deadline and the budget */
  int pareto;                  /* on the front of time to train against cost */
  long rank;                   /* 1: the recommendation */
  int bottleneck;              /* the part it removes most against the scenario as given; -1: none */
  char why[320];
} sim_advised;

typedef struct sim_advice {
  long n;
  sim_advised *pts;           /* in point order */
  long baseline;              /* the scenario as given (its point 0) in pts */
  long full_points;           /* points of the product */
  long step_configs;          /* step-level configurations of the product */
  long step_simulated;        /* of which simulated */
  long groups, groups_pruned; /* hardware configurations, pruned before their step level */
  long groups_collapsed;      /* one-node configurations on another network than net_one */
  int net_one;                /* the network of one-node configurations (index in the scenario) */
  long job_pruned;            /* job settings pruned after their step level */
  long timeouts;              /* simulated step configurations that time out */
  long ooms;                  /* and that do not fit in the GPUs' memory (sim/memfit.h); neither kind is advised */
  char base_status[16];       /* the scenario as given: its step level's status ("ok", "timeout", "oom") */
  int pruned_search;          /* bounds were used (objective time or cost, not exhaustive) */
} sim_advice;

/* What advise may search: a job group, one model, one value of every
 * number the cluster has rather than the user chooses (failure rates,
 * detection, repair, restart, load and checkpoint costs), something to
 * choose, and the same work at every point (job.samples when the global
 * batch varies). CORE_EINVAL with file:line otherwise. */
int sim_advise_check(const sim_scenario *s);

int sim_advise_run(const sim_scenario *s, const sim_advise_opts *o, sim_advice *out);
void sim_advice_free(sim_advice *a);

#endif

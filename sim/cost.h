/*
 * cost — what a point of a study costs: compute at a price per GPU-hour or
 * node-hour (the scenario's cost group, else the profile's price group),
 * the network at its price per node-hour (each network of the scenario may
 * have one), spare nodes billed like the job's own (a spare must be held to
 * be there), and the checkpoint storage: per hour of the run, and per
 * GB-month of the checkpoints kept. The cost of a run is its price per hour
 * times its wall time. Prices are list prices the user gives; nothing here
 * knows one.
 */
#ifndef SIM_COST_H
#define SIM_COST_H

#include "core/profile.h"

#include <libconfig.h>

typedef struct sim_prices {
  int priced;                  /* compute has a price: cost columns are written */
  double gpu_hour_usd;         /* per GPU (device) and hour, or */
  double node_hour_usd;        /* per node and hour */
  double storage_hour_usd;     /* the checkpoint storage system, per hour of the run */
  double storage_GB_month_usd; /* capacity of the checkpoints kept, per GB and month */
  int ckpt_kept;               /* checkpoints kept on the storage */
  /* For messages: where the compute price comes from ("cost.gpu_hour_usd",
   * "profile price.node_hour_usd"), and the group, NULL when none. */
  char source[64];
  const config_setting_t *group;
} sim_prices;

/* The scenario's cost group (from its root), or else the profile's price. */
int sim_cost_parse(const config_setting_t *root, const core_profile *pr, sim_prices *out);

/* Hours in a month for GB-month prices: 730, the month of the cloud price
 * lists (365 x 24 / 12). */
#define SIM_HOURS_PER_MONTH 730.0

/* Dollars per hour of wall time of a job on `nodes` nodes of `per_node`
 * devices with `spares` spare nodes, over a network priced at
 * net_node_hour_usd per node, keeping checkpoints of ckpt_bytes (0 without
 * checkpoints). */
double sim_cost_per_hour(
    const sim_prices *c, double net_node_hour_usd, int nodes, int per_node, long long spares, double ckpt_bytes);

#endif

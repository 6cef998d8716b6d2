/*
 * network — the inter-node networks a scenario compares (its `networks`
 * list) and `ddpsim collective --network`: a line rate, a latency, NICs per
 * node, an efficiency and an oversubscription, or the profile's measured
 * link (rescaled to another line rate when gbps is given); and, for the
 * cost of a point, what the network costs per node-hour. Every key is
 * checked with file:line, as the rest of the scenario.
 */
#ifndef SIM_NETWORK_H
#define SIM_NETWORK_H

#include "core/profile.h"

#include <libconfig.h>

typedef struct sim_network {
  char name[64];
  int from_profile;  /* use the profile's measured inter-node link (gbps > 0: rescaled to it) */
  double gbps;       /* line rate per NIC */
  double latency_us; /* per message, software stack included */
  int nics_per_node;
  double efficiency;       /* achievable fraction of the line rate */
  double oversubscription; /* fabric: >= 1 */
  double node_hour_usd;    /* the network's price per node and hour; 0 when not given */
  int priced;              /* node_hour_usd was given */
  int line;                /* where it was defined, for errors */
} sim_network;

/* One network group g (name required unless anonymous is set, when it
 * defaults to "network"); pr and profile_path are the profile it may take
 * its link from. */
int sim_network_parse(
    const config_setting_t *g, const core_profile *pr, const char *profile_path, int anonymous, sim_network *n);

/* A list of network groups with unique names; *out malloc'd. */
int sim_network_parse_list(
    const config_setting_t *list, const core_profile *pr, const char *profile_path, sim_network **out, int *n);

#endif

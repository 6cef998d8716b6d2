/*
 * fabric — the network between the nodes as switches and links: a folded
 * Clos (fat tree) of two or three tiers (leaf, spine, core), each with its
 * switch radix, oversubscription and background load; rail-optimized or
 * not; the node's own fabric (NVSwitch, NVLink, PCIe); the in-network
 * reductions it offers (SHARP, NVLink SHARP); and other jobs placed on it.
 * Racks and pods follow from the node count. The format and the model are
 * in docs/fabrics.md; the keys in scenarios/README.md.
 *
 * A collective's cost follows the flows it puts on the fabric (ring in rank
 * order, NCCL's double binary tree, hierarchical, SHARP's aggregation
 * trees): every flow takes its path through NIC, leaf and pod links, flows
 * share links max-min fairly (sim/flows.h), and the slowest flow of the
 * collective against the slowest it would have with only its NICs is the
 * fabric's slowdown of that algorithm, which scales the inter-node
 * bandwidth of the cost formulas of sim/collective.h. Other jobs' flows are
 * present in the share of time they communicate, found by predicting every
 * job's step until those shares agree (sim_fabric_costs_for).
 */
#ifndef SIM_FABRIC_H
#define SIM_FABRIC_H

#include "sim/collective.h"
#include "sim/engine.h"

#include "core/cfg.h"
#include "core/model.h"

#include <stddef.h>

struct sim_scenario;
struct sim_point;

enum sim_tier { SIM_TIER_LEAF = 0, SIM_TIER_SPINE, SIM_TIER_CORE, SIM_N_TIERS };
enum sim_intra_kind { SIM_INTRA_PROFILE = 0, SIM_INTRA_NVSWITCH, SIM_INTRA_NVLINK, SIM_INTRA_PCIE };
enum sim_placement { SIM_PLACE_PACKED = 0, SIM_PLACE_INTERLEAVED, SIM_PLACE_RANDOM };
enum sim_rank_order { SIM_ORDER_RACK = 0, SIM_ORDER_RANDOM };

typedef struct sim_fabric_tier {
  int present;
  int ports;                  /* switch radix */
  double oversub;             /* node- (or down-) facing ports over up ports */
  double background;          /* share of the tier's uplink capacity other traffic holds */
  const config_setting_t *at; /* the tier's group, for errors */
} sim_fabric_tier;

/* Another job on the same fabric: the study's point with another model,
 * node count and batch (and, if given, precision); with traffic off, a job
 * that holds its nodes and does not communicate (the same placement with
 * nothing of its own on the links, to compare with). */
typedef struct sim_fabric_job {
  char name[64];
  core_model *model;
  int nodes, batch;
  int precision; /* enum sim_precision; -1: the point's */
  int traffic;   /* 0: its nodes are taken but it puts nothing on the fabric */
  const config_setting_t *at;
} sim_fabric_job;

typedef struct sim_fabric {
  char name[64];
  sim_fabric_tier tier[SIM_N_TIERS];
  int n_tiers; /* 2 or 3 */
  int rail_optimized;
  int leaves_per_rack; /* 0: the default (NICs per node if rail-optimized, else 1) */
  enum sim_intra_kind intra;
  double intra_GBps; /* 0: the profile's intra-node link */
  int sharp, nvls;   /* in-network reductions offered */
  enum sim_placement placement;
  enum sim_rank_order rank_order;
  int n_jobs;
  sim_fabric_job *jobs;
  int line;
  const config_setting_t *at;
} sim_fabric;

/* The fabric built for a number of nodes with `rails` NICs each. */
typedef struct sim_fabric_layout {
  int rails, nodes;
  int leaf_down, leaf_up;                              /* ports of a leaf towards nodes and spines */
  int leaves_per_rack, nodes_per_rack, nodes_per_leaf; /* nodes_per_leaf: rail-optimized, per rail */
  int spine_down, spine_up;
  int leaves_per_pod, racks_per_pod, spines_per_pod;
  int racks, leaves, pods;
  long max_nodes;
  double nic_Bps, leaf_up_Bps, pod_up_Bps; /* one NIC; a leaf's and a pod's uplinks, after background */
} sim_fabric_layout;

/* Read the scenario's `fabric` (a group, or a list of named groups, one
 * sweep dimension) into s->fabrics and check it against every network and
 * node count of the study. No fabric: s->n_fabrics = 0. */
int sim_fabric_parse(struct sim_scenario *s, const config_setting_t *root);
void sim_fabric_free_all(struct sim_fabric *f, int n);

/* Sizes for `nodes` nodes of `rails` NICs at nic_Bps each; CORE_EINVAL
 * with the reason (file:line of the fabric key at fault) when the fabric
 * cannot be built or cannot hold them. */
int sim_fabric_layout_for(const sim_fabric *f, long nodes, int rails, double nic_Bps, sim_fabric_layout *L);

/* Does NCCL run NVLS with per_node GPUs in a node? Not with 2 or fewer
 * (NCCL's ncclNvlsInit; see docs/fabrics.md). */
int sim_fabric_nvls_runs(int per_node);

/* What a point's fabric made of its collectives (CSV columns). */
typedef struct sim_fabric_result {
  int racks, pods, other_gpus;
  int used_algo;     /* the algorithm of a bucket_cap_mb allreduce */
  double slowdown;   /* the fabric's slowdown of that algorithm */
  double busbw_GBps; /* that allreduce's bus bandwidth (nccl-tests' busbw) */
  double duty;       /* share of the step this job's collectives run */
} sim_fabric_result;

/* Per-algorithm costs of a point on its fabric. */
typedef struct sim_fabric_costs {
  sim_topo topo[SIM_N_ALGOS]; /* the point's topology with each algorithm's slowdown */
  double slowdown[SIM_N_ALGOS];
  int sharp, nvls;
  sim_fabric_result res;
} sim_fabric_costs;

/* Slowdowns given from outside (the contention loop predicts every job with
 * its slowdowns fixed, one representative rank). */
typedef struct sim_fabric_given {
  double slowdown[SIM_N_ALGOS];
} sim_fabric_given;

/* Costs of point p (p->fabric set) on its fabric, from the topology the
 * network and profile give (base): the layout, the flows of each
 * algorithm, and with other jobs the agreement of everyone's share of time
 * communicating (each job's step predicted on e). */
int sim_fabric_costs_for(
    const struct sim_scenario *s, const struct sim_point *p, const sim_topo *base, sim_engine *e, sim_fabric_costs *fc);

/* Allreduce time on the fabric: the algorithm asked for, or with auto
 * NCCL's choice among ring, tree and the in-network reductions the fabric
 * offers (Gloo: its segmented ring); *used the algorithm (may be NULL). */
double sim_fabric_allreduce(const sim_fabric_costs *fc, enum sim_backend b, int algorithm, double bytes, int *used);

#endif

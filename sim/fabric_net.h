/*
 * fabric_net — the links of a laid-out fabric and the flows collectives put
 * on them (internal to sim/fabric_cost.c; the model is in docs/fabrics.md).
 *
 * Nodes are numbered in rack order; node n's NIC c attaches to a leaf (leaf
 * c of its rack when rail-optimized, else its own leaf). Links: every NIC's
 * up and down link; every leaf's uplinks to its pod's spines and back, as
 * one pipe each way; every pod's uplinks to the core and back, likewise
 * (routing spreads a switch's flows evenly over its uplinks, the ideal of
 * ECMP or adaptive routing). A flow crosses its source NIC, the leaf pipe
 * up and down where it leaves its leaf, the pod pipes where it leaves its
 * pod, and its destination NIC.
 *
 * Flow kinds: a ring over the job's nodes in rank order, one per rail
 * (NCCL's rings keep channel c on NIC c at both ends; hierarchical's
 * inter-node rings are the same); NCCL's double binary tree over nodes
 * (ncclGetDtree, src/graph/trees.cc: a binary tree and its mirror, or its
 * shift by one for odd counts), channel c on NIC c mod rails in tree c mod
 * 2, both directions on every edge; Gloo's halving-doubling at its widest
 * step (partners half the nodes apart); SHARP's aggregation trees (each NIC
 * to its leaf and back, one stream per rail from each leaf the job uses to
 * the spines and from each pod to the core).
 */
#ifndef SIM_FABRIC_NET_H
#define SIM_FABRIC_NET_H

#include "sim/fabric.h"
#include "sim/flows.h"

#include <stdint.h>

enum sim_fnet_kind { SIM_FNET_RING = 0, SIM_FNET_TREE, SIM_FNET_HD, SIM_FNET_COLLNET, SIM_FNET_NONE, SIM_FNET_N };

typedef struct sim_fnet {
  const sim_fabric_layout *L;
  int rail_optimized;
  int n_nic_links, leaf_base, pod_base, n_links;
  double *cap_real, *cap_nic_only; /* [n_links] */
} sim_fnet;

int sim_fnet_init(sim_fnet *n, const sim_fabric *f, const sim_fabric_layout *L);
void sim_fnet_free(sim_fnet *n);

/* The nodes of each of n_jobs jobs (sizes[j] of them), in rank order, laid
 * out on the fabric's nodes by its placement and rank order; nodes[j] is
 * malloc'd (free each). */
int sim_fnet_place(const sim_fabric *f, const int *sizes, int n_jobs, uint64_t seed, int **nodes);

/* Add the flows of a collective of `kind` over nodes[0..N-1] to fl, owned
 * by owner, on `channels` NICs of each node (NCCL spreads its channels over
 * every rail; Gloo's ring uses one NIC). */
int sim_fnet_flows(
    const sim_fnet *n, enum sim_fnet_kind kind, const int *nodes, int N, int channels, int owner, sim_flows *fl);

/* The flow kind of an algorithm on N nodes. */
enum sim_fnet_kind sim_fnet_kind_of(enum sim_algo a, int N);

#endif

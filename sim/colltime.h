/*
 * colltime — one collective at many sizes, for `ddpsim collective`: its
 * predicted time on a profile and a network, and the algorithm and bus
 * bandwidth nccl-tests would print for it (NVIDIA/nccl-tests,
 * doc/PERFORMANCE.md: algbw = S / t, busbw = algbw x 2(p-1)/p for
 * allreduce, (p-1)/p for allgather and reduce-scatter, 1 for broadcast).
 * Where the profile measured this collective at this very shape (ranks and
 * nodes, over its own measured link, and the profile is not a datasheet
 * one), its fit is the prediction; anywhere
 * else the cost models of
 * sim/collective.h run on links derived from the profile and the network
 * (sim_topo_build), NCCL's allreduce taking the faster of ring and tree
 * unless an algorithm is named.
 */
#ifndef SIM_COLLTIME_H
#define SIM_COLLTIME_H

#include "sim/collective.h"
#include "sim/network.h"

#include "core/profile.h"

typedef struct sim_colltime {
  enum sim_backend backend;
  enum core_coll op;
  int algo; /* enum sim_algo, or -1: auto */
  int nodes, per_node;
  const core_prof_coll *measured; /* the profile's entry at this shape, or NULL */
  sim_topo topo;                  /* otherwise */
} sim_colltime;

/* algo: -1 for auto. Fails (CORE_EINVAL) when the profile lacks what the
 * shape needs, or the algorithm does not exist for the backend and op. */
int sim_colltime_setup(const core_profile *pr, const char *profile_path, const sim_network *n, enum sim_backend b,
    enum core_coll op, int algo, int nodes, int per_node, sim_colltime *c);

/* Seconds for a collective of S bytes (nccl-tests' size). */
double sim_colltime_at(const sim_colltime *c, double bytes);

#endif

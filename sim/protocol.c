#include "protocol.h"

#include "core/nccl_tuning.h"

#include <math.h>

/* NCCL's base and per-hop latencies (core/nccl_tuning.h) take sim's
 * protocol as their own index. */
_Static_assert(SIM_PROTO_LL == (int)CORE_NCCL_LL && SIM_PROTO_LL128 == (int)CORE_NCCL_LL128 &&
                   SIM_PROTO_SIMPLE == (int)CORE_NCCL_SIMPLE,
    "sim's protocols are NCCL's");

/* NCCL's tuning model (ncclTopoTuneModel in src/graph/tuning.cc,
 * https://github.com/NVIDIA/nccl/blob/b6475625fbca/src/graph/tuning.cc, the
 * commit sim/collective.h cites): a multi-node ring step costs at least the
 * host's post of a network send, 1 us on x86 (getNetOverhead). */
#define NET_OVERHEAD_US 1.0
/* The same source, llMaxBws: LL's bus bandwidth caps, GB/s, for one node of
 * Ampere or Hopper GPUs, and for 2 and more nodes of Intel hosts. */
static const double ll_max_GBps[3] = {87.7, 39.0, 20.4};

/* Bus bandwidth of protocol pr relative to Simple's (tuning.cc's model
 * refinements): LL carries 4 data bytes per 8-byte line and NCCL takes a
 * quarter of the ring's rate (a third for a single-node allgather or
 * broadcast) and 1/3.8 of the tree's; LL128 carries 120 of 128 bytes,
 * 0.92 of the ring's, and of the tree's 120/128 across nodes, 7/9 in one. */
static double bw_share(const sim_proto_case *c, enum sim_nccl_proto pr) {
  if (pr == SIM_PROTO_LL) {
    if (c->tree)
      return 1.0 / 3.8;
    return c->nodes > 1 || c->op == CORE_COLL_ALLREDUCE ? 0.25 : 1.0 / 3.0;
  }
  if (c->tree)
    return c->nodes > 1 ? 120.0 / 128.0 : 7.0 / 9.0;
  return 0.92;
}

double sim_proto_time(const sim_proto_case *c, enum sim_nccl_proto pr) {
  if (pr == SIM_PROTO_SIMPLE || c->hw == SIM_NCCL_HW_NONE)
    return pr == SIM_PROTO_SIMPLE ? c->simple_s : INFINITY;
  if (pr == SIM_PROTO_LL128 && c->hw != SIM_NCCL_HW_NVLINK)
    return INFINITY;
  enum core_nccl_algo a = c->tree ? CORE_NCCL_TREE : CORE_NCCL_RING;
  enum core_nccl_proto p = (enum core_nccl_proto)pr;
  double intra = core_nccl_hop_lat_us(c->hw == SIM_NCCL_HW_NVLINK ? CORE_NCCL_NVLINK : CORE_NCCL_PCI, a, p);
  if (!c->tree && c->nodes > 1 && intra < NET_OVERHEAD_US)
    intra = NET_OVERHEAD_US;
  /* The network's latency_us stands for NCCL's Simple ring figure; the
   * protocol's own hop scales with it. */
  double net = c->net_alpha_s * 1e6 * core_nccl_hop_lat_us(CORE_NCCL_NET, a, p) /
               core_nccl_hop_lat_us(CORE_NCCL_NET, CORE_NCCL_RING, CORE_NCCL_SIMPLE);
  /* A tree goes up and back down: its hops count twice. */
  double lat_us = core_nccl_base_lat_us(a, p) + (c->tree ? 2.0 : 1.0) * (c->intra_hops * intra + c->inter_hops * net);
  double bus = c->bus_Bps * bw_share(c, pr);
  if (pr == SIM_PROTO_LL) {
    double cap = ll_max_GBps[c->nodes <= 1 ? 0 : c->nodes == 2 ? 1 : 2] * 1e9;
    bus = bus < cap ? bus : cap;
  }
  return lat_us * 1e-6 + c->bus_bytes / bus;
}

double sim_proto_best(const sim_proto_case *c, enum sim_nccl_proto *which) {
  enum sim_nccl_proto best = SIM_PROTO_SIMPLE;
  double t = c->simple_s;
  for (int pr = SIM_PROTO_LL; pr < SIM_PROTO_SIMPLE; pr++) {
    double tp = sim_proto_time(c, (enum sim_nccl_proto)pr);
    if (tp < t) {
      t = tp;
      best = (enum sim_nccl_proto)pr;
    }
  }
  if (which)
    *which = best;
  return t;
}

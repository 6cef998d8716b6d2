/*
 * protocol — NCCL's three wire protocols for a topology described by a
 * datasheet: LL (8-byte lines, half of each a flag), LL128 (128-byte lines,
 * 120 bytes of data) and Simple (whole chunks with a fence). NCCL costs each
 * protocol of each algorithm with its own base latency, per-hop latencies
 * (NVLink, PCIe, network) and bus bandwidth, and runs the one it predicts
 * fastest for the size; sim/collective.c does the same for its ring and tree
 * where a profile's links came from datasheets. A calibrated profile's fit
 * already holds the switch between protocols, so it is never given this.
 */
#ifndef SIM_PROTOCOL_H
#define SIM_PROTOCOL_H

#include "core/vocab.h"

/* What joins the ranks of one node, as NCCL's tuning model tells them apart;
 * NONE: the links are measured, Simple's α and β only. */
enum sim_nccl_hw { SIM_NCCL_HW_NONE = 0, SIM_NCCL_HW_NVLINK, SIM_NCCL_HW_PCI };

/* One NCCL ring or tree collective as the cost models see it with Simple. */
typedef struct sim_proto_case {
  int tree; /* 0: ring, 1: tree (allreduce only) */
  enum core_coll op;
  enum sim_nccl_hw hw;
  int nodes;
  double intra_hops;  /* hops on the node's link (ring: steps that stay in a node; tree: per direction) */
  double inter_hops;  /* hops over the network (tree: per direction) */
  double net_alpha_s; /* the network's per-hop latency, which stands for NCCL's Simple ring figure */
  double bus_bytes;   /* bytes over the bus: S x the algorithm's busbw factor */
  double bus_Bps;     /* Simple's bus bandwidth (tree: already NCCL's tree share of it) */
  double simple_s;    /* Simple's time from the links' own α and β */
} sim_proto_case;

enum sim_nccl_proto { SIM_PROTO_LL = 0, SIM_PROTO_LL128, SIM_PROTO_SIMPLE, SIM_N_PROTOS };

/* The time of protocol pr (Simple: c->simple_s), or INFINITY where NCCL
 * does not run it (LL128 needs NVLink inside the node). */
double sim_proto_time(const sim_proto_case *c, enum sim_nccl_proto pr);

/* The least time over the protocols, and which (NULL if not wanted). */
double sim_proto_best(const sim_proto_case *c, enum sim_nccl_proto *which);

#endif

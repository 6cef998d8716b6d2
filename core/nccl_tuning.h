/*
 * nccl_tuning — the latencies of NCCL's own tuning model (ncclTopoTuneModel
 * in src/graph/tuning.cc, https://github.com/NVIDIA/nccl/blob/b6475625fbca/src/graph/tuning.cc):
 * per algorithm and protocol, a base latency and a per-hop latency on
 * NVLink, PCIe and the network, in microseconds. The simulator's protocol
 * model (sim/protocol.h) and the traced job's fixed allreduce latency
 * (calibrate/trace_scenario.c) read the one table here.
 */
#ifndef CORE_NCCL_TUNING_H
#define CORE_NCCL_TUNING_H

/* NCCL's own indices: algorithms (those modelled here), protocols, hardware. */
enum core_nccl_algo { CORE_NCCL_TREE = 0, CORE_NCCL_RING, CORE_NCCL_N_ALGOS };
enum core_nccl_proto { CORE_NCCL_LL = 0, CORE_NCCL_LL128, CORE_NCCL_SIMPLE, CORE_NCCL_N_PROTOS };
enum core_nccl_hw { CORE_NCCL_NVLINK = 0, CORE_NCCL_PCI, CORE_NCCL_NET, CORE_NCCL_N_HW };

/* baseLat[a][p]: the latency of one collective before its hops, us. */
double core_nccl_base_lat_us(enum core_nccl_algo a, enum core_nccl_proto p);

/* hwLat[hw][a][p]: the latency of one hop on hw, us. */
double core_nccl_hop_lat_us(enum core_nccl_hw hw, enum core_nccl_algo a, enum core_nccl_proto p);

#endif

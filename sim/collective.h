/*
 * collective — how long one collective takes on a described topology: ring,
 * tree, hierarchical, halving-doubling, chunked ring, bcube, Gloo's
 * whole-buffer ring and the segmented ring PyTorch's Gloo backend uses, for
 * allreduce, allgather, reduce-scatter and broadcast, with NCCL-like
 * (pipelined) and Gloo-like (step-synchronous, host-staged) behaviour.
 *
 * The formulas are those of docs/cost-models.md (MPICH / Thakur et al.
 * 2005, NCCL's tuning.cc, Gloo's algorithms); the topology decides which link
 * each step crosses: ranks of one node talk over the intra-node link, steps
 * that cross nodes use the network, and flows leaving a node at the same time
 * share its NICs. sim_coll_coeffs() gives the same formulas for a homogeneous
 * group, which is how a profile's measured fit at p ranks becomes per-link
 * α and β for other p. The in-network reductions (CollNet/SHARP, NVLS,
 * NVLS tree) are costed by the data each node moves through its NVLink and
 * NICs when the switches reduce, with NCCL's latencies and efficiency
 * factors; which fabrics offer them is sim/fabric.h's business.
 */
#ifndef SIM_COLLECTIVE_H
#define SIM_COLLECTIVE_H

#include "sim/protocol.h"

#include "core/vocab.h"

enum sim_backend { SIM_BACKEND_NCCL = 0, SIM_BACKEND_GLOO = 1 };
enum sim_algo {
  SIM_ALGO_RING = 0,         /* NCCL ring (pipelined): RS ring + AG ring */
  SIM_ALGO_TREE,             /* NCCL double binary tree across nodes, chain inside */
  SIM_ALGO_HIERARCHICAL,     /* intra RS, inter ring AR on 1/g, intra AG */
  SIM_ALGO_HALVING_DOUBLING, /* Rabenseifner; Gloo allreduce_halving_doubling */
  SIM_ALGO_RING_CHUNKED,     /* Gloo allreduce_ring_chunked */
  SIM_ALGO_BCUBE,            /* Gloo allreduce_bcube, base 2 */
  SIM_ALGO_GLOO_RING,        /* Gloo allreduce_ring: whole buffer around the ring */
  SIM_ALGO_SEGMENTED_RING,   /* gloo::allreduce default, what PyTorch uses */
  SIM_ALGO_COLLNET,          /* NCCL CollNet Direct: the switches reduce (SHARP) */
  SIM_ALGO_NVLS,             /* NCCL NVLS: the node's NVSwitches reduce (NVLink SHARP) */
  SIM_ALGO_NVLS_TREE,        /* NCCL NVLS inside nodes, tree across them */
  SIM_N_ALGOS
};

const char *sim_backend_name(enum sim_backend b);
const char *sim_algo_name(enum sim_algo a);
int sim_algo_parse(const char *s, enum sim_algo *out);
/* Does this backend implement this allreduce algorithm? */
int sim_algo_valid(enum sim_backend b, enum sim_algo a);
/* Does the algorithm reduce in the network's switches (collnet, nvls,
 * nvls_tree), which only a fabric that offers them runs? */
int sim_algo_in_network(enum sim_algo a);
/* The backend's algorithms that run on links alone, comma-separated, for
 * messages that list what may be given. */
const char *sim_algo_link_names(enum sim_backend b);

enum { SIM_LINK_MAX_REGIMES = 3 };

/* A link's per-message latency and per-byte time. One regime for a link
 * described by a datasheet; up to three for one measured by calibration,
 * each valid for collectives up to max_bytes at p_ref ranks: a collective of
 * S bytes on p ranks moves chunks like one of S * p_ref / p bytes did in the
 * measurement, and uses that regime. */
typedef struct sim_link {
  double alpha_s; /* per message (the regime in use) */
  double beta_s;  /* per byte, one flow */
  int n_regimes;  /* 0: alpha_s/beta_s hold for every size */
  int p_ref;
  double max_bytes[SIM_LINK_MAX_REGIMES];
  double alpha[SIM_LINK_MAX_REGIMES], beta[SIM_LINK_MAX_REGIMES];
} sim_link;

struct sim_fabric_costs;

typedef struct sim_topo {
  int nodes, per_node;
  sim_link intra;  /* between ranks of one node (aggregate per rank) */
  sim_link inter;  /* one flow between nodes */
  int rails;       /* flows NCCL spreads over a node's NICs; 1 for Gloo */
  double node_Bps; /* all of a node's NICs, after oversubscription */
  double gamma_s;  /* host reduction, s per byte (0 when folded into β) */
  double stage_s;  /* device<->host staging, s per byte of message (Gloo on GPUs) */
  double launch_s; /* fixed cost per call */
  /* NCCL on links from datasheets: what joins a node's ranks, and NCCL's
   * ring and tree take the fastest of its LL, LL128 and Simple protocols
   * (sim/protocol.h); SIM_NCCL_HW_NONE (measured links): Simple's α and β. */
  enum sim_nccl_hw nccl_hw;
  /* The point's fabric (sim/fabric.h), or NULL: each algorithm's topology
   * there, for the allreduce a bucket makes (sim_predict_allreduce). */
  const struct sim_fabric_costs *fabric;
} sim_topo;

/* Time in seconds of one collective of S bytes (nccl-tests' S). */
double sim_coll_time(enum sim_backend b, enum core_coll op, enum sim_algo a, const sim_topo *t, double bytes);

/* For p ranks on one kind of link: T = a*alpha + b*S*beta. Returns 0, or
 * CORE_EINVAL for combinations that have no single-link form. */
int sim_coll_coeffs(enum sim_backend bk, enum core_coll op, enum sim_algo a, int p, double *ca, double *cb);

/* NCCL's tree bandwidth factors (src/graph/tuning.cc): tree allreduce gets
 * 0.92 of the bus bandwidth, and algorithm bandwidth is half of it. */
#define SIM_NCCL_TREE_BW_FACTOR 0.92

/* NCCL's estimates for its in-network algorithms, Simple protocol
 * (NVIDIA/nccl src/graph/tuning.cc at commit b6475625fbca, hwLat and
 * ncclTopoTuneModel): CollNet Direct's NVLink and network latencies, its
 * 0.4 us per local rank of arity serialization and its bus bandwidth times
 * 0.85 on compute capability 9.0; NVLS's NVLink latency, NVLS's and NVLS
 * Tree's network latencies, and their bus to algorithm bandwidth of 5/6. */
#define SIM_NCCL_COLLNET_INTRA_LAT_S 3.7e-6
#define SIM_NCCL_COLLNET_NET_LAT_S 31e-6
#define SIM_NCCL_COLLNET_ARITY_S 0.4e-6
#define SIM_NCCL_COLLNET_BW_FACTOR 0.85
#define SIM_NCCL_NVLS_INTRA_LAT_S 23e-6
#define SIM_NCCL_NVLS_NET_LAT_S 18e-6
#define SIM_NCCL_NVLS_BW_FACTOR (5.0 / 6.0)

#endif

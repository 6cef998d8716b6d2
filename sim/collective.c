#include "collective.h"

#include "core/err.h"

#include <math.h>
#include <string.h>

static const char *const algo_names[SIM_N_ALGOS] = {"ring", "tree", "hierarchical", "halving_doubling", "ring_chunked",
    "bcube", "gloo_ring", "segmented_ring", "collnet", "nvls", "nvls_tree"};

const char *sim_backend_name(enum sim_backend b) { return b == SIM_BACKEND_NCCL ? "nccl" : "gloo"; }

const char *sim_algo_name(enum sim_algo a) { return (unsigned)a < SIM_N_ALGOS ? algo_names[a] : "?"; }

int sim_algo_parse(const char *s, enum sim_algo *out) {
  for (int i = 0; i < SIM_N_ALGOS; i++)
    if (strcmp(s, algo_names[i]) == 0) {
      *out = (enum sim_algo)i;
      return 0;
    }
  return CORE_EINVAL;
}

int sim_algo_valid(enum sim_backend b, enum sim_algo a) {
  if (b == SIM_BACKEND_NCCL)
    return a == SIM_ALGO_RING || a == SIM_ALGO_TREE || a == SIM_ALGO_HIERARCHICAL || a == SIM_ALGO_COLLNET ||
           a == SIM_ALGO_NVLS || a == SIM_ALGO_NVLS_TREE;
  return a == SIM_ALGO_HALVING_DOUBLING || a == SIM_ALGO_RING_CHUNKED || a == SIM_ALGO_BCUBE ||
         a == SIM_ALGO_GLOO_RING || a == SIM_ALGO_SEGMENTED_RING || a == SIM_ALGO_HIERARCHICAL;
}

int sim_algo_in_network(enum sim_algo a) {
  return a == SIM_ALGO_COLLNET || a == SIM_ALGO_NVLS || a == SIM_ALGO_NVLS_TREE;
}

const char *sim_algo_link_names(enum sim_backend b) {
  return b == SIM_BACKEND_NCCL ? "ring, tree, hierarchical"
                               : "segmented_ring, gloo_ring, ring_chunked, halving_doubling, bcube, hierarchical";
}

static double max2(double a, double b) { return a > b ? a : b; }

/* Per-byte time of the slowest link a ring crosses. A ring enters and leaves
 * each node once, so one flow per rail crosses a node's NICs. */
static double ring_beta(const sim_topo *t) {
  double beta = t->per_node > 1 ? t->intra.beta_s : 0;
  if (t->nodes > 1) {
    double flows_Bps = (double)t->rails / t->inter.beta_s;
    double node = t->node_Bps > 0 && t->node_Bps < flows_Bps ? t->node_Bps : flows_Bps;
    beta = max2(beta, 1.0 / node);
  }
  return beta;
}

/* Per-byte time of a step in which every rank of a node talks to a rank on
 * another node at once (halving-doubling, hierarchical inter phase). */
static double crossing_beta(const sim_topo *t, int flows_per_node) {
  double beta = t->inter.beta_s;
  if (t->node_Bps > 0)
    beta = max2(beta, (double)flows_per_node / t->node_Bps);
  return beta;
}

static double slowest_alpha(const sim_topo *t) {
  return t->nodes > 1 ? max2(t->inter.alpha_s, t->per_node > 1 ? t->intra.alpha_s : 0) : t->intra.alpha_s;
}

static int ilog2_floor(int p) {
  int k = 0;
  while ((1 << (k + 1)) <= p)
    k++;
  return k;
}

static double nccl_ring(enum core_coll op, const sim_topo *t, double S) {
  int p = t->nodes * t->per_node, N = t->nodes;
  double steps, inter, factor;
  switch (op) {
  case CORE_COLL_ALLREDUCE:
    steps = 2.0 * (p - 1);
    inter = 2.0 * (N - 1);
    factor = 2.0 * (p - 1) / p;
    break;
  case CORE_COLL_BROADCAST:
    steps = p - 1;
    inter = N - 1;
    factor = 1.0;
    break;
  default:
    steps = p - 1;
    inter = N - 1;
    factor = (double)(p - 1) / p;
    break;
  }
  /* NCCL pipelines chunks along the ring, so hop latencies add up while the
   * bandwidth term is set by the slowest link (tuning.cc ring model). */
  double lat = (steps - inter) * t->intra.alpha_s + inter * t->inter.alpha_s;
  double red = (op == CORE_COLL_ALLREDUCE || op == CORE_COLL_REDUCESCATTER) ? S * (p - 1) / p * t->gamma_s : 0;
  double T = lat + S * factor * ring_beta(t) + red;
  if (t->nccl_hw == SIM_NCCL_HW_NONE)
    return T;
  sim_proto_case c = {.op = op,
      .hw = t->nccl_hw,
      .nodes = N,
      .intra_hops = steps - inter,
      .inter_hops = inter,
      .net_alpha_s = t->inter.alpha_s,
      .bus_bytes = S * factor,
      .bus_Bps = 1.0 / ring_beta(t),
      .simple_s = T};
  return sim_proto_best(&c, NULL);
}

static double nccl_tree(const sim_topo *t, double S) {
  int N = t->nodes, g = t->per_node;
  double up = ceil(log2((double)N));
  double lat = 2.0 * ((g - 1) * t->intra.alpha_s + up * t->inter.alpha_s);
  double T = lat + 2.0 * S * ring_beta(t) / SIM_NCCL_TREE_BW_FACTOR + S * t->gamma_s;
  if (t->nccl_hw == SIM_NCCL_HW_NONE)
    return T;
  sim_proto_case c = {.tree = 1,
      .op = CORE_COLL_ALLREDUCE,
      .hw = t->nccl_hw,
      .nodes = N,
      .intra_hops = g - 1,
      .inter_hops = up,
      .net_alpha_s = t->inter.alpha_s,
      .bus_bytes = 2.0 * S,
      .bus_Bps = SIM_NCCL_TREE_BW_FACTOR / ring_beta(t),
      .simple_s = T};
  return sim_proto_best(&c, NULL);
}

/* docs/cost-models.md, hierarchical allreduce. */
static double hierarchical(const sim_topo *t, double S) {
  int N = t->nodes, g = t->per_node;
  double T = 0;
  if (g > 1)
    T += 2.0 * (g - 1) * t->intra.alpha_s + 2.0 * S * (g - 1) / g * t->intra.beta_s + S * (g - 1) / g * t->gamma_s;
  if (N > 1) {
    /* g inter-node allreduces run at once, one per local rank. */
    double Sg = S / g;
    T +=
        2.0 * (N - 1) * t->inter.alpha_s + 2.0 * Sg * (N - 1) / N * crossing_beta(t, g) + Sg * (N - 1) / N * t->gamma_s;
  }
  return T;
}

/* A node's bandwidth out through its NICs (all rails), as the ring sees it. */
static double node_net_Bps(const sim_topo *t) {
  double flows_Bps = (double)t->rails / t->inter.beta_s;
  return t->node_Bps > 0 && t->node_Bps < flows_Bps ? t->node_Bps : flows_Bps;
}

/* CollNet Direct (SHARP): a node's ranks reduce-scatter to the ranks that
 * own a NIC, each sends its share up the switches' aggregation tree once
 * and gets the sum back, then the node gathers it: each rank's NVLink
 * carries 2(g-1)/g of the buffer, each NIC 1/rails of it each way, however
 * many nodes; the stages pipeline, the slower sets the pace. NCCL slows it
 * where ranks outnumber NICs (factor g/R - (g/R - 1)/2, tuning.cc). */
static double nccl_collnet(const sim_topo *t, double S) {
  int N = t->nodes, g = t->per_node;
  double lat = 2.0 * ((g > 1 ? SIM_NCCL_COLLNET_INTRA_LAT_S : 0) + (g - 1) * SIM_NCCL_COLLNET_ARITY_S) +
               (N > 1 ? SIM_NCCL_COLLNET_NET_LAT_S : 0);
  double intra = g > 1 ? 2.0 * (g - 1) / g * t->intra.beta_s : 0, net = N > 1 ? 1.0 / node_net_Bps(t) : 0;
  double ratio = t->rails > 0 && g > t->rails ? (double)g / t->rails : 1.0;
  ratio -= (ratio - 1.0) / 2.0;
  return lat + S * (intra > net ? intra : net) * ratio / SIM_NCCL_COLLNET_BW_FACTOR + S * t->gamma_s;
}

/* NVLS: the NVSwitches reduce, each rank sends its buffer once and reads
 * the sum once; across nodes (with SHARP) a node's NICs carry it once each
 * way. NVLS tree: NVLS in the node, a tree across nodes, whose NICs carry
 * twice the buffer beyond two nodes (tuning.cc: bwInter/2). Algorithm
 * bandwidth 5/6 of the slower side's. */
static double nccl_nvls(const sim_topo *t, double S, int tree) {
  int N = t->nodes;
  double intra_Bps = t->per_node > 1 ? 1.0 / t->intra.beta_s : INFINITY, bw = intra_Bps, lat;
  if (N > 1) {
    double net = node_net_Bps(t) / (tree && N > 2 ? 2.0 : 1.0);
    bw = net < bw ? net : bw;
  }
  if (tree && N > 1)
    lat = SIM_NCCL_NVLS_INTRA_LAT_S + 2.0 * ceil(log2((double)N)) * t->inter.alpha_s;
  else
    lat = SIM_NCCL_NVLS_INTRA_LAT_S + (N > 1 ? SIM_NCCL_NVLS_NET_LAT_S : 0);
  return lat + S / (SIM_NCCL_NVLS_BW_FACTOR * bw);
}

/* Gloo's halving-doubling: partner rank ^ 2^i, so the first steps, which
 * move the most data, stay inside a node when ranks are packed per node. A
 * non-power-of-two group first folds the extra ranks in (one exchange of the
 * whole buffer each way), an approximation of Gloo's binary blocks. */
static double halving_doubling(const sim_topo *t, double S, int radix_log) {
  int p = t->nodes * t->per_node;
  int k = ilog2_floor(p), pp = 1 << k;
  double T = 0;
  if (pp != p)
    T += 2.0 * (slowest_alpha(t) + S * ring_beta(t)) + S * t->gamma_s;
  double chunk = S;
  for (int i = 0; i < k; i += radix_log) {
    int dist = 1 << i;
    int r = (i + radix_log <= k) ? (1 << radix_log) : 2;
    double part = chunk * (r - 1) / r;
    sim_link L = dist < t->per_node ? t->intra : t->inter;
    double beta = dist < t->per_node ? L.beta_s : crossing_beta(t, t->per_node);
    /* Reduce-scatter step and the mirrored allgather step. */
    T += 2.0 * ((r - 1) * L.alpha_s + part * beta) + part * t->gamma_s;
    chunk /= r;
  }
  return T;
}

/* The regime of a measured link that a collective of S bytes on p ranks
 * falls into. */
static sim_link regime(const sim_link *l, double S, int p) {
  sim_link r = *l;
  if (l->n_regimes > 0) {
    double eq = S * l->p_ref / p;
    int k = 0;
    while (k < l->n_regimes - 1 && eq >= l->max_bytes[k])
      k++;
    r.alpha_s = l->alpha[k];
    r.beta_s = l->beta[k];
  }
  return r;
}

double sim_coll_time(enum sim_backend b, enum core_coll op, enum sim_algo a, const sim_topo *topo, double S) {
  int p = topo->nodes * topo->per_node;
  if (p <= 1 || S <= 0)
    return 0;
  sim_topo local = *topo;
  local.intra = regime(&topo->intra, S, p);
  local.inter = regime(&topo->inter, S, p);
  const sim_topo *t = &local;
  double T;
  if (b == SIM_BACKEND_NCCL) {
    if (op == CORE_COLL_ALLREDUCE && a == SIM_ALGO_TREE)
      T = nccl_tree(t, S);
    else if (op == CORE_COLL_ALLREDUCE && a == SIM_ALGO_HIERARCHICAL)
      T = hierarchical(t, S);
    else if (op == CORE_COLL_ALLREDUCE && a == SIM_ALGO_COLLNET)
      T = nccl_collnet(t, S);
    else if (op == CORE_COLL_ALLREDUCE && (a == SIM_ALGO_NVLS || a == SIM_ALGO_NVLS_TREE))
      T = nccl_nvls(t, S, a == SIM_ALGO_NVLS_TREE);
    else
      T = nccl_ring(op, t, S);
    return t->launch_s + T;
  }

  /* Gloo: every step waits for its slowest link. */
  double am = slowest_alpha(t), bm = ring_beta(t), g = t->gamma_s;
  double f = (double)(p - 1) / p;
  switch (op) {
  case CORE_COLL_ALLREDUCE:
    switch (a) {
    case SIM_ALGO_GLOO_RING: T = (p - 1) * (am + S * bm + S * g); break;
    case SIM_ALGO_RING_CHUNKED: T = 4.0 * (p - 1) * am + 2.0 * S * f * bm + S * f * g; break;
    case SIM_ALGO_HALVING_DOUBLING: T = halving_doubling(t, S, 1); break;
    case SIM_ALGO_BCUBE: T = halving_doubling(t, S, 1); break;
    case SIM_ALGO_HIERARCHICAL: T = hierarchical(t, S); break;
    default: T = 2.0 * (p - 1) * am + 2.0 * S * f * bm + S * f * g; break;
    }
    break;
  case CORE_COLL_REDUCESCATTER:
    /* As ProcessGroupGloo and the runtime run it: gloo::allreduce of the
     * whole input, then the rank's chunk (pytorch/pytorch#118911). */
    T = 2.0 * (p - 1) * am + 2.0 * S * f * bm + S * f * g;
    break;
  case CORE_COLL_ALLGATHER: T = (p - 1) * am + S * f * bm; break;
  default: /* broadcast_one_to_all: the root's link carries p-1 copies */ T = (p - 1) * (am + S * bm); break;
  }
  /* GPU tensors go to pinned host memory and back (cost-models.md, Gloo). */
  return t->launch_s + T + S * t->stage_s;
}

int sim_coll_coeffs(enum sim_backend bk, enum core_coll op, enum sim_algo a, int p, double *ca, double *cb) {
  if (p < 2)
    return core_err_set(CORE_EINVAL, "a collective fit needs at least 2 ranks");
  double f = (double)(p - 1) / p;
  if (op == CORE_COLL_REDUCESCATTER && bk == SIM_BACKEND_GLOO) { /* an allreduce, see sim_coll_time */
    *ca = 2.0 * (p - 1);
    *cb = 2.0 * f;
    return 0;
  }
  if (op == CORE_COLL_ALLGATHER || op == CORE_COLL_REDUCESCATTER) {
    *ca = p - 1;
    *cb = f;
    return 0;
  }
  if (op == CORE_COLL_BROADCAST) {
    *ca = p - 1;
    *cb = bk == SIM_BACKEND_NCCL ? 1.0 : p - 1;
    return 0;
  }
  int k = ilog2_floor(p), pow2 = (1 << k) == p;
  switch (a) {
  case SIM_ALGO_RING:
  case SIM_ALGO_SEGMENTED_RING:
    *ca = 2.0 * (p - 1);
    *cb = 2.0 * f;
    return 0;
  case SIM_ALGO_GLOO_RING:
    *ca = p - 1;
    *cb = p - 1;
    return 0;
  case SIM_ALGO_RING_CHUNKED:
    *ca = 4.0 * (p - 1);
    *cb = 2.0 * f;
    return 0;
  case SIM_ALGO_HALVING_DOUBLING:
  case SIM_ALGO_BCUBE:
    *ca = 2.0 * k + (pow2 ? 0 : 2);
    *cb = 2.0 * (1.0 - 1.0 / (1 << k)) + (pow2 ? 0 : 2);
    return 0;
  case SIM_ALGO_TREE:
    *ca = 2.0 * (p - 1);
    *cb = 2.0 / SIM_NCCL_TREE_BW_FACTOR;
    return 0;
  default:
    return core_err_set(CORE_EINVAL, "%s allreduce has no single-link form; measure ring instead", sim_algo_name(a));
  }
}

#include "fabric_net.h"

#include "core/err.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int sim_fnet_init(sim_fnet *n, const sim_fabric *f, const sim_fabric_layout *L) {
  memset(n, 0, sizeof *n);
  n->L = L;
  n->rail_optimized = f->rail_optimized;
  n->n_nic_links = 2 * L->nodes * L->rails;
  n->leaf_base = n->n_nic_links;
  n->pod_base = n->leaf_base + 2 * L->leaves;
  n->n_links = n->pod_base + (L->pods > 1 ? 2 * L->pods : 0);
  n->cap_real = malloc(sizeof *n->cap_real * (size_t)n->n_links);
  n->cap_nic_only = malloc(sizeof *n->cap_nic_only * (size_t)n->n_links);
  if (!n->cap_real || !n->cap_nic_only) {
    sim_fnet_free(n);
    return core_err_set(CORE_ENOMEM, "out of memory for a fabric of %d links", n->n_links);
  }
  for (int l = 0; l < n->n_links; l++) {
    double c = l < n->leaf_base ? L->nic_Bps : l < n->pod_base ? L->leaf_up_Bps : L->pod_up_Bps;
    n->cap_real[l] = c;
    n->cap_nic_only[l] = l < n->leaf_base ? c : INFINITY;
  }
  return 0;
}

void sim_fnet_free(sim_fnet *n) {
  free(n->cap_real);
  free(n->cap_nic_only);
  memset(n, 0, sizeof *n);
}

static int leaf_of(const sim_fnet *n, int node, int rail) {
  const sim_fabric_layout *L = n->L;
  int rack = node / L->nodes_per_rack, q = node % L->nodes_per_rack;
  if (n->rail_optimized)
    return rack * L->leaves_per_rack + rail * (L->leaves_per_rack / L->rails) + q / L->nodes_per_leaf;
  return rack * L->leaves_per_rack + q / L->nodes_per_leaf;
}

/* The links from NIC ca of node a to NIC cb of node b, into out[6]. */
static int path(const sim_fnet *n, int a, int ca, int b, int cb, int *out) {
  const sim_fabric_layout *L = n->L;
  int k = 0, la = leaf_of(n, a, ca), lb = leaf_of(n, b, cb);
  out[k++] = 2 * (a * L->rails + ca);
  if (la != lb) {
    int pa = la / L->leaves_per_pod, pb = lb / L->leaves_per_pod;
    out[k++] = n->leaf_base + 2 * la;
    if (pa != pb) {
      out[k++] = n->pod_base + 2 * pa;
      out[k++] = n->pod_base + 2 * pb + 1;
    }
    out[k++] = n->leaf_base + 2 * lb + 1;
  }
  out[k++] = 2 * (b * L->rails + cb) + 1;
  return k;
}

/* Both directions between two NICs. */
static int add_pair(const sim_fnet *n, int a, int b, int c, int owner, sim_flows *fl) {
  int p[6], k = path(n, a, c, b, c, p), rc = sim_flows_add(fl, p, k, owner);
  if (rc)
    return rc;
  k = path(n, b, c, a, c, p);
  return sim_flows_add(fl, p, k, owner);
}

static int ring_flows(const sim_fnet *n, const int *nodes, int N, int R, int owner, sim_flows *fl) {
  for (int c = 0; c < R; c++)
    for (int k = 0; k < N; k++) {
      int p[6], m = path(n, nodes[k], c, nodes[(k + 1) % N], c, p), rc = sim_flows_add(fl, p, m, owner);
      if (rc)
        return rc;
    }
  return 0;
}

/* ncclGetBtree's parent of rank r among N (root 0). */
static int btree_parent(int r, int N) {
  if (r == 0)
    return -1;
  int bit = 1;
  while (bit < N && !(bit & r))
    bit <<= 1;
  int up = (r ^ bit) | (bit << 1);
  return up >= N ? (r ^ bit) : up;
}

/* ncclGetDtree's second tree: the mirror for even N, the shift for odd. */
static int dtree_parent(int tree, int r, int N) {
  if (tree == 0)
    return btree_parent(r, N);
  if (N % 2) {
    int u = btree_parent((r - 1 + N) % N, N);
    return u < 0 ? -1 : (u + 1) % N;
  }
  int u = btree_parent(N - 1 - r, N);
  return u < 0 ? -1 : N - 1 - u;
}

static int tree_flows(const sim_fnet *n, const int *nodes, int N, int R, int owner, sim_flows *fl) {
  int channels = R > 1 ? R : 2;
  for (int c = 0; c < channels; c++)
    for (int r = 0; r < N; r++) {
      int up = dtree_parent(c % 2, r, N), rc;
      if (up >= 0 && (rc = add_pair(n, nodes[r], nodes[up], c % R, owner, fl)) != 0)
        return rc;
    }
  return 0;
}

/* Halving-doubling's widest step: rank r with r ^ h, h the highest power of
 * two below N (Gloo is one flow a node, on NIC 0). */
static int hd_flows(const sim_fnet *n, const int *nodes, int N, int owner, sim_flows *fl) {
  int h = 1;
  while (2 * h < N)
    h *= 2;
  for (int r = 0; r < N; r++) {
    int q = r ^ h;
    if (q < N) {
      int p[6], m = path(n, nodes[r], 0, nodes[q], 0, p), rc = sim_flows_add(fl, p, m, owner);
      if (rc)
        return rc;
    }
  }
  return 0;
}

/* SHARP: NIC to leaf and back; one stream a rail from each leaf the job
 * uses up to its spines and back; one a rail from each pod to the core. */
static int collnet_flows(const sim_fnet *n, const int *nodes, int N, int owner, sim_flows *fl) {
  const sim_fabric_layout *L = n->L;
  char *seen = calloc((size_t)(L->leaves + L->pods) * (size_t)L->rails, 1);
  if (!seen)
    return core_err_set(CORE_ENOMEM, "out of memory for SHARP's trees over %d leaves", L->leaves);
  int rc = 0;
  for (int k = 0; k < N && !rc; k++)
    for (int c = 0; c < L->rails && !rc; c++) {
      int up = 2 * (nodes[k] * L->rails + c), down = up + 1, leaf = leaf_of(n, nodes[k], c);
      int pod = leaf / L->leaves_per_pod;
      if ((rc = sim_flows_add(fl, &up, 1, owner)) != 0 || (rc = sim_flows_add(fl, &down, 1, owner)) != 0)
        break;
      if (N > 1 && !seen[leaf * L->rails + c]) {
        seen[leaf * L->rails + c] = 1;
        int lu = n->leaf_base + 2 * leaf, ld = lu + 1;
        if ((rc = sim_flows_add(fl, &lu, 1, owner)) != 0 || (rc = sim_flows_add(fl, &ld, 1, owner)) != 0)
          break;
      }
      if (L->pods > 1 && !seen[(L->leaves + pod) * L->rails + c]) {
        seen[(L->leaves + pod) * L->rails + c] = 1;
        int pu = n->pod_base + 2 * pod, pd = pu + 1;
        if ((rc = sim_flows_add(fl, &pu, 1, owner)) != 0)
          break;
        rc = sim_flows_add(fl, &pd, 1, owner);
      }
    }
  free(seen);
  return rc;
}

int sim_fnet_flows(
    const sim_fnet *n, enum sim_fnet_kind kind, const int *nodes, int N, int channels, int owner, sim_flows *fl) {
  int R = channels >= 1 && channels <= n->L->rails ? channels : n->L->rails;
  if (N < 2)
    return 0;
  switch (kind) {
  case SIM_FNET_RING: return ring_flows(n, nodes, N, R, owner, fl);
  case SIM_FNET_TREE: return tree_flows(n, nodes, N, R, owner, fl);
  case SIM_FNET_HD: return hd_flows(n, nodes, N, owner, fl);
  case SIM_FNET_COLLNET: return collnet_flows(n, nodes, N, owner, fl);
  default: return 0;
  }
}

enum sim_fnet_kind sim_fnet_kind_of(enum sim_algo a, int N) {
  switch (a) {
  case SIM_ALGO_TREE:
  case SIM_ALGO_NVLS_TREE: return SIM_FNET_TREE;
  case SIM_ALGO_HALVING_DOUBLING:
  case SIM_ALGO_BCUBE: return SIM_FNET_HD;
  case SIM_ALGO_COLLNET: return SIM_FNET_COLLNET;
  case SIM_ALGO_NVLS: return N > 1 ? SIM_FNET_COLLNET : SIM_FNET_NONE;
  default: return SIM_FNET_RING;
  }
}

/* Which job each fabric node runs, by placement. */
static void assign(const sim_fabric *f, const int *sizes, int n_jobs, int M, int *owner) {
  if (f->placement == SIM_PLACE_INTERLEAVED) {
    /* Each node to the job furthest behind its share (a Bresenham deal). */
    long *got = calloc((size_t)n_jobs, sizeof *got);
    for (int i = 0; got && i < M; i++) {
      int best = -1;
      double lag = -INFINITY;
      for (int j = 0; j < n_jobs; j++) {
        double d = (double)sizes[j] * (i + 1) / M - (double)got[j];
        if (got[j] < sizes[j] && d > lag) {
          lag = d;
          best = j;
        }
      }
      owner[i] = best;
      got[best]++;
    }
    if (got) {
      free(got);
      return;
    }
  }
  for (int j = 0, i = 0; j < n_jobs; j++)
    for (int k = 0; k < sizes[j]; k++)
      owner[i++] = j;
}

int sim_fnet_place(const sim_fabric *f, const int *sizes, int n_jobs, uint64_t seed, int **nodes) {
  int M = 0, rc = 0;
  for (int j = 0; j < n_jobs; j++)
    M += sizes[j];
  int *owner = malloc(sizeof *owner * (size_t)M), *at = calloc((size_t)n_jobs, sizeof *at);
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!owner || !at || !rng) {
    rc = core_err_set(CORE_ENOMEM, "out of memory placing %d nodes", M);
    goto out;
  }
  gsl_rng_set(rng, (unsigned long)seed);
  assign(f, sizes, n_jobs, M, owner);
  if (f->placement == SIM_PLACE_RANDOM)
    gsl_ran_shuffle(rng, owner, (size_t)M, sizeof *owner);
  for (int j = 0; j < n_jobs; j++)
    if (!(nodes[j] = malloc(sizeof **nodes * (size_t)sizes[j]))) {
      rc = core_err_set(CORE_ENOMEM, "out of memory placing %d nodes", M);
      goto out;
    }
  for (int i = 0; i < M; i++)
    nodes[owner[i]][at[owner[i]]++] = i;
  for (int j = 0; f->rank_order == SIM_ORDER_RANDOM && j < n_jobs; j++)
    gsl_ran_shuffle(rng, nodes[j], (size_t)sizes[j], sizeof **nodes);
out:
  free(owner);
  free(at);
  if (rng)
    gsl_rng_free(rng);
  return rc;
}

/* A point's collectives on its fabric: each algorithm's slowdown from its
 * flows, other jobs' share of the links, and the allreduce NCCL would pick
 * (sim/fabric.h). */
#include "fabric.h"

#include "sim/fabric_net.h"
#include "sim/predict.h"
#include "sim/scenario.h"

#include "core/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The contention loop stops when no job's share of time communicating moves
 * by more than this, or after so many rounds. */
#define DUTY_TOL 1e-9
#define DUTY_ROUNDS 50

typedef struct fjob {
  sim_point pt;  /* its point, for predicting its step */
  int N, *nodes; /* its nodes in rank order */
  sim_topo base;
  unsigned kinds;           /* flow kinds its candidate algorithms use */
  double ideal[SIM_FNET_N]; /* slowest flow of each kind with only its NICs */
  double alone[SIM_FNET_N]; /* slowdown of each kind on the fabric, alone */
  enum sim_fnet_kind kind;  /* the flows its bucket allreduce puts on the fabric */
  double duty;              /* share of its step its collectives run */
  int quiet;                /* a neighbour without traffic: placed, never on the links */
} fjob;

/* The allreduce algorithms a point may use: the one asked for, or those
 * NCCL's tuner chooses among on this fabric (Gloo: its segmented ring). */
static int candidates(const sim_fabric *f, enum sim_backend b, int algorithm, int N, enum sim_algo *out) {
  int n = 0;
  if (algorithm >= 0) {
    out[n++] = (enum sim_algo)algorithm;
  } else if (b == SIM_BACKEND_GLOO) {
    out[n++] = SIM_ALGO_SEGMENTED_RING;
  } else {
    out[n++] = SIM_ALGO_RING;
    out[n++] = SIM_ALGO_TREE;
    if (f->sharp)
      out[n++] = SIM_ALGO_COLLNET;
    if (f->nvls && (N == 1 || f->sharp))
      out[n++] = SIM_ALGO_NVLS;
    if (f->nvls && N > 1)
      out[n++] = SIM_ALGO_NVLS_TREE;
  }
  return n;
}

/* The node's own fabric: a bandwidth given for it, or PCIe's cap. */
static void apply_intra(const sim_fabric *f, const core_profile *pr, sim_topo *t) {
  if (f->intra_GBps > 0) {
    t->intra.beta_s = 1.0 / (f->intra_GBps * 1e9);
    t->intra.alpha_s = t->intra.n_regimes ? t->intra.alpha[t->intra.n_regimes - 1] : t->intra.alpha_s;
    t->intra.n_regimes = 0;
  }
  if (f->intra == SIM_INTRA_PCIE && pr->host_link_GBps > 0) {
    double b = 1.0 / (pr->host_link_GBps * 1e9);
    t->intra.beta_s = t->intra.beta_s > b ? t->intra.beta_s : b;
    for (int k = 0; k < t->intra.n_regimes; k++)
      t->intra.beta[k] = t->intra.beta[k] > b ? t->intra.beta[k] : b;
  }
}

/* Topology of each algorithm: the inter-node bandwidth divided by its
 * slowdown. */
static void fill_topos(const sim_topo *base, const double *slow, sim_fabric_costs *fc) {
  for (int a = 0; a < SIM_N_ALGOS; a++) {
    sim_topo t = *base;
    double x = slow[a] >= 1.0 ? slow[a] : 1.0;
    t.inter.beta_s *= x;
    for (int k = 0; k < t.inter.n_regimes; k++)
      t.inter.beta[k] *= x;
    if (t.node_Bps > 0)
      t.node_Bps /= x;
    t.fabric = NULL;
    fc->topo[a] = t;
    fc->slowdown[a] = x;
  }
}

double sim_fabric_allreduce(const sim_fabric_costs *fc, enum sim_backend b, int algorithm, double bytes, int *used) {
  enum sim_algo c[SIM_N_ALGOS];
  sim_fabric cap = {0};
  cap.sharp = fc->sharp;
  cap.nvls = fc->nvls;
  int n = candidates(&cap, b, algorithm, fc->topo[0].nodes, c);
  double best = INFINITY;
  for (int i = 0; i < n; i++) {
    double T = sim_coll_time(b, CORE_COLL_ALLREDUCE, c[i], &fc->topo[c[i]], bytes);
    if (T < best) {
      best = T;
      if (used)
        *used = (int)c[i];
    }
  }
  return best;
}

/* The kinds of flows a job's candidate algorithms put on the fabric. */
static unsigned kinds_of(const sim_fabric *f, const sim_point *p, int N) {
  enum sim_algo c[SIM_N_ALGOS];
  unsigned m = 0;
  int n = candidates(f, p->backend, p->algorithm, N, c);
  for (int i = 0; i < n; i++)
    m |= 1u << sim_fnet_kind_of(c[i], N);
  return m;
}

/* Slowest flow of each kind of job j alone: with only its NICs (ideal) and
 * on the fabric; both are the smallest share a link gives its flows. */
static int alone_slowdowns(const sim_fnet *net, fjob *j, sim_flows *fl) {
  int rc = 0;
  for (int k = 0; k < SIM_FNET_N && !rc; k++) {
    j->ideal[k] = INFINITY;
    j->alone[k] = 1.0;
    if (!(j->kinds >> k & 1u))
      continue;
    double real;
    sim_flows_clear(fl);
    if ((rc = sim_fnet_flows(net, (enum sim_fnet_kind)k, j->nodes, j->N, j->base.rails, 0, fl)) != 0 || !fl->n_flows)
      continue;
    memcpy(fl->cap, net->cap_real, sizeof *fl->cap * (size_t)net->n_links);
    if ((rc = sim_flows_min_share(fl, net->n_nic_links, &j->ideal[k])) != 0 ||
        (rc = sim_flows_min_share(fl, -1, &real)) != 0)
      break;
    j->alone[k] = j->ideal[k] / real > 1.0 ? j->ideal[k] / real : 1.0;
  }
  return rc;
}

/* Slowdown of job a's flows of kind k while job b's bucket allreduce runs:
 * a's slowest max-min fair rate with both on the links, against its ideal. */
static int shared_slowdown(const sim_fnet *net, const fjob *a, int k, const fjob *b, sim_flows *fl, double *out) {
  double real;
  int rc;
  *out = a->alone[k];
  if (!(a->kinds >> k & 1u) || !isfinite(a->ideal[k]))
    return 0;
  sim_flows_clear(fl);
  if ((rc = sim_fnet_flows(net, (enum sim_fnet_kind)k, a->nodes, a->N, a->base.rails, 0, fl)) != 0 ||
      (rc = sim_fnet_flows(net, b->kind, b->nodes, b->N, b->base.rails, 1, fl)) != 0)
    return rc;
  memcpy(fl->cap, net->cap_real, sizeof *fl->cap * (size_t)net->n_links);
  if ((rc = sim_flows_min_rate(fl, 0, &real)) != 0)
    return rc;
  *out = a->ideal[k] / real > 1.0 ? a->ideal[k] / real : 1.0;
  return 0;
}

/* Slowdown of each algorithm of job k when the other jobs communicate for
 * their duty shares of the time: alone, plus each other job's extra in the
 * share of time it is on the links (first order in the shares). */
static void mixed(const fjob *jobs, int n_jobs, int k, const double *shared, sim_fabric_given *g) {
  for (int a = 0; a < SIM_N_ALGOS; a++) {
    int kind = sim_fnet_kind_of((enum sim_algo)a, jobs[k].N);
    double x = jobs[k].alone[kind];
    for (int j = 0; j < n_jobs; j++)
      if (j != k)
        x += jobs[j].duty * (shared[(k * n_jobs + j) * SIM_FNET_N + kind] - jobs[k].alone[kind]);
    g->slowdown[a] = x;
  }
}

/* Predict every job with the others' shares until the shares agree. */
static int contend(
    const sim_scenario *s, fjob *jobs, int n_jobs, const double *shared, sim_engine *e, sim_fabric_given *mine) {
  sim_fabric_given *g = calloc((size_t)n_jobs, sizeof *g);
  if (!g)
    return core_err_set(CORE_ENOMEM, "out of memory for %d jobs' slowdowns", n_jobs);
  int rc = 0;
  for (int round = 0; round < DUTY_ROUNDS && !rc; round++) {
    double moved = 0;
    for (int k = 0; k < n_jobs && !rc; k++) {
      sim_point_result r;
      sim_point pt = jobs[k].pt;
      if (jobs[k].quiet)
        continue;
      mixed(jobs, n_jobs, k, shared, &g[k]);
      pt.fabric_given = &g[k];
      if ((rc = sim_predict_point(s, &pt, e, NULL, 0, &r)) != 0)
        break;
      double d = r.step_s > 0 ? r.comm_s / r.step_s : 0;
      d = d < 1.0 ? d : 1.0;
      moved = fmax(moved, fabs(d - jobs[k].duty));
      jobs[k].duty = d;
    }
    if (moved < DUTY_TOL)
      break;
  }
  if (!rc)
    mixed(jobs, n_jobs, 0, shared, mine);
  free(g);
  return rc;
}

/* The point of neighbour i: the study's point with its model, nodes, batch. */
static void neighbour_point(const sim_point *p, const sim_fabric_job *nb, sim_point *out) {
  *out = *p;
  out->model = nb->model;
  out->nodes = nb->nodes;
  out->batch = nb->batch;
  if (nb->precision >= 0)
    out->precision = (enum sim_precision)nb->precision;
  out->fabric_given = NULL;
}

static int set_up_jobs(const sim_scenario *s, const sim_point *p, const sim_topo *base, fjob *jobs, int n_jobs) {
  const sim_fabric *f = p->fabric;
  int rc = 0;
  for (int k = 0; k < n_jobs && !rc; k++) {
    fjob *j = &jobs[k];
    if (k == 0) {
      j->pt = *p;
      j->base = *base;
    } else {
      neighbour_point(p, &f->jobs[k - 1], &j->pt);
      j->quiet = !f->jobs[k - 1].traffic;
      if ((rc = sim_predict_topo(s, &j->pt, &j->base)) != 0)
        break;
    }
    apply_intra(f, s->profile, &j->base);
    j->N = j->pt.nodes;
    j->kinds = kinds_of(f, &j->pt, j->N);
  }
  return rc;
}

/* Each job's flows for its bucket allreduce: the algorithm its own choice
 * takes for a bucket_cap_mb allreduce on the fabric alone. */
static void bucket_kinds(fjob *jobs, int n_jobs) {
  for (int k = 0; k < n_jobs; k++) {
    sim_fabric_costs fc;
    double slow[SIM_N_ALGOS];
    int used = SIM_ALGO_RING;
    for (int a = 0; a < SIM_N_ALGOS; a++)
      slow[a] = jobs[k].alone[sim_fnet_kind_of((enum sim_algo)a, jobs[k].N)];
    fill_topos(&jobs[k].base, slow, &fc);
    fc.sharp = jobs[k].pt.fabric->sharp;
    fc.nvls = jobs[k].pt.fabric->nvls && sim_fabric_nvls_runs(jobs[k].pt.per_node);
    sim_fabric_allreduce(&fc, jobs[k].pt.backend, jobs[k].pt.algorithm, jobs[k].pt.bucket_cap_mb * 1048576.0, &used);
    jobs[k].kind = sim_fnet_kind_of((enum sim_algo)used, jobs[k].N);
  }
}

/* Slowdowns of the point's algorithms with the neighbours placed on the
 * fabric (their shares of time found by contend). */
static int with_neighbours(
    const sim_scenario *s, const sim_fnet *net, fjob *jobs, int n_jobs, sim_flows *fl, sim_engine *e, double *slow) {
  double *shared = malloc(sizeof *shared * (size_t)(n_jobs * n_jobs * SIM_FNET_N));
  if (!shared)
    return core_err_set(CORE_ENOMEM, "out of memory for %d jobs' shared slowdowns", n_jobs);
  int rc = 0;
  bucket_kinds(jobs, n_jobs);
  for (int a = 0; a < n_jobs && !rc; a++)
    for (int b = 0; b < n_jobs && !rc; b++)
      for (int k = 0; k < SIM_FNET_N && !rc; k++)
        if (a != b && !jobs[a].quiet && !jobs[b].quiet)
          rc = shared_slowdown(net, &jobs[a], k, &jobs[b], fl, &shared[(a * n_jobs + b) * SIM_FNET_N + k]);
        else
          shared[(a * n_jobs + b) * SIM_FNET_N + k] = jobs[a].alone[k];
  sim_fabric_given mine;
  if (!rc && (rc = contend(s, jobs, n_jobs, shared, e, &mine)) == 0)
    memcpy(slow, mine.slowdown, sizeof mine.slowdown);
  free(shared);
  return rc;
}

static int place_and_cost(const sim_scenario *s, const sim_point *p, const sim_fabric_layout *L, fjob *jobs, int n_jobs,
    sim_engine *e, double *slow) {
  const sim_fabric *f = p->fabric;
  int *sizes = malloc(sizeof *sizes * (size_t)n_jobs), **nodes = calloc((size_t)n_jobs, sizeof *nodes), rc;
  sim_fnet net = {0};
  sim_flows fl = {0};
  if (!sizes || !nodes) {
    rc = core_err_set(CORE_ENOMEM, "out of memory placing %d jobs", n_jobs);
    goto out;
  }
  for (int k = 0; k < n_jobs; k++)
    sizes[k] = jobs[k].N;
  if ((rc = sim_fnet_place(f, sizes, n_jobs, sim_predict_seed(s->seed ^ 0xfab41c5eedULL, p->step_crn_index), nodes)) !=
          0 ||
      (rc = sim_fnet_init(&net, f, L)) != 0 || (rc = sim_flows_init(&fl, net.n_links)) != 0)
    goto out;
  for (int k = 0; k < n_jobs && !rc; k++) {
    jobs[k].nodes = nodes[k];
    rc = alone_slowdowns(&net, &jobs[k], &fl);
  }
  for (int a = 0; !rc && a < SIM_N_ALGOS; a++)
    slow[a] = jobs[0].alone[sim_fnet_kind_of((enum sim_algo)a, jobs[0].N)];
  if (!rc && n_jobs > 1)
    rc = with_neighbours(s, &net, jobs, n_jobs, &fl, e, slow);
out:
  for (int k = 0; nodes && k < n_jobs; k++)
    free(nodes[k]);
  free(nodes);
  free(sizes);
  sim_flows_free(&fl);
  sim_fnet_free(&net);
  return rc;
}

int sim_fabric_costs_for(
    const sim_scenario *s, const sim_point *p, const sim_topo *base, sim_engine *e, sim_fabric_costs *fc) {
  const sim_fabric *f = p->fabric;
  memset(fc, 0, sizeof *fc);
  fc->sharp = f->sharp;
  fc->nvls = f->nvls && sim_fabric_nvls_runs(p->per_node);
  if (p->fabric_given) {
    sim_topo b = *base;
    apply_intra(f, s->profile, &b);
    fill_topos(&b, p->fabric_given->slowdown, fc);
    return 0;
  }
  int n_jobs = 1 + f->n_jobs, rc;
  long total = p->nodes;
  for (int j = 0; j < f->n_jobs; j++) {
    total += f->jobs[j].nodes;
    fc->res.other_gpus += f->jobs[j].nodes * p->per_node;
  }
  sim_fabric_layout L;
  double slow[SIM_N_ALGOS];
  fjob *jobs = calloc((size_t)n_jobs, sizeof *jobs);
  if (!jobs)
    return core_err_set(CORE_ENOMEM, "out of memory for %d jobs", n_jobs);
  if ((rc = sim_fabric_layout_for(
           f, total, p->network->nics_per_node, p->network->gbps * 1e9 / 8.0 * p->network->efficiency, &L)) != 0 ||
      (rc = set_up_jobs(s, p, base, jobs, n_jobs)) != 0 || (rc = place_and_cost(s, p, &L, jobs, n_jobs, e, slow)) != 0)
    goto out;
  fill_topos(&jobs[0].base, slow, fc);
  fc->res.racks = L.racks;
  fc->res.pods = L.pods;
  /* The allreduce of one full bucket, as nccl-tests would report it. */
  double S = p->bucket_cap_mb * 1048576.0;
  int world = p->nodes * p->per_node, used = SIM_ALGO_RING;
  double T = sim_fabric_allreduce(fc, p->backend, p->algorithm, S, &used);
  fc->res.used_algo = used;
  fc->res.slowdown = fc->slowdown[used];
  fc->res.busbw_GBps = world > 1 && T > 0 ? S / T * 2.0 * (world - 1) / world / 1e9 : 0;
out:
  free(jobs);
  return rc;
}

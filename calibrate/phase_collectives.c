/*
 * phase_collectives — a calibration's collective sweeps: every operation
 * and algorithm of the run's backend over a range of sizes, inside each
 * node and across nodes, one group at a time, fitted and recorded in the
 * profile by the group's rank 0 (docs/calibration.md, "Collectives").
 */
#include "calibrate/calibrate_int.h"

#include "calibrate/fit.h"
#include "calibrate/sweep.h"

#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Gloo and the profile name the same algorithms differently. */
static const char *profile_algo(enum core_coll op, enum rt_algo a) {
  if (op == CORE_COLL_REDUCESCATTER)
    return "segmented_ring"; /* gloo::allreduce, then this rank's chunk, as ProcessGroupGloo */
  if (op != CORE_COLL_ALLREDUCE)
    return "ring";
  switch (a) {
  case RT_ALGO_RING: return "gloo_ring";
  case RT_ALGO_RING_CHUNKED: return "ring_chunked";
  case RT_ALGO_HALVING_DOUBLING: return "halving_doubling";
  case RT_ALGO_BCUBE: return "bcube";
  default: return "segmented_ring"; /* gloo::allreduce, what PyTorch uses */
  }
}

static int add_coll(core_profile *p, const char *backend, enum core_coll op, const char *algo, const char *scope,
    int ranks, int nodes, const cal_point *pts, int n) {
  double *bytes = malloc(sizeof *bytes * (size_t)n), *t = malloc(sizeof *t * (size_t)n),
         *se = malloc(sizeof *se * (size_t)n);
  core_prof_coll *nc = realloc(p->colls, sizeof *nc * (size_t)(p->n_colls + 1));
  if (!bytes || !t || !se || !nc) {
    free(bytes);
    free(t);
    free(se);
    if (nc)
      p->colls = nc;
    return core_err_set(CORE_ENOMEM, "out of memory assembling the profile");
  }
  p->colls = nc;
  for (int i = 0; i < n; i++) {
    bytes[i] = pts[i].bytes;
    t[i] = pts[i].t_p50_s;
    se[i] = pts[i].t_se_s;
  }
  cal_fit f[CAL_FIT_MAX_REGIMES];
  int nf, rc = cal_fit_alpha_beta(bytes, t, se, n, f, &nf);
  free(se);
  if (rc) {
    free(bytes);
    free(t);
    return core_err_wrap(rc, "%s %s %s", scope, core_coll_name(op), algo);
  }
  core_prof_coll *c = &p->colls[p->n_colls];
  memset(c, 0, sizeof *c);
  snprintf(c->backend, sizeof c->backend, "%s", backend);
  snprintf(c->op, sizeof c->op, "%s", core_coll_name(op));
  snprintf(c->algorithm, sizeof c->algorithm, "%s", algo);
  snprintf(c->scope, sizeof c->scope, "%s", scope);
  c->ranks = ranks;
  c->nodes = nodes;
  c->fits = calloc((size_t)nf, sizeof *c->fits);
  if (!c->fits) {
    free(bytes);
    free(t);
    return core_err_set(CORE_ENOMEM, "out of memory assembling the profile");
  }
  c->n_fits = nf;
  for (int i = 0; i < nf; i++)
    cal_fit_to_profile(&f[i], &c->fits[i]);
  for (int i = 0; i < n; i++)
    t[i] *= 1e6;
  c->bytes = bytes;
  c->time_us = t;
  c->n_points = n;
  p->n_colls++;
  return 0;
}

/* Both backends' sweep: 8 B to 256 MiB, as nccl-tests sweeps (--quick: to
 * 32 MiB), doubling, with their repetitions and time budget per size. */
static cal_sweep_opts sweep_opts(const cal_ctx *r) {
  const int quick = r->o->quick;
  return (cal_sweep_opts){.min_bytes = 8,
      .max_bytes = quick ? 32 << 20 : 256 << 20,
      .factor = 2,
      .warmup = 1,
      .min_iters = quick ? 2 : 3,
      .max_iters = quick ? 10 : 20,
      .budget_s = quick ? 0.01 : 0.05,
      .progress = r->progress};
}

/* One group's sweeps, recorded by its rank 0 (which is world rank 0). */
static int sweeps(cal_ctx *r, rt_comm *g, const char *scope, int nodes) {
  const cal_opts *o = r->o;
  static const enum rt_algo algos[] = {
      RT_ALGO_DEFAULT, RT_ALGO_RING, RT_ALGO_RING_CHUNKED, RT_ALGO_HALVING_DOUBLING, RT_ALGO_BCUBE};
  /* The default algorithm over the whole range (8 B to 256 MiB, as
   * nccl-tests sweeps; --quick: to 32 MiB), enough sizes past the knee for
   * the bandwidth regime; the other algorithms and operations to 4 and
   * 16 MiB, well into it. --quick keeps the default allreduce only. */
  cal_sweep_opts so = sweep_opts(r);
  for (int op = 0; op < CORE_N_COLLS; op++)
    for (size_t k = 0; k < sizeof algos / sizeof *algos; k++) {
      if (op != CORE_COLL_ALLREDUCE && k > 0)
        continue;
      if (o->quick && (op != CORE_COLL_ALLREDUCE || k > 0))
        continue;
      cal_sweep_opts s = so;
      if (k > 0)
        s.max_bytes = 4 << 20;
      else if (op != CORE_COLL_ALLREDUCE)
        s.max_bytes = 16 << 20;
      /* The allreduce the simulator uses, sizes to 16 MiB (PowerSGD's
       * few-kilobyte factors, DDP's first bucket) in two passes: a stall of
       * some seconds lands in one of them (docs/calibration.md). */
      if (op == CORE_COLL_ALLREDUCE && k == 0 && !o->quick)
        s.repass_max_bytes = 16 << 20;
      char label[96];
      snprintf(label, sizeof label, "%s %s %s", scope, core_coll_name((enum core_coll)op),
          profile_algo((enum core_coll)op, algos[k]));
      s.label = label;
      cal_point *pts;
      int n;
      int rc = cal_sweep_run(g, (enum core_coll)op, algos[k], &s, &pts, &n);
      if (rc == CORE_EUNSUPPORTED) {
        cal_say(r, "  %s: skipped (%s)", label, core_err_msg());
        continue;
      }
      if (rc)
        return rc;
      if (g->rank == 0)
        rc = add_coll(r->prof, "gloo", (enum core_coll)op, profile_algo((enum core_coll)op, algos[k]), scope, g->size,
            nodes, pts, n);
      free(pts);
      if (rc)
        return rc;
    }
  return 0;
}

/* NCCL's sweeps of one group. Allreduce once per
 * algorithm, each on a communicator created for it under "<prefix>-ring"
 * and "<prefix>-tree" (NCCL reads NCCL_ALGO only when a communicator is
 * created; runtime/nccl.h), recorded as "ring" and "tree"; allgather,
 * reduce-scatter and broadcast on the group's default communicator,
 * recorded as "ring" (NCCL runs them on rings). Sizes 8 B to 256 MiB for
 * every operation (--quick: as the Gloo path, allreduce only, to 32 MiB).
 * Buffers are device memory (cal_device_bufs). With record 0 the sweeps
 * only check data and print (a one-rank job: its collectives are local
 * copies, which no profile entry should describe). */
static int nccl_sweeps(cal_ctx *r, rt_comm *g, const char *scope, int nodes, const char *prefix, int record) {
  const cal_opts *o = r->o;
  static const struct {
    enum core_coll op;
    enum rt_algo algo;
    const char *name;
  } plan[] = {{CORE_COLL_ALLREDUCE, RT_ALGO_RING, "ring"}, {CORE_COLL_ALLREDUCE, RT_ALGO_TREE, "tree"},
      {CORE_COLL_ALLGATHER, RT_ALGO_DEFAULT, "ring"}, {CORE_COLL_REDUCESCATTER, RT_ALGO_DEFAULT, "ring"},
      {CORE_COLL_BROADCAST, RT_ALGO_DEFAULT, "ring"}};
  cal_sweep_opts so = sweep_opts(r);
  so.bufs = &cal_device_bufs;
  if (!record) { /* a data check of every operation, briefly */
    so.max_bytes = 4 << 20;
    so.min_iters = 2;
    so.max_iters = 2;
    so.budget_s = 0;
  }
  for (size_t k = 0; k < sizeof plan / sizeof *plan; k++) {
    if (o->quick && record && plan[k].op != CORE_COLL_ALLREDUCE)
      continue;
    char label[96];
    snprintf(label, sizeof label, "%s %s %s", scope, core_coll_name(plan[k].op), plan[k].name);
    cal_sweep_opts s = so;
    s.label = label;
    s.control = g; /* the stop flag and timings never use an algorithm-bound communicator */
    rt_comm *c = g, *own = NULL;
    int rc = 0;
    if (plan[k].algo != RT_ALGO_DEFAULT) {
      char pre[96];
      snprintf(pre, sizeof pre, "%s-%s", prefix, plan[k].name);
      if ((rc = cal_sub_group(r, pre, g->rank, g->size, plan[k].algo, &own)) == 0)
        c = own;
    }
    cal_point *pts = NULL;
    int n = 0;
    if (!rc)
      rc = cal_sweep_run(c, plan[k].op, plan[k].algo, &s, &pts, &n);
    if (own)
      rt_comm_finish(own, rc);
    if (rc == CORE_EUNSUPPORTED) {
      cal_say(r, "  %s: skipped (%s)", label, core_err_msg());
      continue;
    }
    if (rc)
      return core_err_wrap(rc, "%s", label);
    if (record && g->rank == 0)
      rc = add_coll(r->prof, "nccl", plan[k].op, plan[k].name, scope, g->size, nodes, pts, n);
    free(pts);
    if (rc)
      return rc;
  }
  return 0;
}

/* One group's sweeps with the run's backend; prefix names the group's
 * store (NCCL creates its per-algorithm communicators beside it). */
static int group_sweeps(cal_ctx *r, rt_comm *g, const char *scope, int nodes, const char *prefix) {
  return r->nccl ? nccl_sweeps(r, g, scope, nodes, prefix, 1) : sweeps(r, g, scope, nodes);
}

/* One group at a time, so sweeps never share links or CPUs: each node's
 * ranks (node 0's group records), then one rank per node across the nodes
 * (the group of local rank 0 records). */
int cal_phase_collectives(cal_ctx *r) {
  int lws = r->pg.local_world_size, rc;
  char prefix[64];
  if (lws > 1) {
    snprintf(prefix, sizeof prefix, "cal-intra-%d", r->pg.node_rank);
    if ((rc = cal_sub_group(r, prefix, r->pg.local_rank, lws, RT_ALGO_DEFAULT, &r->intra)) != 0)
      return rc;
    if (r->pg.node_rank == 0) {
      cal_say(r, "collectives inside a node (%d ranks)", lws);
      if ((rc = group_sweeps(r, r->intra, "intra", 1, prefix)) != 0)
        return rc;
    }
  }
  if ((rc = rt_barrier(r->world)) != 0)
    return rc;
  if (r->nodes > 1) {
    snprintf(prefix, sizeof prefix, "cal-inter-%d", r->pg.local_rank);
    if ((rc = cal_sub_group(r, prefix, r->pg.node_rank, r->nodes, RT_ALGO_DEFAULT, &r->inter)) != 0)
      return rc;
    if (r->pg.local_rank == 0) {
      cal_say(r, "collectives across nodes (%d ranks, one per node)", r->nodes);
      if ((rc = group_sweeps(r, r->inter, "inter", r->nodes, prefix)) != 0)
        return rc;
    }
  }
  if (r->nccl && r->pg.world_size == 1) {
    cal_say(r, "one rank: every NCCL operation checked on device buffers, not recorded (a one-rank collective is a "
               "local copy)");
    if ((rc = nccl_sweeps(r, r->world, "self", 1, "cal-self", 0)) != 0)
      return rc;
  }
  return rt_barrier(r->world);
}

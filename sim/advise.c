#include "advise.h"

#include "sim/jobpoint.h"

#include "core/cfg.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/progress.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Hardware configurations decided per batch: the search does not depend on
 * the number of workers. */
enum { ADVISE_BATCH = 8 };

/* The dimensions by their role in the search (advise.h). */
static const enum sim_dim hw_dims[] = {SIM_DIM_NETWORK, SIM_DIM_FABRIC, SIM_DIM_BACKEND, SIM_DIM_PRECISION,
    SIM_DIM_BATCH, SIM_DIM_PER_NODE, SIM_DIM_NODES};
static const enum sim_dim comm_dims[] = {
    SIM_DIM_ALGORITHM, SIM_DIM_BUCKET_CAP, SIM_DIM_OVERLAP, SIM_DIM_FIND_UNUSED, SIM_DIM_COMPRESSION};
static const enum sim_dim job_dims[] = {SIM_DIM_CKPT_MODE, SIM_DIM_SPARES};
static const enum sim_dim fixed_dims[] = {SIM_DIM_MODEL, SIM_DIM_FAIL_RATE, SIM_DIM_WEIBULL_SHAPE, SIM_DIM_DETECT,
    SIM_DIM_MTTR, SIM_DIM_RESTART, SIM_DIM_LOAD, SIM_DIM_CKPT_COST};
#define N_OF(a) ((int)(sizeof a / sizeof *a))

/* A list of simulated points. */
typedef struct plist {
  sim_advised *p;
  long n, cap;
} plist;

static int plist_add(plist *l, const sim_advised *x) {
  if (l->n == l->cap) {
    long cap = l->cap ? 2 * l->cap : 64;
    sim_advised *p = realloc(l->p, sizeof *p * (size_t)cap);
    if (!p)
      return core_err_set(CORE_ENOMEM, "out of memory for %ld points", cap);
    l->p = p;
    l->cap = cap;
  }
  l->p[l->n++] = *x;
  return 0;
}

/* One hardware configuration: its bounds, and what its search found. */
typedef struct task {
  long hw;
  double t_lb, c_lb;
  int pruned, collapsed;
  plist out;
  long job_pruned, timeouts, ooms;
  int rc;
  char err[1024];
} task;

typedef struct adv {
  const sim_scenario *s;
  int pruning; /* bounds and the interval search */
  int net_one; /* the one network of one-node configurations */
  long stride[SIM_N_DIMS];
  long n_hw, n_comm, n_job;
  double *front_t, *front_c; /* time and cost of every simulated point */
  long n_front, cap_front;
  sim_advised base; /* the scenario as given */
  char *step_done;  /* per step configuration: simulated */
  task *tasks;
  long batch_first, batch_n;
  atomic_long next;
  atomic_long groups_done, steps_run; /* for the progress report */
} adv;

/* The mixed-radix digits of k over dims into idx. */
static void decode(const adv *a, long k, const enum sim_dim *dims, int nd, int idx[SIM_N_DIMS]) {
  for (int i = nd - 1; i >= 0; i--) {
    idx[dims[i]] = (int)(k % a->s->n[dims[i]]);
    k /= a->s->n[dims[i]];
  }
}

static long product(const sim_scenario *s, const enum sim_dim *dims, int nd) {
  long n = 1;
  for (int i = 0; i < nd; i++)
    n *= s->n[dims[i]];
  return n;
}

static long index_of(const adv *a, const int idx[SIM_N_DIMS]) {
  long i = 0;
  for (int d = 0; d < SIM_N_DIMS; d++)
    i += idx[d] * a->stride[d];
  return i;
}

/* Does a simulated point beat (t, c) in both, strictly in one? */
static int dominated(const adv *a, double t, double c) {
  for (long i = 0; i < a->n_front; i++)
    if (a->front_t[i] <= t && a->front_c[i] <= c && (a->front_t[i] < t || a->front_c[i] < c))
      return 1;
  return 0;
}

static int front_add(adv *a, double t, double c) {
  if (a->n_front == a->cap_front) {
    long cap = a->cap_front ? 2 * a->cap_front : 256;
    double *ft = realloc(a->front_t, sizeof *ft * (size_t)cap);
    if (ft)
      a->front_t = ft;
    double *fc = realloc(a->front_c, sizeof *fc * (size_t)cap);
    if (fc)
      a->front_c = fc;
    if (!ft || !fc)
      return core_err_set(CORE_ENOMEM, "out of memory");
    a->cap_front = cap;
  }
  a->front_t[a->n_front] = t;
  a->front_c[a->n_front++] = c;
  return 0;
}

/* The job level of point `index`, whose step level is `step`, into x. */
static int simulate_job(
    const sim_scenario *s, long index, const sim_point_result *step, sim_engine *e, sim_advised *x) {
  memset(x, 0, sizeof *x);
  x->r = *step;
  sim_scenario_point(s, index, &x->r.pt);
  x->r.usd_per_hour = sim_jobpoint_usd_per_hour(s, &x->r.pt);
  int rc = sim_jobpoint_run(s, &x->r.pt, 0, s->job.replications, e, NULL, NULL, &x->r);
  sim_job_result_free(&x->r.job);
  if (rc)
    return rc;
  x->steps = sim_jobpoint_steps(s, &x->r.pt, step->step_s);
  const double *m = x->r.job.mean;
  x->parts_h[SIM_PART_COMPUTE] = x->steps * step->compute_s / 3600.0;
  x->parts_h[SIM_PART_EXPOSED_COMM] = x->steps * step->exposed_comm_s / 3600.0;
  x->parts_h[SIM_PART_CKPT] = m[SIM_JOB_WASTE_CKPT_H];
  x->parts_h[SIM_PART_LOST] = m[SIM_JOB_WASTE_LOST_H];
  x->parts_h[SIM_PART_DOWN] = m[SIM_JOB_WASTE_RESTART_H];
  return 0;
}

/* The same, but the scenario as given is simulated once, before anything. */
static int evaluate(const adv *a, long index, const sim_point_result *step, sim_engine *e, sim_advised *x) {
  if (index == 0) {
    *x = a->base;
    return 0;
  }
  return simulate_job(a->s, index, step, e, x);
}

static double time_h(const sim_advised *x) { return x->r.job.mean[SIM_JOB_TIME_H]; }

/* The intervals of one job setting, ordered by value. */
typedef struct ivals {
  int n, order[64];
  double tm[64]; /* time to train at each, NAN: not simulated */
} ivals;

/* Simulates interval k of iv (idx holds the job setting); its time in
 * iv->tm[k]. */
static int eval_interval(
    const adv *a, task *t, int idx[SIM_N_DIMS], const sim_point_result *step, sim_engine *e, ivals *iv, int k) {
  sim_advised x;
  idx[SIM_DIM_CKPT_EVERY] = iv->order[k];
  int rc = evaluate(a, index_of(a, idx), step, e, &x);
  if (rc == 0 && (rc = plist_add(&t->out, &x)) == 0)
    iv->tm[k] = time_h(&x);
  return rc;
}

/* The position in iv of the interval nearest Daly's optimum for this job
 * setting (in log terms). */
static int nearest_daly(const adv *a, int idx[SIM_N_DIMS], const sim_point_result *step, const ivals *iv, int *k0) {
  const sim_scenario *s = a->s;
  sim_job_params jp;
  sim_point p;
  idx[SIM_DIM_CKPT_EVERY] = 0;
  sim_scenario_point(s, index_of(a, idx), &p);
  int rc = sim_jobpoint_params(s, &p, step, &jp, NULL);
  if (rc)
    return rc;
  double daly = sim_job_daly(jp.ckpt_block_s, sim_job_mtti(&jp)) / (s->job.every_in_steps ? step->step_s : 1);
  *k0 = 0;
  for (int i = 1; i < iv->n && isfinite(daly) && daly > 0; i++)
    if (fabs(log(s->job.every[iv->order[i]] / daly)) < fabs(log(s->job.every[iv->order[*k0]] / daly)))
      *k0 = i;
  return 0;
}

/* The intervals of one job setting (idx holds it): every one, or (with
 * bounds) from the one nearest Daly's optimum towards longer intervals
 * while the time falls, then towards shorter ones unless the first step
 * already improved. */
static int search_intervals(const adv *a, task *t, int idx[SIM_N_DIMS], const sim_point_result *step, sim_engine *e) {
  const sim_scenario *s = a->s;
  ivals iv = {.n = s->n[SIM_DIM_CKPT_EVERY]};
  int rc, k0 = 0, k;
  if (iv.n > 64)
    return core_err_set(
        CORE_EINVAL, "%s: advise takes at most 64 checkpoint intervals, the scenario has %d", s->path, iv.n);
  for (int i = 0; i < iv.n; i++) {
    iv.order[i] = i;
    iv.tm[i] = NAN;
    for (int j = i; j > 0 && s->job.every[iv.order[j]] < s->job.every[iv.order[j - 1]]; j--) {
      int x = iv.order[j];
      iv.order[j] = iv.order[j - 1];
      iv.order[j - 1] = x;
    }
  }
  if (!a->pruning || iv.n == 1) {
    for (k = 0; k < iv.n; k++)
      if ((rc = eval_interval(a, t, idx, step, e, &iv, k)) != 0)
        return rc;
    return 0;
  }
  if ((rc = nearest_daly(a, idx, step, &iv, &k0)) != 0 || (rc = eval_interval(a, t, idx, step, e, &iv, k0)) != 0)
    return rc;
  for (k = k0 + 1; k < iv.n; k++)
    if ((rc = eval_interval(a, t, idx, step, e, &iv, k)) != 0)
      return rc;
    else if (!(iv.tm[k] < iv.tm[k - 1]))
      break;
  if (k0 + 1 < iv.n && iv.tm[k0 + 1] < iv.tm[k0])
    return 0;
  for (k = k0 - 1; k >= 0; k--)
    if ((rc = eval_interval(a, t, idx, step, e, &iv, k)) != 0)
      return rc;
    else if (!(iv.tm[k] < iv.tm[k + 1]))
      break;
  return 0;
}

/* The job settings of a step configuration, each pruned by its bound. */
static int search_job(const adv *a, task *t, int idx[SIM_N_DIMS], const sim_point_result *step, sim_engine *e) {
  for (long k = 0; k < a->n_job; k++) {
    decode(a, k, job_dims, N_OF(job_dims), idx);
    idx[SIM_DIM_CKPT_EVERY] = 0;
    if (a->pruning) {
      sim_point p;
      sim_scenario_point(a->s, index_of(a, idx), &p);
      double th = sim_jobpoint_steps(a->s, &p, step->step_s) * step->step_s / 3600.0;
      if (dominated(a, th, th * sim_jobpoint_usd_per_hour(a->s, &p))) {
        t->job_pruned++;
        continue;
      }
    }
    int rc = search_intervals(a, t, idx, step, e);
    if (rc)
      return rc;
  }
  return 0;
}

/* One hardware configuration: the step level of every DDP setting, then
 * the job level of the fastest (of every one that runs, without bounds). */
static int search_group(adv *a, task *t, sim_engine *e) {
  int idx[SIM_N_DIMS] = {0}, have = 0, rc;
  long best_c = 0;
  sim_point_result best;
  decode(a, t->hw, hw_dims, N_OF(hw_dims), idx);
  for (long c = 0; c < a->n_comm; c++) {
    sim_point p;
    sim_point_result r;
    decode(a, c, comm_dims, N_OF(comm_dims), idx);
    for (int d = SIM_N_STEP_DIMS; d < SIM_N_DIMS; d++)
      idx[d] = 0;
    sim_scenario_point(a->s, index_of(a, idx), &p);
    if ((rc = sim_predict_point(a->s, &p, e, NULL, 0, &r)) != 0)
      return rc;
    atomic_fetch_add(&a->steps_run, 1);
    a->step_done[p.step_index] = 1;
    if (strcmp(r.status, "ok") != 0) {
      *(strcmp(r.status, "oom") == 0 ? &t->ooms : &t->timeouts) += 1;
    } else if (!a->pruning) {
      if ((rc = search_job(a, t, idx, &r, e)) != 0)
        return rc;
    } else if (!have || r.step_s < best.step_s) {
      best = r;
      best_c = c;
      have = 1;
    }
  }
  if (!have || !a->pruning)
    return 0;
  decode(a, best_c, comm_dims, N_OF(comm_dims), idx);
  return search_job(a, t, idx, &best, e);
}

/* Bounds of a hardware configuration before its step level: its steps at
 * one device's compute time, less 2% (a step's mean over its ranks' jitter
 * may fall that far below), at its cheapest price per hour. */
static void group_bounds(const adv *a, task *t) {
  int idx[SIM_N_DIMS] = {0};
  sim_point p;
  decode(a, t->hw, hw_dims, N_OF(hw_dims), idx);
  sim_scenario_point(a->s, index_of(a, idx), &p);
  double step = sim_predict_compute_s(a->s, &p) * 0.98, price = INFINITY;
  t->t_lb = step > 0 ? sim_jobpoint_steps(a->s, &p, step) * step / 3600.0 : 0;
  for (long k = 0; k < a->n_job; k++) {
    decode(a, k, job_dims, N_OF(job_dims), idx);
    sim_scenario_point(a->s, index_of(a, idx), &p);
    price = fmin(price, sim_jobpoint_usd_per_hour(a->s, &p));
  }
  t->c_lb = t->t_lb * price;
}

static int by_bound(const void *pa, const void *pb) {
  const task *x = pa, *y = pb;
  if (x->t_lb != y->t_lb)
    return x->t_lb < y->t_lb ? -1 : 1;
  return (x->hw > y->hw) - (x->hw < y->hw);
}

static void *worker(void *arg) {
  adv *a = arg;
  sim_engine *e = NULL;
  int rc = sim_engine_new(&e);
  for (;;) {
    long i = atomic_fetch_add(&a->next, 1);
    if (i >= a->batch_n)
      break;
    task *t = &a->tasks[a->batch_first + i];
    if (!t->pruned && !t->collapsed) {
      t->rc = rc ? rc : search_group(a, t, e);
      if (t->rc)
        snprintf(t->err, sizeof t->err, "%s", core_err_msg());
    }
    atomic_fetch_add(&a->groups_done, 1);
  }
  sim_engine_free(e);
  return NULL;
}

/* Runs tasks [first, first + n) on `jobs` threads (this one included). */
static void run_batch(adv *a, long first, long n, int jobs) {
  pthread_t th[64];
  int started = 0;
  a->batch_first = first;
  a->batch_n = n;
  atomic_store(&a->next, 0);
  for (int j = 1; j < jobs && j < 64 && j < n; j++)
    if (pthread_create(&th[started], NULL, worker, a) == 0)
      started++;
  worker(a);
  for (int j = 0; j < started; j++)
    pthread_join(th[j], NULL);
}

/* The scenario as given, point 0: simulated first, so that every
 * recommendation has it to compare with. One that cannot run keeps its
 * step level alone (has_job 0). */
static int run_baseline(adv *a) {
  sim_engine *e;
  sim_point p;
  int rc = sim_engine_new(&e);
  if (rc)
    return rc;
  sim_scenario_point(a->s, 0, &p);
  memset(&a->base, 0, sizeof a->base);
  rc = sim_predict_point(a->s, &p, e, NULL, 0, &a->base.r);
  a->step_done[0] = 1;
  if (rc == 0 && strcmp(a->base.r.status, "ok") == 0) {
    sim_point_result step = a->base.r;
    rc = simulate_job(a->s, 0, &step, e, &a->base);
  }
  sim_engine_free(e);
  return rc;
}

static const config_setting_t *lookup(const sim_scenario *s, const char *path) {
  return config_lookup(&((sim_scenario *)s)->cfg.cfg, path);
}

/* file:line of a key, else the scenario. */
static void where_key(const sim_scenario *s, const char *path, char *buf, size_t n) {
  const config_setting_t *k = lookup(s, path);
  if (k)
    core_cfg_where(k, buf, n);
  else
    snprintf(buf, n, "%s", s->path);
}

static int check_fixed(const sim_scenario *s) {
  static const char *const keys[] = {"model", NULL, "failures.weibull_shape", "failures.detect_s", "failures.mttr_h",
      "failures.restart_s", "failures.load_s", "checkpoint.cost_s"};
  char w[4200], key[64];
  for (int i = 0; i < N_OF(fixed_dims); i++) {
    if (s->n[fixed_dims[i]] == 1)
      continue;
    snprintf(key, sizeof key, "%s",
        keys[i]                 ? keys[i]
        : s->job.fail_dist == 2 ? "failures.weibull_scale_h"
                                : "failures.mtbf_h");
    where_key(s, key, w, sizeof w);
    return core_err_set(CORE_EINVAL,
        "%s: %s has %d values, and advise chooses among what you may change, not what the cluster or the model is; "
        "give it one value (run `ddpsim simulate` to compare them)",
        w, key, s->n[fixed_dims[i]]);
  }
  return 0;
}

int sim_advise_check(const sim_scenario *s) {
  char w[4200];
  if (!s->job.present)
    return core_err_set(CORE_EINVAL,
        "%s: advise compares points by their time to train, which needs the run's length: add job = { samples = N; } "
        "(the same work whatever the cluster)",
        s->path);
  int rc = check_fixed(s);
  if (rc)
    return rc;
  long knobs = sim_scenario_points(s);
  if (knobs == 1)
    return core_err_set(CORE_EINVAL,
        "%s: the search space is empty: the scenario sweeps nothing advise may change; make an array of what you could "
        "change (cluster.nodes, devices_per_node, networks, ddp.backend, bucket_cap_mb, overlap, compression, "
        "training.precision or batch, checkpoint.every_s or mode, failures.spares)",
        s->path);
  int batch_varies = s->n[SIM_DIM_NODES] > 1 || s->n[SIM_DIM_PER_NODE] > 1 || s->n[SIM_DIM_BATCH] > 1;
  if (batch_varies && !(s->job.samples > 0)) {
    where_key(s, "job", w, sizeof w);
    return core_err_set(CORE_EINVAL,
        "%s: the points advise compares differ in their global batch (nodes x devices x batch), so job.%s would be "
        "different work at each; give job.samples, the samples to train",
        w, s->job.steps > 0 ? "steps" : "hours");
  }
  return 0;
}

static int by_index(const void *pa, const void *pb) {
  const sim_advised *x = pa, *y = pb;
  return (x->r.pt.index > y->r.pt.index) - (x->r.pt.index < y->r.pt.index);
}

void sim_advice_free(sim_advice *a) {
  free(a->pts);
  memset(a, 0, sizeof *a);
}

/* The points in order, each once; the baseline found among them. */
static void finish(adv *a, plist *all, sim_advice *out) {
  if (all->n > 1) /* qsort's base may not be NULL, even for no elements */
    qsort(all->p, (size_t)all->n, sizeof *all->p, by_index);
  long n = 0;
  for (long i = 0; i < all->n; i++)
    if (n == 0 || all->p[i].r.pt.index != all->p[n - 1].r.pt.index)
      all->p[n++] = all->p[i];
  out->pts = all->p;
  out->n = n;
  out->baseline = n > 0 && all->p[0].r.pt.index == 0 ? 0 : -1;
  snprintf(out->base_status, sizeof out->base_status, "%s", a->base.r.status);
  out->pruned_search = a->pruning;
  for (long i = 0; i < out->step_configs; i++)
    out->step_simulated += a->step_done[i];
}

/* Adds a batch's results, in task order; frees them. */
static int collect(adv *a, long first, long n, plist *all, sim_advice *out) {
  int rc = 0;
  for (long i = first; i < first + n; i++) {
    task *t = &a->tasks[i];
    if (!rc && t->rc)
      rc = core_err_set(t->rc, "%s", t->err);
    for (long k = 0; k < t->out.n && !rc; k++) {
      const sim_advised *x = &t->out.p[k];
      if ((rc = plist_add(all, x)) == 0)
        rc = front_add(a, time_h(x), time_h(x) * x->r.usd_per_hour);
    }
    out->job_pruned += t->job_pruned;
    out->timeouts += t->timeouts;
    out->ooms += t->ooms;
    free(t->out.p);
    t->out.p = NULL;
  }
  return rc;
}

/* The network of one-node configurations: the cheapest per node-hour,
 * the first of equal price (the first of all when nothing is priced). */
static int network_at_one_node(const sim_scenario *s) {
  int best = 0;
  for (int k = 1; s->prices.priced && k < s->n_networks; k++)
    if (s->networks[k].node_hour_usd < s->networks[best].node_hour_usd)
      best = k;
  return best;
}

/* A one-node configuration on another network than net_one: the same
 * steps as on net_one, at no lower price (advise.h). */
static int collapsed(const adv *a, long hw) {
  int idx[SIM_N_DIMS] = {0};
  decode(a, hw, hw_dims, N_OF(hw_dims), idx);
  return a->s->nodes[idx[SIM_DIM_NODES]] == 1 && idx[SIM_DIM_NETWORK] != a->net_one;
}

static int search(adv *a, int jobs, plist *all, sim_advice *out) {
  int rc = 0;
  for (long h = 0; h < a->n_hw; h++) {
    a->tasks[h].hw = h;
    group_bounds(a, &a->tasks[h]);
    a->tasks[h].collapsed = collapsed(a, h);
    out->groups_collapsed += a->tasks[h].collapsed;
  }
  if (a->pruning)
    qsort(a->tasks, (size_t)a->n_hw, sizeof *a->tasks, by_bound);
  for (long first = 0; first < a->n_hw && !rc; first += ADVISE_BATCH) {
    long n = a->n_hw - first < ADVISE_BATCH ? a->n_hw - first : ADVISE_BATCH;
    for (long i = first; i < first + n; i++)
      if (a->pruning && !a->tasks[i].collapsed && dominated(a, a->tasks[i].t_lb, a->tasks[i].c_lb)) {
        a->tasks[i].pruned = 1;
        out->groups_pruned++;
      }
    run_batch(a, first, n, jobs);
    rc = collect(a, first, n, all, out);
  }
  return rc;
}

/* Progress on stderr (core/progress.h), from a ticker thread that reads
 * counters only: the advice is the same with it or without. */
typedef struct reporter {
  adv *a;
  core_progress p;
  core_progress_ticker t;
} reporter;

static void report(void *arg, double now) {
  reporter *r = arg;
  if (core_progress_due(&r->p, now))
    core_progress_line(&r->p, now, "advise: %ld of %ld configurations, %ld step settings simulated, %.0f s",
        atomic_load(&r->a->groups_done), r->a->n_hw, atomic_load(&r->a->steps_run), now - r->p.t0);
}

/* The reporter's thread, when progress is asked for and it can start;
 * without it the search runs all the same. */
static void report_start(reporter *r, adv *a, const sim_advise_opts *o) {
  r->a = a;
  r->t.on = 0;
  core_progress_start(&r->p, 1, o->progress_after_s);
  if (o->progress)
    core_progress_ticker_start(&r->t, report, r, CORE_PROGRESS_POLL_S);
}

static void report_stop(reporter *r) {
  if (!r->t.on)
    return;
  core_progress_ticker_stop(&r->t);
  core_progress_end(&r->p);
}

int sim_advise_run(const sim_scenario *s, const sim_advise_opts *o, sim_advice *out) {
  memset(out, 0, sizeof *out);
  int rc = sim_advise_check(s);
  if (rc)
    return rc;
  adv a = {.s = s, .net_one = network_at_one_node(s)};
  long stride = 1;
  for (int d = SIM_N_DIMS - 1; d >= 0; d--) {
    a.stride[d] = stride;
    stride *= s->n[d];
  }
  a.n_hw = product(s, hw_dims, N_OF(hw_dims));
  a.n_comm = product(s, comm_dims, N_OF(comm_dims));
  a.n_job = product(s, job_dims, N_OF(job_dims));
  a.pruning = !o->exhaustive && (s->objective.col == SIM_OBJ_TIME_H || s->objective.col == SIM_OBJ_COST_USD);
  out->full_points = sim_scenario_points(s);
  out->step_configs = out->full_points / a.stride[SIM_N_STEP_DIMS - 1];
  out->groups = a.n_hw;
  out->net_one = a.net_one;
  a.step_done = calloc((size_t)out->step_configs, 1);
  a.tasks = calloc((size_t)a.n_hw, sizeof *a.tasks);
  plist all = {0};
  reporter rep = {0};
  if (!a.step_done || !a.tasks) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %ld configurations", a.n_hw);
    goto out_free;
  }
  report_start(&rep, &a, o);
  if ((rc = run_baseline(&a)) != 0)
    goto out_free;
  if (a.base.r.has_job && ((rc = plist_add(&all, &a.base)) != 0 ||
                              (rc = front_add(&a, time_h(&a.base), time_h(&a.base) * a.base.r.usd_per_hour)) != 0))
    goto out_free;
  int jobs = o->jobs > 0 ? o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if ((rc = search(&a, jobs < 1 ? 1 : jobs, &all, out)) != 0)
    goto out_free;
  finish(&a, &all, out);
  all.p = NULL;
out_free:
  report_stop(&rep);
  for (long i = 0; a.tasks && i < a.n_hw; i++)
    free(a.tasks[i].out.p);
  free(all.p);
  free(a.tasks);
  free(a.step_done);
  free(a.front_t);
  free(a.front_c);
  return rc;
}

#include "job.h"

#include "core/err.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sf_gamma.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REPAIR_FLAG (UINT64_C(1) << 62)
#define SCHED_FLAG (UINT64_C(1) << 61)

double sim_job_young(double d, double m) { return sqrt(2.0 * d * m); }

double sim_job_daly(double d, double m) {
  if (d >= 2.0 * m)
    return m;
  double x = d / (2.0 * m);
  return sqrt(2.0 * d * m) * (1.0 + sqrt(x) / 3.0 + x / 9.0) - d;
}

typedef struct job {
  const sim_job_params *p;
  gsl_rng *rng;
  sim_engine *e;
  double scale_ns;     /* engine ticks are ns */
  uint64_t events;     /* popped in this Monte Carlo */
  uint64_t unreported; /* popped since the last progress call */
} job;

/* Events between progress calls: often enough for a report a second, rarely
 * enough to cost nothing. */
#define PROGRESS_EVERY (UINT64_C(1) << 16)
#define OVER_BOUND 3

static void nop(sim_engine *e, void *c, uint64_t a) {
  (void)e;
  (void)c;
  (void)a;
}

static int push(job *j, double t_s, uint64_t arg) {
  return sim_engine_push(j->e, (sim_time)llround(t_s * 1e9), nop, NULL, arg, NULL);
}

static double draw_life(job *j) {
  if (j->p->dist == SIM_FAIL_EXPONENTIAL)
    return gsl_ran_exponential(j->rng, j->p->node_mtbf_s / j->p->nodes); /* all nodes as one stream */
  return gsl_ran_weibull(j->rng, j->p->weibull_scale_s, j->p->weibull_shape);
}

/* Checkpoint cycle: seconds per cycle, training seconds in it, and how long
 * after a cycle's end its checkpoint is durable. */
typedef struct cycle {
  double len, train, lag, block;
} cycle;

static cycle make_cycle(const sim_job_params *p) {
  cycle c = {0, 0, 0, 0};
  if (p->every_steps <= 0)
    return c;
  double T = p->every_steps * p->step_s;
  if (!p->async) {
    c.block = p->ckpt_block_s;
    c.len = T + c.block;
    c.train = T;
    c.lag = 0;
  } else {
    /* A snapshot may not start before the previous write is durable; the
     * run keeps training meanwhile, so a slow write stretches the cycle. */
    c.block = p->ckpt_block_s;
    c.train = T > p->ckpt_write_s ? T : p->ckpt_write_s;
    c.len = c.train + c.block;
    c.lag = p->ckpt_write_s;
  }
  return c;
}

/* Checkpoints taken before a segment of `remaining` training seconds ends
 * (none at the very end: the run is over). */
static double checkpoints_before_end(const cycle *c, double remaining) {
  if (c->train <= 0)
    return 0;
  double n = ceil(remaining / c->train) - 1;
  return n > 0 ? n : 0;
}

/* Scheduled failure k: in the middle of step at_steps[k], reached from
 * durable progress `done` in a run segment starting at run_start, counting
 * the checkpoints taken on the way. */
static int push_scheduled(job *j, const cycle *c, int k, double run_start, double done) {
  const sim_job_params *p = j->p;
  if (k >= p->n_at_steps || !isfinite(run_start))
    return 0;
  double x = (p->at_steps[k] + 0.5) * p->step_s - done;
  if (x < 0)
    x = 0;
  double blocks = c->train > 0 ? floor(x / c->train) : 0;
  return push(j, run_start + x + blocks * c->block, SCHED_FLAG);
}

/* The first failure of a replication: the exponential stream's, every
 * Weibull node's, or the schedule's first. */
static int first_failures(job *j, const cycle *c) {
  const sim_job_params *p = j->p;
  int rc = 0;
  if (p->dist == SIM_FAIL_SCHEDULED)
    rc = push_scheduled(j, c, 0, 0, 0);
  else if (p->dist == SIM_FAIL_EXPONENTIAL)
    rc = push(j, draw_life(j), 0);
  else if (p->dist == SIM_FAIL_WEIBULL)
    for (int n = 0; n < p->nodes && rc == 0; n++)
      rc = push(j, draw_life(j), (uint64_t)n);
  return rc;
}

/* Counts one event; 1 when it is over the bound. */
static int count_event(job *j) {
  j->events++;
  if (++j->unreported >= PROGRESS_EVERY && j->p->progress) {
    j->p->progress(j->p->progress_ctx, j->unreported);
    j->unreported = 0;
  }
  return j->p->max_events > 0 && j->events > j->p->max_events;
}

/* A replication's bookkeeping: wall time t, durable progress, waste. */
typedef struct run_state {
  double t, done, waste_ckpt, waste_lost, downtime, failures;
} run_state;

/* A replication's metrics from its state. A finished one (done = ideal)
 * has goodput ideal / t; one stopped at the cap the progress it saved over
 * the wall time so far, and its totals projected by ideal / done (kept at
 * the cap when it saved nothing). ettr: the wall time less checkpoint
 * stalls, lost work and downtime, over the wall time. The ratios' parts are
 * projected alike, so each part's ratio is the run's. */
static void metrics(const run_state *st, double ideal, double *m) {
  double f = st->done > 0 ? ideal / st->done : 1.0;
  m[SIM_JOB_TIME_H] = st->t * f / 3600.0;
  m[SIM_JOB_GOODPUT] = st->done / st->t;
  m[SIM_JOB_ETTR] = (st->t - st->waste_ckpt - st->waste_lost - st->downtime) / st->t;
  m[SIM_JOB_FAILURES] = st->failures * f;
  m[SIM_JOB_WASTE_CKPT_H] = st->waste_ckpt * f / 3600.0;
  m[SIM_JOB_WASTE_LOST_H] = st->waste_lost * f / 3600.0;
  m[SIM_JOB_WASTE_RESTART_H] = st->downtime * f / 3600.0;
  m[SIM_JOB_USEFUL_S] = st->done * f;
  m[SIM_JOB_KEPT_S] = (st->t - st->waste_ckpt - st->waste_lost - st->downtime) * f;
  m[SIM_JOB_WALL_S] = st->t * f;
}

/* The run reached the wall-time cap: checkpoints completed in the current
 * segment count as progress, the rest is in progress (neither kept nor
 * lost); time down so far counts as down. */
static void stop_at_cap(
    const cycle *c, double ideal, double cap, int running, double run_start, double down_since, run_state *st) {
  if (running) {
    double elapsed = cap - run_start, k = 0;
    if (c->len > 0 && elapsed > c->lag) {
      k = fmin(floor((elapsed - c->lag) / c->len), checkpoints_before_end(c, ideal - st->done));
    }
    st->done += k * c->train;
    st->waste_ckpt += k * c->block;
  } else {
    st->downtime += cap - down_since;
  }
  st->t = cap;
}

/* The state of one replication between events. */
typedef struct rep {
  cycle c;
  double ideal, cap;
  run_state st;
  double run_start; /* when the current run segment began (or begins) */
  double down_since, last_detect;
  int running, pool, need, sched;
} rep;

/* A repair came back: it refills the pool, or replaces a node the run
 * waits for; the last one it waits for starts the restart. */
static int on_repair(job *j, rep *r, double t) {
  r->pool++;
  if (r->need > 0) {
    r->pool--;
    if (--r->need == 0) {
      r->run_start = (t > r->last_detect ? t : r->last_detect) + j->p->restart_s + j->p->load_s;
      if (j->p->dist == SIM_FAIL_SCHEDULED)
        return push_scheduled(j, &r->c, r->sched, r->run_start, r->st.done);
    }
  }
  return 0;
}

/* A node failed at t: the work since the last durable checkpoint is lost;
 * the node goes to repair and a spare, or the first node back from repair,
 * replaces it once the failure is detected. Then the next failure: the
 * exponential stream goes on; a Weibull node slot starts a new node's
 * life; a schedule moves to its next step. */
static int on_failure(job *j, rep *r, double t, uint64_t arg) {
  const sim_job_params *p = j->p;
  const cycle *c = &r->c;
  int rc;
  r->st.failures++;
  if (r->running) {
    double elapsed = t - r->run_start, k = 0;
    if (c->len > 0 && elapsed > c->lag)
      k = fmin(floor((elapsed - c->lag) / c->len), checkpoints_before_end(c, r->ideal - r->st.done));
    r->st.done += k * c->train;
    r->st.waste_ckpt += k * c->block;
    r->st.waste_lost += elapsed - k * c->len;
    r->running = 0;
    r->down_since = t;
  }
  if ((rc = push(j, t + p->mttr_s, REPAIR_FLAG)) != 0)
    return rc;
  r->last_detect = t + p->detect_s;
  r->need++;
  if (r->pool > 0) {
    r->pool--;
    r->need--;
  }
  r->run_start = r->need == 0 ? r->last_detect + p->restart_s + p->load_s : INFINITY;
  if (p->dist == SIM_FAIL_SCHEDULED)
    return push_scheduled(j, c, ++r->sched, r->run_start, r->st.done);
  return push(j, t + draw_life(j), p->dist == SIM_FAIL_EXPONENTIAL ? 0 : arg);
}

/* One replication; m receives its metrics. Returns 0 when it finished, 1
 * when it stopped at the wall-time cap (2 when it also saved nothing),
 * OVER_BOUND past max_events, or a negative error. */
static int replicate(job *j, double *m) {
  rep r = {.c = make_cycle(j->p), .running = 1, .pool = j->p->spares};
  int rc;
  r.ideal = j->p->total_steps * j->p->step_s;
  r.cap = r.ideal * SIM_JOB_WALL_CAP_FACTOR + 3600.0;
  sim_engine_reset(j->e);
  if ((rc = first_failures(j, &r.c)) != 0)
    return rc;
  for (;;) {
    sim_time tt;
    uint64_t arg = 0;
    int have = sim_engine_pop(j->e, &tt, NULL, NULL, &arg);
    if (have && count_event(j))
      return OVER_BOUND;
    double te = have ? (double)tt / 1e9 : INFINITY;
    if (!r.running && r.need == 0 && r.run_start <= te) {
      /* Recovery ended before this event: the run resumed at run_start. */
      r.running = 1;
      r.st.downtime += r.run_start - r.down_since;
    }
    if (r.running) {
      double remaining = r.ideal - r.st.done, n_ck = checkpoints_before_end(&r.c, remaining);
      double finish = r.run_start + remaining + n_ck * r.c.block;
      if (finish <= te) {
        r.st.waste_ckpt += n_ck * r.c.block;
        r.st.done = r.ideal;
        r.st.t = finish;
        metrics(&r.st, r.ideal, m);
        return 0;
      }
    }
    if (!have || te > r.cap) {
      stop_at_cap(&r.c, r.ideal, r.cap, r.running, r.run_start, r.down_since, &r.st);
      metrics(&r.st, r.ideal, m);
      return r.st.done > 0 ? 1 : 2;
    }
    rc = arg & REPAIR_FLAG ? on_repair(j, &r, te) : on_failure(j, &r, te, arg);
    if (rc)
      return rc;
  }
}

/* Column k's numerator for a ratio metric, or -1 for a mean. */
static int ratio_of(int k) { return k == SIM_JOB_GOODPUT ? SIM_JOB_USEFUL_S : k == SIM_JOB_ETTR ? SIM_JOB_KEPT_S : -1; }

/* The ratio of means R = mean(u) / mean(w) of a numerator column u and the
 * wall time w over n replications, and each replication's linearized value
 * z_i = R + (u_i - R w_i) / mean(w) into z: mean(z) = R, and var(z) / n is
 * the delta method's variance of R, (1/n) Var(u - R w) / mean(w)^2
 * (Cochran, "Sampling Techniques", 3rd ed., Wiley 1977, sec. 6.3, the
 * approximate variance of the ratio estimate, without the finite population
 * correction: replications are independent draws). */
static double linearize(const double *reps, int u, int n, double *z) {
  const double *w = reps + SIM_JOB_WALL_S;
  double mw = gsl_stats_mean(w, SIM_JOB_N_COLS, (size_t)n);
  double r = gsl_stats_mean(reps + u, SIM_JOB_N_COLS, (size_t)n) / mw;
  for (int i = 0; i < n; i++) {
    const double *row = reps + (size_t)i * SIM_JOB_N_COLS;
    z[i] = r + (row[u] - r * row[SIM_JOB_WALL_S]) / mw;
  }
  return r;
}

/* Half-width of the 95% interval (Student t, n - 1 degrees) of the mean
 * of x[0], x[stride], ... about m; 0 for one value. */
static double half_width(const double *x, size_t stride, int n, double m) {
  return n > 1 ? gsl_cdf_tdist_Pinv(0.975, n - 1) * gsl_stats_sd_m(x, stride, (size_t)n, m) / sqrt(n) : 0;
}

/* Means (goodput, ettr: ratios of means) and 95% intervals of every metric
 * over the replications kept in r->reps. */
static int summarize(sim_job_result *r) {
  int n = r->replications;
  double *z = malloc(sizeof *z * (size_t)n);
  if (!z)
    return core_err_set(CORE_ENOMEM, "out of memory for %d replications", n);
  for (int k = 0; k < SIM_JOB_N_METRICS; k++) {
    double h;
    if (ratio_of(k) >= 0) {
      r->mean[k] = linearize(r->reps, ratio_of(k), n, z);
      h = half_width(z, 1, n, gsl_stats_mean(z, 1, (size_t)n));
    } else {
      r->mean[k] = gsl_stats_mean(r->reps + k, SIM_JOB_N_COLS, (size_t)n);
      h = half_width(r->reps + k, SIM_JOB_N_COLS, n, r->mean[k]);
    }
    r->lo[k] = r->mean[k] - h;
    r->hi[k] = r->mean[k] + h;
  }
  free(z);
  return 0;
}

/* Replication i's generator: splitmix64 of the seed and its number, so
 * that a replication draws the same whatever ran before it. */
static void seed_replication(gsl_rng *rng, uint64_t seed, int i) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  gsl_rng_set(rng, (unsigned long)(z ^ (z >> 31)));
}

int sim_job_run(const sim_job_params *p, sim_engine *e, sim_job_result *r) {
  memset(r, 0, sizeof *r);
  if (!(p->step_s > 0) || !(p->total_steps > 0) || p->nodes < 1 || p->replications < 1)
    return core_err_set(CORE_EINVAL, "job simulation needs a step time, steps, nodes and replications");
  int R = p->replications, rc = 0;
  r->reps = malloc(sizeof *r->reps * (size_t)R * SIM_JOB_N_COLS);
  job j = {.p = p, .e = e, .rng = gsl_rng_alloc(gsl_rng_mt19937)};
  if (!r->reps || !j.rng) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %d replications", R);
    goto out;
  }
  r->replications = R;
  r->cap_h = (p->total_steps * p->step_s * SIM_JOB_WALL_CAP_FACTOR + 3600.0) / 3600.0;
  for (int i = 0; i < R; i++) {
    seed_replication(j.rng, p->seed, p->first_rep + i);
    /* Zeroed: GCC's -O2 -Wmaybe-uninitialized cannot see that replicate
     * fills every metric when it returns 0. */
    double *m = r->reps + (size_t)i * SIM_JOB_N_COLS;
    memset(m, 0, sizeof *m * SIM_JOB_N_COLS);
    rc = replicate(&j, m);
    if (rc < 0)
      goto out;
    if (rc == OVER_BOUND) {
      rc = core_err_set(CORE_EINVAL, "the failure study took more than %llu events in %d of its %d replications",
          (unsigned long long)p->max_events, i + 1, R);
      goto out;
    }
    r->events += sim_engine_counters(e).executed;
    r->unfinished += rc > 0;
    r->stalled += rc == 2;
    rc = 0;
  }
  if ((rc = summarize(r)) != 0)
    goto out;
  r->mtti_s = sim_job_mtti(p);
  r->young_s = isfinite(r->mtti_s) ? sim_job_young(p->ckpt_block_s, r->mtti_s) : NAN;
  r->daly_s = isfinite(r->mtti_s) ? sim_job_daly(p->ckpt_block_s, r->mtti_s) : NAN;
out:
  if (p->progress && j.unreported)
    p->progress(p->progress_ctx, j.unreported);
  gsl_rng_free(j.rng);
  if (rc)
    sim_job_result_free(r);
  return rc;
}

void sim_job_result_free(sim_job_result *r) {
  free(r->reps);
  r->reps = NULL;
}

int sim_job_merge(sim_job_result *into, sim_job_result *more) {
  size_t n = (size_t)(into->replications + more->replications) * SIM_JOB_N_COLS;
  double *reps = realloc(into->reps, sizeof *reps * n);
  if (!reps) {
    sim_job_result_free(more);
    return core_err_set(CORE_ENOMEM, "out of memory for %zu replications", n / SIM_JOB_N_COLS);
  }
  memcpy(reps + (size_t)into->replications * SIM_JOB_N_COLS, more->reps,
      sizeof *reps * (size_t)more->replications * SIM_JOB_N_COLS);
  into->reps = reps;
  into->replications += more->replications;
  into->unfinished += more->unfinished;
  into->stalled += more->stalled;
  into->events += more->events;
  sim_job_result_free(more);
  return summarize(into);
}

int sim_job_paired(const sim_job_result *a, const sim_job_result *b, int k, double *mean, double *half) {
  int n = a->replications;
  if (n != b->replications || !a->reps || !b->reps || n < 2)
    return -1;
  double *d = malloc(sizeof *d * (size_t)n * 2);
  if (!d)
    return -1;
  if (ratio_of(k) >= 0) {
    /* The difference of two ratios, linearized replication by replication. */
    double *zb = d + n;
    *mean = linearize(a->reps, ratio_of(k), n, d) - linearize(b->reps, ratio_of(k), n, zb);
    for (int i = 0; i < n; i++)
      d[i] -= zb[i];
  } else {
    for (int i = 0; i < n; i++)
      d[i] = a->reps[(size_t)i * SIM_JOB_N_COLS + k] - b->reps[(size_t)i * SIM_JOB_N_COLS + k];
    *mean = gsl_stats_mean(d, 1, (size_t)n);
  }
  *half = half_width(d, 1, n, gsl_stats_mean(d, 1, (size_t)n));
  free(d);
  return 0;
}

double sim_job_mtti(const sim_job_params *p) {
  /* Exponential: N lambda; Weibull: a node's mean life, scale Γ(1 + 1/k),
   * shared by N nodes. */
  if (p->dist == SIM_FAIL_EXPONENTIAL)
    return p->node_mtbf_s / p->nodes;
  if (p->dist == SIM_FAIL_WEIBULL)
    return p->weibull_scale_s * gsl_sf_gamma(1.0 + 1.0 / p->weibull_shape) / p->nodes;
  if (p->dist == SIM_FAIL_SCHEDULED && p->n_at_steps > 0)
    return p->total_steps * p->step_s / p->n_at_steps;
  return INFINITY;
}

double sim_job_recovery_s(const sim_job_params *p) {
  double wait = p->spares > 0 || p->mttr_s <= p->detect_s ? p->detect_s : p->mttr_s;
  return wait + p->restart_s + p->load_s;
}

double sim_job_estimate_events(const sim_job_params *p, double *wall_s, int *capped) {
  cycle c = make_cycle(p);
  double ideal = p->total_steps * p->step_s, cap = ideal * SIM_JOB_WALL_CAP_FACTOR + 3600.0, wall = ideal;
  double per_rep = 0, M = sim_job_mtti(p);
  int at_cap = 0;
  if (p->dist == SIM_FAIL_SCHEDULED) {
    per_rep += 2.0 * p->n_at_steps;
  } else if (isfinite(M) && M > 0) {
    /* log of M e^(R/M) (e^(c/M) - 1) n_cycles, so that no term overflows. */
    double len = c.train > 0 ? c.len : ideal, cycles = c.train > 0 ? ideal / c.train : 1, x = len / M;
    double lw = log(M) + sim_job_recovery_s(p) / M + (x > 30 ? x : log(expm1(x))) + log(cycles);
    at_cap = lw >= log(cap);
    wall = at_cap ? cap : fmax(exp(lw), ideal);
    per_rep += 2.0 * wall / M;
  }
  if (wall_s)
    *wall_s = wall;
  if (capped)
    *capped = at_cap;
  return per_rep * p->replications;
}

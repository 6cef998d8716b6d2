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

const char *const sim_job_metric_names[SIM_JOB_N_METRICS] = {
    "time_to_train_h", "goodput", "ettr", "failures", "waste_ckpt_h", "waste_lost_h", "waste_restart_h"};

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
  double scale_ns;        /* engine ticks are ns */
  uint64_t events;        /* popped in this Monte Carlo */
  uint64_t unreported;    /* popped since the last progress call */
} job;

/* Events between progress calls: often enough for a report a second, rarely
 * enough to cost nothing. */
#define PROGRESS_EVERY (UINT64_C(1) << 16)
#define OVER_BOUND 2

static void nop(sim_engine *e, void *c, uint64_t a) { (void)e; (void)c; (void)a; }

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

/* One replication; m receives its metrics. Returns 1 if it did not finish,
 * OVER_BOUND past max_events. */
static int replicate(job *j, double *m) {
  const sim_job_params *p = j->p;
  cycle c = make_cycle(p);
  double ideal = p->total_steps * p->step_s;
  double done = 0;                /* durable progress, in training seconds */
  double t = 0, run_start = 0;    /* when the current run segment began (or begins) */
  double waste_ckpt = 0, waste_lost = 0, downtime = 0, failures = 0;
  double down_since = 0, last_detect = 0;
  int running = 1, pool = p->spares, need = 0, rc, sched = 0;
  sim_engine_reset(j->e);
  if ((rc = first_failures(j, &c)) != 0)
    return rc;
  double cap = ideal * SIM_JOB_WALL_CAP_FACTOR + 3600.0;
  for (;;) {
    sim_time tt;
    uint64_t arg = 0;
    int have = sim_engine_pop(j->e, &tt, NULL, NULL, &arg);
    if (have && count_event(j))
      return OVER_BOUND;
    double te = have ? (double)tt / 1e9 : INFINITY;
    if (!running && need == 0 && run_start <= te) {
      /* Recovery ended before this event: the run resumed at run_start. */
      running = 1;
      downtime += run_start - down_since;
    }
    if (running) {
      double remaining = ideal - done, n_ck = checkpoints_before_end(&c, remaining);
      double finish = run_start + remaining + n_ck * c.block;
      if (finish <= te) {
        waste_ckpt += n_ck * c.block;
        t = finish;
        break;
      }
    }
    if (!have || te > cap) {
      m[SIM_JOB_TIME_H] = NAN;
      return 1;
    }
    t = te;
    if (arg & REPAIR_FLAG) {
      pool++;
      if (need > 0) {
        pool--;
        if (--need == 0) {
          run_start = (t > last_detect ? t : last_detect) + p->restart_s + p->load_s;
          if (p->dist == SIM_FAIL_SCHEDULED && (rc = push_scheduled(j, &c, sched, run_start, done)) != 0)
            return rc;
        }
      }
      continue;
    }
    /* A node failed: the work since the last durable checkpoint is lost. */
    failures++;
    if (running) {
      double elapsed = t - run_start, k = 0;
      if (c.len > 0 && elapsed > c.lag) {
        k = floor((elapsed - c.lag) / c.len);
        double kmax = checkpoints_before_end(&c, ideal - done);
        if (k > kmax)
          k = kmax;
      }
      done += k * c.train;
      waste_ckpt += k * c.block;
      waste_lost += elapsed - k * c.len;
      running = 0;
      down_since = t;
    }
    /* It goes to repair; a spare, or the first node back from repair,
     * replaces it once the failure is detected. */
    if ((rc = push(j, t + p->mttr_s, REPAIR_FLAG)) != 0)
      return rc;
    last_detect = t + p->detect_s;
    need++;
    if (pool > 0) {
      pool--;
      need--;
    }
    run_start = need == 0 ? last_detect + p->restart_s + p->load_s : INFINITY;
    /* The next failure: the exponential stream goes on; a Weibull node
     * slot starts a new node's life; a schedule moves to its next step. */
    if (p->dist == SIM_FAIL_SCHEDULED) {
      if ((rc = push_scheduled(j, &c, ++sched, run_start, done)) != 0)
        return rc;
    } else if ((rc = push(j, t + draw_life(j), p->dist == SIM_FAIL_EXPONENTIAL ? 0 : arg)) != 0) {
      return rc;
    }
  }
  m[SIM_JOB_TIME_H] = t / 3600.0;
  m[SIM_JOB_GOODPUT] = ideal / t;
  m[SIM_JOB_ETTR] = (t - downtime) / t;
  m[SIM_JOB_FAILURES] = failures;
  m[SIM_JOB_WASTE_CKPT_H] = waste_ckpt / 3600.0;
  m[SIM_JOB_WASTE_LOST_H] = waste_lost / 3600.0;
  m[SIM_JOB_WASTE_RESTART_H] = downtime / 3600.0;
  return 0;
}

int sim_job_run(const sim_job_params *p, sim_engine *e, sim_job_result *r) {
  memset(r, 0, sizeof *r);
  if (!(p->step_s > 0) || !(p->total_steps > 0) || p->nodes < 1 || p->replications < 1)
    return core_err_set(CORE_EINVAL, "job simulation needs a step time, steps, nodes and replications");
  int R = p->replications, rc = 0;
  double *v = malloc(sizeof *v * (size_t)R * SIM_JOB_N_METRICS);
  job j = {.p = p, .e = e, .rng = gsl_rng_alloc(gsl_rng_mt19937)};
  if (!v || !j.rng) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %d replications", R);
    goto out;
  }
  int ok = 0;
  r->replications = R;
  for (int i = 0; i < R; i++) {
    /* Independent streams per replication (splitmix64 of seed and index). */
    uint64_t z = p->seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    gsl_rng_set(j.rng, (unsigned long)(z ^ (z >> 31)));
    /* Zeroed: GCC's -O2 -Wmaybe-uninitialized cannot see that replicate
     * fills every metric when it returns 0. */
    double m[SIM_JOB_N_METRICS] = {0};
    rc = replicate(&j, m);
    if (rc < 0)
      goto out;
    if (rc == OVER_BOUND) {
      rc = core_err_set(CORE_EINVAL, "the failure study took more than %llu events in %d of its %d replications",
                        (unsigned long long)p->max_events, i + 1, R);
      goto out;
    }
    r->events += sim_engine_counters(e).executed;
    if (rc == 1) {
      r->unfinished++;
      rc = 0;
      continue;
    }
    for (int k = 0; k < SIM_JOB_N_METRICS; k++)
      v[(size_t)k * R + ok] = m[k];
    ok++;
  }
  for (int k = 0; k < SIM_JOB_N_METRICS; k++) {
    const double *x = v + (size_t)k * R;
    if (ok == 0) {
      r->mean[k] = r->lo[k] = r->hi[k] = NAN;
      continue;
    }
    r->mean[k] = gsl_stats_mean(x, 1, (size_t)ok);
    /* 95% confidence interval of the mean, Student t with ok-1 degrees. */
    double h = ok > 1 ? gsl_cdf_tdist_Pinv(0.975, ok - 1) * gsl_stats_sd_m(x, 1, (size_t)ok, r->mean[k]) / sqrt(ok) : 0;
    r->lo[k] = r->mean[k] - h;
    r->hi[k] = r->mean[k] + h;
  }
  r->mtti_s = sim_job_mtti(p);
  r->young_s = isfinite(r->mtti_s) ? sim_job_young(p->ckpt_block_s, r->mtti_s) : NAN;
  r->daly_s = isfinite(r->mtti_s) ? sim_job_daly(p->ckpt_block_s, r->mtti_s) : NAN;
out:
  if (p->progress && j.unreported)
    p->progress(p->progress_ctx, j.unreported);
  free(v);
  gsl_rng_free(j.rng);
  return rc;
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

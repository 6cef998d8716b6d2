#include "step.h"

#include "core/err.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum phase { PH_FWD = 0, PH_BWD = 1, PH_WAIT = 2 };

/* A rank computes from 0 to bwd_done_t without a gap, so that is its
 * compute time too. */
typedef struct rank_st {
  sim_time task_t0;    /* when the work left was last brought up to date */
  double task_left_ns; /* work left, at full speed */
  double mult;         /* compute multiplier this step */
  sim_event_id ev;     /* while it heads a batch, the batch's event (never 0); else 0 */
  int next;            /* the rank after it in its batch, -1 if last */
  int phase;
  int layer;     /* first layer of the running task (fwd) or its top (bwd) */
  int task_last; /* last layer of the running task (fwd: highest; bwd: lowest) */
  int bwd_low;   /* lowest layer whose backward is done; n_layers before */
  int launched;
  sim_time span_t0; /* when the running task started (for the trace) */
  sim_time bwd_done_t;
} rank_st;

/* The last task's work and end worked out, for the ranks after it in a
 * batch, which usually have the same multiplier and so the same task. */
typedef struct work_memo {
  double mult;    /* key: the rank's multiplier, */
  int phase, top; /* the task's direction and first layer */
  int lim;        /* its last layer */
  double w;       /* its work at full speed */
  double dt_w, dt_rate;
  sim_time dt; /* round_ns(dt_w / dt_rate) */
} work_memo;

typedef struct coll_st {
  int arrived;
  sim_time start;
} coll_st;

typedef struct stepsim {
  const sim_step_cfg *c;
  sim_engine *e;
  int R; /* ranks simulated */
  rank_st *ranks;
  coll_st *colls;
  int next_coll; /* first collective not yet started */
  int comm_active;
  int computing;   /* ranks with a compute task in flight */
  double rate_now; /* rate(): compute's speed now */
  int open;        /* the head of the batch the last event scheduled went to, -1 if another came after */
  int open_tail;   /* its last rank */
  sim_time open_t; /* its time */
  uint64_t epoch;  /* counts the times every pending task was scheduled anew */
  uint64_t events; /* task and collective ends run this step */
  work_memo memo;
  sim_time coll_t0;    /* running collective: when its work left was last updated */
  double coll_left_ns; /* its work left at full speed */
  sim_event_id coll_ev;
  sim_time last_done;
  int *stop_after;        /* [n_layers] 1 if a backward task must end after this layer */
  double *comm_s;         /* [n_buckets] this step's collective times */
  double *cpu_f, *idle_f; /* [n_buckets] this step's shares of them (step.h) */
  core_trace *trace;      /* only during the first step */
  int trace_ranks;
  int rc;
  gsl_rng *rng;          /* the compute multipliers' draws */
  int waits;             /* 1 if some bucket's wait is drawn each step (random_idle) */
  size_t *strata;        /* with waits: [n_buckets][steps] each step's stratum of the wait */
  sim_time *launched_at; /* [n_buckets] scratch of direct_step */
  double *samples;       /* [steps] each step's time */
} stepsim;

/* llround(x), inline for 0 <= x < 2^63, where x - trunc(x) is exact. */
static inline sim_time round_ns(double x) {
  if (!(x >= 0 && x < 0x1p63))
    return (sim_time)llround(x);
  int64_t i = (int64_t)x;
  return (sim_time)(i + (x - (double)i >= 0.5));
}

double sim_jitter_mean(enum core_jitter_dist d, const double p[2]) {
  switch (d) {
  case CORE_JITTER_NORMAL: return p[0];
  case CORE_JITTER_LOGNORMAL: return exp(p[0] + 0.5 * p[1] * p[1]);
  case CORE_JITTER_SHIFTED_EXP: return p[0] + p[1];
  default: return 1.0;
  }
}

double sim_jitter_upper_quantile(enum core_jitter_dist d, const double p[2], double q) {
  switch (d) {
  case CORE_JITTER_NORMAL: return p[0] + gsl_cdf_gaussian_Qinv(q, p[1]);
  case CORE_JITTER_LOGNORMAL: return gsl_cdf_lognormal_Qinv(q, p[0], p[1]);
  case CORE_JITTER_SHIFTED_EXP: return p[0] + gsl_cdf_exponential_Qinv(q, p[1]);
  default: return 1.0;
  }
}

/* Multiplier of the slowest of n ranks: F^-1(U^(1/n)) through the upper
 * tail, q = 1 - U^(1/n) = -expm1(log(U)/n), which keeps precision for large n. */
static double draw_max(const sim_step_cfg *c, gsl_rng *rng, int n) {
  if (c->jitter == CORE_JITTER_NONE)
    return 1.0;
  double u = gsl_rng_uniform_pos(rng);
  double q = -expm1(log(u) / n);
  if (q <= 0)
    q = 1e-300;
  double m = sim_jitter_upper_quantile(c->jitter, c->jitter_params, q) / sim_jitter_mean(c->jitter, c->jitter_params);
  return m > 0.01 ? m : 0.01; /* a normal fit's far left tail would go negative */
}

/* The mean of a unit exponential over its k-th of n strata of equal
 * probability, [a, b) = [k/n, (k+1)/n): (x_a + 1)(1 - a) - (x_b + 1)(1 - b)
 * over b - a, x the quantile. The strata's means average to exactly 1, and
 * the tail's stratum carries the tail's weight, as no one quantile would. */
static double exp_stratum_mean(size_t k, int n) {
  double a = (double)k / n, b = (double)(k + 1) / n;
  double ta = (gsl_cdf_exponential_Pinv(a, 1.0) + 1.0) * (1.0 - a);
  double tb = k + 1 < (size_t)n ? (gsl_cdf_exponential_Pinv(b, 1.0) + 1.0) * (1.0 - b) : 0.0;
  return (ta - tb) / (b - a);
}

/* The running collective's shares of CPU work and of idle waiting (step.h). */
static double cpu_frac(const stepsim *s) { return s->comm_active ? s->cpu_f[s->next_coll - 1] : 0.0; }
static double idle_frac(const stepsim *s) { return s->comm_active ? s->idle_f[s->next_coll - 1] : 0.0; }
static double cpu_sd(const stepsim *s) { return s->c->cpu_slowdown > 1.0 ? s->c->cpu_slowdown : 1.0; }
/* The rate beside the running collective, its network share slowed by
 * `net`, its CPU share by cpu_slowdown, its idle share not at all. */
static double blend(const stepsim *s, double net) {
  double f = cpu_frac(s), g = idle_frac(s);
  return 1.0 / ((1.0 - f - g) * net + f * cpu_sd(s) + g);
}
static double rate(const stepsim *s) {
  if (!s->comm_active)
    return 1.0;
  const double *per = s->c->bucket_compute_slowdown;
  return blend(s, per ? per[s->next_coll - 1] : s->c->compute_slowdown);
}
/* A collective is slowed while any rank computes: its ring is as fast as
 * its slowest member, and computing ranks lend it less CPU (or SMs). */
static double comm_rate(const stepsim *s) {
  if (!s->comm_active || s->computing <= 0)
    return 1.0;
  const double *per = s->c->bucket_comm_slowdown;
  return blend(s, per ? per[s->next_coll - 1] : s->c->comm_slowdown);
}

/* CPUs a rank's communication gets when it asks for d beside one compute
 * thread, of the a the rank may use: all it asks while both fit; else CFS
 * shares the CPUs between the two runnable threads, the communication
 * keeping at least what compute leaves and at most what it asks. */
static double comm_grant(double d, double a) {
  double m = a < 1.0 ? a : 1.0;
  if (m + d <= a)
    return d;
  double fair = a - m > a / 2 ? a - m : a / 2;
  return d < fair ? d : fair;
}
/* Compute's slowdown from CPU time alone, and the communication's. */
static double cpu_compute_sd(double d, double a) {
  double m = a < 1.0 ? a : 1.0, left = a - comm_grant(d, a);
  return m / (left < m ? left : m);
}
static double cpu_comm_sd(double d, double a) { return d > 0 ? d / comm_grant(d, a) : 1.0; }

void sim_step_scale_interference(
    double compute_sd, double comm_sd, double k, double comm_cpus, double rank_cpus, double *sc, double *sm) {
  if (!(k >= 0) || !(comm_cpus > 0) || !(rank_cpus > 0)) {
    *sc = compute_sd;
    *sm = comm_sd;
    return;
  }
  double d1 = comm_cpus, dk = k * comm_cpus;
  *sc = compute_sd * cpu_compute_sd(dk, rank_cpus) / cpu_compute_sd(d1, rank_cpus);
  *sm = comm_sd * cpu_comm_sd(dk, rank_cpus) / cpu_comm_sd(d1, rank_cpus);
  if (*sc < 1.0)
    *sc = 1.0;
  if (*sm < 1.0)
    *sm = 1.0;
}

static void task_done(stepsim *s, int r);

static void fail(stepsim *s, int rc) {
  if (!s->rc)
    s->rc = rc;
  sim_engine_stop(s->e);
}

/* Rank tasks that end at the same time and were scheduled one right after
 * another form a batch: one engine event, that of the first (its head),
 * runs them in the order they were scheduled, which is the order their own
 * events would run in, as no other event can fall between them. */
static void batch_run(sim_engine *e, void *ctx, uint64_t head);

/* Rank r's task ends at t: it joins the batch the last event went to if
 * that one ends at t too, else heads a new one. */
static void push_task(stepsim *s, int r, sim_time t) {
  rank_st *k = &s->ranks[r];
  k->next = -1;
  if (s->open >= 0 && s->open_t == t) {
    s->ranks[s->open_tail].next = r;
    s->open_tail = r;
    return;
  }
  int rc = sim_engine_push(s->e, t, batch_run, s, (uint64_t)r, &k->ev);
  if (rc) {
    fail(s, rc);
    return;
  }
  s->open = s->open_tail = r;
  s->open_t = t;
}

/* Rank r's task is about to be scheduled anew: the batch it heads goes
 * (every pending task is scheduled anew with it). */
static void cancel_batch(stepsim *s, rank_st *k) {
  sim_event_id ev = k->ev;
  k->ev = 0;
  if (sim_engine_cancel(s->e, ev) != 0)
    fail(s, core_err_set(CORE_EINTERNAL, "a batch of compute tasks was not pending"));
}

/* The batch's tasks end in turn, until one of them reschedules them all
 * (a collective starts): those left have then been scheduled anew. */
static void batch_run(sim_engine *e, void *ctx, uint64_t head) {
  stepsim *s = ctx;
  int r = (int)head;
  uint64_t epoch = s->epoch;
  (void)e;
  s->ranks[r].ev = 0;
  if (s->open == r)
    s->open = -1;
  while (r >= 0 && !s->rc && s->epoch == epoch) {
    int next = s->ranks[r].next;
    task_done(s, r);
    r = next;
  }
}

/* Start rank r's next task: work_ns of work at full speed from now. */
static void start_task(stepsim *s, int r, double work_ns) {
  rank_st *k = &s->ranks[r];
  sim_time now = sim_engine_now(s->e);
  k->span_t0 = now;
  k->task_t0 = now;
  k->task_left_ns = work_ns;
  work_memo *m = &s->memo;
  if (work_ns != m->dt_w || s->rate_now != m->dt_rate) {
    m->dt_w = work_ns;
    m->dt_rate = s->rate_now;
    m->dt = round_ns(work_ns / s->rate_now);
  }
  push_task(s, r, now + m->dt);
}

/* A collective started or ended: compute in flight changes speed, and
 * every task in flight is scheduled anew, in rank order. Ranks with the
 * same work left end at the same time: it is computed once for them. */
static void rate_changed(stepsim *s, double old_rate) {
  double nr = s->rate_now = rate(s), memo_left = -1.0;
  if (nr == old_rate)
    return;
  s->open = -1;
  s->epoch++;
  sim_time now = sim_engine_now(s->e), memo_t = 0;
  for (int r = 0; r < s->R && !s->rc; r++) {
    rank_st *k = &s->ranks[r];
    if (k->phase == PH_WAIT)
      continue;
    if (k->ev)
      cancel_batch(s, k);
    double left = k->task_left_ns - (double)(now - k->task_t0) * old_rate;
    left = left > 0 ? left : 0;
    if (left != memo_left) {
      memo_left = left;
      memo_t = now + round_ns(left / nr);
    }
    k->task_t0 = now;
    k->task_left_ns = left;
    push_task(s, r, memo_t);
  }
}

static void coll_done(sim_engine *e, void *ctx, uint64_t b);

static void coll_schedule(stepsim *s, int b, double work_ns) {
  sim_time now = sim_engine_now(s->e);
  s->coll_t0 = now;
  s->coll_left_ns = work_ns;
  int rc = sim_engine_push(s->e, now + round_ns(work_ns / comm_rate(s)), coll_done, s, (uint64_t)b, &s->coll_ev);
  s->open = -1;
  if (rc)
    fail(s, rc);
}

static void coll_start(stepsim *s, int b) {
  sim_time now = sim_engine_now(s->e);
  s->colls[b].start = now;
  s->next_coll = b + 1;
  double old = rate(s);
  s->comm_active = 1;
  rate_changed(s, old);
  coll_schedule(s, b, s->comm_s[b] * 1e9);
}

/* A rank stopped computing (or all of them did): the running collective
 * may speed up. */
static void computing_changed(stepsim *s, double old_rate) {
  if (!s->comm_active || comm_rate(s) == old_rate)
    return;
  sim_time now = sim_engine_now(s->e);
  double left = s->coll_left_ns - (double)(now - s->coll_t0) * old_rate;
  if (sim_engine_cancel(s->e, s->coll_ev) != 0) {
    fail(s, core_err_set(CORE_EINTERNAL, "the running collective's event was not pending"));
    return;
  }
  coll_schedule(s, s->next_coll - 1, left > 0 ? left : 0);
}

static void arrive(stepsim *s, int b) {
  if (++s->colls[b].arrived == s->R && s->next_coll == b && !s->comm_active)
    coll_start(s, b);
}

static void try_launch(stepsim *s, int r) {
  const sim_step_cfg *c = s->c;
  rank_st *k = &s->ranks[r];
  if (!c->overlap && k->phase != PH_WAIT)
    return;
  while (k->launched < c->n_buckets && k->bwd_low <= c->bucket_ready_layer[k->launched])
    arrive(s, k->launched++);
}

static void trace_span(
    stepsim *s, int r, const char *name, const char *cat, int tid, sim_time t0, sim_time t1, const char *args) {
  if (s->trace && r < s->trace_ranks)
    core_trace_span(s->trace, name, cat, r, tid, (double)t0 / 1e3, (double)(t1 - t0) / 1e3, args);
}

static void coll_done(sim_engine *e, void *ctx, uint64_t b) {
  stepsim *s = ctx;
  (void)e;
  sim_time now = sim_engine_now(s->e);
  s->events++;
  s->last_done = now;
  double old = rate(s);
  s->comm_active = 0;
  rate_changed(s, old);
  if (s->trace) {
    char name[48], args[96];
    snprintf(name, sizeof name, "allreduce bucket %d", (int)b);
    snprintf(
        args, sizeof args, "\"bytes\": %.0f, \"bucket\": %d", s->c->bucket_bytes ? s->c->bucket_bytes[b] : 0.0, (int)b);
    for (int r = 0; r < s->R && r < s->trace_ranks; r++)
      trace_span(s, r, name, "comm", CORE_TRACE_TID_COMM, s->colls[b].start, now, args);
  }
  int nb = (int)b + 1;
  if (nb < s->c->n_buckets && s->colls[nb].arrived == s->R)
    coll_start(s, nb);
}

/* Work of the backward task that starts at layer top and runs down to the
 * next layer after which a bucket becomes ready. */
static double bwd_work(const stepsim *s, int r, int top, int *low) {
  const sim_step_cfg *c = s->c;
  double w = 0;
  int l = top;
  for (;; l--) {
    w += c->bwd_s[l] * s->ranks[r].mult + (c->copy_s ? c->copy_s[l] : 0);
    if (l == 0 || s->stop_after[l] || s->trace)
      break;
  }
  *low = l;
  return w * 1e9;
}

static double fwd_work(const stepsim *s, int r, int first, int *last) {
  const sim_step_cfg *c = s->c;
  double w = 0;
  int l = first;
  for (;; l++) {
    w += c->fwd_s[l] * s->ranks[r].mult;
    if (l == c->n_layers - 1 || s->trace)
      break;
  }
  *last = l;
  return w * 1e9;
}

/* fwd_work or bwd_work of rank r's task from layer top, remembered. */
static double task_work(stepsim *s, int r, int phase, int top, int *lim) {
  work_memo *m = &s->memo;
  double mult = s->ranks[r].mult;
  if (mult != m->mult || phase != m->phase || top != m->top) {
    m->w = phase == PH_FWD ? fwd_work(s, r, top, &m->lim) : bwd_work(s, r, top, &m->lim);
    m->mult = mult;
    m->phase = phase;
    m->top = top;
  }
  *lim = m->lim;
  return m->w;
}

static void task_done(stepsim *s, int r) {
  const sim_step_cfg *c = s->c;
  rank_st *k = &s->ranks[r];
  sim_time now = sim_engine_now(s->e);
  s->events++;
  if (k->phase == PH_FWD) {
    if (s->trace) {
      char name[80];
      snprintf(name, sizeof name, "%s forward", c->layer_names ? c->layer_names[k->layer] : "layer");
      trace_span(s, r, name, "forward", CORE_TRACE_TID_COMPUTE, k->span_t0, now, NULL);
    }
    if (k->task_last < c->n_layers - 1) {
      int last;
      k->layer = k->task_last + 1;
      double w = task_work(s, r, PH_FWD, k->layer, &last);
      k->task_last = last;
      start_task(s, r, w);
      return;
    }
    k->phase = PH_BWD;
    k->layer = c->n_layers - 1;
    int low;
    double w = task_work(s, r, PH_BWD, k->layer, &low);
    k->task_last = low;
    start_task(s, r, w);
    return;
  }
  /* Backward task finished: its gradients are in their buckets. */
  if (s->trace) {
    char name[80];
    snprintf(name, sizeof name, "%s backward", c->layer_names ? c->layer_names[k->layer] : "layer");
    trace_span(s, r, name, "backward", CORE_TRACE_TID_COMPUTE, k->span_t0, now, NULL);
  }
  k->bwd_low = k->task_last;
  if (k->bwd_low == 0) {
    double old = comm_rate(s);
    k->phase = PH_WAIT;
    k->bwd_done_t = now;
    s->computing--;
    computing_changed(s, old);
  } else {
    k->layer = k->task_last - 1;
    int low;
    double w = task_work(s, r, PH_BWD, k->layer, &low);
    k->task_last = low;
    start_task(s, r, w);
  }
  try_launch(s, r);
}

/* Does every rate of this step stay exactly 1 (step.h)? rate() is 1 with
 * no collective running, and blend() of each bucket's factors while one is. */
static int decoupled(const stepsim *s) {
  const sim_step_cfg *c = s->c;
  if (s->trace || c->events_only)
    return 0;
  for (int b = 0; b < c->n_buckets; b++) {
    double f = s->cpu_f[b], g = s->idle_f[b];
    double sc = c->bucket_compute_slowdown ? c->bucket_compute_slowdown[b] : c->compute_slowdown;
    double sm = c->bucket_comm_slowdown ? c->bucket_comm_slowdown[b] : c->comm_slowdown;
    if (1.0 / ((1.0 - f - g) * sc + f * cpu_sd(s) + g) != 1.0 || 1.0 / ((1.0 - f - g) * sm + f * cpu_sd(s) + g) != 1.0)
      return 0;
  }
  return 1;
}

/* One rank's step without events: its forward task, its backward tasks,
 * the time it launches each bucket (the latest of all ranks kept in
 * launched_at). Returns the tasks it ran. */
static int direct_rank(stepsim *s, int r, sim_time *launched_at) {
  const sim_step_cfg *c = s->c;
  rank_st *k = &s->ranks[r];
  int last, low, tasks = 1, launched = 0;
  sim_time t = round_ns(fwd_work(s, r, 0, &last));
  for (int top = c->n_layers - 1;; top = low - 1) {
    t += round_ns(bwd_work(s, r, top, &low));
    tasks++;
    if (low == 0 || c->overlap)
      for (; launched < c->n_buckets && low <= c->bucket_ready_layer[launched]; launched++)
        if (t > launched_at[launched])
          launched_at[launched] = t;
    if (low == 0)
      break;
  }
  k->bwd_done_t = t;
  return tasks;
}

/* The step of decoupled ranks: every rank, then the collectives, each
 * starting when launched everywhere and the one before has ended. */
static uint64_t direct_step(stepsim *s) {
  const sim_step_cfg *c = s->c;
  sim_time *launched_at = s->launched_at;
  int tasks = 0;
  memset(launched_at, 0, sizeof *launched_at * (size_t)c->n_buckets);
  for (int r = 0; r < s->R; r++) {
    /* A rank's step depends only on its multiplier. */
    if (r > 0 && s->ranks[r].mult == s->ranks[r - 1].mult)
      s->ranks[r].bwd_done_t = s->ranks[r - 1].bwd_done_t;
    else
      tasks = direct_rank(s, r, launched_at);
  }
  sim_time done = 0;
  for (int b = 0; b < c->n_buckets; b++) {
    sim_time start = launched_at[b] > done ? launched_at[b] : done;
    done = start + round_ns(s->comm_s[b] * 1e9);
  }
  s->last_done = done;
  return (uint64_t)s->R * (uint64_t)tasks + (uint64_t)c->n_buckets;
}

/* One step's ranks from their compute draws to the last collective: rank
 * by rank where nothing couples them, else event by event. */
static int run_ranks(stepsim *s, sim_step_result *res) {
  const sim_step_cfg *c = s->c;
  int direct = decoupled(s);
  for (int r = 0; r < s->R; r++) {
    rank_st *k = &s->ranks[r];
    memset(k, 0, sizeof *k);
    k->mult = draw_max(c, s->rng, c->every_rank ? 1 : c->world);
    k->bwd_low = c->n_layers;
    k->phase = PH_FWD;
    k->layer = 0;
    if (direct)
      continue;
    int last;
    double w = task_work(s, r, PH_FWD, 0, &last);
    k->task_last = last;
    start_task(s, r, w);
  }
  if (direct) {
    res->events += direct_step(s);
    res->direct_steps++;
    return 0;
  }
  if (s->rc)
    return s->rc;
  sim_engine_run(s->e, UINT64_MAX);
  res->events += s->events;
  if (s->rc)
    return s->rc;
  int rc = sim_engine_check(s->e);
  if (!rc && (s->next_coll != c->n_buckets || s->comm_active))
    rc = core_err_set(CORE_EINTERNAL, "step ended with %d of %d collectives started", s->next_coll, c->n_buckets);
  return rc;
}

/* The configuration's values the simulation relies on. */
static int check_cfg(const sim_step_cfg *c) {
  if (c->n_layers <= 0 || c->n_buckets <= 0 || c->world <= 0 || c->steps <= 0)
    return core_err_set(CORE_EINVAL, "step simulation needs layers, buckets, ranks and steps");
  if (c->compute_slowdown < 1.0 || c->comm_slowdown < 1.0 || (c->cpu_slowdown != 0.0 && c->cpu_slowdown < 1.0))
    return core_err_set(CORE_EINVAL, "compute_slowdown, comm_slowdown and cpu_slowdown must be >= 1");
  for (int b = 0; c->bucket_cpu_frac && b < c->n_buckets; b++)
    if (!(c->bucket_cpu_frac[b] >= 0.0 && c->bucket_cpu_frac[b] <= 1.0))
      return core_err_set(
          CORE_EINVAL, "bucket %d's CPU share of its communication is %g, not in [0, 1]", b, c->bucket_cpu_frac[b]);
  for (int b = 0; c->bucket_idle_frac && b < c->n_buckets; b++) {
    double f = c->bucket_cpu_frac ? c->bucket_cpu_frac[b] : 0.0, g = c->bucket_idle_frac[b];
    if (!(g >= 0.0 && f + g <= 1.0 + 1e-12))
      return core_err_set(CORE_EINVAL,
          "bucket %d's idle share of its communication is %g (CPU share %g): "
          "each in [0, 1], together at most 1",
          b, g, f);
  }
  for (int b = 0; b < c->n_buckets; b++)
    if ((c->bucket_compute_slowdown && !(c->bucket_compute_slowdown[b] >= 1.0)) ||
        (c->bucket_comm_slowdown && !(c->bucket_comm_slowdown[b] >= 1.0)))
      return core_err_set(CORE_EINVAL, "bucket %d's interference factors must be >= 1", b);
  return 0;
}

/* The run's state and buffers, each bucket's communication as given; on
 * failure what was allocated stays for stepsim_free. */
static int stepsim_init(stepsim *s, const sim_step_cfg *c, sim_engine *e) {
  s->c = c;
  s->e = e;
  s->R = c->every_rank ? c->world : 1;
  s->ranks = calloc((size_t)s->R, sizeof *s->ranks);
  s->colls = calloc((size_t)c->n_buckets, sizeof *s->colls);
  s->stop_after = calloc((size_t)c->n_layers, sizeof *s->stop_after);
  s->comm_s = calloc((size_t)c->n_buckets * 3, sizeof *s->comm_s);
  s->launched_at = malloc(sizeof *s->launched_at * (size_t)c->n_buckets);
  s->rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!s->ranks || !s->colls || !s->stop_after || !s->comm_s || !s->rng || !s->launched_at)
    return core_err_set(CORE_ENOMEM, "out of memory simulating %d ranks", s->R);
  s->cpu_f = s->comm_s + c->n_buckets;
  s->idle_f = s->cpu_f + c->n_buckets;
  gsl_rng_set(s->rng, (unsigned long)c->seed);
  for (int b = 0; b < c->n_buckets; b++) {
    s->comm_s[b] = c->bucket_comm_s[b];
    s->cpu_f[b] = c->bucket_cpu_frac ? c->bucket_cpu_frac[b] : 0.0;
    s->idle_f[b] = c->bucket_idle_frac ? c->bucket_idle_frac[b] : 0.0;
  }
  for (int b = 0; c->random_idle && b < c->n_buckets; b++)
    s->waits |= s->idle_f[b] > 0 && c->bucket_comm_s[b] > 0;
  return 0;
}

/* With random waits, each bucket's order of the steps through the wait's
 * strata, shuffled by a generator of its own: the jitter's draws, and so
 * every prediction without random waits, stay as they were. */
static int draw_strata(stepsim *s) {
  const sim_step_cfg *c = s->c;
  gsl_rng *wrng = gsl_rng_alloc(gsl_rng_mt19937);
  s->strata = malloc(sizeof *s->strata * (size_t)c->steps * (size_t)c->n_buckets);
  if (!wrng || !s->strata) {
    if (wrng)
      gsl_rng_free(wrng);
    return core_err_set(CORE_ENOMEM, "out of memory for %d steps' waits", c->steps);
  }
  gsl_rng_set(wrng, (unsigned long)(c->seed ^ 0x9e3779b97f4a7c15ull));
  for (int b = 0; b < c->n_buckets; b++) {
    size_t *st = s->strata + (size_t)b * (size_t)c->steps;
    for (int i = 0; i < c->steps; i++)
      st[i] = (size_t)i;
    gsl_ran_shuffle(wrng, st, (size_t)c->steps, sizeof *st);
  }
  gsl_rng_free(wrng);
  return 0;
}

/* Marks the layers after whose backward a bucket is ready. */
static int mark_ready_layers(stepsim *s) {
  const sim_step_cfg *c = s->c;
  for (int b = 0; b < c->n_buckets; b++) {
    int l = c->bucket_ready_layer[b];
    if (l < 0 || l >= c->n_layers)
      return core_err_set(CORE_EINTERNAL, "bucket %d is ready at layer %d of %d", b, l, c->n_layers);
    s->stop_after[l] = 1;
  }
  return 0;
}

/* This step's communication of each bucket with a random wait: the step
 * falls in its own stratum of the wait's distribution. */
static void draw_waits(stepsim *s, int step, sim_step_result *res) {
  const sim_step_cfg *c = s->c;
  for (int b = 0; b < c->n_buckets; b++) {
    double T = c->bucket_comm_s[b], f = c->bucket_cpu_frac ? c->bucket_cpu_frac[b] : 0.0;
    double g = c->bucket_idle_frac ? c->bucket_idle_frac[b] : 0.0;
    if (!(g > 0 && T > 0))
      continue;
    double w = g * T * exp_stratum_mean(s->strata[(size_t)b * (size_t)c->steps + (size_t)step], c->steps);
    s->comm_s[b] = T * (1.0 - g) + w;
    s->cpu_f[b] = s->comm_s[b] > 0 ? f * T / s->comm_s[b] : 0.0;
    s->idle_f[b] = s->comm_s[b] > 0 ? w / s->comm_s[b] : 0.0;
  }
  for (int b = 0; b < c->n_buckets; b++)
    res->comm_s += s->comm_s[b] / c->steps;
}

/* The engine and the collectives back to a step's start; the trace (the
 * first step's only) names its ranks. */
static void step_reset(stepsim *s, core_trace *trace) {
  const sim_step_cfg *c = s->c;
  sim_engine_reset(s->e);
  memset(s->colls, 0, sizeof *s->colls * (size_t)c->n_buckets);
  s->next_coll = 0;
  s->comm_active = 0;
  s->computing = s->R;
  s->rate_now = 1.0;
  s->open = -1;
  s->events = 0;
  s->memo = (work_memo){.mult = NAN, .dt_w = NAN};
  s->last_done = 0;
  s->trace = trace;
  s->trace_ranks = c->trace_ranks;
  if (s->trace)
    for (int r = 0; r < s->R && r < s->trace_ranks; r++) {
      char name[64];
      if (c->every_rank)
        snprintf(name, sizeof name, "rank %d", r);
      else
        snprintf(name, sizeof name, "slowest of %d ranks (representative)", c->world);
      core_trace_process(s->trace, r, name);
    }
}

/* After the last allreduce nothing interacts across ranks: finalize and
 * step the optimizer, and the step ends when the slowest rank is done, or
 * with the post-step collective, which starts then.
 * Returns the step's time; *comp gets a typical rank's compute. */
static double step_end(stepsim *s, double *comp) {
  const sim_step_cfg *c = s->c;
  sim_time end = 0;
  *comp = 0;
  for (int r = 0; r < s->R; r++) {
    rank_st *k = &s->ranks[r];
    sim_time t0 = s->last_done > k->bwd_done_t ? s->last_done : k->bwd_done_t;
    double tail = (c->finalize_s + c->optimizer_s) * k->mult * 1e9;
    sim_time t1 = t0 + round_ns(tail);
    trace_span(s, r, "optimizer step", "optimizer", CORE_TRACE_TID_COMPUTE, t0, t1, NULL);
    if (t1 > end)
      end = t1;
    double rank_comp = ((double)k->bwd_done_t + tail) / 1e9;
    /* The representative is the slowest rank; a typical rank computes
     * 1/mult of its time. The slowest of one rank is that rank. */
    *comp += c->every_rank || c->world == 1 ? rank_comp : rank_comp / k->mult;
  }
  *comp /= s->R;
  if (c->post_step_comm_s > 0) {
    sim_time t1 = end + round_ns(c->post_step_comm_s * 1e9);
    for (int r = 0; r < s->R; r++)
      trace_span(s, r, "optimizer allgather", "comm", CORE_TRACE_TID_COMM, end, t1, NULL);
    end = t1;
  }
  return (double)end / 1e9;
}

/* Every step in turn, each step's time into s->samples. */
static int run_steps(stepsim *s, core_trace *trace, sim_step_result *res) {
  const sim_step_cfg *c = s->c;
  double comp_sum = 0;
  for (int b = 0; !s->waits && b < c->n_buckets; b++)
    res->comm_s += c->bucket_comm_s[b];
  res->comm_s += c->post_step_comm_s;
  for (int step = 0; step < c->steps; step++) {
    if (s->waits)
      draw_waits(s, step, res);
    step_reset(s, step == 0 ? trace : NULL);
    int rc = run_ranks(s, res);
    if (rc)
      return rc;
    double comp, step_s = step_end(s, &comp);
    s->samples[step] = step_s;
    comp_sum += comp;
    if (step_s < res->step_min_s)
      res->step_min_s = step_s;
    if (step_s > res->step_max_s)
      res->step_max_s = step_s;
  }
  res->step_s = gsl_stats_mean(s->samples, 1, (size_t)c->steps);
  res->step_sd_s = c->steps > 1 ? gsl_stats_sd_m(s->samples, 1, (size_t)c->steps, res->step_s) : 0;
  res->compute_s = comp_sum / c->steps;
  res->exposed_comm_s = sim_step_exposed(res->step_s, res->compute_s);
  return 0;
}

double sim_step_exposed(double step_s, double compute_s) {
  double d = step_s - compute_s;
  return d < 1e-9 ? 0 : d;
}

static void stepsim_free(stepsim *s) {
  free(s->launched_at);
  free(s->samples);
  free(s->strata);
  if (s->rng)
    gsl_rng_free(s->rng);
  free(s->comm_s);
  free(s->ranks);
  free(s->colls);
  free(s->stop_after);
}

int sim_step_run(const sim_step_cfg *c, sim_engine *e, sim_step_result *res, core_trace *trace) {
  memset(res, 0, sizeof *res);
  int rc = check_cfg(c);
  if (rc)
    return rc;
  stepsim s = {0};
  if ((rc = stepsim_init(&s, c, e)) != 0 || (s.waits && (rc = draw_strata(&s)) != 0) ||
      (rc = mark_ready_layers(&s)) != 0)
    goto out_free;
  res->ranks_simulated = s.R;
  res->step_min_s = INFINITY;
  if (!(s.samples = malloc(sizeof *s.samples * (size_t)c->steps))) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %d step samples", c->steps);
    goto out_free;
  }
  rc = run_steps(&s, trace, res);
out_free:
  stepsim_free(&s);
  return rc;
}

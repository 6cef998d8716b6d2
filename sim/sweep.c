#include "sweep.h"

#include "sim/bounds.h"
#include "sim/jobpoint.h"
#include "sim/shard.h"
#include "sim/summary.h"
#include "sim/ties.h"

#include "core/clock.h"
#include "core/csv.h"
#include "core/err.h"
#include "core/progress.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The step level's CSV columns (header order). */
static const char *const step_columns[] = {"model", "nodes", "gpus_per_node", "gpus", "network", "gbps", "backend",
    "algorithm", "precision", "batch", "bucket_cap_mb", "overlap", "find_unused_parameters", "compression", "buckets",
    "wire_mb", "step_s", "compute_s", "comm_s", "exposed_comm_s", "samples_per_s", "scaling_eff", "step_sd_s", "mem_GB",
    "status"};
enum { N_STEP_COLUMNS = (int)(sizeof step_columns / sizeof *step_columns) };

/* Extra columns of scenarios with a job level; each metric of the job
 * level is followed by its 95% interval as _lo and _hi. */
static const char *const job_columns[] = {"ckpt_mode", "ckpt_every_s", "spares", "replications", "ckpt_s", "mtbf_h",
    "weibull_shape", "detect_s", "mttr_h", "restart_s", "load_s", "load_read_s", "load_exchange_s", "mtti_h",
    "time_to_train_h", "time_to_train_h_lo", "time_to_train_h_hi", "goodput", "goodput_lo", "goodput_hi", "ettr",
    "ettr_lo", "ettr_hi", "failures", "failures_lo", "failures_hi", "waste_ckpt_h", "waste_ckpt_h_lo",
    "waste_ckpt_h_hi", "waste_lost_h", "waste_lost_h_lo", "waste_lost_h_hi", "waste_restart_h", "waste_restart_h_lo",
    "waste_restart_h_hi", "young_s", "daly_s", "best_every_s", "best_goodput_lo", "best_goodput_hi", "ties_every_s",
    "unfinished", "unfinished_why"};
enum { N_JOB_COLUMNS = (int)(sizeof job_columns / sizeof *job_columns) };

/* Columns of a study with prices: its price per hour, then the cost of the
 * run with its interval (job level) or of a million samples (step level). */
static const char *const job_cost_columns[] = {"usd_per_hour", "cost_usd", "cost_usd_lo", "cost_usd_hi"};
static const char *const step_cost_columns[] = {"usd_per_hour", "usd_per_Msample"};

/* Extra columns of scenarios with a fabric (sim/fabric.h): its name and
 * size, the other jobs' GPUs, and what it made of one bucket_cap_mb
 * allreduce: NCCL's algorithm, the fabric's slowdown of it, its bus
 * bandwidth; and the share of the step the job's collectives run. */
static const char *const fabric_columns[] = {
    "fabric", "racks", "pods", "other_gpus", "bucket_algorithm", "fabric_slowdown", "busbw_GBps", "comm_duty"};
enum { N_FABRIC_COLUMNS = (int)(sizeof fabric_columns / sizeof *fabric_columns) };

static void write_fabric_cells(core_csv *c, const sim_point_result *r) {
  core_csv_str(c, r->pt.fabric->name);
  core_csv_int(c, r->fab.racks);
  core_csv_int(c, r->fab.pods);
  core_csv_int(c, r->fab.other_gpus);
  core_csv_str(c, sim_algo_name((enum sim_algo)r->fab.used_algo));
  core_csv_num(c, r->fab.slowdown);
  core_csv_num(c, r->fab.busbw_GBps);
  core_csv_num(c, r->fab.duty);
}

/* The job level's rate for messages about the work ahead: events a second
 * of one core when failures come faster than recovery (the studies such a
 * message is about), the order of magnitude bench/bench_sim prints for it. */
#define JOB_EVENTS_PER_S 5e6

/* The step level of every point; the job level's Monte Carlo; more
 * replications for the groups whose best interval is not told apart yet. */
enum phase { PHASE_STEP, PHASE_JOB, PHASE_MORE };

/* What the progress report reads while workers run. */
typedef struct progress {
  atomic_long points;          /* done in the current phase */
  atomic_ullong events;        /* job-level events run */
  _Atomic double total_events; /* estimated, for the job phase */
  atomic_int phase;
} progress;

typedef struct work {
  const sim_scenario *s;
  const sim_sweep_opts *o;
  long *points; /* indices to run */
  long n;
  sim_point_result *res;
  double *estimate; /* job-level events per point (job phase) */
  int *more;        /* replications to add to each point (more phase) */
  enum phase phase;
  atomic_long next;
  atomic_int failed;
  pthread_mutex_t err_lock;
  int rc;
  char err[2048];
  core_trace *trace;
  progress prog;
} work;

/* file:line of the key behind the work: the failure rate first, or
 * simulation.max_events first; the scenario when neither is given. */
static void work_where(const sim_scenario *s, int rate_first, char *buf, size_t n) {
  const config_setting_t *a = rate_first ? s->job.rate_key : s->job.max_events_key,
                         *b = rate_first ? s->job.max_events_key : s->job.rate_key;
  if (a || b)
    core_cfg_where(a ? a : b, buf, n);
  else
    snprintf(buf, n, "%s", s->path);
}

static void count_events(void *ctx, uint64_t events) {
  progress *pr = ctx;
  atomic_fetch_add(&pr->events, (unsigned long long)events);
}

/* The step level of point i. Points that differ only in job-level settings
 * share it: it is the step level of the first of them, whichever worker or
 * shard runs which point (its world seeds the step's random draws).
 * last/last_step: the worker's previous one. */
static int run_step(work *w, long i, sim_engine *e, sim_point_result *last, long *last_step) {
  sim_point p, first;
  long job_points = 1;
  for (int d = SIM_N_STEP_DIMS; d < SIM_N_DIMS; d++)
    job_points *= w->s->n[d];
  sim_scenario_point(w->s, w->points[i], &p);
  sim_scenario_point(w->s, p.step_index * job_points, &first);
  int rc = 0;
  if (w->points[i] == w->o->trace_point) {
    /* The trace from a run of its own: a traced step's figures may differ
     * in their last digits from the untraced ones, and the CSV must not
     * depend on --trace or on which worker ran the traced point. */
    sim_point_result traced;
    if ((rc = sim_predict_point(w->s, &first, e, w->trace, w->o->trace_ranks, &traced)) != 0)
      return rc;
  }
  if (p.step_index == *last_step) {
    w->res[i] = *last;
  } else {
    rc = sim_predict_point(w->s, &first, e, NULL, w->o->trace_ranks, &w->res[i]);
    *last = w->res[i];
    *last_step = rc ? -1 : p.step_index;
  }
  w->res[i].pt = p;
  w->res[i].usd_per_hour = sim_jobpoint_usd_per_hour(w->s, &p);
  return rc;
}

/* The job level of point i (its first replications, or more of them):
 * past simulation.max_events, an input error at the key that asked for
 * the work. */
static int run_job(work *w, long i, sim_engine *e) {
  sim_point_result *r = &w->res[i];
  int rc;
  if (w->phase == PHASE_JOB) {
    rc = sim_jobpoint_run(w->s, &r->pt, 0, w->s->job.replications, e, count_events, &w->prog, r);
  } else if (w->more[i] > 0) {
    sim_point_result extra = *r;
    rc = sim_jobpoint_run(w->s, &r->pt, r->job.replications, w->more[i], e, count_events, &w->prog, &extra);
    if (rc == 0)
      rc = sim_job_merge(&r->job, &extra.job);
  } else {
    return 0;
  }
  if (rc != CORE_EINVAL)
    return rc;
  char msg[1024], wh[4200], name[512];
  snprintf(msg, sizeof msg, "%s", core_err_msg());
  sim_point_name(&r->pt, name, sizeof name);
  work_where(w->s, 0, wh, sizeof wh);
  return core_err_set(CORE_EINVAL,
      "%s: %s: %s (estimated %.2g events); raise simulation.max_events, or lower simulation.replications, the job's "
      "length or the failure rate",
      wh, name, msg, w->estimate[i]);
}

static void *worker(void *arg) {
  work *w = arg;
  sim_engine *e = NULL;
  sim_point_result last;
  long last_step = -1;
  int rc = sim_engine_new(&e);
  if (rc)
    goto fail;
  for (;;) {
    long i = atomic_fetch_add(&w->next, 1);
    if (i >= w->n || atomic_load(&w->failed))
      break;
    rc = w->phase == PHASE_STEP ? run_step(w, i, e, &last, &last_step) : run_job(w, i, e);
    if (rc) {
      char name[512];
      sim_point_name(&w->res[i].pt, name, sizeof name);
      if (w->phase == PHASE_STEP)
        core_err_wrap(rc, "%s", name);
      goto fail;
    }
    atomic_fetch_add(&w->prog.points, 1);
  }
  sim_engine_free(e);
  return NULL;
fail:
  sim_engine_free(e);
  pthread_mutex_lock(&w->err_lock);
  if (!atomic_exchange(&w->failed, 1)) {
    w->rc = rc;
    snprintf(w->err, sizeof w->err, "%s", core_err_msg());
  }
  pthread_mutex_unlock(&w->err_lock);
  return NULL;
}

/* Run one phase over every point on `jobs` threads (this one included). */
static int run_phase(work *w, enum phase ph, int jobs) {
  w->phase = ph;
  atomic_store(&w->next, 0);
  atomic_store(&w->prog.points, 0);
  atomic_store(&w->prog.phase, ph);
  pthread_t *th = malloc(sizeof *th * (size_t)jobs);
  if (!th)
    return core_err_set(CORE_ENOMEM, "out of memory starting %d workers", jobs);
  int started = 0;
  for (int j = 1; j < jobs; j++) {
    if (pthread_create(&th[j], NULL, worker, w) != 0)
      break;
    started = j;
  }
  worker(w);
  for (int j = 1; j <= started; j++)
    pthread_join(th[j], NULL);
  free(th);
  if (atomic_load(&w->failed))
    return core_err_set(w->rc, "%s", w->err);
  return 0;
}

/* "1.2 hours", "3.4 days": a duration for a person. */
static void human_time(double s, char *buf, size_t n) {
  if (s < 10)
    snprintf(buf, n, "%.2g s", s);
  else if (s < 120)
    snprintf(buf, n, "%.0f s", s);
  else if (s < 7200)
    snprintf(buf, n, "%.2g minutes", s / 60);
  else if (s < 3 * 86400)
    snprintf(buf, n, "%.3g hours", s / 3600);
  else
    snprintf(buf, n, "%.3g days", s / 86400);
}

/* The scheduled failures within the steps of the point that has the fewest
 * (sim/bounds.h): refused there, the fix serves every point. */
static int check_schedule(const work *w) {
  double fewest = INFINITY;
  long at = -1;
  for (long i = 0; i < w->n; i++) {
    if (strcmp(w->res[i].status, "ok") != 0)
      continue;
    double steps = sim_jobpoint_steps(w->s, &w->res[i].pt, w->res[i].step_s);
    if (steps < fewest) {
      fewest = steps;
      at = i;
    }
  }
  return at < 0 ? 0 : sim_bounds_schedule_point(w->s, &w->res[at].pt, fewest, w->res[at].step_s);
}

/* The work of the job level, estimated from every point's parameters before
 * any Monte Carlo runs: a point over simulation.max_events fails the study
 * at once, at the key that sets the failure rate. A point that cannot run
 * (status other than ok) has no run, hence no work. */
static int check_work(work *w) {
  const sim_scenario *s = w->s;
  double total = 0, worst = -1;
  long at = 0;
  int worst_capped = 0, rc;
  sim_job_params jp, worst_jp;
  if ((rc = check_schedule(w)) != 0)
    return rc;
  for (long i = 0; i < w->n; i++) {
    int capped;
    w->estimate[i] = 0;
    if (strcmp(w->res[i].status, "ok") != 0)
      continue;
    if ((rc = sim_jobpoint_params(s, &w->res[i].pt, &w->res[i], &jp, NULL)) != 0)
      return rc;
    w->estimate[i] = sim_job_estimate_events(&jp, NULL, &capped);
    total += w->estimate[i];
    if (w->estimate[i] > worst) {
      worst = w->estimate[i];
      worst_capped = capped;
      at = i;
      worst_jp = jp;
    }
  }
  atomic_store(&w->prog.total_events, total);
  if (w->n == 0 || worst <= s->job.max_events)
    return 0;
  char wh[4200], name[512], t_all[64], mtti[64], rec[64], capped[128] = "";
  human_time(total / JOB_EVENTS_PER_S, t_all, sizeof t_all);
  human_time(sim_job_mtti(&worst_jp), mtti, sizeof mtti);
  human_time(sim_job_recovery_s(&worst_jp), rec, sizeof rec);
  sim_point_name(&w->res[at].pt, name, sizeof name);
  work_where(s, 1, wh, sizeof wh);
  if (worst_capped)
    snprintf(capped, sizeof capped, ", so most runs would not finish within %g times their failure-free time",
        SIM_JOB_WALL_CAP_FACTOR);
  return core_err_set(CORE_EINVAL,
      "%s: this study would take about %.2g events (~%s at %.0e events/s); %s alone about %.2g, over "
      "simulation.max_events = %.15g a point: the job is interrupted every %s and each interruption costs %s%s. Raise "
      "simulation.max_events, or lower simulation.replications, the job's length or the failure rate",
      wh, total, t_all, JOB_EVENTS_PER_S, name, worst, s->job.max_events, mtti, rec, capped);
}

void sim_sweep_free(sim_sweep *w) {
  for (long i = 0; i < w->n; i++)
    sim_job_result_free(&w->res[i].job);
  free(w->res);
  w->res = NULL;
  w->n = 0;
}

/* Progress on stderr (core/progress.h), from a thread of its own, once the
 * sweep has run for progress_after_s. It reads counters only: the outputs
 * are the same with it or without. */
typedef struct reporter {
  work *w;
  core_progress p;
  core_progress_ticker t;
  double job_t0;
} reporter;

static void report_line(reporter *r, double now) {
  work *w = r->w;
  long done = atomic_load(&w->prog.points);
  char line[256], left[64] = "";
  if (atomic_load(&w->prog.phase) == PHASE_STEP) {
    snprintf(line, sizeof line, "simulate: step level, %ld of %ld points, %.0f s", done, w->n, now - r->p.t0);
  } else {
    double ev = (double)atomic_load(&w->prog.events), tot = atomic_load(&w->prog.total_events);
    if (ev > 0 && tot > ev) {
      human_time((now - r->job_t0) * (tot - ev) / ev, left, sizeof left);
    }
    snprintf(line, sizeof line, "simulate: failures, %ld of %ld points, %.3g of ~%.3g events, %.0f s%s%s", done, w->n,
        ev, tot, now - r->p.t0, left[0] ? ", about " : "", left[0] ? left : "");
    if (left[0])
      strncat(line, " left", sizeof line - strlen(line) - 1);
  }
  core_progress_line(&r->p, now, "%s", line);
}

static void report(void *arg, double now) {
  reporter *r = arg;
  if (atomic_load(&r->w->prog.phase) == PHASE_JOB && r->job_t0 == 0)
    r->job_t0 = now;
  if (core_progress_due(&r->p, now))
    report_line(r, now);
}

/* The end of the group of points starting at i (they differ only in the
 * checkpoint interval: consecutive, the interval is the innermost
 * dimension). */
static long group_end(const work *w, long i) {
  long k = i;
  while (k < w->n && w->res[k].pt.group == w->res[i].pt.group)
    k++;
  return k;
}

/* Marks the points of groups whose best interval is not told apart yet
 * (sim/ties.h) for as many replications again, within
 * simulation.max_replications and simulation.max_events; returns how many. */
static long ask_more(work *w) {
  const sim_job_cfg *j = &w->s->job;
  long asked = 0;
  for (long i = 0; i < w->n;) {
    long k = group_end(w, i);
    int unresolved = sim_ties_decide(w->res + i, k - i, j->tie_goodput);
    int reps = w->res[i].job.replications, fits = reps * 2 <= j->max_replications;
    for (long q = i; q < k && fits; q++)
      fits = w->estimate[q] * 2.0 * reps / j->replications <= j->max_events;
    for (long q = i; q < k; q++) {
      w->more[q] = unresolved && fits ? reps : 0;
      asked += w->more[q] > 0;
    }
    i = k;
  }
  return asked;
}

/* The phases: every point's step level, then (with a job level) the work
 * of the job level estimated and bounded, its Monte Carlo, and more
 * replications until every group's best interval is told apart from the
 * others or tied with them within simulation.tie_goodput. */
static int run_phases(work *w, int jobs) {
  reporter r = {.w = w};
  core_progress_start(&r.p, 1, w->o->progress_after_s);
  if (w->o->progress)
    core_progress_ticker_start(&r.t, report, &r, CORE_PROGRESS_POLL_S);
  int rc = run_phase(w, PHASE_STEP, jobs);
  if (!rc && w->s->job.present && (rc = check_work(w)) == 0)
    rc = run_phase(w, PHASE_JOB, jobs);
  while (!rc && w->s->job.present && ask_more(w) > 0)
    rc = run_phase(w, PHASE_MORE, jobs);
  if (r.t.on) {
    core_progress_ticker_stop(&r.t);
    core_progress_end(&r.p);
  }
  return rc;
}

/* 0 when the shard and the traced point are within the scenario's. */
static int check_opts(const sim_sweep_opts *o, long total, int n_shards) {
  if (o->shard < 0 || o->shard >= n_shards)
    return core_err_set(CORE_EUSAGE, "shard %d/%d: the shard index must be in [0, %d)", o->shard, n_shards, n_shards);
  if (o->trace_point >= total)
    return core_err_set(
        CORE_EUSAGE, "--trace-point %ld: the scenario has %ld points (0 to %ld)", o->trace_point, total, total - 1);
  return 0;
}

/* w's points: those of the total the shard owns, with their zeroed
 * results, estimates and requests for more (at least one each, so that
 * an empty shard still allocates). free_work undoes it, failed or not. */
static int alloc_work(work *w, long total, int n_shards) {
  const sim_scenario *s = w->s;
  long J = sim_shard_job_points(s);
  w->points = malloc(sizeof *w->points * (size_t)((total / J / n_shards + 1) * J));
  if (!w->points)
    return core_err_set(CORE_ENOMEM, "out of memory for %ld points", total);
  for (long i = 0; i < total; i++)
    if (sim_shard_owns(s, w->o->shard, n_shards, i))
      w->points[w->n++] = i;
  w->res = calloc((size_t)(w->n ? w->n : 1), sizeof *w->res);
  w->estimate = calloc((size_t)(w->n ? w->n : 1), sizeof *w->estimate);
  w->more = calloc((size_t)(w->n ? w->n : 1), sizeof *w->more);
  if (!w->res || !w->estimate || !w->more)
    return core_err_set(CORE_ENOMEM, "out of memory for %ld results", w->n);
  return 0;
}

static void free_work(work *w) {
  if (w->res)
    for (long i = 0; i < w->n; i++)
      sim_job_result_free(&w->res[i].job);
  free(w->res);
  free(w->estimate);
  free(w->more);
  free(w->points);
  pthread_mutex_destroy(&w->err_lock);
}

/* Worker threads: o->jobs, or one per online CPU, at most one per point. */
static int worker_count(const sim_sweep_opts *o, long n) {
  int jobs = o->jobs > 0 ? o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (jobs < 1)
    jobs = 1;
  if (jobs > n)
    jobs = n > 0 ? (int)n : 1;
  return jobs;
}

int sim_sweep_run(const sim_scenario *s, const sim_sweep_opts *o, sim_sweep *out) {
  memset(out, 0, sizeof *out);
  long total = sim_scenario_points(s);
  int n_shards = o->n_shards > 0 ? o->n_shards : 1;
  int rc = check_opts(o, total, n_shards);
  if (rc)
    return rc;
  work w = {.s = s, .o = o};
  pthread_mutex_init(&w.err_lock, NULL);
  core_trace trace;
  int tracing = 0;
  if ((rc = alloc_work(&w, total, n_shards)) != 0)
    goto out_free;
  if (o->trace_path && o->trace_point >= 0 && sim_shard_owns(s, o->shard, n_shards, o->trace_point)) {
    if ((rc = core_trace_open(&trace, o->trace_path)) != 0)
      goto out_free;
    tracing = 1;
    w.trace = &trace;
  }
  if ((rc = run_phases(&w, worker_count(o, w.n))) != 0)
    goto out_trace;
  if (tracing) {
    tracing = 0;
    if ((rc = core_trace_commit(&trace)) != 0)
      goto out_free;
  }
  out->n = w.n;
  out->res = w.res;
  w.res = NULL;
out_trace:
  if (tracing)
    core_trace_abort(&trace);
out_free:
  free_work(&w);
  return rc;
}

static void write_job_cells(core_csv *c, const sim_scenario *s, const sim_point_result *r) {
  const sim_point *p = &r->pt;
  char why[512];
  core_csv_str(c, !s->job.has_checkpoints ? "none" : p->ckpt_async ? "async" : "sync");
  core_csv_num(c, r->ckpt_every_s);
  core_csv_int(c, p->spares);
  core_csv_int(c, r->job.replications);
  core_csv_num(c, r->ckpt_block_s);
  /* The failure rate as the scenario sweeps it: mtbf_h, or a Weibull's
   * scale and shape; empty for a schedule or no failures. */
  int dist = s->job.fail_dist;
  core_csv_num(c, dist == SIM_FAIL_EXPONENTIAL || dist == SIM_FAIL_WEIBULL ? p->fail_rate_h : NAN);
  core_csv_num(c, dist == SIM_FAIL_WEIBULL ? p->weibull_shape : NAN);
  const double nums[] = {
      r->detect_s, r->mttr_h, r->restart_s, r->load_s, r->load_read_s, r->load_exchange_s, r->job.mtti_s / 3600.0};
  for (size_t k = 0; k < sizeof nums / sizeof *nums; k++)
    core_csv_num(c, nums[k]);
  for (int k = 0; k < SIM_JOB_N_METRICS; k++) {
    core_csv_num(c, r->job.mean[k]);
    core_csv_num(c, r->job.lo[k]);
    core_csv_num(c, r->job.hi[k]);
  }
  core_csv_num(c, r->job.young_s);
  core_csv_num(c, r->job.daly_s);
  core_csv_num(c, r->best_every_s);
  core_csv_num(c, r->best_goodput_lo);
  core_csv_num(c, r->best_goodput_hi);
  core_csv_str(c, r->ties);
  core_csv_int(c, r->job.unfinished);
  sim_summary_unfinished(r, why, sizeof why);
  core_csv_str(c, why);
}

/* usd_per_hour, then the run's cost or a million samples' (see the
 * columns above). */
static void write_cost_cells(core_csv *c, const sim_scenario *s, const sim_point_result *r) {
  core_csv_num(c, r->usd_per_hour);
  if (s->job.present) {
    for (int k = 0; k < 3; k++) {
      const double *t = k == 0 ? r->job.mean : k == 1 ? r->job.lo : r->job.hi;
      core_csv_num(c, r->usd_per_hour * t[SIM_JOB_TIME_H]);
    }
  } else {
    core_csv_num(c, r->usd_per_hour / (r->samples_per_s * 3600.0) * 1e6);
  }
}

static void write_header(FILE *f, int fab, int job, int priced) {
  for (int i = 0; i < N_STEP_COLUMNS; i++)
    fprintf(f, "%s%s", i ? "," : "", step_columns[i]);
  for (int i = 0; fab && i < N_FABRIC_COLUMNS; i++)
    fprintf(f, ",%s", fabric_columns[i]);
  for (int i = 0; job && i < N_JOB_COLUMNS; i++)
    fprintf(f, ",%s", job_columns[i]);
  for (int i = 0; priced && i < (job ? 4 : 2); i++)
    fprintf(f, ",%s", job ? job_cost_columns[i] : step_cost_columns[i]);
  fputc('\n', f);
}

static void write_step_cells(core_csv *c, const sim_point_result *r) {
  const sim_point *p = &r->pt;
  char cname[32];
  core_csv_str(c, p->model->name);
  core_csv_int(c, p->nodes);
  core_csv_int(c, p->per_node);
  core_csv_int(c, (long long)p->nodes * p->per_node);
  core_csv_str(c, p->network->name);
  core_csv_num(c, r->gbps);
  core_csv_str(c, sim_backend_name(p->backend));
  core_csv_str(c, p->algorithm < 0 ? "auto" : sim_algo_name((enum sim_algo)p->algorithm));
  core_csv_str(c, sim_precision_name(p->precision));
  core_csv_int(c, p->batch);
  core_csv_num(c, p->bucket_cap_mb);
  core_csv_int(c, p->overlap);
  core_csv_int(c, p->find_unused);
  core_csv_str(c, core_compression_name(&p->compression, cname, sizeof cname));
  core_csv_int(c, r->n_buckets);
  const double nums[] = {r->wire_bytes / 1e6, r->step_s, r->compute_s, r->comm_s, r->exposed_comm_s, r->samples_per_s,
      r->scaling_eff, r->step_sd_s, r->mem_GB};
  for (size_t k = 0; k < sizeof nums / sizeof *nums; k++)
    core_csv_num(c, nums[k]);
  core_csv_str(c, r->status);
}

int sim_sweep_write_csv(
    const sim_scenario *s, const sim_sweep *w, const char *path, int with_header, const char *stamp) {
  core_csv c;
  int rc, job = s->job.present, priced = s->prices.priced, fab = s->n_fabrics > 0;
  memset(&c, 0, sizeof c);
  if ((rc = core_afile_open(&c.a, path)) != 0)
    return rc;
  c.ncols = N_STEP_COLUMNS + (fab ? N_FABRIC_COLUMNS : 0) + (job ? N_JOB_COLUMNS : 0) + (priced ? (job ? 4 : 2) : 0);
  if (stamp)
    fprintf(c.a.f, "%s\n", stamp);
  if (with_header)
    write_header(c.a.f, fab, job, priced);
  for (long i = 0; i < w->n; i++) {
    write_step_cells(&c, &w->res[i]);
    if (fab)
      write_fabric_cells(&c, &w->res[i]);
    if (job)
      write_job_cells(&c, s, &w->res[i]);
    if (priced)
      write_cost_cells(&c, s, &w->res[i]);
    core_csv_end_row(&c);
  }
  return core_csv_commit(&c);
}

#include "sweep.h"

#include "sim/shard.h"

#include "core/csv.h"
#include "core/err.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *const sim_sweep_columns[] = {
    "model", "nodes", "gpus_per_node", "gpus", "network", "gbps", "backend", "algorithm",
    "precision", "batch", "bucket_cap_mb", "overlap", "find_unused_parameters",
    "compression", "buckets", "wire_mb", "step_s",
    "compute_s", "comm_s", "exposed_comm_s", "samples_per_s", "scaling_eff", "step_sd_s", "status"};
const int sim_sweep_n_columns = (int)(sizeof sim_sweep_columns / sizeof *sim_sweep_columns);

/* Extra columns of scenarios with a job level; each metric of the job
 * level is followed by its 95% interval as _lo and _hi. */
static const char *const job_columns[] = {
    "ckpt_mode", "ckpt_every_s", "spares", "replications", "ckpt_s", "restart_s", "load_s", "mtti_h",
    "time_to_train_h", "time_to_train_h_lo", "time_to_train_h_hi", "goodput", "goodput_lo", "goodput_hi",
    "ettr", "ettr_lo", "ettr_hi", "failures", "failures_lo", "failures_hi", "waste_ckpt_h",
    "waste_ckpt_h_lo", "waste_ckpt_h_hi", "waste_lost_h", "waste_lost_h_lo", "waste_lost_h_hi",
    "waste_restart_h", "waste_restart_h_lo", "waste_restart_h_hi", "young_s", "daly_s", "best_every_s",
    "unfinished"};
enum { N_JOB_COLUMNS = (int)(sizeof job_columns / sizeof *job_columns) };

/* Extra columns of scenarios with a fabric (sim/fabric.h): its name and
 * size, the other jobs' GPUs, and what it made of one bucket_cap_mb
 * allreduce: NCCL's algorithm, the fabric's slowdown of it, its bus
 * bandwidth; and the share of the step the job's collectives run. */
static const char *const fabric_columns[] = {"fabric", "racks", "pods", "other_gpus", "bucket_algorithm",
                                             "fabric_slowdown", "busbw_GBps", "comm_duty"};
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

enum phase { PHASE_STEP, PHASE_JOB };

/* What the progress report reads while workers run. */
typedef struct progress {
  atomic_long points;         /* done in the current phase */
  atomic_ullong events;       /* job-level events run */
  _Atomic double total_events; /* estimated, for the job phase */
  atomic_int phase;
  atomic_int stop;
} progress;

typedef struct work {
  const sim_scenario *s;
  const sim_sweep_opts *o;
  long *points;          /* indices to run */
  long n;
  sim_point_result *res;
  double *estimate;      /* job-level events per point (job phase) */
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

/* A point in messages: "point 3 (model mlp, 2 x 1, network 1GbE, gloo)". */
static void point_name(const sim_point *p, char *buf, size_t n) {
  snprintf(buf, n, "point %ld (model %s, %d x %d, network %s, %s)", p->index, p->model->name, p->nodes,
           p->per_node, p->network->name, sim_backend_name(p->backend));
}

/* The step level of point i. Points that differ only in job-level settings
 * share it: it is the step level of the first of them (its index seeds the
 * step's random draws), whichever worker or shard runs which point.
 * last/last_step: the worker's previous one. */
static int run_step(work *w, long i, sim_engine *e, sim_point_result *last, long *last_step) {
  sim_point p, first;
  long job_points = 1;
  for (int d = SIM_N_STEP_DIMS; d < SIM_N_DIMS; d++)
    job_points *= w->s->n[d];
  sim_scenario_point(w->s, w->points[i], &p);
  sim_scenario_point(w->s, p.step_index * job_points, &first);
  core_trace *tr = w->points[i] == w->o->trace_point ? w->trace : NULL;
  int rc = 0;
  if (p.step_index == *last_step && !tr) {
    w->res[i] = *last;
  } else {
    rc = sim_predict_point(w->s, &first, e, tr, w->o->trace_ranks, &w->res[i]);
    *last = w->res[i];
    *last_step = rc ? -1 : p.step_index;
  }
  w->res[i].pt = p;
  return rc;
}

/* The job level of point i: past simulation.max_events, an input error at
 * the key that asked for the work. */
static int run_job(work *w, long i, sim_engine *e) {
  int rc = sim_predict_job(w->s, &w->res[i].pt, e, count_events, &w->prog, &w->res[i]);
  if (rc != CORE_EINVAL)
    return rc;
  char msg[1024], wh[4200], name[512];
  snprintf(msg, sizeof msg, "%s", core_err_msg());
  point_name(&w->res[i].pt, name, sizeof name);
  work_where(w->s, 0, wh, sizeof wh);
  return core_err_set(CORE_EINVAL, "%s: %s: %s (estimated %.2g events); raise simulation.max_events, or lower simulation.replications, the job's length or the failure rate",
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
      point_name(&w->res[i].pt, name, sizeof name);
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

/* The work of the job level, estimated from every point's parameters before
 * any Monte Carlo runs: a point over simulation.max_events fails the study
 * at once, at the key that sets the failure rate. */
static int check_work(work *w) {
  const sim_scenario *s = w->s;
  double total = 0, worst = -1;
  long at = 0;
  int worst_capped = 0, rc;
  sim_job_params jp, worst_jp;
  for (long i = 0; i < w->n; i++) {
    int capped;
    if ((rc = sim_predict_job_params(s, &w->res[i].pt, &w->res[i], &jp)) != 0)
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
  point_name(&w->res[at].pt, name, sizeof name);
  work_where(s, 1, wh, sizeof wh);
  if (worst_capped)
    snprintf(capped, sizeof capped, ", so most runs would not finish within %g times their failure-free time",
             SIM_JOB_WALL_CAP_FACTOR);
  return core_err_set(CORE_EINVAL, "%s: this study would take about %.2g events (~%s at %.0e events/s); %s alone about %.2g, over simulation.max_events = %.15g a point: the job is interrupted every %s and each interruption costs %s%s. Raise simulation.max_events, or lower simulation.replications, the job's length or the failure rate",
                      wh, total, t_all, JOB_EVENTS_PER_S, name, worst, s->job.max_events, mtti, rec, capped);
}

void sim_sweep_free(sim_sweep *w) {
  free(w->res);
  w->res = NULL;
  w->n = 0;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Progress on stderr, from a thread of its own, once the sweep has run for
 * progress_after_s: on a terminal one line rewritten every second, else a
 * line every REPORT_LINES_S. It reads counters only: the outputs are the
 * same with it or without. */
#define REPORT_LINES_S 10.0

typedef struct reporter {
  work *w;
  pthread_t th;
  int tty, printed;
  double t0, job_t0;
} reporter;

static void report_line(reporter *r, double now) {
  work *w = r->w;
  long done = atomic_load(&w->prog.points);
  char line[256], left[64] = "";
  if (atomic_load(&w->prog.phase) == PHASE_STEP) {
    snprintf(line, sizeof line, "simulate: step level, %ld of %ld points, %.0f s", done, w->n, now - r->t0);
  } else {
    double ev = (double)atomic_load(&w->prog.events), tot = atomic_load(&w->prog.total_events);
    if (ev > 0 && tot > ev) {
      human_time((now - r->job_t0) * (tot - ev) / ev, left, sizeof left);
    }
    snprintf(line, sizeof line, "simulate: failures, %ld of %ld points, %.3g of ~%.3g events, %.0f s%s%s", done, w->n,
             ev, tot, now - r->t0, left[0] ? ", about " : "", left[0] ? left : "");
    if (left[0])
      strncat(line, " left", sizeof line - strlen(line) - 1);
  }
  fprintf(stderr, r->tty ? "\r%s\033[K" : "%s\n", line);
  fflush(stderr);
  r->printed = 1;
}

static void *report(void *arg) {
  reporter *r = arg;
  double last = -INFINITY, after = r->w->o->progress_after_s;
  do {
    double now = mono_s();
    if (atomic_load(&r->w->prog.phase) == PHASE_JOB && r->job_t0 == 0)
      r->job_t0 = now;
    if (now - r->t0 >= after && now - last >= (r->tty ? 1.0 : REPORT_LINES_S)) {
      report_line(r, now);
      last = now;
    }
    struct timespec tick = {0, 200 * 1000 * 1000};
    nanosleep(&tick, NULL);
  } while (!atomic_load(&r->w->prog.stop));
  if (r->printed && r->tty)
    fputc('\n', stderr);
  return NULL;
}

/* The best checkpoint interval of each group of points that differ only in
 * it (consecutive: the interval is the innermost dimension). */
static void mark_best_intervals(work *w) {
  for (long i = 0; i < w->n;) {
    long k = i;
    double best = -1, at = NAN;
    while (k < w->n && w->res[k].pt.step_index == w->res[i].pt.step_index &&
           w->res[k].pt.ckpt_async == w->res[i].pt.ckpt_async && w->res[k].pt.spares == w->res[i].pt.spares) {
      if (w->res[k].has_job && w->res[k].job.mean[SIM_JOB_GOODPUT] > best) {
        best = w->res[k].job.mean[SIM_JOB_GOODPUT];
        at = w->res[k].ckpt_every_s;
      }
      k++;
    }
    for (long q = i; q < k; q++)
      w->res[q].best_every_s = at;
    i = k;
  }
}

/* The phases: every point's step level, then (with failures or checkpoints)
 * the work of the job level estimated and bounded, then its Monte Carlo. */
static int run_phases(work *w, int jobs) {
  reporter r = {.w = w, .tty = isatty(2), .t0 = mono_s()};
  int reporting = w->o->progress && pthread_create(&r.th, NULL, report, &r) == 0;
  int rc = run_phase(w, PHASE_STEP, jobs);
  if (!rc && w->s->job.present && (rc = check_work(w)) == 0)
    rc = run_phase(w, PHASE_JOB, jobs);
  if (reporting) {
    atomic_store(&w->prog.stop, 1);
    pthread_join(r.th, NULL);
  }
  if (!rc)
    mark_best_intervals(w);
  return rc;
}

int sim_sweep_run(const sim_scenario *s, const sim_sweep_opts *o, sim_sweep *out) {
  memset(out, 0, sizeof *out);
  long total = sim_scenario_points(s);
  int n_shards = o->n_shards > 0 ? o->n_shards : 1;
  if (o->shard < 0 || o->shard >= n_shards)
    return core_err_set(CORE_EUSAGE, "shard %d/%d: the shard index must be in [0, %d)", o->shard, n_shards, n_shards);
  if (o->trace_point >= total)
    return core_err_set(CORE_EUSAGE, "--trace-point %ld: the scenario has %ld points (0 to %ld)",
                        o->trace_point, total, total - 1);
  work w = {.s = s, .o = o};
  pthread_mutex_init(&w.err_lock, NULL);
  long J = sim_shard_job_points(s);
  w.points = malloc(sizeof *w.points * (size_t)((total / J / n_shards + 1) * J));
  if (!w.points)
    return core_err_set(CORE_ENOMEM, "out of memory for %ld points", total);
  for (long i = 0; i < total; i++)
    if (sim_shard_owns(s, o->shard, n_shards, i))
      w.points[w.n++] = i;
  w.res = calloc((size_t)(w.n ? w.n : 1), sizeof *w.res);
  w.estimate = calloc((size_t)(w.n ? w.n : 1), sizeof *w.estimate);
  int rc = 0;
  core_trace trace;
  int tracing = 0;
  if (!w.res || !w.estimate) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %ld results", w.n);
    goto out_free;
  }
  if (o->trace_path && o->trace_point >= 0 && sim_shard_owns(s, o->shard, n_shards, o->trace_point)) {
    if ((rc = core_trace_open(&trace, o->trace_path)) != 0)
      goto out_free;
    tracing = 1;
    w.trace = &trace;
  }
  int jobs = o->jobs > 0 ? o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (jobs < 1)
    jobs = 1;
  if (jobs > w.n)
    jobs = w.n > 0 ? (int)w.n : 1;
  if ((rc = run_phases(&w, jobs)) != 0)
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
  free(w.res);
  free(w.estimate);
  free(w.points);
  pthread_mutex_destroy(&w.err_lock);
  return rc;
}

int sim_sweep_write_csv(const sim_sweep *w, const char *path, int with_header) {
  core_csv c;
  int rc, job = w->n > 0 && w->res[0].has_job, fab = w->n > 0 && w->res[0].has_fabric;
  int ncols = sim_sweep_n_columns + (fab ? N_FABRIC_COLUMNS : 0) + (job ? N_JOB_COLUMNS : 0);
  memset(&c, 0, sizeof c);
  if ((rc = core_afile_open(&c.a, path)) != 0)
    return rc;
  c.ncols = ncols;
  if (with_header) {
    for (int i = 0; i < sim_sweep_n_columns; i++)
      fprintf(c.a.f, "%s%s", i ? "," : "", sim_sweep_columns[i]);
    for (int i = 0; fab && i < N_FABRIC_COLUMNS; i++)
      fprintf(c.a.f, ",%s", fabric_columns[i]);
    for (int i = 0; job && i < N_JOB_COLUMNS; i++)
      fprintf(c.a.f, ",%s", job_columns[i]);
    fputc('\n', c.a.f);
  }
  for (long i = 0; i < w->n; i++) {
    const sim_point_result *r = &w->res[i];
    const sim_point *p = &r->pt;
    core_csv_str(&c, p->model->name);
    core_csv_int(&c, p->nodes);
    core_csv_int(&c, p->per_node);
    core_csv_int(&c, (long long)p->nodes * p->per_node);
    core_csv_str(&c, p->network->name);
    core_csv_num(&c, r->gbps);
    core_csv_str(&c, sim_backend_name(p->backend));
    core_csv_str(&c, p->algorithm < 0 ? "auto" : sim_algo_name((enum sim_algo)p->algorithm));
    core_csv_str(&c, sim_precision_name(p->precision));
    core_csv_int(&c, p->batch);
    core_csv_num(&c, p->bucket_cap_mb);
    core_csv_int(&c, p->overlap);
    core_csv_int(&c, p->find_unused);
    char cname[32];
    core_csv_str(&c, sim_compression_name(&p->compression, cname, sizeof cname));
    core_csv_int(&c, r->n_buckets);
    core_csv_num(&c, r->wire_bytes / 1e6);
    core_csv_num(&c, r->step_s);
    core_csv_num(&c, r->compute_s);
    core_csv_num(&c, r->comm_s);
    core_csv_num(&c, r->exposed_comm_s);
    core_csv_num(&c, r->samples_per_s);
    core_csv_num(&c, r->scaling_eff);
    core_csv_num(&c, r->step_sd_s);
    core_csv_str(&c, r->status);
    if (fab)
      write_fabric_cells(&c, r);
    if (job) {
      core_csv_str(&c, p->ckpt_async ? "async" : "sync");
      core_csv_num(&c, r->ckpt_every_s);
      core_csv_int(&c, p->spares);
      core_csv_int(&c, r->job.replications);
      core_csv_num(&c, r->ckpt_block_s);
      core_csv_num(&c, r->restart_s);
      core_csv_num(&c, r->load_s);
      core_csv_num(&c, r->job.mtti_s / 3600.0);
      for (int k = 0; k < SIM_JOB_N_METRICS; k++) {
        core_csv_num(&c, r->job.mean[k]);
        core_csv_num(&c, r->job.lo[k]);
        core_csv_num(&c, r->job.hi[k]);
      }
      core_csv_num(&c, r->job.young_s);
      core_csv_num(&c, r->job.daly_s);
      core_csv_num(&c, r->best_every_s);
      core_csv_int(&c, r->job.unfinished);
    }
    core_csv_end_row(&c);
  }
  return core_csv_commit(&c);
}

static void print_job_summary(const sim_scenario *s, const sim_sweep *w, FILE *f) {
  fprintf(f, "%s: %ld point%s, %d replications each", s->name, w->n, w->n == 1 ? "" : "s", s->job.replications);
  if (s->description[0])
    fprintf(f, " — %s", s->description);
  fprintf(f, "\n%-12s %5s %6s %9s %6s %22s %8s %8s %8s %8s %8s\n", "model", "mode", "spares", "every_s",
          "gpus", "goodput [95% CI]", "ttt_h", "fails", "ckpt_h", "lost_h", "down_h");
  long shown = -1;
  for (long i = 0; i < w->n; i++) {
    const sim_point_result *r = &w->res[i];
    const sim_point *p = &r->pt;
    const double *m = r->job.mean;
    fprintf(f, "%-12.12s %5s %6lld %9.0f %6d  %6.4f [%6.4f, %6.4f] %8.1f %8.1f %8.1f %8.1f %8.1f%s\n", p->model->name,
            p->ckpt_async ? "async" : "sync", p->spares, r->ckpt_every_s, p->nodes * p->per_node,
            m[SIM_JOB_GOODPUT], r->job.lo[SIM_JOB_GOODPUT], r->job.hi[SIM_JOB_GOODPUT], m[SIM_JOB_TIME_H],
            m[SIM_JOB_FAILURES], m[SIM_JOB_WASTE_CKPT_H], m[SIM_JOB_WASTE_LOST_H], m[SIM_JOB_WASTE_RESTART_H],
            r->job.unfinished ? "  (some runs did not finish)" : "");
    int last_of_group = i + 1 == w->n || w->res[i + 1].pt.step_index != p->step_index ||
                        w->res[i + 1].pt.ckpt_async != p->ckpt_async || w->res[i + 1].pt.spares != p->spares;
    if (last_of_group && shown != i)
      fprintf(f, "  -> best interval %.0f s; Young %.0f s, Daly %.0f s (checkpoint %.2f s, interrupt every %.2f h)\n",
              r->best_every_s, r->job.young_s, r->job.daly_s, r->ckpt_block_s, r->job.mtti_s / 3600.0);
  }
}

void sim_sweep_print_summary(const sim_scenario *s, const sim_sweep *w, FILE *f) {
  if (w->n > 0 && w->res[0].has_job) {
    print_job_summary(s, w, f);
    return;
  }
  fprintf(f, "%s: %ld point%s", s->name, w->n, w->n == 1 ? "" : "s");
  if (s->description[0])
    fprintf(f, " — %s", s->description);
  fprintf(f, "\n%-14s %-12s %-5s %6s %10s %10s %10s %12s %6s  %s\n", "model", "network", "back",
          "gpus", "step_ms", "compute_ms", "exposed_ms", "samples/s", "eff", "status");
  int timeouts = 0;
  for (long i = 0; i < w->n; i++) {
    const sim_point_result *r = &w->res[i];
    const sim_point *p = &r->pt;
    fprintf(f, "%-14.14s %-12.12s %-5s %6d %10.2f %10.2f %10.2f %12.1f %5.1f%%  %s\n",
            p->model->name, p->network->name, sim_backend_name(p->backend), p->nodes * p->per_node,
            r->step_s * 1e3, r->compute_s * 1e3, r->exposed_comm_s * 1e3, r->samples_per_s,
            r->scaling_eff * 100, r->status);
    if (strcmp(r->status, "ok") != 0 && timeouts++ < 3)
      fprintf(f, "  -> %s\n", r->note);
  }
  if (timeouts > 3)
    fprintf(f, "(%d points would time out; see the status column)\n", timeouts);
}

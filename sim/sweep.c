#include "sweep.h"

#include "core/csv.h"
#include "core/err.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
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

typedef struct work {
  const sim_scenario *s;
  const sim_sweep_opts *o;
  long *points;          /* indices to run */
  long n;
  sim_point_result *res;
  atomic_long next;
  atomic_int failed;
  pthread_mutex_t err_lock;
  int rc;
  char err[2048];
  core_trace *trace;
} work;

static void *worker(void *arg) {
  work *w = arg;
  sim_engine *e = NULL;
  sim_point_result last; /* the step level of the previous point this worker ran */
  long last_step = -1;
  int rc = sim_engine_new(&e);
  if (rc)
    goto fail;
  for (;;) {
    long i = atomic_fetch_add(&w->next, 1);
    if (i >= w->n || atomic_load(&w->failed))
      break;
    sim_point p;
    sim_scenario_point(w->s, w->points[i], &p);
    core_trace *tr = w->points[i] == w->o->trace_point ? w->trace : NULL;
    /* Points differing only in job-level settings share their step level. */
    if (p.step_index == last_step && !tr) {
      w->res[i] = last;
      w->res[i].pt = p;
      rc = 0;
    } else {
      rc = sim_predict_point(w->s, &p, e, tr, w->o->trace_ranks, &w->res[i]);
      last = w->res[i];
      last_step = rc ? -1 : p.step_index;
    }
    if (!rc)
      rc = sim_predict_job(w->s, &p, e, &w->res[i]);
    if (rc) {
      core_err_wrap(rc, "point %ld (model %s, %d x %d, network %s, %s)", p.index, p.model->name,
                    p.nodes, p.per_node, p.network->name, sim_backend_name(p.backend));
      goto fail;
    }
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

void sim_sweep_free(sim_sweep *w) {
  free(w->res);
  w->res = NULL;
  w->n = 0;
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
  w.points = malloc(sizeof *w.points * (size_t)(total / n_shards + 1));
  if (!w.points)
    return core_err_set(CORE_ENOMEM, "out of memory for %ld points", total);
  for (long i = o->shard; i < total; i += n_shards)
    w.points[w.n++] = i;
  w.res = calloc((size_t)(w.n ? w.n : 1), sizeof *w.res);
  int rc = 0;
  core_trace trace;
  int tracing = 0;
  if (!w.res) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %ld results", w.n);
    goto out_free;
  }
  if (o->trace_path && o->trace_point >= 0 && o->trace_point % n_shards == o->shard) {
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
  pthread_t *th = malloc(sizeof *th * (size_t)jobs);
  if (!th) {
    rc = core_err_set(CORE_ENOMEM, "out of memory starting %d workers", jobs);
    goto out_trace;
  }
  int started = 0;
  for (int j = 1; j < jobs; j++) {
    if (pthread_create(&th[j], NULL, worker, &w) != 0)
      break;
    started = j;
  }
  worker(&w);
  for (int j = 1; j <= started; j++)
    pthread_join(th[j], NULL);
  free(th);
  if (atomic_load(&w.failed)) {
    rc = core_err_set(w.rc, "%s", w.err);
    goto out_trace;
  }
  /* The best checkpoint interval of each group of points that differ only
   * in it (consecutive: the interval is the innermost dimension). */
  for (long i = 0; i < w.n;) {
    long k = i;
    double best = -1, at = NAN;
    while (k < w.n && w.res[k].pt.step_index == w.res[i].pt.step_index &&
           w.res[k].pt.ckpt_async == w.res[i].pt.ckpt_async && w.res[k].pt.spares == w.res[i].pt.spares) {
      if (w.res[k].has_job && w.res[k].job.mean[SIM_JOB_GOODPUT] > best) {
        best = w.res[k].job.mean[SIM_JOB_GOODPUT];
        at = w.res[k].ckpt_every_s;
      }
      k++;
    }
    for (long q = i; q < k; q++)
      w.res[q].best_every_s = at;
    i = k;
  }
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
  free(w.points);
  pthread_mutex_destroy(&w.err_lock);
  return rc;
}

int sim_sweep_write_csv(const sim_sweep *w, const char *path, int with_header) {
  core_csv c;
  int rc, job = w->n > 0 && w->res[0].has_job;
  int ncols = sim_sweep_n_columns + (job ? N_JOB_COLUMNS : 0);
  memset(&c, 0, sizeof c);
  if ((rc = core_afile_open(&c.a, path)) != 0)
    return rc;
  c.ncols = ncols;
  if (with_header) {
    for (int i = 0; i < sim_sweep_n_columns; i++)
      fprintf(c.a.f, "%s%s", i ? "," : "", sim_sweep_columns[i]);
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

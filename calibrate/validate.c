#include "validate.h"

#include "calibrate/gpu_datasheet.h"
#include "calibrate/gpu_index.h"
#include "calibrate/import_gpu.h"
#include "calibrate/kineto.h"

#include "core/csv.h"
#include "core/err.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int number(const core_csv_table *t, long row, int col, double *out) {
  char *end;
  errno = 0;
  *out = strtod(t->rows[row][col], &end);
  if (errno || end == t->rows[row][col] || *end || !isfinite(*out))
    return core_err_set(CORE_EINVAL, "%s:%ld: column '%s' holds '%s', not a number", t->path, t->lines[row],
        t->cols[col], t->rows[row][col]);
  return 0;
}

/* A measured time: a number >= 0, > 0 for a step's time (throughput
 * divides by it). */
static int seconds(const core_csv_table *t, long row, int col, int positive, double *out) {
  int rc = number(t, row, col, out);
  if (rc)
    return rc;
  if (positive ? !(*out > 0) : !(*out >= 0))
    return core_err_set(CORE_EINVAL,
        "%s:%ld: column '%s' holds %s, not a time in seconds %s 0; a measured run has no such step, so check the file "
        "(or the tool that wrote it)",
        t->path, t->lines[row], t->cols[col], t->rows[row][col], positive ? ">" : ">=");
  return 0;
}

/* A rank or step: a whole number >= 0. */
static int index_of(const core_csv_table *t, long row, int col, double *out) {
  int rc = number(t, row, col, out);
  if (rc)
    return rc;
  if (!(*out >= 0) || *out != floor(*out) || *out > 1e15)
    return core_err_set(CORE_EINVAL, "%s:%ld: column '%s' holds %s, not a whole number >= 0", t->path, t->lines[row],
        t->cols[col], t->rows[row][col]);
  return 0;
}

/* What a measured run says: the means of its steps at or after skip. */
typedef struct measured {
  double mean[4]; /* step, compute, exposed, comm; NaN where not measured */
  long rows;      /* values averaged: a CSV's rows (one per rank and step), a trace's steps */
  long steps;     /* distinct steps among them */
  int ranks;
  char device[128]; /* a trace's GPU as deviceProperties names it; "" when none */
  int64_t device_mem;
} measured;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* How many distinct values v[0..n) holds (sorts v). */
static long distinct(double *v, long n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  long k = 0;
  for (long i = 0; i < n; i++)
    k += i == 0 || v[i] != v[i - 1];
  return k;
}

static int read_csv(const char *path, long skip, measured *ms) {
  static const char *const need[] = {"rank", "step", "step_s", "compute_s", "comm_s", "exposed_comm_s", NULL};
  core_csv_table t;
  int rc = core_csv_read(path, &t);
  if (rc)
    return rc;
  double *seen = NULL; /* the step of each row used */
  if ((rc = core_csv_require(&t, need)) != 0)
    goto out;
  int c_rank = core_csv_col(&t, "rank"), c_step = core_csv_col(&t, "step"), c_s = core_csv_col(&t, "step_s"),
      c_c = core_csv_col(&t, "compute_s"), c_m = core_csv_col(&t, "comm_s"), c_e = core_csv_col(&t, "exposed_comm_s");
  double sum[4] = {0, 0, 0, 0};
  int max_rank = -1;
  seen = malloc(((size_t)t.nrows + 1) * sizeof *seen);
  if (!seen) {
    rc = core_err_set(CORE_ENOMEM, "out of memory reading the steps of %s", t.path);
    goto out;
  }
  /* comm_s may be empty in every row: PyTorch's built-in allreduce cannot be
   * timed per bucket without a hook that slows the step. Empty in some rows
   * only is a broken file. */
  long first_empty = -1, first_comm = -1;
  for (long i = 0; i < t.nrows; i++) {
    double step, rank, x[4] = {0, 0, 0, 0};
    int no_comm = t.rows[i][c_m][0] == '\0';
    if (no_comm && first_empty < 0)
      first_empty = i;
    if (!no_comm && first_comm < 0)
      first_comm = i;
    if (first_empty >= 0 && first_comm >= 0) {
      rc = core_err_set(CORE_EINVAL,
          "%s:%ld: column 'comm_s' is empty, but line %ld has a number there; leave it empty in every row (not "
          "measured) or in none",
          t.path, t.lines[no_comm ? i : first_empty], t.lines[no_comm ? first_comm : i]);
      goto out;
    }
    if ((rc = index_of(&t, i, c_step, &step)) != 0 || (rc = index_of(&t, i, c_rank, &rank)) != 0 ||
        (rc = seconds(&t, i, c_s, 1, &x[0])) != 0 || (rc = seconds(&t, i, c_c, 0, &x[1])) != 0 ||
        (rc = seconds(&t, i, c_e, 0, &x[2])) != 0 || (!no_comm && (rc = seconds(&t, i, c_m, 0, &x[3])) != 0))
      goto out;
    if (step < skip)
      continue;
    for (int k = 0; k < 4; k++)
      sum[k] += x[k];
    seen[ms->rows++] = step;
    if (rank > max_rank)
      max_rank = (int)rank;
  }
  ms->ranks = max_rank + 1;
  ms->steps = distinct(seen, ms->rows);
  for (int k = 0; k < 4 && ms->rows; k++)
    ms->mean[k] = k == 3 && first_empty >= 0 ? NAN : sum[k] / (double)ms->rows;
out:
  free(seen);
  core_csv_table_free(&t);
  return rc;
}

/* The ProfilerStep spans of a trace, by start time, into *d (*n of them),
 * as the GPU importer finds them (overlapping ones refused). */
static int trace_steps(const cal_ktrace *t, double **d, int *n) {
  int64_t *idx = NULL;
  *d = NULL;
  int rc = cal_gindex_steps(t, &idx, n);
  if (rc)
    return rc;
  if (!(*d = malloc(sizeof **d * (size_t)*n))) {
    rc = core_err_set(CORE_ENOMEM, "out of memory reading the steps of %s", t->path);
    goto out_idx;
  }
  for (int k = 0; k < *n; k++) {
    const cal_kevent *e = &t->ev[idx[k]];
    if (e->dur_ns <= 0) { /* no step takes no time: a step time of 0 has no error to compare */
      rc = core_err_set(CORE_EINVAL,
          "%s: traceEvents[%lld] (%s) lasts 0 us: not a step the run took; export the trace again", t->path,
          (long long)e->index, cal_ktrace_str(t, e->name));
      goto out_idx;
    }
    (*d)[k] = (double)e->dur_ns * 1e-9;
  }
out_idx:
  free(idx);
  return rc;
}

/* A PyTorch profiler trace as the measured run: its ProfilerStep spans from
 * the skip-th on (its one rank's view of the steps of its world); skip < 0:
 * after its leading warm-up steps, found as the GPU importer finds them. */
static int read_trace(const char *path, long *skip, measured *ms) {
  cal_ktrace t;
  int rc = cal_ktrace_read(path, &t), n = 0;
  if (rc)
    return rc;
  double *d = NULL, sum = 0;
  if ((rc = trace_steps(&t, &d, &n)) != 0)
    goto out;
  if (*skip < 0 && (*skip = cal_gimport_leading_warmups(d, n)) < 0) {
    rc = (int)*skip;
    goto out;
  }
  for (long k = *skip; k < n; k++) {
    sum += d[k];
    ms->steps++;
  }
  ms->rows = ms->steps;
  ms->ranks = t.world_size > 0 ? t.world_size : 1;
  snprintf(ms->device, sizeof ms->device, "%s", t.device_name);
  ms->device_mem = t.device_mem;
  ms->mean[0] = ms->steps ? sum / (double)ms->steps : 0;
  ms->mean[1] = ms->mean[2] = ms->mean[3] = NAN;
out:
  free(d);
  cal_ktrace_free(&t);
  return rc;
}

/* The trace ran on the GPU the point simulates, as far as the datasheets
 * tell, the profile's board told by its own memory where it gives one (an
 * A100 of 80 GB is not one of 40: its memory is faster), as for
 * --profile-base: a step of another GPU measures another prediction. */
static int same_gpu(const sim_scenario *s, const measured *ms, const char *measured_path) {
  const core_profile *p = s->profile;
  if (!ms->device[0] || !p || strcmp(p->device_kind, "gpu") != 0)
    return 0;
  int64_t own = p->memory_GB > 0 ? (int64_t)(p->memory_GB * 1e9) : ms->device_mem;
  const cal_gpu_sheet *a = cal_gpu_sheet_find(ms->device, ms->device_mem), *b = cal_gpu_sheet_find(p->device_name, own);
  if (!a || !b || a == b)
    return 0;
  return core_err_set(CORE_EINVAL,
      "%s ran on %s ('%s'), but %s simulates %s ('%s', profile %s): compare a run on the GPU simulated, or give "
      "the scenario a profile of the traced GPU",
      measured_path, a->model, ms->device, s->path, b->model, p->device_name,
      s->profile_override[0] ? s->profile_override : s->profile_path);
}

static int is_trace(const char *path) {
  size_t n = strlen(path);
  return (n > 5 && !strcmp(path + n - 5, ".json")) || (n > 3 && !strcmp(path + n - 3, ".gz"));
}

int cal_validate(const sim_scenario *s, long point, const char *measured_path, long skip, cal_validation *v) {
  memset(v, 0, sizeof *v);
  long total = sim_scenario_points(s);
  if (point < 0 || point >= total)
    return core_err_set(CORE_EUSAGE, "point %ld: scenario '%s' has points 0 to %ld", point, s->path, total - 1);
  measured ms = {{0, 0, 0, 0}, 0, 0, 0, "", 0};
  int trace = is_trace(measured_path);
  v->skip_found = trace && skip < 0;
  if (skip < 0 && !trace)
    skip = CAL_VALIDATE_CSV_SKIP;
  int rc = trace ? read_trace(measured_path, &skip, &ms) : read_csv(measured_path, skip, &ms);
  if (rc == 0)
    rc = same_gpu(s, &ms, measured_path);
  if (rc)
    return rc;
  v->skip = skip;
  if (ms.steps == 0)
    return core_err_set(CORE_EINVAL, "%s: no step at or after step %ld to compare with; run more steps or lower --skip",
        measured_path, skip);
  v->steps_used = ms.steps;
  v->rows_used = ms.rows;
  v->ranks_seen = ms.ranks;
  sim_point p;
  sim_scenario_point(s, point, &p);
  int world = p.nodes * p.per_node;
  if (v->ranks_seen != world)
    return core_err_set(CORE_EINVAL,
        "%s holds ranks 0 to %d, but point %ld of %s has %d ranks (%d nodes x %d); compare runs of the same shape",
        measured_path, v->ranks_seen - 1, point, s->path, world, p.nodes, p.per_node);
  sim_engine *e;
  if ((rc = sim_engine_new(&e)) != 0)
    return rc;
  rc = sim_predict_point(s, &p, e, NULL, 0, &v->pred);
  sim_engine_free(e);
  if (rc)
    return rc;
  double meas[CAL_N_METRICS] = {ms.mean[0], ms.mean[1], ms.mean[2], ms.mean[3], 0};
  meas[CAL_M_THROUGHPUT] = (double)world * p.batch / meas[CAL_M_STEP];
  double pred[CAL_N_METRICS] = {
      v->pred.step_s, v->pred.compute_s, v->pred.exposed_comm_s, v->pred.comm_s, v->pred.samples_per_s};
  static const char *const names[CAL_N_METRICS] = {"step_s", "compute_s", "exposed_comm_s", "comm_s", "samples_per_s"};
  for (int k = 0; k < CAL_N_METRICS; k++) {
    v->m[k].name = names[k];
    v->m[k].predicted = pred[k];
    v->m[k].measured = meas[k];
    v->m[k].rel_err = meas[k] != 0 && isfinite(meas[k]) ? (pred[k] - meas[k]) / meas[k] : NAN;
  }
  return 0;
}

/* tb — predictions as TensorBoard scalars (sim/tb.h). */
#include "sim/dims.h"
#include "sim/fabric.h"
#include "sim/tb.h"

#include "core/afile.h"
#include "core/err.h"
#include "core/isal.h"
#include "core/path.h"
#include "core/tbwriter.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Value i of dimension d as text and, for numeric dimensions, as a number
 * (*numeric 1). */
static void dim_value(const sim_scenario *s, int d, int i, char *txt, size_t n, double *num, int *numeric) {
  *numeric = 1;
  switch (d) {
  case SIM_DIM_MODEL:
    snprintf(txt, n, "%s", s->models[i]->name);
    *numeric = 0;
    return;
  case SIM_DIM_NETWORK:
    snprintf(txt, n, "%s", s->networks[i].name);
    *numeric = 0;
    return;
  case SIM_DIM_FABRIC:
    snprintf(txt, n, "%s", s->n_fabrics ? s->fabrics[i].name : "none");
    *numeric = 0;
    return;
  case SIM_DIM_BACKEND:
    snprintf(txt, n, "%s", sim_backend_name(s->backends[i]));
    *numeric = 0;
    return;
  case SIM_DIM_ALGORITHM:
    snprintf(txt, n, "%s", s->algorithms[i] < 0 ? "auto" : sim_algo_name((enum sim_algo)s->algorithms[i]));
    *numeric = 0;
    return;
  case SIM_DIM_PRECISION:
    snprintf(txt, n, "%s", sim_precision_name(s->precisions[i]));
    *numeric = 0;
    return;
  case SIM_DIM_COMPRESSION:
    core_compression_name(&s->compression[i], txt, (int)n);
    *numeric = 0;
    return;
  case SIM_DIM_CKPT_MODE:
    snprintf(txt, n, "%s", s->job.async[i] ? "async" : "sync");
    *numeric = 0;
    return;
  case SIM_DIM_BATCH: *num = (double)s->batch[i]; break;
  case SIM_DIM_BUCKET_CAP: *num = s->bucket_cap_mb[i]; break;
  case SIM_DIM_OVERLAP: *num = s->overlap[i]; break;
  case SIM_DIM_FIND_UNUSED: *num = s->find_unused[i]; break;
  case SIM_DIM_PER_NODE: *num = (double)s->per_node[i]; break;
  case SIM_DIM_NODES: *num = (double)s->nodes[i]; break;
  case SIM_DIM_SPARES: *num = (double)s->job.spares[i]; break;
  case SIM_DIM_FAIL_RATE: *num = s->job.rate_h[i]; break;
  case SIM_DIM_WEIBULL_SHAPE: *num = s->job.shape[i]; break;
  case SIM_DIM_DETECT: *num = s->job.detect_s[i]; break;
  case SIM_DIM_MTTR: *num = s->job.mttr_h[i]; break;
  case SIM_DIM_RESTART: *num = s->job.restart_s[i]; break;
  case SIM_DIM_LOAD: *num = s->job.load_s[i]; break;
  case SIM_DIM_CKPT_COST: *num = s->job.cost_s[i]; break;
  default: *num = s->job.every[i]; break;
  }
  snprintf(txt, n, "%.10g", *num);
}

/* The step axis: the innermost dimension with several values, or -1. */
static int x_dim(const sim_scenario *s) {
  for (int d = SIM_N_DIMS - 1; d >= 0; d--)
    if (s->n[d] > 1)
      return d;
  return -1;
}

/* Steps of the x dimension's values: the values where all are distinct
 * whole numbers, else the positions. Sweep/<dim> values into val. */
static void x_steps(const sim_scenario *s, int d, long *step, double *val) {
  int whole = 1;
  for (int i = 0; d >= 0 && i < s->n[d]; i++) {
    char txt[128];
    int numeric;
    val[i] = i;
    dim_value(s, d, i, txt, sizeof txt, &val[i], &numeric);
    if (!numeric)
      val[i] = i;
    whole &= numeric && val[i] >= 0 && val[i] < 9e15 && val[i] == floor(val[i]);
    for (int j = 0; j < i; j++)
      whole &= val[j] != val[i];
  }
  for (int i = 0; d >= 0 && i < s->n[d]; i++)
    step[i] = whole ? (long)val[i] : i;
}

/* DIR/NAME/dim=value,... of the run holding point index (x left out). */
static void run_dir(const sim_scenario *s, const char *dir, long index, int xd, char *out, size_t n) {
  int idx[SIM_N_DIMS];
  for (int d = SIM_N_DIMS - 1; d >= 0; d--) {
    idx[d] = (int)(index % s->n[d]);
    index /= s->n[d];
  }
  size_t len = (size_t)snprintf(out, n, "%s/%s", dir, s->name);
  char sep = '/';
  for (int d = 0; d < SIM_N_DIMS && len < n; d++) {
    if (d == xd || s->n[d] < 2)
      continue;
    char txt[128];
    double num;
    int numeric;
    dim_value(s, d, idx[d], txt, sizeof txt, &num, &numeric);
    for (char *c = txt; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("._-", *c)))
        *c = '_';
    len += (size_t)snprintf(out + len, n - len, "%c%s=%s", sep, sim_dim_column(s, d), txt);
    sep = ',';
  }
}

static int put(core_tb_scalar *v, int n, const char *tag, double x) {
  if (isfinite(x))
    v[n++] = (core_tb_scalar){tag, x};
  return n;
}

/* One point's event. */
static int put_point(core_tb_buf *b, const sim_point_result *r, long step, const char *sweep_tag, double xval) {
  core_tb_scalar v[16];
  int n = 0;
  n = put(v, n, "Predicted/StepTime", r->step_s);
  n = put(v, n, "Predicted/ComputeTime", r->compute_s);
  n = put(v, n, "Predicted/SyncTime", r->comm_s);
  n = put(v, n, "Predicted/ExposedComm", r->exposed_comm_s);
  n = put(v, n, "Predicted/CommRatio", r->step_s > 0 ? r->comm_s / r->step_s : NAN);
  n = put(v, n, "Predicted/SamplesPerSec", r->samples_per_s);
  n = put(v, n, "Predicted/ScalingEff", r->scaling_eff);
  if (r->has_job) {
    n = put(v, n, "Predicted/Goodput", r->job.mean[SIM_JOB_GOODPUT]);
    n = put(v, n, "Predicted/TimeToTrainH", r->job.mean[SIM_JOB_TIME_H]);
    n = put(v, n, "Predicted/ETTR", r->job.mean[SIM_JOB_ETTR]);
    n = put(v, n, "Predicted/Failures", r->job.mean[SIM_JOB_FAILURES]);
  }
  if (sweep_tag)
    n = put(v, n, sweep_tag, xval);
  return core_tb_put_scalars(b, 0.0, step, v, n);
}

/* The event file of the run holding point index, into out (n bytes). */
static void event_path(const sim_scenario *s, const char *dir, long index, int xd, char *out, size_t n) {
  run_dir(s, dir, index, xd, out, n - 64);
  size_t len = strlen(out);
  snprintf(out + len, n - len, "/" CORE_TB_PREFIX "0000000000.ddpsim-simulate");
}

/* Event files there already (a link to an input of the run, a directory)
 * are refused before the study, as core/afile would refuse them after it. */
static int check_event_files(const sim_scenario *s, const char *dir) {
  int xd = x_dim(s), nx = xd >= 0 ? s->n[xd] : 1, rc = 0;
  long points = sim_scenario_points(s);
  char path[8192];
  struct stat st;
  for (long first = 0; first < points && !rc; first += nx) {
    event_path(s, dir, first, xd, path, sizeof path);
    if (lstat(path, &st) == 0)
      rc = core_afile_check(path);
  }
  return rc ? core_err_wrap(rc, "--tensorboard %s", dir) : 0;
}

int sim_tb_check(const sim_scenario *s, const char *dir, core_made_dirs *made) {
  char path[4400];
  if (!*dir)
    return core_err_set(CORE_EUSAGE, "--tensorboard expects a directory, got an empty one");
  /* The records' CRC needs ISA-L: one that is missing stops the run here. */
  if (!core_isal_available())
    return core_err_wrap(CORE_EUNSUPPORTED, "--tensorboard %s", dir);
  snprintf(path, sizeof path, "%s/%s", dir, s->name);
  int rc = core_mkdirs_made(path, made);
  if (rc)
    return core_err_wrap(CORE_EUSAGE, "--tensorboard %s (choose a directory you can write)", dir);
  return check_event_files(s, dir);
}

/* The positions 0..n-1 ordered by step: TensorBoard reads a run's steps in
 * file order and expects them to grow. */
static void order_by_step(const long *step, int n, int *order) {
  for (int i = 0; i < n; i++) {
    int j = i;
    for (; j > 0 && step[order[j - 1]] > step[i]; j--)
      order[j] = order[j - 1];
    order[j] = i;
  }
}

/* The event file of the run whose points are w->res[first .. first + nx). */
static int write_run(const sim_scenario *s, const sim_sweep *w, const char *dir, long first, int xd, const long *step,
    const double *val, const int *order, int nx) {
  char path[8192], run[8192], tag[96];
  core_tb_buf b = {0};
  snprintf(tag, sizeof tag, "Sweep/%s", xd >= 0 ? sim_dim_column(s, xd) : "point");
  event_path(s, dir, w->res[first].pt.index, xd, path, sizeof path);
  core_path_dir(path, run, sizeof run);
  int rc = core_mkdirs(run);
  if (!rc)
    rc = core_tb_put_version(&b, 0.0);
  for (int k = 0; k < nx && !rc; k++)
    rc = put_point(&b, &w->res[first + order[k]], step[order[k]], xd >= 0 ? tag : NULL, val[order[k]]);
  if (!rc)
    rc = core_tb_write_file(path, &b);
  core_tb_buf_free(&b);
  return rc;
}

int sim_tb_write(const sim_scenario *s, const sim_sweep *w, const char *dir) {
  int xd = x_dim(s), nx = xd >= 0 ? s->n[xd] : 1, rc = 0;
  long *step = calloc((size_t)nx, sizeof *step);
  double *val = calloc((size_t)nx, sizeof *val);
  int *order = calloc((size_t)nx, sizeof *order);
  if (!step || !val || !order) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %d TensorBoard steps", nx);
    goto free_steps;
  }
  x_steps(s, xd, step, val);
  order_by_step(step, nx, order);
  /* x is the innermost dimension that varies: a run's points are
   * consecutive, nx of them. */
  for (long first = 0; first + nx <= w->n && !rc; first += nx)
    rc = write_run(s, w, dir, first, xd, step, val, order, nx);
  if (rc)
    rc = core_err_wrap(rc, "--tensorboard %s", dir);
free_steps:
  free(step);
  free(val);
  free(order);
  return rc;
}

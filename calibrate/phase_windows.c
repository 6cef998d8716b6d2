/*
 * phase_windows — a CPU calibration's memory rates (the gradient copy into
 * buckets, the host reduction, the optimizer step) and every model's
 * per-layer times, measured in windows spread over the run, every rank at
 * once, and kept as their medians (docs/calibration.md, "Memory rates and
 * layer times").
 */
#include "calibrate/calibrate_int.h"

#include "calibrate/compute.h"

#include "core/afile.h"
#include "core/err.h"
#include "core/model.h"
#include "core/path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Where the measured times of the model named name go: beside the profile
 * out, "PROFILE.NAME.cfg" (the profile's ".cfg" dropped). */
static void measured_model_path(const char *out, const char *name, char *path, size_t n) {
  snprintf(path, n, "%.*s.%s.cfg", core_path_stem_len(out, ".cfg"), out, name);
}

/* The measured models go beside a profile file; a profile written through
 * to a character device or a FIFO (/dev/null, a pipe) has no place beside it,
 * and "/dev/null.mlp.cfg" would be a stray file in /dev. */
static int models_beside(const char *out) {
  struct stat st;
  return stat(out, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

/* Model k's name into names[k], and that no earlier model has it (their
 * measured times would go to one file). */
static int model_name(const cal_opts *o, int k, char (*names)[64]) {
  core_model *m;
  int rc = core_model_load(o->models[k], &m);
  if (rc)
    return rc;
  snprintf(names[k], sizeof names[k], "%s", m->name);
  core_model_free(m);
  for (int j = 0; j < k; j++)
    if (!strcmp(names[j], names[k]))
      return core_err_set(CORE_EUSAGE,
          "--model %s and --model %s are both the model '%s': their measured times would go to one file; give "
          "each model once",
          o->models[j], o->models[k], names[k]);
  return 0;
}

int cal_windows_check_outputs(const cal_opts *o) {
  char names[CAL_MAX_MODELS][64], path[4400];
  int rc = 0;
  if (o->n_models > CAL_MAX_MODELS)
    return core_err_set(CORE_EUSAGE, "at most %d --model files", CAL_MAX_MODELS);
  for (int k = 0; k < o->n_models && !rc; k++)
    rc = model_name(o, k, names);
  if (!rc && !models_beside(o->out)) {
    fprintf(stderr,
        "ddpsim calibrate: --out %s is a device or FIFO, so the measured model files, which go beside a profile file, "
        "are not written\n",
        o->out);
    return 0;
  }
  for (int k = 0; k < o->n_models && !rc; k++) {
    measured_model_path(o->out, names[k], path, sizeof path);
    if ((rc = core_afile_check(path)) != 0)
      rc = core_err_wrap(rc, "the measured times of --model %s cannot be written to '%s'", o->models[k], path);
  }
  return rc;
}

/* Measured per-layer times as a model file beside the profile. */
static int write_measured_model(const cal_ctx *r, const core_model *m, const double *fwd, const double *bwd) {
  char path[4400];
  if (!models_beside(r->o->out))
    return 0;
  measured_model_path(r->o->out, m->name, path, sizeof path);
  core_afile a;
  int rc = core_afile_open(&a, path);
  if (rc)
    return rc;
  FILE *f = a.f;
  fprintf(f, "# %s with per-layer times measured by `ddpsim calibrate` on %s (%s).\n", m->name, r->prof->host,
      r->prof->date);
  fprintf(f, "model = {\n  name = \"%s\";\n  source = \"%s; times measured at batch %d\";\n", m->name,
      m->source[0] ? m->source : m->path, r->o->batch);
  fprintf(f, "  loss = \"%s\";\n  measured_batch = %d;\n", m->loss, r->o->batch);
  if (m->psgd_sync_us >= 0)
    fprintf(f, "  psgd_sync_us = %.9g; # PowerSGD's wait per allreduce in this model's steps\n", m->psgd_sync_us);
  fputs("  layers = (\n", f);
  for (int l = 0; l < m->n_layers; l++) {
    const core_layer *L = &m->layers[l];
    fprintf(f,
        "    { name = \"%s\"; type = \"linear\"; in = %d; out = %d; activation = \"%s\"; fwd_ms = %.9g; bwd_ms = %.9g; "
        "}%s\n",
        L->name, L->in, L->out, L->act == CORE_ACT_RELU ? "relu" : "none", fwd[l] * 1e3, bwd[l] * 1e3,
        l + 1 < m->n_layers ? "," : "");
  }
  fputs("  );\n};\n", f);
  rc = core_afile_commit(&a);
  if (!rc)
    cal_say(r, "  wrote %s", path);
  return rc;
}

/* Memory rates and per-layer times are measured in windows spread over
 * the calibration (CPU path, every rank at once: machine_window): before the
 * sweeps, after them and at the end, and each keeps its median over the
 * windows, since one window takes whatever state the machine is in for a
 * few seconds (docs/calibration.md). --quick measures one window. */
enum { CAL_WINDOWS = 3 };
struct cal_windows {
  int n; /* windows measured */
  double copy[CAL_WINDOWS], reduce[CAL_WINDOWS], update[CAL_WINDOWS];
  int n_models;
  core_model **m;      /* [n_models] */
  double **fwd, **bwd; /* [n_models][CAL_WINDOWS * n_layers] */
};

void cal_windows_free(struct cal_windows *w) {
  if (!w)
    return;
  for (int k = 0; w->m && k < w->n_models; k++) {
    core_model_free(w->m[k]);
    free(w->fwd[k]);
    free(w->bwd[k]);
  }
  free(w->m);
  free(w->fwd);
  free(w->bwd);
  free(w);
}

static int windows_new(const cal_opts *o, struct cal_windows **out) {
  struct cal_windows *w = calloc(1, sizeof *w);
  int rc = 0, n = o->n_models;
  if (!w || !(w->m = calloc((size_t)n + 1, sizeof *w->m)) || !(w->fwd = calloc((size_t)n + 1, sizeof *w->fwd)) ||
      !(w->bwd = calloc((size_t)n + 1, sizeof *w->bwd))) {
    rc = core_err_set(CORE_ENOMEM, "out of memory");
    goto out_free;
  }
  w->n_models = n;
  for (int k = 0; k < n; k++) {
    if ((rc = core_model_load(o->models[k], &w->m[k])) != 0 || (rc = core_model_check_runnable(w->m[k])) != 0)
      goto out_free;
    w->m[k]->psgd_sync_us = -1; /* hooks_part's measurement, not the input file's */
    size_t e = (size_t)CAL_WINDOWS * (size_t)w->m[k]->n_layers;
    if (!(w->fwd[k] = malloc(sizeof(double) * e)) || !(w->bwd[k] = malloc(sizeof(double) * e))) {
      rc = core_err_set(CORE_ENOMEM, "out of memory");
      goto out_free;
    }
  }
  *out = w;
  return 0;
out_free:
  cal_windows_free(w);
  return rc;
}

/* One window: memory rates and every model's layer times, on every rank
 * at once, each part after a barrier, as training runs its ranks in step
 * (a rank measured alone runs faster than in a job: docs/calibration.md);
 * rank 0's are kept. */
static int machine_window(cal_ctx *r) {
  const cal_opts *o = r->o;
  struct cal_windows *w = r->win;
  int rc, i = w->n;
  if (i >= (o->quick ? 1 : CAL_WINDOWS))
    return 0;
  if ((rc = rt_barrier(r->world)) != 0 ||
      (rc = cal_memory_bandwidth(o->quick ? (16u << 20) : (64u << 20), &w->copy[i], &w->reduce[i])) != 0)
    return rc;
  /* Not a power of two: buffers a large power of two apart contend for
   * cache sets, which a model's own arrays seldom do (docs/calibration.md). */
  size_t upd_bytes = (o->quick ? (12u << 20) : (48u << 20)) + 20480;
  if ((rc = rt_barrier(r->world)) != 0 || (rc = cal_update_bandwidth(upd_bytes, &w->update[i])) != 0)
    return rc;
  cal_say(r, "  memory (window %d): gradient copy %.2f GB/s moved, optimizer step %.2f GB/s, host reduction %.2f GB/s",
      i + 1, w->copy[i], w->update[i], w->reduce[i]);
  for (int k = 0; k < w->n_models; k++) {
    const core_model *m = w->m[k];
    double *fwd = w->fwd[k] + (size_t)i * m->n_layers, *bwd = w->bwd[k] + (size_t)i * m->n_layers;
    if ((rc = rt_barrier(r->world)) != 0 ||
        (rc = cal_layer_times(m, o->batch, o->quick ? 5 : 15, o->quick ? 0.3 : 1.5, fwd, bwd)) != 0)
      return rc;
    double step = 0;
    for (int l = 0; l < m->n_layers; l++)
      step += fwd[l] + bwd[l];
    cal_say(r, "  %s (window %d): per-layer times at batch %d, %.1f ms a step", m->name, i + 1, o->batch, step * 1e3);
  }
  w->n++;
  return 0;
}

/* The windows' medians into the profile, and the measured models beside it. */
static int machine_windows_done(cal_ctx *r) {
  struct cal_windows *w = r->win;
  int n = w->n, rc = 0;
  double v[CAL_WINDOWS], *f = NULL, *b = NULL;
  memcpy(v, w->copy, sizeof v);
  r->prof->memory_GBps = cal_median(v, n);
  memcpy(v, w->reduce, sizeof v);
  r->prof->reduce_GBps = cal_median(v, n);
  memcpy(v, w->update, sizeof v);
  r->prof->update_GBps = cal_median(v, n);
  for (int k = 0; k < w->n_models && !rc; k++) {
    const core_model *m = w->m[k];
    int L = m->n_layers;
    if (!(f = malloc(sizeof *f * (size_t)L)) || !(b = malloc(sizeof *b * (size_t)L))) {
      rc = core_err_set(CORE_ENOMEM, "out of memory");
      break;
    }
    for (int l = 0; l < L; l++) {
      for (int i = 0; i < n; i++)
        v[i] = w->fwd[k][(size_t)i * L + l];
      f[l] = cal_median(v, n);
      for (int i = 0; i < n; i++)
        v[i] = w->bwd[k][(size_t)i * L + l];
      b[l] = cal_median(v, n);
    }
    rc = write_measured_model(r, m, f, b);
    free(f);
    free(b);
    f = b = NULL;
  }
  free(f);
  free(b);
  return rc;
}

int cal_windows_open(cal_ctx *r) {
  if (r->nccl)
    return 0;
  int rc = windows_new(r->o, &r->win);
  return rc ? rc : machine_window(r);
}

int cal_window(cal_ctx *r) { return r->win ? machine_window(r) : 0; }

int cal_windows_close(cal_ctx *r) { return r->win ? machine_windows_done(r) : 0; }

void cal_windows_set_psgd_sync(cal_ctx *r, int k, double sync_us) {
  if (r->win && k < r->win->n_models)
    r->win->m[k]->psgd_sync_us = sync_us;
}

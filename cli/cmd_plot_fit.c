/* ddpsim plot fit: a profile's collective measurements over their fitted
 * α–β curves. gnuplot cannot read libconfig, so the points and the fitted
 * curve (sampled in log-spaced sizes, with both sides of each regime's edge)
 * go into a temporary CSV beside the outputs, which plots/fit.gp reads and
 * which is removed afterwards, whatever happens. */
#include "cli.h"

#include "core/afile.h"
#include "core/csv.h"
#include "core/err.h"
#include "core/path.h"
#include "core/profile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { FIT_SAMPLES = 160 };

/* Paths and names go into gnuplot string literals. */
static int plain(const char *s) { return strpbrk(s, "'\"\\\n") == NULL; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Rows "entry,kind,bytes,time_us" of one entry. */
static int entry_rows(core_csv *csv, int entry, const core_prof_coll *c) {
  double lo = 8, hi = (double)(1 << 30); /* nccl-tests' usual sweep, 8 B to 1 GiB */
  if (c->n_points > 0) {
    lo = INFINITY;
    hi = 0;
    for (int i = 0; i < c->n_points; i++)
      if (c->bytes[i] > 0) {
        lo = fmin(lo, c->bytes[i]);
        hi = fmax(hi, c->bytes[i]);
      }
    if (!(hi > 0))
      lo = 8, hi = (double)(1 << 30);
    lo /= 2;
    hi *= 2;
  }
  if (lo < 1)
    lo = 1;
  double xs[FIT_SAMPLES + 2 * 8];
  int n = 0;
  for (int j = 0; j < FIT_SAMPLES; j++)
    xs[n++] = lo * pow(hi / lo, (double)j / (FIT_SAMPLES - 1));
  for (int k = 1; k < c->n_fits && n + 2 <= (int)(sizeof xs / sizeof *xs); k++) {
    double edge = c->fits[k].min_bytes;
    if (edge > lo && edge < hi) {
      xs[n++] = nextafter(edge, 0);
      xs[n++] = edge;
    }
  }
  qsort(xs, (size_t)n, sizeof *xs, cmp_double);
  for (int j = 0; j < n; j++) {
    const core_prof_fit *f = core_prof_coll_fit(c, xs[j]);
    core_csv_int(csv, entry);
    core_csv_str(csv, "fit");
    core_csv_num(csv, xs[j]);
    core_csv_num(csv, f->alpha_us + xs[j] / (f->algbw_GBps * 1e3)); /* GB/s = 1e3 bytes/µs */
    core_csv_end_row(csv);
  }
  for (int i = 0; i < c->n_points; i++) {
    if (!(c->bytes[i] > 0) || !(c->time_us[i] > 0))
      continue; /* not on a log scale */
    core_csv_int(csv, entry);
    core_csv_str(csv, "point");
    core_csv_num(csv, c->bytes[i]);
    core_csv_num(csv, c->time_us[i]);
    core_csv_end_row(csv);
  }
  return 0;
}

/* 0 when the plot can be drawn: the profile has collective entries, the
 * script is readable and no path would break a gnuplot string literal. */
static int check_plottable(const core_profile *p, const char *script, const char *profile, const char *out_dir) {
  if (p->n_colls == 0)
    return core_err_set(CORE_EINVAL,
        "%s has no collective entries to plot (a one-rank calibration measures none): calibrate with --nproc 2 or more",
        profile);
  if (access(script, R_OK) != 0)
    return core_err_set(CORE_EIO, "cannot read plot script %s: %s (set DDPSIM_PLOTS_DIR to the plots/ folder)", script,
        strerror(errno));
  if (!plain(profile) || !plain(out_dir) || !plain(script))
    return core_err_set(
        CORE_EUSAGE, "paths with quotes or backslashes cannot be passed to gnuplot: '%s', '%s'", profile, out_dir);
  return 0;
}

/* The panels' titles into titles[size]: one quoted word each for gnuplot's
 * word(); the fields come from the profile's fixed vocabularies, so they
 * hold no quotes. */
static int fit_titles(const core_profile *p, const char *profile, char *titles, size_t size) {
  size_t len = 0;
  titles[0] = '\0';
  for (int i = 0; i < p->n_colls; i++) {
    const core_prof_coll *c = &p->colls[i];
    int w = snprintf(titles + len, size - len, "%s\"%s %s %s %s: %d ranks, %d node%s\"", i ? " " : "", c->backend,
        c->op, c->algorithm, c->scope, c->ranks, c->nodes, c->nodes > 1 ? "s" : "");
    if (w < 0 || (size_t)w >= size - len)
      return core_err_set(CORE_EINVAL, "%s: too many collective entries (%d) for one plot", profile, p->n_colls);
    len += (size_t)w;
  }
  return 0;
}

/* Every entry's rows into the CSV at path, written whole or not at all. */
static int write_fit_csv(const core_profile *p, const char *path) {
  static const char *const cols[] = {"entry", "kind", "bytes", "time_us"};
  core_csv csv;
  int rc = core_csv_open(&csv, path, cols, 4);
  if (rc)
    return rc;
  for (int i = 0; i < p->n_colls; i++)
    entry_rows(&csv, i + 1, &p->colls[i]);
  return core_csv_commit(&csv);
}

int cli_plot_fit(const char *script, const char *profile, const char *out_dir) {
  core_profile *p = NULL;
  char csv_path[4400], out[4400], titles[16384], name[160], vars[4400 + 4400 + 16384 + 160 + 256];
  int rc, csv_written = 0;
  core_made_dirs made = {0};
  if ((rc = core_profile_load(profile, &p)) != 0)
    return rc;
  if ((rc = check_plottable(p, script, profile, out_dir)) != 0)
    goto out;
  if ((rc = core_mkdirs_made(out_dir, &made)) != 0)
    goto out;
  const char *base = core_path_base(profile);
  int stem = core_path_stem_len(base, ".cfg");
  snprintf(out, sizeof out, "%s/%.*s-fit", out_dir, stem, base);
  snprintf(csv_path, sizeof csv_path, "%s/.%.*s-fit-%ld.csv", out_dir, stem, base, (long)getpid());
  if ((rc = fit_titles(p, profile, titles, sizeof titles)) != 0)
    goto out;
  snprintf(name, sizeof name, "%s", p->name);
  for (char *s = name; *s; s++)
    if (*s == '\'' || *s == '"' || *s == '\\')
      *s = '_';

  if ((rc = write_fit_csv(p, csv_path)) != 0)
    goto out;
  csv_written = 1;

  int ncols = (int)ceil(sqrt((double)p->n_colls)), nrows = (p->n_colls + ncols - 1) / ncols;
  snprintf(vars, sizeof vars, "csv='%s'; n=%d; titles='%s'; name='%s'; rows=%d; cols=%d; out='%s'", csv_path,
      p->n_colls, titles, name, nrows, ncols, out);
  if ((rc = cli_run_gnuplot(script, vars, out)) != 0)
    goto out;
  printf("plotted %s.png and .svg\n", out);
out:
  if (csv_written)
    unlink(csv_path);
  if (rc)
    core_made_dirs_undo(&made); /* a failed plot leaves no folder it made */
  core_profile_free(p);
  return rc;
}

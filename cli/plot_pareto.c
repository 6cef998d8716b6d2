/* The Pareto plot of an advice CSV: cost against time to train, the front
 * joined in order of time. */
#include "cli.h"

#include "core/afile.h"
#include "core/csv.h"
#include "core/err.h"
#include "core/path.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const cli_plot_pareto_cols[] = {"rank", "feasible", "pareto", "time_to_train_h", "cost_usd", "why", NULL};

int cli_plot_cell_num(const char *cell, double *v) {
  char *end;
  *v = strtod(cell, &end);
  return end != cell && !*end && isfinite(*v);
}

static int by_first(const void *pa, const void *pb) {
  const double *a = pa, *b = pb;
  return (a[0] > b[0]) - (a[0] < b[0]);
}

/* The front's points of an advice CSV in order of time (gnuplot joins
 * rows in file order), into path. */
static int front_table(const char *csv, const char *path) {
  static const char *const cols[] = {"time_to_train_h", "cost_usd"};
  core_csv_table t;
  core_csv f;
  int rc = core_csv_read(csv, &t);
  if (rc)
    return rc;
  double *pts = calloc((size_t)t.nrows * 2 + 2, sizeof *pts);
  long n = 0;
  if ((rc = core_csv_require(&t, cli_plot_pareto_cols)) != 0 || !pts ||
      (t.nrows == 0 && (rc = core_err_set(CORE_EINVAL, "%s has no rows to plot", csv)) != 0)) {
    rc = rc ? rc : core_err_set(CORE_ENOMEM, "out of memory");
    goto out;
  }
  int cp = core_csv_col(&t, "pareto"), ct = core_csv_col(&t, "time_to_train_h"), cc = core_csv_col(&t, "cost_usd");
  for (long i = 0; i < t.nrows; i++)
    if (!strcmp(t.rows[i][cp], "1") && cli_plot_cell_num(t.rows[i][ct], &pts[2 * n]) &&
        cli_plot_cell_num(t.rows[i][cc], &pts[2 * n + 1]))
      n++;
  qsort(pts, (size_t)n, 2 * sizeof *pts, by_first);
  if ((rc = core_csv_open(&f, path, cols, 2)) != 0)
    goto out;
  for (long i = 0; i < n; i++) {
    core_csv_num(&f, pts[2 * i]);
    core_csv_num(&f, pts[2 * i + 1]);
    core_csv_end_row(&f);
  }
  rc = core_csv_commit(&f);
out:
  free(pts);
  core_csv_table_free(&t);
  return rc;
}

int cli_plot_pareto(const char *csv, const char *out_dir, const char *title, double deadline_h, double budget_usd) {
  char script[4096], vars[16384], t[512], front[4400], out[4400];
  snprintf(script, sizeof script, "%s/pareto.gp", cli_plots_dir());
  if (access(script, R_OK) != 0)
    return core_err_set(CORE_EIO, "cannot read plot script %s: %s (set DDPSIM_PLOTS_DIR to the plots/ folder)", script,
        strerror(errno));
  int rc = cli_plot_check_paths(csv, out_dir);
  if (rc)
    return rc;
  const char *base = core_path_base(csv);
  int stem = core_path_stem_len(base, ".csv");
  /* The title goes into a gnuplot string: no quotes or backslashes. */
  snprintf(t, sizeof t, "%s", title ? title : "");
  for (char *c = t; *c; c++)
    if (*c == '\'' || *c == '"' || *c == '\\')
      *c = ' ';
  if (!t[0])
    snprintf(t, sizeof t, "%.*s: cost against time to train", stem, base);
  snprintf(front, sizeof front, "%s/.%.*s-front.csv", out_dir, stem, base);
  core_made_dirs made = {0};
  if ((rc = core_mkdirs_made(out_dir, &made)) != 0 || (rc = front_table(csv, front)) != 0) {
    core_made_dirs_undo(&made); /* a failed plot leaves no folder it made */
    return rc;
  }
  snprintf(out, sizeof out, "%s/%.*s-pareto", out_dir, stem, base);
  snprintf(vars, sizeof vars, "csv='%s'; front='%s'; title='%s'; deadline=%.17g; budget=%.17g; out='%s'", csv, front, t,
      deadline_h, budget_usd, out);
  rc = cli_run_gnuplot(script, vars, out);
  unlink(front);
  if (rc == 0)
    printf("plotted %s.png and .svg\n", out);
  else
    core_made_dirs_undo(&made);
  return rc;
}

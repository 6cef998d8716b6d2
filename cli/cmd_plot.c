/* ddpsim plot: render the gnuplot scripts of plots/ from a results CSV. */
#include "cli.h"

#include "core/afile.h"
#include "core/csv.h"
#include "core/err.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char cli_plot_help[] =
    "Usage: ddpsim plot KIND CSV [-o DIR]\n"
    "       ddpsim plot fit PROFILE [-o DIR]\n"
    "\n"
    "Draw a plot from a results CSV into DIR (default: the CSV's directory), as\n"
    "PNG and SVG, with gnuplot (found on PATH). KIND is one of:\n"
    "  scaling   throughput and scaling efficiency vs GPUs, one curve per\n"
    "            network and backend, one file per model\n"
    "            (CSV from `ddpsim simulate`)\n"
    "  fit       calibration fit: for each collective entry of a profile, the\n"
    "            measured points over the fitted alpha-beta curve, log-log, one\n"
    "            panel per entry (give a PROFILE instead of a CSV)\n"
    "\n"
    "Files are named after the CSV: results/x.csv -> DIR/x-MODEL-scaling.png;\n"
    "for fit, after the profile: p/x.cfg -> DIR/x-fit.png\n";

/* Plot kinds: the script and the CSV columns it reads. */
typedef struct plot_kind {
  const char *name;
  const char *script;
  const char *const *columns;
} plot_kind;

static const char *const scaling_cols[] = {"model", "gpus", "network", "backend", "samples_per_s",
                                           "scaling_eff", NULL};
/* columns NULL: the input is a profile, not a CSV (cmd_plot_fit.c). */
static const plot_kind kinds[] = {{"scaling", "scaling.gp", scaling_cols}, {"fit", "fit.gp", NULL}};

/* Names go into gnuplot string literals and word lists. */
static int plain_name(const char *s) {
  for (; *s; s++)
    if (*s == '\'' || *s == '"' || *s == '\\' || *s == ' ' || *s == '\t')
      return 0;
  return 1;
}

/* Distinct values of a column, space separated, in first-seen order. */
static int distinct(const core_csv_table *t, int col, char *out, size_t n) {
  size_t len = 0;
  out[0] = '\0';
  for (long i = 0; i < t->nrows; i++) {
    const char *v = t->rows[i][col];
    int seen = 0;
    for (long j = 0; j < i && !seen; j++)
      seen = strcmp(t->rows[j][col], v) == 0;
    if (seen)
      continue;
    if (!plain_name(v))
      return core_err_set(CORE_EINVAL, "%s:%ld: '%s' holds a space or quote, which the plot scripts cannot label; rename it in the scenario",
                          t->path, i + 2, v);
    int w = snprintf(out + len, n - len, "%s%s", len ? " " : "", v);
    if (w < 0 || (size_t)w >= n - len)
      return core_err_set(CORE_EINVAL, "%s: too many distinct values in column '%s' to plot", t->path, t->cols[col]);
    len += (size_t)w;
  }
  return 0;
}

int cli_run_gnuplot(const char *script, const char *vars) {
  pid_t pid = fork();
  if (pid < 0)
    return core_err_errno(errno, "cannot start gnuplot");
  if (pid == 0) {
    execlp("gnuplot", "gnuplot", "-e", vars, script, (char *)NULL);
    fprintf(stderr, "cannot run gnuplot: %s\n", strerror(errno));
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return core_err_errno(errno, "waiting for gnuplot");
  if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
    return core_err_set(CORE_EUNSUPPORTED, "gnuplot was not found on PATH; install it (scripts/setup.sh does) and run again");
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return core_err_set(CORE_EIO, "gnuplot failed on %s (its messages are above)", script);
  return 0;
}

int cli_plot_render(const char *kind, const char *csv, const char *out_dir) {
  const plot_kind *k = NULL;
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (!strcmp(kinds[i].name, kind))
      k = &kinds[i];
  if (!k)
    return core_err_set(CORE_EUSAGE, "no plot kind '%s'; the kinds are: scaling, fit", kind);
  if (!k->columns) {
    char fit_script[4096];
    snprintf(fit_script, sizeof fit_script, "%s/%s", cli_plots_dir(), k->script);
    return cli_plot_fit(fit_script, csv, out_dir);
  }
  core_csv_table t;
  int rc = core_csv_read(csv, &t);
  if (rc)
    return rc;
  char script[4096], models[4096], networks[4096], backends[256], vars[16384];
  if ((rc = core_csv_require(&t, k->columns)) != 0)
    goto out_table;
  if (t.nrows == 0) {
    rc = core_err_set(CORE_EINVAL, "%s has no rows to plot", csv);
    goto out_table;
  }
  snprintf(script, sizeof script, "%s/%s", cli_plots_dir(), k->script);
  if (access(script, R_OK) != 0) {
    rc = core_err_set(CORE_EIO, "cannot read plot script %s: %s (set DDPSIM_PLOTS_DIR to the plots/ folder)",
                      script, strerror(errno));
    goto out_table;
  }
  if ((rc = distinct(&t, core_csv_col(&t, "model"), models, sizeof models)) != 0 ||
      (rc = distinct(&t, core_csv_col(&t, "network"), networks, sizeof networks)) != 0 ||
      (rc = distinct(&t, core_csv_col(&t, "backend"), backends, sizeof backends)) != 0)
    goto out_table;
  if ((rc = core_mkdirs(out_dir)) != 0)
    goto out_table;
  const char *base = strrchr(csv, '/');
  base = base ? base + 1 : csv;
  int stem = (int)strlen(base);
  if (stem > 4 && !strcmp(base + stem - 4, ".csv"))
    stem -= 4;
  if (!plain_name(csv) || !plain_name(out_dir)) {
    rc = core_err_set(CORE_EINVAL, "paths with spaces or quotes cannot be passed to gnuplot: '%s', '%s'", csv, out_dir);
    goto out_table;
  }
  /* One gnuplot run per model; the script writes PNG and SVG. */
  char *save = NULL, *m = strtok_r(models, " ", &save);
  for (; m; m = strtok_r(NULL, " ", &save)) {
    snprintf(vars, sizeof vars,
             "csv='%s'; model='%s'; networks='%s'; backends='%s'; out='%s/%.*s-%s-%s'", csv, m,
             networks, backends, out_dir, stem, base, m, kind);
    if ((rc = cli_run_gnuplot(script, vars)) != 0)
      goto out_table;
    printf("plotted %s/%.*s-%s-%s.png and .svg\n", out_dir, stem, base, m, kind);
  }
out_table:
  core_csv_table_free(&t);
  return rc;
}

int cli_cmd_plot(int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *out = NULL;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 'h': fputs(cli_plot_help, stdout); return CLI_EXIT_OK;
    case ':': return cli_usage("plot", "option %s needs a value", argv[optind - 1]);
    default: return cli_usage("plot", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (argc - optind != 2)
    return cli_usage("plot", "expected KIND and CSV, e.g. ddpsim plot scaling results/gigabit-vs-ib.csv");
  const char *csv = argv[optind + 1];
  char dir[4096];
  if (!out) {
    const char *slash = strrchr(csv, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - csv) : 1, slash ? csv : ".");
    out = dir;
  }
  int rc = cli_plot_render(argv[optind], csv, out);
  return rc ? cli_fail("plot", rc) : CLI_EXIT_OK;
}

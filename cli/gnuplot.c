/* Running gnuplot on the plots/ scripts: outputs written through core/afile,
 * names checked for what a gnuplot string literal takes. */
#include "cli.h"

#include "core/afile.h"
#include "core/err.h"
#include "core/path.h"
#include "sim/scenario.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Names go into gnuplot string literals and word lists. */
int cli_plot_plain_name(const char *s) {
  for (; *s; s++)
    if (*s == '\'' || *s == '"' || *s == '\\' || *s == ' ' || *s == '\t')
      return 0;
  return 1;
}

int cli_plot_check_paths(const char *csv, const char *out_dir) {
  if (!cli_plot_plain_name(csv) || !cli_plot_plain_name(out_dir))
    return core_err_set(CORE_EUSAGE,
        "paths with spaces or quotes cannot be passed to gnuplot: '%s', '%s'; draw into a directory (-o DIR) whose "
        "path has none",
        csv, out_dir);
  return 0;
}

/* A plot's file name formed into p (n bytes); CORE_EUSAGE when it does not
 * fit, rather than checking or writing a file of a name cut short. */
static int __attribute__((format(printf, 3, 4))) plot_path(char *p, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(p, n, fmt, ap);
  va_end(ap);
  if (len < 0 || (size_t)len >= n)
    return core_err_set(CORE_EUSAGE,
        "a plot's file name would be longer than %zu bytes (%.60s...): draw into a directory (-o DIR) of a shorter "
        "path, or name the CSV shorter",
        n - 1, p);
  return 0;
}

/* A plot's output that is there already, checked as core/afile checks an
 * output when it is opened (one of the command's inputs, a directory). */
static int check_existing(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 ? core_afile_check(path) : 0;
}

/* csv, which the plot reads back, and OUT_DIR/STEM-MODEL-KIND.png and .svg
 * (STEM-KIND without models) for each kind, and OUT_DIR/.STEM-DATA for each
 * data file. */
static int check_outputs(const char *csv, const char *out_dir, const char *const *models, int n_models,
    const char *const *kinds, const char *const *data) {
  /* The plot reads the CSV back: one written through has nothing to give. */
  struct stat st;
  if (stat(csv, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))
    return core_err_set(CORE_EUSAGE,
        "the plot reads the CSV back to draw it, but %s is %s (written through, not kept): write the CSV to a "
        "regular file, or leave out the plot",
        csv, S_ISFIFO(st.st_mode) ? "a FIFO" : "a character device");
  const char *base = core_path_base(csv);
  int stem = core_path_stem_len(base, ".csv"), rc = 0;
  char p[8400];
  for (int m = 0; m < (models ? n_models : 1) && !rc; m++)
    for (const char *const *k = kinds; *k && !rc; k++)
      for (int svg = 0; svg < 2 && !rc; svg++) {
        const char *ext = svg ? "svg" : "png";
        if (models)
          rc = plot_path(p, sizeof p, "%s/%.*s-%s-%s.%s", out_dir, stem, base, models[m], *k, ext);
        else
          rc = plot_path(p, sizeof p, "%s/%.*s-%s.%s", out_dir, stem, base, *k, ext);
        if (!rc)
          rc = check_existing(p);
      }
  for (const char *const *d = data; *d && !rc; d++) {
    if (!(rc = plot_path(p, sizeof p, "%s/.%.*s-%s", out_dir, stem, base, *d)))
      rc = check_existing(p);
  }
  return rc;
}

int cli_plot_check_outputs(const sim_scenario *s, const char *csv, const char *out_dir) {
  static const char *const kinds[] = {"scaling", "compression", "goodput", "fabric", NULL};
  static const char *const data[] = {"scaling.csv", "speedup.csv", "breakeven.csv", NULL};
  const char **models = calloc((size_t)s->n_models + 1, sizeof *models);
  if (!models)
    return core_err_set(CORE_ENOMEM, "out of memory checking the plots of %s", csv);
  for (int m = 0; m < s->n_models; m++)
    models[m] = s->models[m]->name;
  int rc = check_outputs(csv, out_dir, models, s->n_models, kinds, data);
  free(models);
  return rc;
}

int cli_plot_check_pareto(const char *csv, const char *out_dir) {
  static const char *const kinds[] = {"pareto", NULL};
  static const char *const data[] = {"front.csv", NULL};
  return check_outputs(csv, out_dir, NULL, 0, kinds, data);
}

static int gnuplot(const char *script, const char *vars) {
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
    return core_err_set(
        CORE_EUNSUPPORTED, "gnuplot was not found on PATH; install it (scripts/setup.sh does) and run again");
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return core_err_set(CORE_EIO, "gnuplot failed on %s (its messages are above)", script);
  return 0;
}

/* Where gnuplot writes an output: the temp file core/afile renames into
 * place, or the target itself when afile writes through (a device). */
static const char *gp_file(const core_afile *a) { return a->direct ? a->path : a->tmp; }

int cli_run_gnuplot(const char *script, const char *vars, const char *out) {
  core_afile png, svg;
  char path[4200], *all = NULL;
  int rc;
  if ((rc = plot_path(path, sizeof path, "%s.png", out)) != 0 || (rc = core_afile_open(&png, path)) != 0)
    return rc;
  if ((rc = plot_path(path, sizeof path, "%s.svg", out)) != 0 || (rc = core_afile_open(&svg, path)) != 0)
    goto abort_png;
  if (!cli_plot_plain_name(gp_file(&png)) || !cli_plot_plain_name(gp_file(&svg))) {
    rc = core_err_set(CORE_EUSAGE,
        "paths with spaces or quotes cannot be passed to gnuplot: '%s', '%s'; draw into a directory (-o DIR) whose "
        "real "
        "path has none",
        gp_file(&png), gp_file(&svg));
    goto abort_svg;
  }
  size_t n = strlen(vars) + strlen(gp_file(&png)) + strlen(gp_file(&svg)) + 32;
  if (!(all = malloc(n))) {
    rc = core_err_set(CORE_ENOMEM, "out of memory passing %s's variables to gnuplot", script);
    goto abort_svg;
  }
  snprintf(all, n, "%s; png='%s'; svg='%s'", vars, gp_file(&png), gp_file(&svg));
  if ((rc = gnuplot(script, all)) != 0)
    goto abort_svg;
  free(all);
  if ((rc = core_afile_commit(&png)) != 0) {
    core_afile_abort(&svg);
    return rc;
  }
  return core_afile_commit(&svg);
abort_svg:
  free(all);
  core_afile_abort(&svg);
abort_png:
  core_afile_abort(&png);
  return rc;
}

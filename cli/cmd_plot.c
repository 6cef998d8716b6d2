/* ddpsim plot: render the gnuplot scripts of plots/ from a results CSV. */
#include "cli.h"

#include "core/afile.h"
#include "core/csv.h"
#include "core/err.h"
#include "core/path.h"

#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char cli_plot_help[] = "Usage: ddpsim plot KIND CSV [-o DIR] [--devices gpu|cpu]\n"
                             "       ddpsim plot fit PROFILE [-o DIR]\n"
                             "\n"
                             "Draw a plot from a results CSV into DIR (default: the CSV's directory), as\n"
                             "PNG and SVG, with gnuplot (found on PATH). KIND is one of:\n"
                             "  scaling   throughput and scaling efficiency vs GPUs, one curve per\n"
                             "            network and backend and per value of every other setting\n"
                             "            the study varies (precision, batch, ...), one file per model\n"
                             "            (CSV from `ddpsim simulate`)\n"
                             "  goodput   goodput vs checkpoint interval with 95% intervals, Young's and\n"
                             "            Daly's optima and the best simulated interval marked, one\n"
                             "            curve per checkpoint mode and spare pool (scenarios with\n"
                             "            failures and checkpoints, e.g. scenarios/node-failure.cfg;\n"
                             "            none where other settings vary too, which stderr names)\n"
                             "  compression  speedup of each compression over none vs the network's line\n"
                             "            rate, one panel per node count (up to 4), break-even rates\n"
                             "            marked (scenarios sweeping ddp.compression)\n"
                             "  pareto    cost against time to train of every point `ddpsim advise`\n"
                             "            simulated, the front joined, the recommendation circled, the\n"
                             "            scenario as given marked, the deadline and budget drawn\n"
                             "            (CSV: DIR/NAME-advice.csv; one file, CSV-pareto.png)\n"
                             "  fabric    scaling efficiency and one bucket allreduce's bus bandwidth vs\n"
                             "            GPUs, one curve per fabric, and below them each fabric's change\n"
                             "            against the first fabric, its points side by side; one file per\n"
                             "            model (scenarios with a fabric, e.g. scenarios/fabric.cfg)\n"
                             "  fit       calibration fit: for each collective entry of a profile, the\n"
                             "            measured points over the fitted alpha-beta curve, log-log, one\n"
                             "            panel per entry (give a PROFILE instead of a CSV)\n"
                             "\n"
                             "--devices cpu labels the ranks of a study on a CPU profile as CPU ranks\n"
                             "(simulate --plot and merge --plot do so by themselves); default gpu.\n"
                             "\n"
                             "Files are named after the CSV: results/x.csv -> DIR/x-MODEL-scaling.png;\n"
                             "for fit, after the profile: p/x.cfg -> DIR/x-fit.png\n";

/* Plot kinds: the script and the CSV columns it reads; own, for a kind
 * drawn by a function of its own (given the script, the input and the
 * directory). */
typedef struct plot_kind {
  const char *name;
  const char *script;
  const char *const *columns;
  int (*own)(const char *script, const char *in, const char *out_dir);
  int rereads; /* gnuplot reads the CSV again (its script's csv variable) */
} plot_kind;

static int pareto_own(const char *script, const char *csv, const char *out_dir) {
  (void)script;
  return cli_plot_pareto(csv, out_dir, NULL, 0, 0);
}

static const char *const scaling_cols[] = {"model", "gpus", "network", "backend", "samples_per_s", "scaling_eff", NULL};
static const char *const goodput_cols[] = {"model", "ckpt_mode", "spares", "ckpt_every_s", "goodput", "goodput_lo",
    "goodput_hi", "young_s", "daly_s", "best_every_s", NULL};
static const char *const compression_cols[] = {"model", "nodes", "gbps", "compression", "step_s", NULL};
static const char *const fabric_cols[] = {"model", "gpus", "fabric", "scaling_eff", "busbw_GBps", "status", NULL};
/* fit reads a profile, not a CSV (cmd_plot_fit.c). */
static const plot_kind kinds[] = {{"scaling", "scaling.gp", scaling_cols, NULL, 0},
    {"pareto", "pareto.gp", cli_plot_pareto_cols, pareto_own, 1}, {"goodput", "goodput.gp", goodput_cols, NULL, 1},
    {"compression", "compression.gp", compression_cols, NULL, 0}, {"fabric", "fabric.gp", fabric_cols, NULL, 1},
    {"fit", "fit.gp", NULL, cli_plot_fit, 0}};

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
    if (!cli_plot_plain_name(v))
      return core_err_set(CORE_EINVAL,
          "%s:%ld: '%s' holds a space or quote, which the plot scripts cannot label; rename it in the scenario",
          t->path, t->lines[i], v);
    int w = snprintf(out + len, n - len, "%s%s", len ? " " : "", v);
    if (w < 0 || (size_t)w >= n - len)
      return core_err_set(CORE_EINVAL, "%s: too many distinct values in column '%s' to plot", t->path, t->cols[col]);
    len += (size_t)w;
  }
  return 0;
}

/* One speedup: a compression at one point against none at the same point. */
typedef struct speedup {
  const char *model, *comp;
  int nodes;
  double gbps, x;
} speedup;

static int by_curve(const void *pa, const void *pb) {
  const speedup *a = pa, *b = pb;
  int c = strcmp(a->model, b->model);
  if (!c)
    c = (a->nodes > b->nodes) - (a->nodes < b->nodes);
  if (!c)
    c = strcmp(a->comp, b->comp);
  if (!c)
    c = (a->gbps > b->gbps) - (a->gbps < b->gbps);
  return c;
}

/* Is row j (compression none) the same point as row i but for it? */
static int same_point(const core_csv_table *t, long i, long j) {
  static const char *const same[] = {"model", "nodes", "gpus_per_node", "network", "backend", "algorithm", "precision",
      "batch", "bucket_cap_mb", "overlap", "find_unused_parameters", NULL};
  for (const char *const *k = same; *k; k++) {
    int c = core_csv_col(t, *k);
    if (c >= 0 && strcmp(t->rows[i][c], t->rows[j][c]))
      return 0;
  }
  return 1;
}

/* The speedups of each compressed point over none at the same point, into
 * sp; how many. A point without a step time (empty: it timed out) has none. */
static long speedups(const core_csv_table *t, speedup *sp) {
  int cc = core_csv_col(t, "compression"), cs = core_csv_col(t, "step_s"), cg = core_csv_col(t, "gbps"),
      cm = core_csv_col(t, "model"), cn = core_csv_col(t, "nodes");
  long n = 0;
  for (long i = 0; i < t->nrows; i++) {
    if (!strcmp(t->rows[i][cc], "none"))
      continue;
    long j = 0;
    while (j < t->nrows && (strcmp(t->rows[j][cc], "none") || !same_point(t, i, j)))
      j++;
    double none_s, comp_s;
    if (j == t->nrows || !cli_plot_cell_num(t->rows[i][cg], &sp[n].gbps) ||
        !cli_plot_cell_num(t->rows[j][cs], &none_s) || !cli_plot_cell_num(t->rows[i][cs], &comp_s) ||
        !(sp[n].gbps > 0 && none_s > 0 && comp_s > 0))
      continue;
    sp[n].model = t->rows[i][cm];
    sp[n].comp = t->rows[i][cc];
    sp[n].nodes = atoi(t->rows[i][cn]);
    sp[n++].x = none_s / comp_s;
  }
  return n;
}

static void speedup_row(core_csv *c, const speedup *x) {
  core_csv_str(c, x->model);
  core_csv_int(c, x->nodes);
  core_csv_num(c, x->gbps);
  core_csv_str(c, x->comp);
  core_csv_num(c, x->x);
  core_csv_end_row(c);
}

/* Where the curve falls to 1 between x and the next point of its curve. */
static void breakeven_row(core_csv *c, const speedup *x, const speedup *next) {
  double l0 = log(x->gbps), l1 = log(next->gbps), f = (x->x - 1) / (x->x - next->x);
  core_csv_str(c, x->model);
  core_csv_int(c, x->nodes);
  core_csv_str(c, x->comp);
  core_csv_num(c, exp(l0 + f * (l1 - l0)));
  core_csv_end_row(c);
}

/* Speedups of each compression over none at the same point, sorted so each
 * curve's rows are consecutive (gnuplot joins consecutive rows), and the
 * line rate where a curve falls to 1 (linear in log rate between the two
 * rates around it), into two CSVs for plots/compression.gp. */
static int compression_tables(const core_csv_table *t, const char *data, const char *breaks) {
  static const char *const data_cols[] = {"model", "nodes", "gbps", "compression", "speedup"};
  static const char *const break_cols[] = {"model", "nodes", "compression", "gbps"};
  core_csv a, b;
  speedup *sp = calloc((size_t)t->nrows + 1, sizeof *sp);
  if (!sp)
    return core_err_set(CORE_ENOMEM, "out of memory");
  long n = speedups(t, sp);
  qsort(sp, (size_t)n, sizeof *sp, by_curve);
  int rc = core_csv_open(&a, data, data_cols, 5);
  if (rc)
    goto out_free;
  if ((rc = core_csv_open(&b, breaks, break_cols, 4)) != 0) {
    core_csv_abort(&a);
    goto out_free;
  }
  for (long i = 0; i < n; i++) {
    speedup_row(&a, &sp[i]);
    int same_curve = i + 1 < n && !strcmp(sp[i].model, sp[i + 1].model) && sp[i].nodes == sp[i + 1].nodes &&
                     !strcmp(sp[i].comp, sp[i + 1].comp);
    if (same_curve && sp[i].x > 1 && sp[i + 1].x <= 1)
      breakeven_row(&b, &sp[i], &sp[i + 1]);
  }
  if ((rc = core_csv_commit(&a)) != 0)
    core_csv_abort(&b);
  else
    rc = core_csv_commit(&b);
out_free:
  free(sp);
  return rc;
}

/* Up to four node counts above one for the compression panels: the
 * smallest, the largest, and evenly spaced ones between. */
static void pick_nodes(const char *all, char *out, size_t n) {
  char copy[4096], *save = NULL;
  const char *v[256];
  int k = 0;
  snprintf(copy, sizeof copy, "%s", all);
  for (char *x = strtok_r(copy, " ", &save); x && k < 256; x = strtok_r(NULL, " ", &save))
    if (atoi(x) > 1)
      v[k++] = x;
  out[0] = '\0';
  if (!k) {
    snprintf(out, n, "%s", all);
    return;
  }
  int want = k < 4 ? k : 4;
  size_t len = 0;
  for (int i = 0; i < want; i++) {
    int idx = want == 1 ? 0 : (int)((double)i * (k - 1) / (want - 1) + 0.5);
    len += (size_t)snprintf(out + len, n - len, "%s%s", len ? " " : "", v[idx]);
  }
}

/* One plot of a CSV: its script, the files it names, and what each of
 * its gnuplot runs is told besides the model (word lists a and b, the
 * scaling plot's compression; the compression plot's tables). */
typedef struct plot_job {
  const char *kind, *csv, *out_dir, *base; /* base: the CSV's file name */
  int stem;                                /* base's length without ".csv" */
  char script[4096], a[4096], b[4096], c[1024], keys[4096], backends[64], comp[64], data[4400], breaks[4400];
  int comp_named; /* some row is compressed: the scaling plot's title names comp */
  int cpu;        /* the ranks are CPU ranks, not GPUs */
} plot_job;

/* The script is readable, the table has the kind's columns and rows, and
 * the paths can go into gnuplot's string literals. */
static int check_job(const plot_job *j, const plot_kind *k, const core_csv_table *t) {
  int rc;
  if ((rc = core_csv_require(t, k->columns)) != 0)
    return rc;
  if (t->nrows == 0)
    return core_err_set(CORE_EINVAL, "%s has no rows to plot", j->csv);
  if (access(j->script, R_OK) != 0)
    return core_err_set(CORE_EIO, "cannot read plot script %s: %s (set DDPSIM_PLOTS_DIR to the plots/ folder)",
        j->script, strerror(errno));
  return cli_plot_check_paths(j->csv, j->out_dir);
}

/* What tells the scaling plot's curves apart: the network and backend,
 * and every other setting the study varies (devices per node only when the
 * node count varies too; else they are the x axis), the fabric among them:
 * a fabric study's points of one GPU count are one per fabric. */
static const char *const curve_dims[] = {"network", "backend", "algorithm", "precision", "batch", "bucket_cap_mb",
    "overlap", "find_unused_parameters", "gpus_per_node", "fabric", NULL};

/* Does column col take two values for one model? (One file is drawn per
 * model: what tells models apart does not tell curves apart.) */
static int column_varies(const core_csv_table *t, int col) {
  enum { MAX_MODELS = 256 };
  long first[MAX_MODELS];
  int n = 0, cm = core_csv_col(t, "model");
  for (long i = 0; col >= 0 && i < t->nrows; i++) {
    int k = 0;
    while (k < n && strcmp(t->rows[first[k]][cm], t->rows[i][cm]))
      k++;
    if (k < n && strcmp(t->rows[first[k]][col], t->rows[i][col]))
      return 1;
    if (k == n && n < MAX_MODELS)
      first[n++] = i;
  }
  return 0;
}

/* The columns of curve_dims that label curves (-1: the same in every row). */
static void curve_cols(const core_csv_table *t, int cols[]) {
  int nodes_vary = column_varies(t, core_csv_col(t, "nodes"));
  for (int k = 0; curve_dims[k]; k++) {
    int c = core_csv_col(t, curve_dims[k]);
    int always = k < 2, per_node = !strcmp(curve_dims[k], "gpus_per_node");
    cols[k] = always || (column_varies(t, c) && (!per_node || nodes_vary)) ? c : -1;
  }
}

/* Row r's curve: its values of cols but column skip, '/'-separated,
 * numbers named. */
static void curve_label(const core_csv_table *t, long r, const int cols[], int skip, char *out, size_t n) {
  size_t len = 0;
  out[0] = '\0';
  for (int k = 0; curve_dims[k] && len < n; k++) {
    if (cols[k] < 0 || k == skip)
      continue;
    const char *d = curve_dims[k], *v = t->rows[r][cols[k]], *sep = len ? "/" : "";
    int on = strcmp(v, "0") != 0;
    if (!strcmp(d, "batch"))
      len += (size_t)snprintf(out + len, n - len, "%sbatch=%s", sep, v);
    else if (!strcmp(d, "bucket_cap_mb"))
      len += (size_t)snprintf(out + len, n - len, "%sbucket=%sMB", sep, v);
    else if (!strcmp(d, "overlap"))
      len += (size_t)snprintf(out + len, n - len, "%s%s", sep, on ? "overlap" : "no-overlap");
    else if (!strcmp(d, "find_unused_parameters"))
      len += (size_t)snprintf(out + len, n - len, "%s%s", sep, on ? "find-unused" : "no-find-unused");
    else if (!strcmp(d, "gpus_per_node"))
      len += (size_t)snprintf(out + len, n - len, "%s%s/node", sep, v);
    else
      len += (size_t)snprintf(out + len, n - len, "%s%s", sep, v);
  }
}

/* One point of the scaling table. */
typedef struct scaling_pt {
  const char *model;
  int curve;
  double gpus, tput, eff;
} scaling_pt;

static int by_model_curve(const void *pa, const void *pb) {
  const scaling_pt *a = pa, *b = pb;
  int c = strcmp(a->model, b->model);
  if (!c)
    c = (a->curve > b->curve) - (a->curve < b->curve);
  if (!c)
    c = (a->gpus > b->gpus) - (a->gpus < b->gpus);
  return c;
}

/* Add " word" (no space first) to list of size cap. */
static void append_word(char *list, size_t cap, const char *word) {
  size_t len = strlen(list);
  snprintf(list + len, cap - len, "%s%s", len ? " " : "", word);
}

/* Index of word among the words of list (of size cap), added at its end if
 * new (*added: 1 then). */
static int word_index(char *list, size_t cap, const char *word, int *added, const char *csv) {
  char copy[4096], *save = NULL;
  int i = 0;
  *added = 0;
  snprintf(copy, sizeof copy, "%s", list);
  for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save), i++)
    if (!strcmp(w, word))
      return i;
  size_t len = strlen(list);
  if (len + (len > 0) + strlen(word) >= cap)
    return core_err_set(CORE_EINVAL, "%s: too many curves to plot; split the study", csv);
  append_word(list, cap, word);
  *added = 1;
  return i;
}

/* Row i's curve, added to j->a if new with its colour into j->b (one per
 * curve but for the backend) and its dash into j->c (one per backend). */
static int row_curve(const core_csv_table *t, long i, const int cols[], plot_job *j) {
  char label[1024], key[1024], num[16];
  int added;
  curve_label(t, i, cols, -1, label, sizeof label);
  if (!cli_plot_plain_name(label))
    return core_err_set(CORE_EINVAL,
        "%s:%ld: '%s' holds a space or quote, which the plot scripts cannot label; rename it in the scenario", t->path,
        t->lines[i], label);
  int curve = word_index(j->a, sizeof j->a, label, &added, j->csv);
  if (curve < 0 || !added)
    return curve;
  curve_label(t, i, cols, 1, key, sizeof key);
  int colour = word_index(j->keys, sizeof j->keys, key[0] ? key : "-", &added, j->csv);
  int dash = word_index(j->backends, sizeof j->backends, t->rows[i][cols[1]], &added, j->csv);
  if (colour < 0 || dash < 0)
    return colour < 0 ? colour : dash;
  snprintf(num, sizeof num, "%d", colour + 1);
  append_word(j->b, sizeof j->b, num);
  snprintf(num, sizeof num, "%d", dash + 1);
  append_word(j->c, sizeof j->c, num);
  return curve;
}

/* The points of the baseline compression that ran (status ok: neither timed
 * out nor over the GPU's memory), each with its curve, sorted so that each
 * curve's rows are consecutive and in order of GPUs (gnuplot joins
 * consecutive rows); j->a gets the curves. */
static long scaling_points(const core_csv_table *t, plot_job *j, scaling_pt *pt) {
  int cols[16], cm = core_csv_col(t, "model"), cg = core_csv_col(t, "gpus"), cs = core_csv_col(t, "status"),
                cc = core_csv_col(t, "compression"), ct = core_csv_col(t, "samples_per_s"),
                ce = core_csv_col(t, "scaling_eff");
  long k = 0;
  curve_cols(t, cols);
  j->a[0] = j->b[0] = j->c[0] = j->keys[0] = j->backends[0] = '\0';
  for (long i = 0; i < t->nrows; i++) {
    if ((cs >= 0 && strcmp(t->rows[i][cs], "ok")) || (cc >= 0 && strcmp(t->rows[i][cc], j->comp)) ||
        !cli_plot_cell_num(t->rows[i][cg], &pt[k].gpus) || !cli_plot_cell_num(t->rows[i][ct], &pt[k].tput) ||
        !cli_plot_cell_num(t->rows[i][ce], &pt[k].eff))
      continue;
    if ((pt[k].curve = row_curve(t, i, cols, j)) < 0)
      return pt[k].curve;
    pt[k++].model = t->rows[i][cm];
  }
  qsort(pt, (size_t)k, sizeof *pt, by_model_curve);
  return k;
}

/* The scaling plot's compression (a compression sweep has its own plot,
 * so scaling draws the baseline: none, or the first compression of the
 * CSV), its curves and their table, written beside the plots (hidden;
 * removed after). */
static int scaling_lists(const core_csv_table *t, plot_job *j) {
  static const char *const cols[] = {"model", "curve", "gpus", "samples_per_s", "scaling_eff"};
  int cc = core_csv_col(t, "compression");
  if (cc >= 0) {
    snprintf(j->comp, sizeof j->comp, "%s", t->rows[0][cc]);
    for (long i = 0; i < t->nrows; i++)
      if (!strcmp(t->rows[i][cc], "none"))
        snprintf(j->comp, sizeof j->comp, "none");
      else
        j->comp_named = 1;
  }
  scaling_pt *pt = calloc((size_t)t->nrows + 1, sizeof *pt);
  if (!pt)
    return core_err_set(CORE_ENOMEM, "out of memory for the %ld points of %s", t->nrows, j->csv);
  long n = scaling_points(t, j, pt);
  int rc = n < 0 ? (int)n : 0;
  core_csv c;
  snprintf(j->data, sizeof j->data, "%s/.%.*s-scaling.csv", j->out_dir, j->stem, j->base);
  if (!rc && (rc = core_csv_open(&c, j->data, cols, 5)) == 0) {
    char *words = j->a, *save = NULL, copy[sizeof j->a];
    snprintf(copy, sizeof copy, "%s", words);
    const char *name[4096];
    int k = 0;
    for (char *w = strtok_r(copy, " ", &save); w && k < 4096; w = strtok_r(NULL, " ", &save))
      name[k++] = w;
    for (long i = 0; i < n; i++) {
      core_csv_str(&c, pt[i].model);
      core_csv_str(&c, pt[i].curve < k ? name[pt[i].curve] : "?");
      core_csv_num(&c, pt[i].gpus);
      core_csv_num(&c, pt[i].tput);
      core_csv_num(&c, pt[i].eff);
      core_csv_end_row(&c);
    }
    rc = core_csv_commit(&c);
  }
  free(pt);
  return rc;
}

/* The compression plot's panels (node counts), its compressions but none,
 * and its tables, written beside the plots (hidden; removed after). */
static int compression_lists(const core_csv_table *t, plot_job *j) {
  char nodes[4096], hooks[1024];
  int rc;
  if ((rc = distinct(t, core_csv_col(t, "nodes"), nodes, sizeof nodes)) != 0 ||
      (rc = distinct(t, core_csv_col(t, "compression"), hooks, sizeof hooks)) != 0)
    return rc;
  pick_nodes(nodes, j->a, sizeof j->a);
  char *save = NULL;
  size_t len = 0;
  j->b[0] = '\0';
  for (char *h = strtok_r(hooks, " ", &save); h; h = strtok_r(NULL, " ", &save))
    if (strcmp(h, "none"))
      len += (size_t)snprintf(j->b + len, sizeof j->b - len, "%s%s", len ? " " : "", h);
  if (!j->b[0])
    return core_err_set(CORE_EINVAL, "%s: no compression other than none to compare; sweep ddp.compression", j->csv);
  snprintf(j->data, sizeof j->data, "%s/.%.*s-speedup.csv", j->out_dir, j->stem, j->base);
  snprintf(j->breaks, sizeof j->breaks, "%s/.%.*s-breakeven.csv", j->out_dir, j->stem, j->base);
  return compression_tables(t, j->data, j->breaks);
}

/* What each script is told besides the model and output. */
static int kind_lists(const core_csv_table *t, plot_job *j) {
  if (!strcmp(j->kind, "scaling"))
    return scaling_lists(t, j);
  if (!strcmp(j->kind, "fabric"))
    return distinct(t, core_csv_col(t, "fabric"), j->a, sizeof j->a);
  if (!strcmp(j->kind, "goodput")) {
    int rc = distinct(t, core_csv_col(t, "ckpt_mode"), j->a, sizeof j->a);
    return rc ? rc : distinct(t, core_csv_col(t, "spares"), j->b, sizeof j->b);
  }
  return compression_lists(t, j);
}

/* The gnuplot variables of model m's plot. */
static void plot_vars(const plot_job *j, const char *m, char *vars, size_t n) {
  const char *kind = j->kind, *csv = j->csv, *out_dir = j->out_dir, *base = j->base;
  int stem = j->stem;
  /* What a rank is, for the axes and titles of the plots that count them. */
  const char *dev = j->cpu ? "devices='CPU ranks'; device='CPU rank'; memory='memory'"
                           : "devices='GPUs'; device='GPU'; memory='GPU memory'";
  if (!strcmp(kind, "scaling"))
    snprintf(vars, n,
        "data='%s'; model='%s'; curves='%s'; colours='%s'; dashes='%s'; comp='%s'; %s; out='%s/%.*s-%s-%s'", j->data, m,
        j->a, j->b, j->c, j->comp_named ? j->comp : "", dev, out_dir, stem, base, m, kind);
  else if (!strcmp(kind, "goodput"))
    snprintf(vars, n, "csv='%s'; model='%s'; modes='%s'; spares='%s'; out='%s/%.*s-%s-%s'", csv, m, j->a, j->b, out_dir,
        stem, base, m, kind);
  else if (!strcmp(kind, "fabric"))
    snprintf(vars, n, "csv='%s'; model='%s'; fabrics='%s'; %s; out='%s/%.*s-%s-%s'", csv, m, j->a, dev, out_dir, stem,
        base, m, kind);
  else
    snprintf(vars, n, "data='%s'; breaks='%s'; model='%s'; nodes='%s'; hooks='%s'; out='%s/%.*s-%s-%s'", j->data,
        j->breaks, m, j->a, j->b, out_dir, stem, base, m, kind);
}

/* Whether model m has a point the plot draws: scaling, fabric and goodput
 * plots leave out the points that did not run (status timeout or oom; and
 * scaling, the compressions but its baseline), and gnuplot cannot draw a
 * plot of none. */
static int drawable(const plot_job *j, const core_csv_table *t, const char *m) {
  int cm = core_csv_col(t, "model"), cs = core_csv_col(t, "status"), cc = core_csv_col(t, "compression");
  int scaling = !strcmp(j->kind, "scaling");
  if (cs < 0 || !strcmp(j->kind, "compression"))
    return 1;
  for (long i = 0; i < t->nrows; i++)
    if (!strcmp(t->rows[i][cm], m) && !strcmp(t->rows[i][cs], "ok") &&
        (cc < 0 || !scaling || !strcmp(t->rows[i][cc], j->comp)))
      return 1;
  return 0;
}

/* The columns that tell a goodput or fabric plot's points apart (its
 * curves and x axis), and the settings a study may vary besides. */
static const char *const goodput_key[] = {"ckpt_mode", "spares", "ckpt_every_s", NULL};
static const char *const fabric_key[] = {"fabric", "gpus", NULL};
static const char *const settings[] = {"nodes", "gpus_per_node", "network", "backend", "algorithm", "precision",
    "batch", "bucket_cap_mb", "overlap", "find_unused_parameters", "compression", "fabric", "ckpt_mode", "spares",
    "ckpt_every_s", "ckpt_s", "mtbf_h", "weibull_shape", "detect_s", "mttr_h", "restart_s", "load_s", "mtti_h", NULL};

static int listed(const char *const *list, const char *s) {
  for (; *list; list++)
    if (!strcmp(*list, s))
      return 1;
  return 0;
}

/* Do two rows of model m agree on every key column? Then the plot would
 * put both on one curve at one x: into why, the settings in which m's rows
 * differ beyond the key. */
static int mixes(const core_csv_table *t, const char *m, const char *const *key, char *why, size_t n) {
  int cm = core_csv_col(t, "model"), same = 0;
  for (long a = 0; a < t->nrows && !same; a++)
    for (long b = a + 1; b < t->nrows && !same && !strcmp(t->rows[a][cm], m); b++) {
      same = !strcmp(t->rows[b][cm], m);
      for (const char *const *k = key; same && *k; k++)
        same = !strcmp(t->rows[a][core_csv_col(t, *k)], t->rows[b][core_csv_col(t, *k)]);
    }
  size_t len = 0;
  why[0] = '\0';
  for (const char *const *c = settings; same && *c; c++) {
    int col = core_csv_col(t, *c);
    long first = -1, differ = 0;
    for (long i = 0; col >= 0 && i < t->nrows && !differ; i++)
      if (!strcmp(t->rows[i][cm], m) && !listed(key, *c)) {
        if (first < 0)
          first = i;
        differ = strcmp(t->rows[i][col], t->rows[first][col]) != 0;
      }
    if (differ && len < n)
      len += (size_t)snprintf(
          why + len, n - len, "%s%s%s", len ? ", " : "", *c, !strcmp(*c, "mtti_h") ? " (the failure rate)" : "");
  }
  return same;
}

/* Does a row (of model m, or of any model when m is NULL) checkpoint? */
static int checkpoints(const core_csv_table *t, const char *m) {
  int cm = core_csv_col(t, "model"), ck = core_csv_col(t, "ckpt_mode");
  for (long i = 0; ck >= 0 && i < t->nrows; i++)
    if ((!m || !strcmp(t->rows[i][cm], m)) && strcmp(t->rows[i][ck], "none"))
      return 1;
  return 0;
}

/* One gnuplot run per model of models (space separated; cut up here); the
 * script writes PNG and SVG. A model with nothing to draw, or whose points
 * the plot's curves would mix, is named on stderr and left out. */
static int render_models(const plot_job *j, const core_csv_table *t, char *models) {
  char vars[16384], out[4400];
  int rc;
  char *save = NULL;
  for (char *m = strtok_r(models, " ", &save); m; m = strtok_r(NULL, " ", &save)) {
    if (!drawable(j, t, m)) {
      fprintf(stderr, "ddpsim: note: no %s plot of %s: none of its points%s%s ran (the status column)\n", j->kind, m,
          j->comp_named ? " with compression " : "", j->comp_named ? j->comp : "");
      continue;
    }
    if (!strcmp(j->kind, "goodput") && !checkpoints(t, m)) {
      fprintf(stderr,
          "ddpsim: note: no goodput plot of %s: none of its points checkpoints (ckpt_mode none), so there is no "
          "interval to plot against; add a checkpoint group to the scenario\n",
          m);
      continue;
    }
    const char *const *key = !strcmp(j->kind, "goodput") ? goodput_key : !strcmp(j->kind, "fabric") ? fabric_key : NULL;
    char why[1024];
    if (key && mixes(t, m, key, why, sizeof why)) {
      fprintf(stderr,
          "ddpsim: note: no %s plot of %s: its points differ in %s besides the plot's %s, and its curves would mix "
          "them; plot a CSV of one value of each of those%s\n",
          j->kind, m, why[0] ? why : "settings the CSV does not show",
          key == goodput_key ? "checkpoint mode, spares and interval" : "fabric and GPUs",
          key == goodput_key ? " (or let `ddpsim advise` find the best point)" : "");
      continue;
    }
    plot_vars(j, m, vars, sizeof vars);
    snprintf(out, sizeof out, "%s/%.*s-%s-%s", j->out_dir, j->stem, j->base, m, j->kind);
    if ((rc = cli_run_gnuplot(j->script, vars, out)) != 0)
      return rc;
    printf("plotted %s.png and .svg\n", out);
  }
  return 0;
}

int cli_plot_render(const char *kind, const char *csv, const char *out_dir, int cpu) {
  const plot_kind *k = NULL;
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (!strcmp(kinds[i].name, kind))
      k = &kinds[i];
  if (!k)
    return core_err_set(
        CORE_EUSAGE, "no plot kind '%s'; the kinds are: scaling, goodput, compression, pareto, fabric, fit", kind);
  /* A pipe gives its rows once: to ddpsim, not to gnuplot after it. */
  struct stat st;
  if (k->rereads && stat(csv, &st) == 0 && !S_ISREG(st.st_mode))
    return core_err_set(CORE_EUSAGE,
        "%s is not a regular file (a pipe?), and the %s plot reads its CSV twice (ddpsim, then gnuplot): save it to a "
        "file and plot that",
        csv, kind);
  plot_job j = {.kind = kind, .csv = csv, .out_dir = out_dir, .cpu = cpu};
  snprintf(j.script, sizeof j.script, "%s/%s", cli_plots_dir(), k->script);
  if (k->own)
    return k->own(j.script, csv, out_dir);
  core_csv_table t;
  int rc = core_csv_read(csv, &t);
  if (rc)
    return rc;
  char models[4096];
  core_made_dirs made = {0};
  if ((rc = check_job(&j, k, &t)) != 0 || (rc = distinct(&t, core_csv_col(&t, "model"), models, sizeof models)) != 0 ||
      (rc = core_mkdirs_made(out_dir, &made)) != 0)
    goto out_table;
  j.base = core_path_base(csv);
  j.stem = core_path_stem_len(j.base, ".csv");
  if ((rc = kind_lists(&t, &j)) == 0)
    rc = render_models(&j, &t, models);
out_table:
  if (j.data[0])
    unlink(j.data);
  if (j.breaks[0])
    unlink(j.breaks);
  if (rc)
    core_made_dirs_undo(&made); /* a failed plot leaves no folder it made */
  core_csv_table_free(&t);
  return rc;
}

/* The plots a simulate CSV calls for: failures and checkpoints give the
 * goodput plot; a fabric its own scaling plot; a compression sweep its
 * trade-off plot; otherwise scaling. */
int cli_plot_auto(const char *csv, const char *out_dir, int cpu) {
  core_csv_table t;
  int rc = core_csv_read(csv, &t);
  if (rc)
    return rc;
  /* Goodput against the checkpoint interval needs intervals: a job level
   * without checkpoints (a time to train to price) is a scaling study. */
  int job = core_csv_col(&t, "goodput") >= 0 && checkpoints(&t, NULL), fab = core_csv_col(&t, "fabric") >= 0;
  int cc = core_csv_col(&t, "compression"), many = 0;
  for (long i = 1; cc >= 0 && i < t.nrows && !many; i++)
    many = strcmp(t.rows[i][cc], t.rows[0][cc]) != 0;
  core_csv_table_free(&t);
  if (job)
    return cli_plot_render("goodput", csv, out_dir, cpu);
  if ((rc = cli_plot_render(fab ? "fabric" : "scaling", csv, out_dir, cpu)) != 0)
    return rc;
  return many ? cli_plot_render("compression", csv, out_dir, cpu) : 0;
}

int cli_cmd_plot(int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, NULL, 'o'}, {"devices", required_argument, NULL, 'd'},
      {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  const char *out = NULL;
  int c, cpu = 0;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 'd':
      if (strcmp(optarg, "gpu") && strcmp(optarg, "cpu"))
        return cli_usage("plot", "--devices expects gpu or cpu (what the study's ranks are), got '%s'", optarg);
      cpu = !strcmp(optarg, "cpu");
      break;
    case 'h': fputs(cli_plot_help, stdout); return CLI_EXIT_OK;
    case ':': return cli_usage("plot", "option %s needs a value", argv[optind - 1]);
    default: return cli_usage("plot", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (argc - optind != 2)
    return cli_usage("plot", "expected KIND and CSV, e.g. ddpsim plot scaling results/gigabit-vs-ib.csv");
  const char *csv = argv[optind + 1];
  char dir[4096];
  int rc = 0;
  struct stat st;
  if (!out && stat(csv, &st) == 0 && !S_ISREG(st.st_mode))
    return cli_usage(
        "plot", "%s is not a file (a pipe?) whose directory the plots can go into; name one with -o DIR", csv);
  if (!out && (rc = core_path_dir(csv, dir, sizeof dir)) == 0)
    out = dir;
  if (rc == 0)
    rc = cli_plot_render(argv[optind], csv, out, cpu);
  return rc ? cli_fail("plot", rc) : CLI_EXIT_OK;
}

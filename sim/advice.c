#include "advice.h"

#include "sim/dims.h"
#include "sim/summary.h"

#include "core/csv.h"
#include "core/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const part_names[SIM_N_PARTS] = {"compute", "exposed communication", "checkpoint stalls",
    "lost work", "time down (detection, repair, restart, load)"};
static const char *const part_keys[SIM_N_PARTS] = {"compute", "exposed_comm", "checkpoints", "lost_work", "restarts"};

/* The dimensions advise chooses, in the CSV's and the table's order. */
static const enum sim_dim knob_dims[] = {SIM_DIM_NODES, SIM_DIM_PER_NODE, SIM_DIM_NETWORK, SIM_DIM_FABRIC,
    SIM_DIM_BACKEND, SIM_DIM_ALGORITHM, SIM_DIM_PRECISION, SIM_DIM_BATCH, SIM_DIM_BUCKET_CAP, SIM_DIM_OVERLAP,
    SIM_DIM_FIND_UNUSED, SIM_DIM_COMPRESSION, SIM_DIM_CKPT_MODE, SIM_DIM_CKPT_EVERY, SIM_DIM_SPARES};
enum { N_KNOBS = (int)(sizeof knob_dims / sizeof *knob_dims) };

/* The value of objective column c at a point. */
static double value_of(const sim_advised *x, enum sim_obj_col c) {
  const sim_point_result *r = &x->r;
  const double *m = r->job.mean;
  switch (c) {
  case SIM_OBJ_TIME_H: return m[SIM_JOB_TIME_H];
  case SIM_OBJ_COST_USD: return m[SIM_JOB_TIME_H] * r->usd_per_hour;
  case SIM_OBJ_USD_PER_HOUR: return r->usd_per_hour;
  case SIM_OBJ_GOODPUT: return m[SIM_JOB_GOODPUT];
  case SIM_OBJ_STEP_S: return r->step_s;
  case SIM_OBJ_SAMPLES_PER_S: return r->samples_per_s;
  case SIM_OBJ_SCALING_EFF: return r->scaling_eff;
  case SIM_OBJ_EXPOSED_COMM_S: return r->exposed_comm_s;
  case SIM_OBJ_WASTE_CKPT_H: return m[SIM_JOB_WASTE_CKPT_H];
  case SIM_OBJ_WASTE_LOST_H: return m[SIM_JOB_WASTE_LOST_H];
  default: return m[SIM_JOB_WASTE_RESTART_H];
  }
}

static double t_of(const sim_advised *x) { return value_of(x, SIM_OBJ_TIME_H); }
static double c_of(const sim_advised *x) { return value_of(x, SIM_OBJ_COST_USD); }

/* Sorting context: qsort has none, and the ranks are computed once. */
static const sim_scenario *sort_s;
static const sim_advice *sort_a;

static int by_time(const void *pa, const void *pb) {
  const sim_advised *x = &sort_a->pts[*(const long *)pa], *y = &sort_a->pts[*(const long *)pb];
  if (t_of(x) != t_of(y))
    return t_of(x) < t_of(y) ? -1 : 1;
  if (c_of(x) != c_of(y))
    return c_of(x) < c_of(y) ? -1 : 1;
  return (x->r.pt.index > y->r.pt.index) - (x->r.pt.index < y->r.pt.index);
}

/* The front: in order of time, the points cheaper than every faster one. */
static void mark_front(sim_advice *a, long *order) {
  double cheapest = INFINITY;
  qsort(order, (size_t)a->n, sizeof *order, by_time);
  for (long i = 0; i < a->n; i++) {
    sim_advised *x = &a->pts[order[i]];
    x->pareto = c_of(x) < cheapest;
    if (x->pareto)
      cheapest = c_of(x);
  }
}

static int by_rank(const void *pa, const void *pb) {
  const sim_advised *x = &sort_a->pts[*(const long *)pa], *y = &sort_a->pts[*(const long *)pb];
  if (x->feasible != y->feasible)
    return y->feasible - x->feasible;
  double u = value_of(x, sort_s->objective.col), v = value_of(y, sort_s->objective.col);
  if (u != v)
    return (u < v) == !sort_s->objective.maximize ? -1 : 1;
  return by_time(pa, pb);
}

/* "nodes 64 -> 128, network 100GbE -> IB" */
static void changes(const sim_scenario *s, const sim_point *from, const sim_point *to, char *buf, size_t n) {
  char u[64], v[64];
  size_t len = 0;
  buf[0] = '\0';
  for (int k = 0; k < N_KNOBS && len < n; k++) {
    sim_summary_dim_value(s, from, knob_dims[k], u, sizeof u);
    sim_summary_dim_value(s, to, knob_dims[k], v, sizeof v);
    if (strcmp(u, v))
      len += (size_t)snprintf(buf + len, n - len, "%s%s %s -> %s%s", len ? ", " : "", sim_dim_column(s, knob_dims[k]),
          u, v, knob_dims[k] == SIM_DIM_NETWORK && to->nodes == 1 ? " (at 1 node it carries nothing)" : "");
  }
}

/* The part of the wall time x removes most against the baseline b. */
static void reason(const sim_scenario *s, const sim_advised *b, sim_advised *x) {
  char ch[256];
  int k = -1;
  double best = 0;
  x->bottleneck = -1;
  if (x == b) {
    snprintf(x->why, sizeof x->why, "the scenario as given");
    return;
  }
  for (int p = 0; p < SIM_N_PARTS; p++)
    if (b->parts_h[p] - x->parts_h[p] > best) {
      best = b->parts_h[p] - x->parts_h[p];
      k = p;
    }
  changes(s, &b->r.pt, &x->r.pt, ch, sizeof ch);
  if (k < 0) {
    snprintf(x->why, sizeof x->why, "removes no part of the time; %s%s", c_of(x) < c_of(b) ? "cheaper: " : "", ch);
    return;
  }
  x->bottleneck = k;
  snprintf(x->why, sizeof x->why, "%s %.4g h -> %.4g h: %s", part_names[k], b->parts_h[k], x->parts_h[k], ch);
}

/* How far x is from the deadline and the budget: the larger ratio. */
static double violation(const sim_advised *x) {
  const sim_objective *o = &sort_s->objective;
  double v = 0;
  if (o->deadline_h > 0)
    v = fmax(v, t_of(x) / o->deadline_h);
  if (o->budget_usd > 0)
    v = fmax(v, c_of(x) / o->budget_usd);
  return v;
}

static int by_violation(const void *pa, const void *pb) {
  const sim_advised *x = &sort_a->pts[*(const long *)pa], *y = &sort_a->pts[*(const long *)pb];
  if (violation(x) != violation(y))
    return violation(x) < violation(y) ? -1 : 1;
  return by_time(pa, pb);
}

/* No point meets the deadline or the budget: the error names the three
 * closest (by the larger of time over deadline and cost over budget). */
static int none_meets(const sim_scenario *s, sim_advice *a, long *order) {
  const sim_objective *o = &s->objective;
  char w[4200], what[128], msg[2048];
  core_cfg_where(o->deadline_key ? o->deadline_key : o->budget_key, w, sizeof w);
  if (o->deadline_h > 0 && o->budget_usd > 0)
    snprintf(what, sizeof what, "the deadline of %g h and the budget of %.6g USD", o->deadline_h, o->budget_usd);
  else if (o->deadline_h > 0)
    snprintf(what, sizeof what, "the deadline of %g h", o->deadline_h);
  else
    snprintf(what, sizeof what, "the budget of %.6g USD", o->budget_usd);
  qsort(order, (size_t)a->n, sizeof *order, by_violation);
  int len = snprintf(msg, sizeof msg, "%s: no point meets %s; the closest of the %ld simulated:", w, what, a->n);
  for (long i = 0; i < a->n && i < 3 && len < (int)sizeof msg; i++) {
    const sim_advised *x = &a->pts[order[i]];
    char ch[256];
    changes(s, &a->pts[a->baseline >= 0 ? a->baseline : 0].r.pt, &x->r.pt, ch, sizeof ch);
    len += snprintf(msg + len, sizeof msg - (size_t)len, " %.4g h and %.4g USD (%s);", t_of(x), c_of(x),
        ch[0] ? ch : "the scenario as given");
  }
  return core_err_set(CORE_EINVAL, "%s relax %s, or widen what the scenario sweeps", msg,
      o->deadline_h > 0 && o->budget_usd > 0 ? "them"
      : o->deadline_h > 0                    ? "the deadline"
                                             : "the budget");
}

/* No point of the study can run: they time out, or do not fit in memory. */
static int none_runs(const sim_scenario *s, const sim_advice *a) {
  if (a->ooms == 0)
    return core_err_set(CORE_EINVAL,
        "%s: no point of the study can run: all %ld step configurations simulated time out (see `ddpsim simulate`'s "
        "status column); use faster networks or raise ddp.timeout_s",
        s->path, a->timeouts);
  char more[64] = "";
  if (a->timeouts)
    snprintf(more, sizeof more, " and %ld time out", a->timeouts);
  return core_err_set(CORE_EINVAL,
      "%s: no point of the study can run: of the %ld step configurations simulated, %ld do not fit in the GPUs' "
      "memory (%s, device.memory_GB = %.4g)%s (see `ddpsim simulate`'s mem_GB and status columns); use smaller "
      "batches, autocast, or GPUs with more memory",
      s->path, a->ooms + a->timeouts, a->ooms, s->profile->path, s->profile->memory_GB, more);
}

int sim_advice_rank(const sim_scenario *s, sim_advice *a) {
  const sim_objective *o = &s->objective;
  long *order = malloc(sizeof *order * (size_t)(a->n ? a->n : 1)), feasible = 0;
  if (!order)
    return core_err_set(CORE_ENOMEM, "out of memory ranking %ld points", a->n);
  sort_s = s;
  sort_a = a;
  for (long i = 0; i < a->n; i++) {
    sim_advised *x = &a->pts[i];
    order[i] = i;
    x->feasible =
        (!(o->deadline_h > 0) || t_of(x) <= o->deadline_h) && (!(o->budget_usd > 0) || c_of(x) <= o->budget_usd);
    feasible += x->feasible;
  }
  mark_front(a, order);
  int rc = 0;
  if (a->n == 0)
    rc = none_runs(s, a);
  else if (feasible == 0)
    rc = none_meets(s, a, order);
  if (rc == 0) {
    qsort(order, (size_t)a->n, sizeof *order, by_rank);
    for (long i = 0; i < a->n; i++)
      a->pts[order[i]].rank = i + 1;
    for (long i = 0; i < a->n; i++)
      if (a->baseline >= 0)
        reason(s, &a->pts[a->baseline], &a->pts[i]);
      else
        snprintf(a->pts[i].why, sizeof a->pts[i].why, "the scenario as given cannot run (%s)",
            strcmp(a->base_status, "oom") == 0 ? "it does not fit in the GPUs' memory" : "it times out");
  }
  free(order);
  return rc;
}

static const char *const head_cols[] = {"rank", "feasible", "pareto", "nodes", "gpus_per_node", "gpus", "network",
    "backend", "algorithm", "precision", "batch", "bucket_cap_mb", "overlap", "find_unused_parameters", "compression",
    "ckpt_mode", "ckpt_every_s", "spares", "step_s", "exposed_comm_s", "samples_per_s", "scaling_eff", "replications",
    "time_to_train_h", "time_to_train_h_lo", "time_to_train_h_hi", "goodput", "goodput_lo", "goodput_hi"};
static const char *const cost_cols[] = {"usd_per_hour", "cost_usd", "cost_usd_lo", "cost_usd_hi"};
static const char *const tail_cols[] = {"compute_h", "exposed_comm_h", "waste_ckpt_h", "waste_lost_h",
    "waste_restart_h", "failures", "unfinished", "bottleneck", "why"};
#define N_COLS(a) ((int)(sizeof a / sizeof *a))

static void write_row(core_csv *c, const sim_scenario *s, const sim_advised *x, int priced) {
  const sim_point_result *r = &x->r;
  const sim_point *p = &r->pt;
  const double *m = r->job.mean, *lo = r->job.lo, *hi = r->job.hi;
  char buf[64];
  core_csv_int(c, x->rank);
  core_csv_int(c, x->feasible);
  core_csv_int(c, x->pareto);
  core_csv_int(c, p->nodes);
  core_csv_int(c, p->per_node);
  core_csv_int(c, (long long)p->nodes * p->per_node);
  for (int d = SIM_DIM_NETWORK; d <= SIM_DIM_COMPRESSION; d++)
    if (d == SIM_DIM_FABRIC)
      continue; /* not a column of the advice */
    else if (d == SIM_DIM_OVERLAP || d == SIM_DIM_FIND_UNUSED)
      core_csv_int(c, d == SIM_DIM_OVERLAP ? p->overlap : p->find_unused);
    else
      core_csv_str(c, sim_summary_dim_value(s, p, (enum sim_dim)d, buf, sizeof buf));
  core_csv_str(c, sim_summary_dim_value(s, p, SIM_DIM_CKPT_MODE, buf, sizeof buf));
  core_csv_num(c, r->ckpt_every_s);
  core_csv_int(c, p->spares);
  const double step[] = {r->step_s, r->exposed_comm_s, r->samples_per_s, r->scaling_eff};
  for (int k = 0; k < 4; k++)
    core_csv_num(c, step[k]);
  core_csv_int(c, r->job.replications);
  const double job[] = {m[SIM_JOB_TIME_H], lo[SIM_JOB_TIME_H], hi[SIM_JOB_TIME_H], m[SIM_JOB_GOODPUT],
      lo[SIM_JOB_GOODPUT], hi[SIM_JOB_GOODPUT]};
  for (int k = 0; k < 6; k++)
    core_csv_num(c, job[k]);
  if (priced) {
    core_csv_num(c, r->usd_per_hour);
    for (int k = 0; k < 3; k++)
      core_csv_num(c, r->usd_per_hour * job[k]);
  }
  for (int k = 0; k < SIM_N_PARTS; k++)
    core_csv_num(c, x->parts_h[k]);
  core_csv_num(c, m[SIM_JOB_FAILURES]);
  core_csv_int(c, r->job.unfinished);
  core_csv_str(c, x->bottleneck >= 0 ? part_keys[x->bottleneck] : "");
  core_csv_str(c, x->why);
  core_csv_end_row(c);
}

/* Point positions in rank order. */
static long *rank_order(const sim_advice *a) {
  long *order = malloc(sizeof *order * (size_t)(a->n ? a->n : 1));
  for (long i = 0; order && i < a->n; i++)
    order[a->pts[i].rank - 1] = i;
  return order;
}

int sim_advice_write_csv(const sim_scenario *s, const sim_advice *a, const char *path) {
  int priced = s->prices.priced, rc;
  core_csv c;
  long *order = rank_order(a);
  if (!order)
    return core_err_set(CORE_ENOMEM, "out of memory writing %s", path);
  memset(&c, 0, sizeof c);
  if ((rc = core_afile_open(&c.a, path)) != 0) {
    free(order);
    return rc;
  }
  c.ncols = N_COLS(head_cols) + (priced ? N_COLS(cost_cols) : 0) + N_COLS(tail_cols);
  for (int i = 0; i < N_COLS(head_cols); i++)
    fprintf(c.a.f, "%s%s", i ? "," : "", head_cols[i]);
  for (int i = 0; priced && i < N_COLS(cost_cols); i++)
    fprintf(c.a.f, ",%s", cost_cols[i]);
  for (int i = 0; i < N_COLS(tail_cols); i++)
    fprintf(c.a.f, ",%s", tail_cols[i]);
  fputc('\n', c.a.f);
  for (long i = 0; i < a->n; i++)
    write_row(&c, s, &a->pts[order[i]], priced);
  free(order);
  return core_csv_commit(&c);
}

/* Knob columns of the table: what the study sweeps. */
static void print_row(const sim_scenario *s, const sim_advised *x, FILE *f) {
  char buf[64];
  fprintf(f, "%4ld%s ", x->rank, x->feasible ? " " : "!");
  for (int k = 0; k < N_KNOBS; k++)
    if (s->n[knob_dims[k]] > 1)
      fprintf(f, "%*.*s ",
          (int)strlen(sim_dim_column(s, knob_dims[k])) > 8 ? (int)strlen(sim_dim_column(s, knob_dims[k])) : 8, 24,
          sim_summary_dim_value(s, &x->r.pt, knob_dims[k], buf, sizeof buf));
  fprintf(f, "%9.1f [%7.1f, %7.1f] ", t_of(x), x->r.job.lo[SIM_JOB_TIME_H], x->r.job.hi[SIM_JOB_TIME_H]);
  if (s->prices.priced)
    fprintf(f, "%11.4g ", c_of(x));
  fprintf(f, "%7.4f %5s  %s\n", x->r.job.mean[SIM_JOB_GOODPUT], x->pareto ? "*" : "", x->why);
}

void sim_advice_print(const sim_scenario *s, const sim_advice *a, double wall_s, FILE *f) {
  char obj[256];
  fprintf(f, "%s: advise, %s", s->name, sim_objective_text(&s->objective, obj, sizeof obj));
  if (s->description[0])
    fprintf(f, " — %s", s->description);
  fprintf(f,
      "\nsimulated %ld of the %ld points of the study (%.3g%%), the step level of %ld of %ld configurations, in %.3g s",
      a->n, a->full_points, 100.0 * a->n / a->full_points, a->step_simulated, a->step_configs, wall_s);
  if (a->pruned_search)
    fprintf(f,
        "; pruned by their bounds: %ld of %ld hardware configurations before their step level, %ld job settings after "
        "it",
        a->groups_pruned, a->groups, a->job_pruned);
  if (a->groups_collapsed)
    fprintf(f,
        "; at 1 node the network carries nothing: its %ld configurations on other networks are collapsed into %s's",
        a->groups_collapsed, s->networks[a->net_one].name);
  if (a->timeouts)
    fprintf(f, "; %ld step configurations time out", a->timeouts);
  if (a->ooms)
    fprintf(f, "; %ld step configurations do not fit in the GPUs' memory (not advised)", a->ooms);
  fprintf(f, "\n%5s ", "rank");
  for (int k = 0; k < N_KNOBS; k++)
    if (s->n[knob_dims[k]] > 1)
      fprintf(f, "%8s ", sim_dim_column(s, knob_dims[k]));
  fprintf(f, "%9s %17s %s%7s %5s  %s\n", "ttt_h", "[95% CI]", s->prices.priced ? "   cost_usd " : "", "goodput",
      "front", "what it removes against the scenario as given");
  long *order = rank_order(a);
  for (long i = 0; order && i < a->n && i < s->objective.top; i++)
    print_row(s, &a->pts[order[i]], f);
  if (a->baseline >= 0 && a->pts[a->baseline].rank > s->objective.top)
    print_row(s, &a->pts[a->baseline], f);
  free(order);
}

#include "summary.h"

#include "sim/dims.h"
#include "sim/fabric.h"

#include <math.h>
#include <string.h>

void sim_summary_unfinished(const sim_point_result *r, char *buf, size_t n) {
  const sim_job_result *j = &r->job;
  buf[0] = '\0';
  if (!j->unfinished)
    return;
  int k = snprintf(buf, n,
      "%d of %d runs still running at the cap of %.6g h (%g x the failure-free time + 1 h): interrupted every %.3g h, "
      "each recovery %.3g h; their times are projected from their progress",
      j->unfinished, j->replications, j->cap_h, SIM_JOB_WALL_CAP_FACTOR, j->mtti_s / 3600.0,
      (r->detect_s + r->restart_s + r->load_s) / 3600.0);
  if (j->stalled && k > 0 && (size_t)k < n)
    snprintf(
        buf + k, n - (size_t)k, "; %d saved no progress at all, so their times are the cap, a lower bound", j->stalled);
}

const char *sim_summary_dim_value(const sim_scenario *s, const sim_point *p, enum sim_dim d, char *buf, size_t n) {
  switch (d) {
  case SIM_DIM_MODEL: snprintf(buf, n, "%s", p->model->name); break;
  case SIM_DIM_NETWORK: snprintf(buf, n, "%s", p->network->name); break;
  case SIM_DIM_FABRIC: snprintf(buf, n, "%s", p->fabric ? p->fabric->name : "none"); break;
  case SIM_DIM_BACKEND: snprintf(buf, n, "%s", sim_backend_name(p->backend)); break;
  case SIM_DIM_ALGORITHM:
    snprintf(buf, n, "%s", p->algorithm < 0 ? "auto" : sim_algo_name((enum sim_algo)p->algorithm));
    break;
  case SIM_DIM_PRECISION: snprintf(buf, n, "%s", sim_precision_name(p->precision)); break;
  case SIM_DIM_BATCH: snprintf(buf, n, "%d", p->batch); break;
  case SIM_DIM_BUCKET_CAP: snprintf(buf, n, "%g", p->bucket_cap_mb); break;
  case SIM_DIM_OVERLAP: snprintf(buf, n, "%s", p->overlap ? "on" : "off"); break;
  case SIM_DIM_FIND_UNUSED: snprintf(buf, n, "%s", p->find_unused ? "on" : "off"); break;
  case SIM_DIM_COMPRESSION: core_compression_name(&p->compression, buf, (int)n); break;
  case SIM_DIM_PER_NODE: snprintf(buf, n, "%d", p->per_node); break;
  case SIM_DIM_NODES: snprintf(buf, n, "%d", p->nodes); break;
  case SIM_DIM_FAIL_RATE: snprintf(buf, n, "%g", p->fail_rate_h); break;
  case SIM_DIM_WEIBULL_SHAPE: snprintf(buf, n, "%g", p->weibull_shape); break;
  case SIM_DIM_DETECT: snprintf(buf, n, "%g", p->detect_s); break;
  case SIM_DIM_MTTR: snprintf(buf, n, "%g", p->mttr_h); break;
  case SIM_DIM_RESTART: snprintf(buf, n, "%g", p->restart_s); break;
  case SIM_DIM_LOAD: snprintf(buf, n, "%g", p->load_s); break;
  case SIM_DIM_CKPT_COST: snprintf(buf, n, "%g", p->ckpt_cost_s); break;
  case SIM_DIM_CKPT_MODE:
    snprintf(buf, n, "%s", !s->job.has_checkpoints ? "none" : p->ckpt_async ? "async" : "sync");
    break;
  case SIM_DIM_SPARES: snprintf(buf, n, "%lld", p->spares); break;
  case SIM_DIM_CKPT_EVERY: snprintf(buf, n, "%g", p->ckpt_every); break;
  default: snprintf(buf, n, "?"); break;
  }
  return buf;
}

/* The dimensions with a column: those always shown (model, network,
 * backend; for a job level the checkpoint mode, spares and interval when it
 * has checkpoints) and every other one the study sweeps. The GPUs, always
 * shown, stand for nodes alone. */
static int shown(const sim_scenario *s, enum sim_dim d) {
  int job = s->job.present, ck = s->job.has_checkpoints;
  if (d == SIM_DIM_MODEL || d == SIM_DIM_NETWORK || d == SIM_DIM_BACKEND)
    return 1;
  if (ck && (d == SIM_DIM_CKPT_MODE || d == SIM_DIM_SPARES || d == SIM_DIM_CKPT_EVERY))
    return 1;
  if (d == SIM_DIM_NODES)
    return s->n[SIM_DIM_PER_NODE] > 1 && s->n[d] > 1;
  return s->n[d] > 1 && (d < SIM_N_STEP_DIMS || job);
}

/* Widths of the dimension columns: the longer of the name and the values. */
static void dim_widths(const sim_scenario *s, const sim_sweep *w, int width[SIM_N_DIMS]) {
  char buf[64];
  for (int d = 0; d < SIM_N_DIMS; d++) {
    width[d] = shown(s, (enum sim_dim)d) ? (int)strlen(sim_dim_column(s, (enum sim_dim)d)) : 0;
    for (long i = 0; i < w->n && width[d]; i++) {
      int len = (int)strlen(sim_summary_dim_value(s, &w->res[i].pt, (enum sim_dim)d, buf, sizeof buf));
      if (len > width[d])
        width[d] = len < 24 ? len : 24;
    }
  }
}

static void print_dim_header(const sim_scenario *s, const int width[SIM_N_DIMS], FILE *f) {
  for (int d = 0; d < SIM_N_DIMS; d++)
    if (width[d])
      fprintf(f, "%-*s ", width[d], sim_dim_column(s, (enum sim_dim)d));
}

static void print_dims(const sim_scenario *s, const sim_point *p, const int width[SIM_N_DIMS], FILE *f) {
  char buf[64];
  for (int d = 0; d < SIM_N_DIMS; d++)
    if (width[d])
      fprintf(f, "%-*.*s ", width[d], width[d], sim_summary_dim_value(s, p, (enum sim_dim)d, buf, sizeof buf));
}

static void print_title(const sim_scenario *s, const sim_sweep *w, FILE *f) {
  fprintf(f, "%s: %ld point%s", s->name, w->n, w->n == 1 ? "" : "s");
  if (s->job.present)
    fprintf(f, ", %d replications each to start with", s->job.replications);
  if (s->description[0])
    fprintf(f, " — %s", s->description);
  fputc('\n', f);
}

/* The best interval of the group that ends at point last, in the table's
 * unit: with checkpoint.every_steps, the best point's steps and its
 * seconds. */
static void print_best_every(const sim_scenario *s, const sim_sweep *w, long last, FILE *f) {
  const sim_point_result *r = &w->res[last];
  for (long i = last; s->job.every_in_steps && i >= 0 && w->res[i].pt.group == r->pt.group; i--)
    if (w->res[i].ckpt_every_s == r->best_every_s) {
      fprintf(f, "%g steps (%.0f s)", w->res[i].pt.ckpt_every, r->best_every_s);
      return;
    }
  fprintf(f, "%.0f s", r->best_every_s);
}

/* The line under a group of intervals: the best, its interval, its ties. */
static void print_best(const sim_scenario *s, const sim_sweep *w, long last, FILE *f) {
  const sim_point_result *r = &w->res[last];
  if (isnan(r->best_every_s)) {
    fprintf(f, "  -> no best interval: no point of the group can run\n");
    return;
  }
  fprintf(f, "  -> best interval ");
  print_best_every(s, w, last, f);
  fprintf(f, ", goodput [%.4f, %.4f] (95%%, %d replications); ", r->best_goodput_lo, r->best_goodput_hi,
      r->job.replications);
  if (r->ties[0])
    fprintf(f, "tied with %s s; ", r->ties);
  else
    fprintf(f, "no tie; ");
  if (!isfinite(r->job.mtti_s)) {
    fprintf(f, "no interruptions, so no Young or Daly interval (checkpoint %.2f s)\n", r->ckpt_block_s);
    return;
  }
  fprintf(f, "Young %.0f s, Daly %.0f s (checkpoint %.2f s, interrupt every %.2f h)\n", r->job.young_s, r->job.daly_s,
      r->ckpt_block_s, r->job.mtti_s / 3600.0);
}

/* Under a table whose points did not all run, when more than the three
 * notes printed: how many of each in all. */
static void print_overflow(int timeouts, int ooms, FILE *f) {
  if (timeouts)
    fprintf(f, "(%d point%s would time out; see the status column)\n", timeouts, timeouts == 1 ? "" : "s");
  if (ooms)
    fprintf(f, "(%d point%s would not fit in the GPUs' memory; see the mem_GB and status columns)\n", ooms,
        ooms == 1 ? "" : "s");
}

/* A point's run: goodput, time to train, failures and waste, its cost. */
static void print_run(const sim_point_result *r, int priced, FILE *f) {
  const double *m = r->job.mean;
  fprintf(f, "%6d  %6.4f [%6.4f, %6.4f] %8.1f %8.1f %8.1f %8.1f %8.1f", r->pt.nodes * r->pt.per_node,
      m[SIM_JOB_GOODPUT], r->job.lo[SIM_JOB_GOODPUT], r->job.hi[SIM_JOB_GOODPUT], m[SIM_JOB_TIME_H],
      m[SIM_JOB_FAILURES], m[SIM_JOB_WASTE_CKPT_H], m[SIM_JOB_WASTE_LOST_H], m[SIM_JOB_WASTE_RESTART_H]);
  if (priced)
    fprintf(f, " %10.4g", r->usd_per_hour * m[SIM_JOB_TIME_H]);
  if (r->job.unfinished)
    fprintf(f, "  (%d of %d unfinished)", r->job.unfinished, r->job.replications);
  fputc('\n', f);
}

/* A point that cannot run (status timeout or oom) has no run: its row
 * says so. */
static void print_no_run(const sim_point_result *r, FILE *f) {
  fprintf(f, "%6d  no run (status %s): %s\n", r->pt.nodes * r->pt.per_node, r->status,
      strcmp(r->status, "oom") == 0 ? "it does not fit in the GPUs' memory"
                                    : "a bucket's allreduce outlasts the timeout");
}

static void print_job_summary(const sim_scenario *s, const sim_sweep *w, FILE *f) {
  int width[SIM_N_DIMS], priced = s->prices.priced, unfinished = 0, timeouts = 0, ooms = 0, notes = 0;
  long last_note = -1;
  char why[512];
  dim_widths(s, w, width);
  print_dim_header(s, width, f);
  fprintf(f, "%6s %22s %8s %8s %8s %8s %8s%s\n", "gpus", "goodput [95% CI]", "ttt_h", "fails", "ckpt_h", "lost_h",
      "down_h", priced ? "   cost_usd" : "");
  for (long i = 0; i < w->n; i++) {
    const sim_point_result *r = &w->res[i];
    print_dims(s, &r->pt, width, f);
    if (!r->has_job) {
      print_no_run(r, f);
      if (r->pt.step_index != last_note && notes++ < 3)
        fprintf(f, "  -> %s\n", r->note); /* once per step-level configuration, whose note it is */
      last_note = r->pt.step_index;
      timeouts += strcmp(r->status, "timeout") == 0;
      ooms += strcmp(r->status, "oom") == 0;
    } else {
      print_run(r, priced, f);
      if (r->job.unfinished && unfinished++ < 3) {
        sim_summary_unfinished(r, why, sizeof why);
        fprintf(f, "  -> %s\n", why);
      }
    }
    if (s->job.has_checkpoints && (i + 1 == w->n || w->res[i + 1].pt.group != r->pt.group))
      print_best(s, w, i, f);
  }
  if (notes > 3)
    print_overflow(timeouts, ooms, f);
}

static void print_step_summary(const sim_scenario *s, const sim_sweep *w, FILE *f) {
  int width[SIM_N_DIMS], priced = s->prices.priced, timeouts = 0, ooms = 0;
  dim_widths(s, w, width);
  print_dim_header(s, width, f);
  fprintf(f, "%6s %10s %10s %10s %12s %6s %s %s\n", "gpus", "step_ms", "compute_ms", "exposed_ms", "samples/s", "eff",
      priced ? "   usd/Msample" : "", "status");
  for (long i = 0; i < w->n; i++) {
    const sim_point_result *r = &w->res[i];
    print_dims(s, &r->pt, width, f);
    fprintf(f, "%6d %10.2f %10.2f %10.2f %12.1f %5.1f%% ", r->pt.nodes * r->pt.per_node, r->step_s * 1e3,
        r->compute_s * 1e3, r->exposed_comm_s * 1e3, r->samples_per_s, r->scaling_eff * 100);
    if (priced)
      fprintf(f, "%14.4g ", r->usd_per_hour / (r->samples_per_s * 3600.0) * 1e6);
    fprintf(f, " %s\n", r->status);
    if (strcmp(r->status, "ok") != 0 && timeouts + ooms < 3)
      fprintf(f, "  -> %s\n", r->note);
    timeouts += strcmp(r->status, "timeout") == 0;
    ooms += strcmp(r->status, "oom") == 0;
  }
  if (timeouts + ooms > 3)
    print_overflow(timeouts, ooms, f);
}

void sim_summary_print(const sim_scenario *s, const sim_sweep *w, FILE *f) {
  print_title(s, w, f);
  if (s->job.present)
    print_job_summary(s, w, f);
  else
    print_step_summary(s, w, f);
}

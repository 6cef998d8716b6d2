#include "bounds.h"

#include "sim/dims.h"
#include "sim/job.h"
#include "sim/predict.h"

#include "core/cfg.h"
#include "core/err.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *where(const config_setting_t *k, char *buf) { return core_cfg_where(k, buf, 4200); }

/* "training.batch 300 x cluster.nodes 100": every sweep of more than one
 * value, in the scenario's dimension order. */
static void sweep_factors(const sim_scenario *s, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = '\0';
  for (int d = 0; d < SIM_N_DIMS && len < n; d++)
    if (s->n[d] > 1) {
      int k = snprintf(buf + len, n - len, "%s%s %d", len ? " x " : "", sim_dim_path(s, (enum sim_dim)d, 0), s->n[d]);
      len += k > 0 ? (size_t)k : 0;
    }
}

/* "13 GB", "170 kB": bytes for a person. */
static void human_bytes(double b, char *buf, size_t n) {
  if (b >= 1e9)
    snprintf(buf, n, "%.2g GB", b / 1e9);
  else if (b >= 1e6)
    snprintf(buf, n, "%.2g MB", b / 1e6);
  else
    snprintf(buf, n, "%.2g kB", b / 1e3);
}

int sim_bounds_points(const sim_scenario *s, const config_setting_t *root) {
  double total = 1; /* in double: a product of arrays may pass any integer type */
  int widest = 0;
  for (int d = 0; d < SIM_N_DIMS; d++) {
    total *= s->n[d];
    if (s->n[d] > s->n[widest])
      widest = d;
  }
  if (total <= s->max_points)
    return 0;
  char factors[1024], wh[4200], given[4300] = "the default", mem[64], count[64];
  const config_setting_t *k = config_lookup(&s->cfg.cfg, sim_dim_path(s, (enum sim_dim)widest, 0));
  sweep_factors(s, factors, sizeof factors);
  human_bytes(total * (double)sizeof(sim_point_result), mem, sizeof mem);
  snprintf(count, sizeof count, total < 1e15 ? "%.0f" : "%.3g", total);
  if (s->max_points_key)
    snprintf(given, sizeof given, "%s", where(s->max_points_key, wh));
  return core_err_set(CORE_EINVAL,
      "%s: this study has %s points (%s), over simulation.max_points = %.15g (%s); the whole study's results "
      "alone (unsharded, or once merged) would take about %s of memory. Check for an array you did not mean, or raise "
      "simulation.max_points (it bounds the whole "
      "study: --shard splits the work, not the points)",
      where(k ? k : root, wh), count, factors, s->max_points, given, mem);
}

/* failures.at_steps, when the failures are scheduled. */
static const config_setting_t *schedule_key(const sim_scenario *s) {
  const sim_job_cfg *j = &s->job;
  if (!j->has_failures || j->fail_dist != SIM_FAIL_SCHEDULED || j->n_at_steps == 0)
    return NULL;
  return config_lookup(&s->cfg.cfg, "failures.at_steps");
}

/* A scheduled failure at step a comes in the middle of that step, after
 * (a + 0.5) steps of progress (sim/job.c), and the job ends at its total
 * steps first when they are equal: the last one happens only when it is
 * below total - 0.5. */
static double last_failure(const sim_job_cfg *j) { return j->at_steps[j->n_at_steps - 1]; }
static int past_job(const sim_job_cfg *j, double total) { return !(last_failure(j) + 0.5 < total); }

/* What to do about a job of total steps that ends before its last failure:
 * at_steps below total - 0.5, or, when not even step 0's middle falls within
 * the job, a longer job. longer: what makes the job longer. */
static void what_to_do(double total, const char *longer, char *buf, size_t n) {
  if (total > 0.5)
    snprintf(buf, n, "give at_steps below %.10g (the job's steps - 0.5), or %s", total - 0.5, longer);
  else
    snprintf(buf, n, "the job ends before the middle of its first step, so no scheduled failure fits in it: give %s",
        longer);
}

/* The largest value of a sweep of integers. */
static long long largest(const long long *v, int n) {
  long long m = v[0];
  for (int i = 1; i < n; i++)
    m = v[i] > m ? v[i] : m;
  return m;
}

#define MIDDLE "a scheduled failure comes in the middle of its step, at_steps + 0.5 steps into the job"

int sim_bounds_schedule(const sim_scenario *s, const config_setting_t *root) {
  const sim_job_cfg *j = &s->job;
  const config_setting_t *k = schedule_key(s);
  char w[4200], todo[256];
  (void)root;
  if (!k)
    return 0;
  if (j->steps > 0 && past_job(j, j->steps)) {
    what_to_do(j->steps, "a longer job", todo, sizeof todo);
    return core_err_set(CORE_EINVAL,
        "%s: at_steps %.15g is past the job's end: job.steps = %.15g, and " MIDDLE ", so that failure would never "
        "happen; %s",
        where(k, w), last_failure(j), j->steps, todo);
  }
  if (!(j->samples > 0))
    return 0;
  long long b = largest(s->batch, s->n[SIM_DIM_BATCH]), g = largest(s->per_node, s->n[SIM_DIM_PER_NODE]),
            n = largest(s->nodes, s->n[SIM_DIM_NODES]);
  double steps = ceil(j->samples / ((double)n * g * b));
  if (!past_job(j, steps))
    return 0;
  what_to_do(steps, "more samples", todo, sizeof todo);
  return core_err_set(CORE_EINVAL,
      "%s: at_steps %.15g is past the job's end at %lld nodes x %lld devices x batch %lld: job.samples = %.15g is "
      "%.15g steps there, and " MIDDLE ", so that failure would never happen; %s",
      where(k, w), last_failure(j), n, g, b, j->samples, steps, todo);
}

int sim_bounds_schedule_point(const sim_scenario *s, const sim_point *p, double total_steps, double step_s) {
  const sim_job_cfg *j = &s->job;
  const config_setting_t *k = schedule_key(s);
  char w[4200], length[256], name[512], todo[256];
  if (!k || !past_job(j, total_steps))
    return 0;
  if (j->hours > 0)
    snprintf(length, sizeof length, "job.hours = %.15g at its step time of %.4g s is %.6g steps", j->hours, step_s,
        total_steps);
  else
    snprintf(length, sizeof length, "its job is %.6g steps", total_steps);
  sim_point_name(p, name, sizeof name);
  what_to_do(total_steps, "a longer job", todo, sizeof todo);
  return core_err_set(CORE_EINVAL,
      "%s: at_steps %.15g is past the job's end at %s: %s, and " MIDDLE ", so that failure would never happen; %s",
      where(k, w), last_failure(j), name, length, todo);
}

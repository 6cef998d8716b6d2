#include "bounds.h"

#include "sim/job.h"
#include "sim/predict.h"

#include "core/cfg.h"
#include "core/err.h"

#include <stdio.h>
#include <string.h>

static const char *where(const config_setting_t *k, char *buf) { return core_cfg_where(k, buf, 4200); }

/* The dimension's key as the scenario spells it, with its group. */
static const char *dim_path(const sim_scenario *s, int d) {
  static const char *const paths[SIM_N_DIMS] = {"model", "networks", "fabric", "ddp.backend", "ddp.algorithm",
      "training.precision", "training.batch", "ddp.bucket_cap_mb", "ddp.overlap", "ddp.find_unused_parameters",
      "ddp.compression", "cluster.devices_per_node", "cluster.nodes", "failures.mtbf_h", "failures.weibull_shape",
      "failures.detect_s", "failures.mttr_h", "failures.restart_s", "failures.load_s", "checkpoint.cost_s",
      "checkpoint.mode", "failures.spares", "checkpoint.every_s"};
  if (d == SIM_DIM_FAIL_RATE && s->job.fail_dist == SIM_FAIL_WEIBULL)
    return "failures.weibull_scale_h";
  if (d == SIM_DIM_CKPT_EVERY && s->job.every_in_steps)
    return "checkpoint.every_steps";
  return paths[d];
}

/* "training.batch 300 x cluster.nodes 100": every sweep of more than one
 * value, in the scenario's dimension order. */
static void sweep_factors(const sim_scenario *s, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = '\0';
  for (int d = 0; d < SIM_N_DIMS && len < n; d++)
    if (s->n[d] > 1) {
      int k = snprintf(buf + len, n - len, "%s%s %d", len ? " x " : "", dim_path(s, d), s->n[d]);
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
  const config_setting_t *k = config_lookup(&s->cfg.cfg, dim_path(s, widest));
  sweep_factors(s, factors, sizeof factors);
  human_bytes(total * (double)sizeof(sim_point_result), mem, sizeof mem);
  snprintf(count, sizeof count, total < 1e15 ? "%.0f" : "%.3g", total);
  if (s->max_points_key)
    snprintf(given, sizeof given, "%s", where(s->max_points_key, wh));
  return core_err_set(CORE_EINVAL,
      "%s: this study has %s points (%s), over simulation.max_points = %.15g (%s); their results alone would take "
      "about %s of memory. Check for an array you did not mean, or raise simulation.max_points (it bounds the whole "
      "study: --shard splits the work, not the points)",
      where(k ? k : root, wh), count, factors, s->max_points, given, mem);
}

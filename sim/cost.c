#include "cost.h"

#include "core/cfg.h"
#include "core/err.h"

#include <stdio.h>
#include <string.h>

/* cost = { gpu_hour_usd | node_hour_usd; storage_hour_usd;
 * storage_GB_month_usd; checkpoints_kept; } */
int sim_cost_parse(const config_setting_t *root, const core_profile *pr, sim_prices *c) {
  static const char *const keys[] = {
      "gpu_hour_usd", "node_hour_usd", "storage_hour_usd", "storage_GB_month_usd", "checkpoints_kept", NULL};
  char w[4200];
  const config_setting_t *g;
  long long kept;
  int rc;
  memset(c, 0, sizeof *c);
  c->ckpt_kept = 2;
  if ((rc = core_cfg_group(root, "cost", 0, &g)) != 0)
    return rc;
  c->group = g;
  if (g && ((rc = core_cfg_check_keys(g, keys, "cost")) != 0 ||
               (rc = core_cfg_double(g, "gpu_hour_usd", 0, 0, 0, 1e9, &c->gpu_hour_usd)) != 0 ||
               (rc = core_cfg_double(g, "node_hour_usd", 0, 0, 0, 1e9, &c->node_hour_usd)) != 0 ||
               (rc = core_cfg_double(g, "storage_hour_usd", 0, 0, 0, 1e9, &c->storage_hour_usd)) != 0 ||
               (rc = core_cfg_double(g, "storage_GB_month_usd", 0, 0, 0, 1e9, &c->storage_GB_month_usd)) != 0 ||
               (rc = core_cfg_int(g, "checkpoints_kept", 0, 2, 1, 1000000, &kept)) != 0))
    return rc;
  c->ckpt_kept = (int)kept;
  int gpu = g && config_setting_get_member(g, "gpu_hour_usd"),
      node = g && config_setting_get_member(g, "node_hour_usd");
  if (gpu && node)
    return core_err_set(CORE_EINVAL,
        "%s: give the price of compute once, per GPU-hour (gpu_hour_usd) or per node-hour (node_hour_usd), not both",
        core_cfg_where(config_setting_get_member(g, "node_hour_usd"), w, sizeof w));
  if (gpu || node) {
    snprintf(c->source, sizeof c->source, "cost.%s", gpu ? "gpu_hour_usd" : "node_hour_usd");
  } else if (pr->price_gpu_hour_usd > 0 || pr->price_node_hour_usd > 0) {
    c->gpu_hour_usd = pr->price_gpu_hour_usd;
    c->node_hour_usd = pr->price_node_hour_usd;
    snprintf(c->source, sizeof c->source, "the profile's price.%s",
        pr->price_gpu_hour_usd > 0 ? "gpu_hour_usd" : "node_hour_usd");
  } else if (g) {
    return core_err_set(CORE_EINVAL,
        "%s: cost needs the price of compute: add gpu_hour_usd or node_hour_usd here, or price = { gpu_hour_usd = ...; "
        "} to profile '%s'",
        core_cfg_where(g, w, sizeof w), pr->path);
  }
  c->priced = gpu || node || pr->price_gpu_hour_usd > 0 || pr->price_node_hour_usd > 0;
  return 0;
}

double sim_cost_per_hour(
    const sim_prices *c, double net_node_hour_usd, int nodes, int per_node, long long spares, double ckpt_bytes) {
  double node = c->node_hour_usd > 0 ? c->node_hour_usd : c->gpu_hour_usd * per_node;
  double held = (double)nodes + (double)spares;
  double capacity = ckpt_bytes / 1e9 * c->ckpt_kept * c->storage_GB_month_usd / SIM_HOURS_PER_MONTH;
  return held * (node + net_node_hour_usd) + c->storage_hour_usd + capacity;
}

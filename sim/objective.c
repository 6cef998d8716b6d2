#include "objective.h"

#include "core/cfg.h"
#include "core/err.h"

#include <stdio.h>
#include <string.h>

static const char *const col_names[SIM_OBJ_N] = {"time_to_train_h", "cost_usd", "usd_per_hour", "goodput", "step_s",
    "samples_per_s", "scaling_eff", "exposed_comm_s", "waste_ckpt_h", "waste_lost_h", "waste_restart_h"};

static int col_of(const char *name) {
  for (int i = 0; i < SIM_OBJ_N; i++)
    if (!strcmp(col_names[i], name))
      return i;
  return -1;
}

/* Every column but the step level's and the price per hour needs the job
 * level; the cost ones need prices. */
static int needs_job(int c) {
  return c != SIM_OBJ_STEP_S && c != SIM_OBJ_SAMPLES_PER_S && c != SIM_OBJ_SCALING_EFF && c != SIM_OBJ_EXPOSED_COMM_S &&
         c != SIM_OBJ_USD_PER_HOUR;
}
static int needs_price(int c) { return c == SIM_OBJ_COST_USD || c == SIM_OBJ_USD_PER_HOUR; }

/* The column `name` that key asks for (the key's own value, or the column a
 * deadline or budget bounds): its index, or CORE_EINVAL. */
static int check_column(const config_setting_t *key, const char *name, int has_job, int priced) {
  char w[4200], list[512] = "", what[128];
  int c = col_of(name);
  core_cfg_where(key, w, sizeof w);
  if (config_setting_type(key) == CONFIG_TYPE_STRING)
    snprintf(what, sizeof what, "advise.%s = \"%s\"", config_setting_name(key), name);
  else
    snprintf(what, sizeof what, "advise.%s (a bound on %s)", config_setting_name(key), name);
  if (c < 0) {
    for (int i = 0; i < SIM_OBJ_N; i++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", col_names[i]);
    return core_err_set(CORE_EINVAL, "%s: advise.%s names '%s', which is not a column of the advice; choose one of %s",
        w, config_setting_name(key), name, list);
  }
  if (needs_price(c) && !priced)
    return core_err_set(CORE_EINVAL,
        "%s: %s needs prices, and the study has none: add cost = { gpu_hour_usd = ...; } (or node_hour_usd) to the "
        "scenario, or price = { ... } to its profile",
        w, what);
  if (needs_job(c) && !has_job)
    return core_err_set(CORE_EINVAL,
        "%s: %s needs the run's length: add job = { samples = N; } (the same work whatever the cluster)", w, what);
  return c;
}

int sim_objective_parse(const config_setting_t *root, int has_job, int priced, sim_objective *o) {
  static const char *const keys[] = {"minimize", "maximize", "deadline_h", "budget_usd", "top", NULL};
  char w[4200];
  const config_setting_t *g;
  const char *name;
  long long top;
  int rc;
  memset(o, 0, sizeof *o);
  o->col = SIM_OBJ_TIME_H;
  o->top = 10;
  if ((rc = core_cfg_group(root, "advise", 0, &g)) != 0 || !g)
    return rc;
  const config_setting_t *mn = config_setting_get_member(g, "minimize"), *mx = config_setting_get_member(g, "maximize");
  if ((rc = core_cfg_check_keys(g, keys, "advise")) != 0)
    return rc;
  if (mn && mx)
    return core_err_set(
        CORE_EINVAL, "%s: give one of advise.minimize and advise.maximize", core_cfg_where(mx, w, sizeof w));
  if (mn || mx) {
    o->key = mn ? mn : mx;
    o->maximize = mx != NULL;
    if ((rc = core_cfg_string(g, mn ? "minimize" : "maximize", 1, NULL, NULL, &name)) != 0 ||
        (rc = check_column(o->key, name, has_job, priced)) < 0)
      return rc;
    o->col = (enum sim_obj_col)rc;
  }
  if ((rc = core_cfg_double(g, "deadline_h", 0, 0, 1e-6, 1e9, &o->deadline_h)) != 0 ||
      (rc = core_cfg_double(g, "budget_usd", 0, 0, 1e-6, 1e15, &o->budget_usd)) != 0 ||
      (rc = core_cfg_int(g, "top", 0, 10, 1, 1000, &top)) != 0)
    return rc;
  o->top = (int)top;
  o->deadline_key = config_setting_get_member(g, "deadline_h");
  o->budget_key = config_setting_get_member(g, "budget_usd");
  if (o->deadline_key && (rc = check_column(o->deadline_key, "time_to_train_h", has_job, priced)) < 0)
    return rc;
  if (o->budget_key && (rc = check_column(o->budget_key, "cost_usd", has_job, priced)) < 0)
    return rc;
  return 0;
}

const char *sim_objective_text(const sim_objective *o, char *buf, int n) {
  int k = snprintf(buf, (size_t)n, "%s %s", o->maximize ? "maximize" : "minimize", col_names[o->col]);
  if (o->deadline_h > 0 && k < n)
    k += snprintf(buf + k, (size_t)(n - k), " within %g h", o->deadline_h);
  if (o->budget_usd > 0 && k < n)
    snprintf(buf + k, (size_t)(n - k), "%s %.6g USD", o->deadline_h > 0 ? " and" : " within", o->budget_usd);
  return buf;
}

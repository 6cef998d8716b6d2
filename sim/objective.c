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
    snprintf(what, sizeof what, "advise.%s = \"%s\"", config_setting_name(key), config_setting_get_string(key));
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

/* advise.objective, the short form: "time" or "cost", minimized; with a
 * deadline or a budget it is cost under a deadline or time under a budget. */
static int objective_word(const config_setting_t *g, const config_setting_t *key, int has_job, int priced) {
  char w[4200];
  const char *word;
  int rc;
  if ((rc = core_cfg_string(g, "objective", 1, NULL, NULL, &word)) != 0)
    return rc;
  if (strcmp(word, "time") && strcmp(word, "cost"))
    return core_err_set(CORE_EINVAL,
        "%s: advise.objective = \"%s\" is not an objective; write \"time\" (time to train) or \"cost\", or name any "
        "column with advise.minimize or advise.maximize",
        core_cfg_where(key, w, sizeof w), word);
  return check_column(key, word[0] == 't' ? "time_to_train_h" : "cost_usd", has_job, priced);
}

/* The one of objective, minimize and maximize the group gives (NULL for
 * none); *how is its name. Two of them are an error. */
static int direction_key(const config_setting_t *g, const config_setting_t **key, const char **how) {
  static const char *const names[] = {"objective", "minimize", "maximize"};
  char w[4200];
  *key = NULL;
  for (int i = 0; i < 3; i++) {
    const config_setting_t *k = config_setting_get_member(g, names[i]);
    if (k && *key)
      return core_err_set(CORE_EINVAL, "%s: give one of advise.objective, advise.minimize and advise.maximize",
          core_cfg_where(k, w, sizeof w));
    if (k) {
      *key = k;
      *how = names[i];
    }
  }
  return 0;
}

int sim_objective_parse(const config_setting_t *root, int has_job, int priced, sim_objective *o) {
  static const char *const keys[] = {"objective", "minimize", "maximize", "deadline_h", "budget_usd", "top", NULL};
  const config_setting_t *g;
  const char *name, *how = "";
  long long top;
  int rc = 0;
  memset(o, 0, sizeof *o);
  o->col = SIM_OBJ_TIME_H;
  o->top = 10;
  if ((rc = core_cfg_group(root, "advise", 0, &g)) != 0 || !g)
    return rc;
  if ((rc = core_cfg_check_keys(g, keys, "advise")) != 0 || (rc = direction_key(g, &o->key, &how)) != 0)
    return rc;
  if (o->key && !strcmp(how, "objective"))
    rc = objective_word(g, o->key, has_job, priced);
  else if (o->key && (rc = core_cfg_string(g, how, 1, NULL, NULL, &name)) == 0)
    rc = check_column(o->key, name, has_job, priced);
  if (rc < 0)
    return rc;
  if (o->key) {
    o->col = (enum sim_obj_col)rc;
    o->maximize = !strcmp(how, "maximize");
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

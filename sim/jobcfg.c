#include "jobcfg.h"

#include "sim/job.h"

#include "core/cfg.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The order of the job dimensions in n_dims. */
enum { D_RATE, D_SHAPE, D_DETECT, D_MTTR, D_RESTART, D_LOAD, D_COST, D_MODE, D_SPARES, D_EVERY, N_D };

static const char *where(const config_setting_t *s, char *buf) { return core_cfg_where(s, buf, 4200); }

void sim_jobcfg_free(sim_job_cfg *j) {
  double **arrays[] = {
      &j->rate_h, &j->shape, &j->detect_s, &j->mttr_h, &j->restart_s, &j->load_s, &j->cost_s, &j->every, &j->at_steps};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) {
    free(*arrays[i]);
    *arrays[i] = NULL;
  }
  free(j->spares);
  free(j->async);
  j->spares = NULL;
  j->async = NULL;
}

/* One value per dimension: what a scenario without the key sweeps. */
static int one_value(double **v, double def, int *n) {
  free(*v);
  *v = malloc(sizeof **v);
  if (!*v)
    return core_err_set(CORE_ENOMEM, "out of memory");
  **v = def;
  *n = 1;
  return 0;
}

static int defaults(sim_job_cfg *j, int n[N_D]) {
  int rc = 0;
  double **d[] = {&j->rate_h, &j->shape, &j->detect_s, &j->mttr_h, &j->restart_s, &j->load_s, &j->cost_s, &j->every};
  const double def[] = {0, 0, -1, 24, -1, -1, -1, 0};
  const int dim[] = {D_RATE, D_SHAPE, D_DETECT, D_MTTR, D_RESTART, D_LOAD, D_COST, D_EVERY};
  for (size_t i = 0; i < sizeof d / sizeof *d && !rc; i++)
    rc = one_value(d[i], def[i], &n[dim[i]]);
  j->spares = calloc(1, sizeof *j->spares);
  j->async = calloc(1, sizeof *j->async);
  if (rc || !j->spares || !j->async)
    return rc ? rc : core_err_set(CORE_ENOMEM, "out of memory");
  n[D_SPARES] = n[D_MODE] = 1;
  return 0;
}

/* The key of the failures group that sets how often they come. */
static const config_setting_t *rate_key(const config_setting_t *fg) {
  static const char *const keys[] = {"mtbf_h", "weibull_scale_h", "at_steps", NULL};
  for (const char *const *k = keys; *k; k++)
    if (config_setting_get_member(fg, *k))
      return config_setting_get_member(fg, *k);
  return fg;
}

/* job = { steps | hours | samples }: exactly one. */
static int parse_length(const config_setting_t *jg, sim_job_cfg *j) {
  static const char *const job_keys[] = {"steps", "hours", "samples", NULL};
  char w[4200];
  int rc;
  if ((rc = core_cfg_check_keys(jg, job_keys, "job")) != 0 ||
      (rc = core_cfg_double(jg, "steps", 0, 0, 1, 1e15, &j->steps)) != 0 ||
      (rc = core_cfg_double(jg, "hours", 0, 0, 1e-6, 1e7, &j->hours)) != 0 ||
      (rc = core_cfg_double(jg, "samples", 0, 0, 1, 1e18, &j->samples)) != 0)
    return rc;
  if ((j->steps > 0) + (j->hours > 0) + (j->samples > 0) != 1)
    return core_err_set(CORE_EINVAL,
        "%s: give exactly one of job.steps, job.hours (failure-free training time) and job.samples (the same work "
        "whatever the cluster)",
        where(jg, w));
  return 0;
}

/* checkpoint = { every_s | every_steps; mode; sharded; state_GB;
 * storage_GBps; snapshot_GBps; cost_s; } */
static int parse_checkpoint(const config_setting_t *cg, sim_job_cfg *j, int n[N_D]) {
  static const char *const ck_keys[] = {
      "every_s", "every_steps", "mode", "sharded", "state_GB", "storage_GBps", "snapshot_GBps", "cost_s", NULL};
  static const char *const modes[] = {"sync", "async", NULL};
  char w[4200];
  const char **strs = NULL;
  int rc, m;
  if ((rc = core_cfg_check_keys(cg, ck_keys, "checkpoint")) != 0)
    return rc;
  int has_s = config_setting_get_member(cg, "every_s") != NULL,
      has_steps = config_setting_get_member(cg, "every_steps") != NULL;
  if (has_s == has_steps)
    return core_err_set(
        CORE_EINVAL, "%s: give exactly one of checkpoint.every_s and checkpoint.every_steps", where(cg, w));
  free(j->every);
  j->every = NULL;
  j->every_in_steps = has_steps;
  free(j->cost_s);
  j->cost_s = NULL;
  if ((rc = core_cfg_double_list(
           cg, has_s ? "every_s" : "every_steps", 1, 0, has_s ? 1e-3 : 1, 1e12, &j->every, &n[D_EVERY])) != 0 ||
      (rc = core_cfg_double_list(cg, "cost_s", 0, -1, 0, 1e7, &j->cost_s, &n[D_COST])) != 0 ||
      (rc = core_cfg_string_list(cg, "mode", 0, "sync", modes, &strs, &m)) != 0)
    return rc;
  free(j->async);
  j->async = malloc(sizeof *j->async * (size_t)m);
  if (!j->async) {
    free(strs);
    return core_err_set(CORE_ENOMEM, "out of memory");
  }
  for (int i = 0; i < m; i++)
    j->async[i] = strcmp(strs[i], "async") == 0;
  free(strs);
  n[D_MODE] = m;
  if ((rc = core_cfg_bool(cg, "sharded", 0, 0, &j->sharded)) != 0 ||
      (rc = core_cfg_double(cg, "state_GB", 0, 0, 1e-9, 1e12, &j->state_GB)) != 0 ||
      (rc = core_cfg_double(cg, "storage_GBps", 0, 0, 0, 1e7, &j->storage_GBps)) != 0 ||
      (rc = core_cfg_double(cg, "snapshot_GBps", 0, 0, 0, 1e7, &j->snapshot_GBps)) != 0)
    return rc;
  return 0;
}

/* distribution and the numbers that go with it. */
static int parse_distribution(const config_setting_t *fg, sim_job_cfg *j, int n[N_D]) {
  static const char *const dists[] = {"none", "exponential", "weibull", "scheduled", NULL};
  char w[4200];
  const char *str;
  int rc;
  if ((rc = core_cfg_string(fg, "distribution", 0, "exponential", dists, &str)) != 0)
    return rc;
  j->fail_dist = !strcmp(str, "exponential") ? SIM_FAIL_EXPONENTIAL
                 : !strcmp(str, "weibull")   ? SIM_FAIL_WEIBULL
                 : !strcmp(str, "scheduled") ? SIM_FAIL_SCHEDULED
                                             : SIM_FAIL_NONE;
  if (j->fail_dist == SIM_FAIL_SCHEDULED) {
    if ((rc = core_cfg_double_list(fg, "at_steps", 1, 0, 0, 1e15, &j->at_steps, &j->n_at_steps)) != 0)
      return rc;
    for (int i = 1; i < j->n_at_steps; i++)
      if (!(j->at_steps[i] > j->at_steps[i - 1]))
        return core_err_set(CORE_EINVAL,
            "%s: at_steps must be strictly ascending (each failure happens after a restart from an earlier checkpoint)",
            where(config_setting_get_member(fg, "at_steps"), w));
  } else if (config_setting_get_member(fg, "at_steps")) {
    return core_err_set(CORE_EINVAL, "%s: at_steps needs distribution = \"scheduled\"",
        where(config_setting_get_member(fg, "at_steps"), w));
  }
  free(j->rate_h);
  j->rate_h = NULL;
  if (j->fail_dist == SIM_FAIL_EXPONENTIAL) {
    if ((rc = core_cfg_double_list(fg, "mtbf_h", 1, 0, 1e-3, 1e12, &j->rate_h, &n[D_RATE])) != 0)
      return rc;
    if (config_setting_get_member(fg, "weibull_scale_h") || config_setting_get_member(fg, "weibull_shape"))
      return core_err_set(
          CORE_EINVAL, "%s: weibull_scale_h and weibull_shape need distribution = \"weibull\"", where(fg, w));
    return 0;
  }
  if (j->fail_dist == SIM_FAIL_WEIBULL) {
    free(j->shape);
    j->shape = NULL;
    if ((rc = core_cfg_double_list(fg, "weibull_scale_h", 1, 0, 1e-3, 1e12, &j->rate_h, &n[D_RATE])) != 0 ||
        (rc = core_cfg_double_list(fg, "weibull_shape", 1, 0, 0.05, 20, &j->shape, &n[D_SHAPE])) != 0)
      return rc;
    if (config_setting_get_member(fg, "mtbf_h"))
      return core_err_set(CORE_EINVAL,
          "%s: mtbf_h is for distribution = \"exponential\"; a Weibull takes weibull_scale_h and weibull_shape",
          where(config_setting_get_member(fg, "mtbf_h"), w));
    return 0;
  }
  return one_value(&j->rate_h, 0, &n[D_RATE]);
}

/* failures = { distribution; mtbf_h | weibull_scale_h, weibull_shape |
 * at_steps; per; detect_s; mttr_h; restart_s; load_s; spares; } */
static int parse_failures(const config_setting_t *fg, sim_job_cfg *j, int n[N_D]) {
  static const char *const fail_keys[] = {"distribution", "mtbf_h", "weibull_scale_h", "weibull_shape", "at_steps",
      "per", "detect_s", "mttr_h", "restart_s", "load_s", "spares", NULL};
  static const char *const pers[] = {"node", "gpu", NULL};
  const char *str;
  int rc;
  j->rate_key = rate_key(fg);
  if ((rc = core_cfg_check_keys(fg, fail_keys, "failures")) != 0 || (rc = parse_distribution(fg, j, n)) != 0 ||
      (rc = core_cfg_string(fg, "per", 0, "node", pers, &str)) != 0)
    return rc;
  j->per_gpu = !strcmp(str, "gpu");
  double **d[] = {&j->detect_s, &j->mttr_h, &j->restart_s, &j->load_s};
  const char *keys[] = {"detect_s", "mttr_h", "restart_s", "load_s"};
  const double def[] = {-1, 24, -1, -1}, hi[] = {1e7, 1e6, 1e7, 1e7};
  const int dim[] = {D_DETECT, D_MTTR, D_RESTART, D_LOAD};
  for (int i = 0; i < 4; i++) {
    free(*d[i]);
    *d[i] = NULL;
    if ((rc = core_cfg_double_list(fg, keys[i], 0, def[i], 0, hi[i], d[i], &n[dim[i]])) != 0)
      return rc;
  }
  free(j->spares);
  j->spares = NULL;
  return core_cfg_int_list(fg, "spares", 0, 0, 0, 1 << 20, &j->spares, &n[D_SPARES]);
}

/* What the profile must hold for the costs left to it: storage bandwidth
 * for checkpoints without cost_s (and their async writes) and for loads
 * without load_s, restart costs without restart_s. Every one missing is
 * named at once, so that one edit of the scenario or the profile does. */
static int check_profile(const config_setting_t *fg, const config_setting_t *cg, const core_profile *pr,
    const char *profile_path, const sim_job_cfg *j) {
  static const char storage[] = "no storage group (write_GBps, read_GBps)",
                    restart[] = "no restart group (process_start_s, rendezvous_s, comm_init_s)";
  char w[4200], keys[256], groups[160];
  int ck = cg && j->cost_s[0] < 0 && !(pr->write_GBps > 0), ld = fg && j->load_s[0] < 0 && !(pr->read_GBps > 0),
      rs = fg && j->restart_s[0] < 0 && !(pr->process_start_s + pr->rendezvous_s + pr->comm_init_s > 0);
  if (!ck && !ld && !rs)
    return 0;
  snprintf(keys, sizeof keys, "%s%s%s%s%s", ck ? "checkpoint.cost_s" : "", ck && (ld || rs) ? ", " : "",
      ld ? "failures.load_s" : "", ld && rs ? ", " : "", rs ? "failures.restart_s" : "");
  snprintf(
      groups, sizeof groups, "%s%s%s", ck || ld ? storage : "", (ck || ld) && rs ? " and " : "", rs ? restart : "");
  return core_err_set(CORE_EINVAL,
      "%s: the job level takes checkpoint writes, reloads and restarts from the profile, and profile '%s' has %s; "
      "calibrate, add %s to the profile, or set %s in the scenario",
      where(ck ? cg : fg, w), profile_path, groups, (ck || ld) && rs ? "the groups" : "the group", keys);
}

int sim_jobcfg_parse(
    const config_setting_t *root, const core_profile *pr, const char *profile_path, sim_job_cfg *j, int n[N_D]) {
  char w[4200];
  const config_setting_t *jg, *fg, *cg;
  int rc;
  if ((rc = core_cfg_group(root, "job", 0, &jg)) != 0 || (rc = core_cfg_group(root, "failures", 0, &fg)) != 0 ||
      (rc = core_cfg_group(root, "checkpoint", 0, &cg)) != 0 || (rc = defaults(j, n)) != 0)
    return rc;
  j->present = jg || fg || cg;
  j->has_failures = fg != NULL;
  j->has_checkpoints = cg != NULL;
  if (!j->present)
    return 0;
  if (!jg)
    return core_err_set(CORE_EINVAL,
        "%s: failures and checkpoints need the run's length: add job = { hours = H; } (failure-free training time), "
        "job = { steps = N; } or job = { samples = N; }",
        where(fg ? fg : cg, w));
  if ((rc = parse_length(jg, j)) != 0)
    return rc;
  if (fg && !cg)
    return core_err_set(CORE_EINVAL,
        "%s: with failures but no checkpoints every failure restarts the run from scratch; add checkpoint = { every_s "
        "= ...; }",
        where(fg, w));
  if ((cg && (rc = parse_checkpoint(cg, j, n)) != 0) || (fg && (rc = parse_failures(fg, j, n)) != 0))
    return rc;
  return check_profile(fg, cg, pr, profile_path, j);
}

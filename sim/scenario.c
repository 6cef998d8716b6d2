#include "scenario.h"

#include "sim/fabric.h"

#include "core/err.h"
#include "core/traced.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A study with more points than this is almost certainly a typo (an extra
 * array level); split it with --shard if it is real. */
#define SIM_MAX_POINTS 10000000L

static const char *const prec_names[SIM_N_PRECS] = {"fp32", "tf32", "fp16", "bf16", "amp_fp16", "amp_bf16"};
static const char *const prec_choices[] = {"fp32", "tf32", "fp16", "bf16", "amp_fp16", "amp_bf16", NULL};
static const char *const opt_choices[] = {"sgd", "sgd_momentum", "adam", NULL};
static const char *const backend_choices[] = {"nccl", "gloo", NULL};
static const char *const algo_choices[] = {"auto", "ring", "tree", "hierarchical", "halving_doubling",
                                           "ring_chunked", "bcube", "gloo_ring", "segmented_ring",
                                           "collnet", "nvls", "nvls_tree", NULL};
static const char *const ranks_choices[] = {"representative", "every", NULL};

const char *sim_precision_name(enum sim_precision p) { return (unsigned)p < SIM_N_PRECS ? prec_names[p] : "?"; }

enum core_prec sim_precision_compute(enum sim_precision p) {
  switch (p) {
  case SIM_PREC_TF32: return CORE_PREC_TF32;
  case SIM_PREC_FP16:
  case SIM_PREC_AMP_FP16: return CORE_PREC_FP16;
  case SIM_PREC_BF16:
  case SIM_PREC_AMP_BF16: return CORE_PREC_BF16;
  default: return CORE_PREC_FP32;
  }
}

/* Mixed precision (torch.autocast) keeps fp32 parameters, so DDP reduces fp32
 * gradients; pure fp16/bf16 models reduce 2-byte gradients. */
int sim_precision_grad_bytes(enum sim_precision p) {
  return (p == SIM_PREC_FP16 || p == SIM_PREC_BF16) ? 2 : 4;
}

int sim_compression_parse(const char *s, sim_compression *out) {
  out->rank = 0;
  if (!strcmp(s, "none"))
    out->kind = SIM_COMPRESS_NONE;
  else if (!strcmp(s, "fp16"))
    out->kind = SIM_COMPRESS_FP16;
  else if (!strcmp(s, "bf16"))
    out->kind = SIM_COMPRESS_BF16;
  else {
    char extra;
    int r;
    if (sscanf(s, "powersgd:%d%c", &r, &extra) != 1 || r < 1 || r > 1024)
      return CORE_EINVAL;
    out->kind = SIM_COMPRESS_POWERSGD;
    out->rank = r;
  }
  return 0;
}

const char *sim_compression_name(const sim_compression *c, char *buf, int n) {
  static const char *const names[] = {"none", "fp16", "bf16", "powersgd"};
  if (c->kind == SIM_COMPRESS_POWERSGD)
    snprintf(buf, (size_t)n, "powersgd:%d", c->rank);
  else
    snprintf(buf, (size_t)n, "%s", names[c->kind]);
  return buf;
}

const char *sim_optimizer_name(enum sim_optimizer o) {
  return (unsigned)o < 3 ? opt_choices[o] : "?";
}

static int index_of(const char *const names[], const char *s) {
  for (int i = 0; names[i]; i++)
    if (strcmp(names[i], s) == 0)
      return i;
  return -1;
}

void sim_scenario_free(sim_scenario *s) {
  if (!s)
    return;
  core_profile_free(s->profile);
  for (int i = 0; i < s->n_models; i++)
    core_model_free(s->models[i]);
  free(s->models);
  free(s->networks);
  sim_fabric_free_all(s->fabrics, s->n_fabrics);
  free(s->backends);
  free(s->algorithms);
  free(s->precisions);
  free(s->batch);
  free(s->bucket_cap_mb);
  free(s->overlap);
  free(s->find_unused);
  free(s->compression);
  free(s->per_node);
  free(s->nodes);
  free(s->job.spares);
  free(s->job.every);
  free(s->job.async);
  free(s->job.at_steps);
  core_cfg_free(&s->cfg);
  free(s);
}

static const char *where(const config_setting_t *s, char *buf) { return core_cfg_where(s, buf, 4200); }

static int parse_networks(sim_scenario *s, const config_setting_t *list) {
  static const char *const keys[] = {"name", "gbps", "latency_us", "nics_per_node", "efficiency",
                                     "oversubscription", "from_profile", NULL};
  char w[4200];
  int rc;
  s->n_networks = config_setting_length(list);
  s->networks = calloc((size_t)s->n_networks, sizeof *s->networks);
  if (!s->networks)
    return core_err_set(CORE_ENOMEM, "out of memory reading networks");
  for (int i = 0; i < s->n_networks; i++) {
    const config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
    sim_network *n = &s->networks[i];
    const char *name;
    long long v;
    n->line = (int)config_setting_source_line(g);
    if ((rc = core_cfg_check_keys(g, keys, "a network")) != 0 ||
        (rc = core_cfg_string(g, "name", 1, NULL, NULL, &name)) != 0 ||
        (rc = core_cfg_bool(g, "from_profile", 0, 0, &n->from_profile)) != 0)
      return rc;
    if (strlen(name) >= sizeof n->name)
      return core_err_set(CORE_EINVAL, "%s: network name '%.20s...' is longer than %zu characters",
                          where(g, w), name, sizeof n->name - 1);
    if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") != strlen(name))
      return core_err_set(CORE_EINVAL, "%s: network name \"%s\" may use only letters, digits and . _ + - (it labels CSV rows and plots)",
                          where(config_setting_get_member(g, "name"), w), name);
    snprintf(n->name, sizeof n->name, "%s", name);
    for (int j = 0; j < i; j++)
      if (strcmp(s->networks[j].name, n->name) == 0)
        return core_err_set(CORE_EINVAL, "%s: network name '%s' is already used at line %d; names must be unique",
                            where(g, w), n->name, s->networks[j].line);
    if (n->from_profile) {
      /* The measured link as it is, or rescaled to another line rate
       * (gbps): same latency and efficiency, bandwidth in proportion. */
      for (const char *const *k = keys + 1; *k; k++)
        if (strcmp(*k, "from_profile") && strcmp(*k, "gbps") && config_setting_get_member(g, *k))
          return core_err_set(CORE_EINVAL, "%s: network '%s' takes its link from the profile, so '%s' does not apply; remove it (only gbps may rescale the measured link) or set from_profile = false",
                              where(config_setting_get_member(g, *k), w), n->name, *k);
      if ((rc = core_cfg_double(g, "gbps", 0, 0, 1e-3, 1e5, &n->gbps)) != 0)
        return rc;
      if (n->gbps > 0 && !(s->profile->link_gbps > 0))
        return core_err_set(CORE_EINVAL, "%s: network '%s' rescales the measured link to %g Gb/s, but profile '%s' does not say the line rate it was measured at (meta.link_gbps); calibrate with --link-gbps, or drop gbps",
                            where(config_setting_get_member(g, "gbps"), w), n->name, n->gbps, s->profile_path);
      n->nics_per_node = 1;
      n->efficiency = 1;
      n->oversubscription = 1;
      continue;
    }
    /* Line rates from 1 Mb/s to 100 Tb/s; latency up to a second. */
    if ((rc = core_cfg_double(g, "gbps", 1, 0, 1e-3, 1e5, &n->gbps)) != 0 ||
        (rc = core_cfg_double(g, "latency_us", 1, 0, 0, 1e6, &n->latency_us)) != 0 ||
        (rc = core_cfg_int(g, "nics_per_node", 0, 1, 1, 64, &v)) != 0)
      return rc;
    n->nics_per_node = (int)v;
    /* Default efficiency: TCP payload per Ethernet frame at MTU 1500 with
     * timestamps, 1448 of 1538 bytes on the wire (IEEE 802.3 framing: 38 bytes
     * of preamble, header, FCS and gap; 52 bytes of IP and TCP headers). */
    if ((rc = core_cfg_double(g, "efficiency", 0, 1448.0 / 1538.0, 0.01, 1.0, &n->efficiency)) != 0 ||
        (rc = core_cfg_double(g, "oversubscription", 0, 1.0, 1.0, 1000.0, &n->oversubscription)) != 0)
      return rc;
  }
  return 0;
}

/* Does the profile let us derive an allreduce link for this backend and scope? */

static int cross_check(sim_scenario *s, const config_setting_t *root) {
  char w[4200];
  const config_setting_t *ddp = config_setting_get_member(root, "ddp");
  const config_setting_t *bk = ddp ? config_setting_get_member(ddp, "backend") : NULL;
  const config_setting_t *al = ddp ? config_setting_get_member(ddp, "algorithm") : NULL;
  const config_setting_t *cl = config_setting_get_member(root, "cluster");
  const config_setting_t *pn = cl ? config_setting_get_member(cl, "devices_per_node") : NULL;
  const config_setting_t *nd = cl ? config_setting_get_member(cl, "nodes") : NULL;
  const config_setting_t *tr = config_setting_get_member(root, "training");
  const config_setting_t *pr = tr ? config_setting_get_member(tr, "precision") : NULL;
  const config_setting_t *prof = config_setting_get_member(root, "profile");
  const core_profile *p = s->profile;
  int gpu = strcmp(p->device_kind, "gpu") == 0;

  for (int b = 0; b < s->n[SIM_DIM_BACKEND]; b++) {
    enum sim_backend be = s->backends[b];
    if (be == SIM_BACKEND_NCCL && !gpu)
      return core_err_set(CORE_EINVAL, "%s: backend \"nccl\" needs GPUs, but profile '%s' describes %s devices; use backend = \"gloo\" or a GPU profile",
                          where(bk ? bk : root, w), s->profile_path, p->device_kind);
    for (int a = 0; a < s->n[SIM_DIM_ALGORITHM]; a++)
      if (s->algorithms[a] >= 0 && !sim_algo_valid(be, (enum sim_algo)s->algorithms[a]))
        return core_err_set(CORE_EINVAL, "%s: algorithm \"%s\" is not one of %s's allreduce algorithms (%s); use \"auto\" or sweep the backends separately",
                            where(al ? al : root, w), sim_algo_name((enum sim_algo)s->algorithms[a]),
                            sim_backend_name(be),
                            be == SIM_BACKEND_NCCL ? "ring, tree, hierarchical; collnet, nvls, nvls_tree on a fabric that offers them"
                                                   : "segmented_ring, gloo_ring, ring_chunked, halving_doubling, bcube, hierarchical");
    int need_intra = 0, need_inter_profile = 0;
    for (int i = 0; i < s->n[SIM_DIM_PER_NODE]; i++)
      if (!need_intra && s->per_node[i] > 1)
        need_intra = (int)s->per_node[i]; /* the first value that needs it, for the message */
    for (int i = 0; i < s->n_networks; i++)
      need_inter_profile |= s->networks[i].from_profile;
    int multi_node = 0, uses_ddp = 0;
    for (int i = 0; i < s->n[SIM_DIM_NODES]; i++)
      multi_node |= s->nodes[i] > 1;
    /* A traced job without DDP uses none of the profile's collectives. */
    for (int m = 0; m < s->n_models; m++)
      uses_ddp |= !(s->models[m]->traced && !s->models[m]->traced->ddp);
    need_intra *= uses_ddp;
    need_inter_profile *= uses_ddp;
    if (need_intra && !core_profile_allreduce(p, sim_backend_name(be), "intra"))
      return core_err_set(CORE_EINVAL, "%s: %d devices per node need an intra-node allreduce measurement for %s, and profile '%s' has none; calibrate with several ranks per node, or use devices_per_node = 1",
                          where(pn ? pn : root, w), need_intra, sim_backend_name(be), s->profile_path);
    if (need_inter_profile && multi_node && !core_profile_allreduce(p, sim_backend_name(be), "inter"))
      return core_err_set(CORE_EINVAL, "%s: a network with from_profile = true needs an inter-node allreduce measurement for %s, and profile '%s' has none; calibrate across nodes, or give the network's gbps and latency_us",
                          where(nd ? nd : root, w), sim_backend_name(be), s->profile_path);
  }
  for (int m = 0; m < s->n_models; m++) {
    if (s->models[m]->measured)
      continue;
    for (int i = 0; i < s->n[SIM_DIM_PRECISION]; i++) {
      enum core_prec cp = sim_precision_compute(s->precisions[i]);
      if (!p->rate[cp].present)
        return core_err_set(CORE_EINVAL, "%s: precision \"%s\" computes in %s, but profile '%s' has no %s compute rates; choose a precision the profile measured, or add its rates",
                            where(pr ? pr : (prof ? prof : root), w), sim_precision_name(s->precisions[i]),
                            core_prec_name(cp), s->profile_path, core_prec_name(cp));
    }
  }
  return 0;
}

/* Groups job, failures and checkpoint: the run as a whole. */
/* The key of the failures group that sets how often they come. */
static const config_setting_t *rate_key(const config_setting_t *fg) {
  static const char *const keys[] = {"mtbf_h", "weibull_scale_h", "at_steps", NULL};
  for (const char *const *k = keys; *k; k++)
    if (config_setting_get_member(fg, *k))
      return config_setting_get_member(fg, *k);
  return fg;
}

static int parse_job(sim_scenario *s, const config_setting_t *root) {
  static const char *const job_keys[] = {"steps", "hours", NULL};
  static const char *const fail_keys[] = {"distribution", "mtbf_h", "weibull_scale_h", "weibull_shape",
                                          "at_steps", "per", "detect_s", "mttr_h", "restart_s", "spares", NULL};
  static const char *const ck_keys[] = {"every_s", "every_steps", "mode", "sharded", "storage_GBps",
                                        "snapshot_GBps", NULL};
  static const char *const dists[] = {"none", "exponential", "weibull", "scheduled", NULL};
  static const char *const pers[] = {"node", "gpu", NULL};
  static const char *const modes[] = {"sync", "async", NULL};
  char w[4200];
  const config_setting_t *jg, *fg, *cg;
  const char *str, **strs = NULL;
  int rc, n;
  sim_job_cfg *j = &s->job;
  if ((rc = core_cfg_group(root, "job", 0, &jg)) != 0 || (rc = core_cfg_group(root, "failures", 0, &fg)) != 0 ||
      (rc = core_cfg_group(root, "checkpoint", 0, &cg)) != 0)
    return rc;
  j->present = fg || cg;
  j->detect_s = -1;
  j->restart_s = -1;
  /* Dimensions of scenarios without a job level: one value each. */
  j->spares = calloc(1, sizeof *j->spares);
  j->every = calloc(1, sizeof *j->every);
  j->async = calloc(1, sizeof *j->async);
  if (!j->spares || !j->every || !j->async)
    return core_err_set(CORE_ENOMEM, "out of memory");
  s->n[SIM_DIM_SPARES] = s->n[SIM_DIM_CKPT_EVERY] = s->n[SIM_DIM_CKPT_MODE] = 1;
  if (!j->present) {
    if (jg)
      return core_err_set(CORE_EINVAL, "%s: a job group needs a checkpoint or failures group to simulate; add one, or remove job",
                          where(jg, w));
    return 0;
  }
  if (!jg)
    return core_err_set(CORE_EINVAL, "%s: failures and checkpoints need the run's length: add job = { hours = H; } (failure-free training time) or job = { steps = N; }",
                        where(fg ? fg : cg, w));
  if ((rc = core_cfg_check_keys(jg, job_keys, "job")) != 0 ||
      (rc = core_cfg_double(jg, "steps", 0, 0, 1, 1e15, &j->steps)) != 0 ||
      (rc = core_cfg_double(jg, "hours", 0, 0, 1e-6, 1e7, &j->hours)) != 0)
    return rc;
  if ((j->steps > 0) == (j->hours > 0))
    return core_err_set(CORE_EINVAL, "%s: give exactly one of job.steps and job.hours", where(jg, w));

  if (!cg)
    return core_err_set(CORE_EINVAL, "%s: with failures but no checkpoints every failure restarts the run from scratch; add checkpoint = { every_s = ...; }",
                        where(fg, w));
  if ((rc = core_cfg_check_keys(cg, ck_keys, "checkpoint")) != 0)
    return rc;
  int has_s = config_setting_get_member(cg, "every_s") != NULL, has_steps = config_setting_get_member(cg, "every_steps") != NULL;
  if (has_s == has_steps)
    return core_err_set(CORE_EINVAL, "%s: give exactly one of checkpoint.every_s and checkpoint.every_steps", where(cg, w));
  free(j->every);
  j->every = NULL;
  j->every_in_steps = has_steps;
  if ((rc = core_cfg_double_list(cg, has_s ? "every_s" : "every_steps", 1, 0, has_s ? 1e-3 : 1, 1e12, &j->every,
                                 &s->n[SIM_DIM_CKPT_EVERY])) != 0)
    return rc;
  if ((rc = core_cfg_string_list(cg, "mode", 0, "sync", modes, &strs, &n)) != 0)
    return rc;
  free(j->async);
  j->async = malloc(sizeof *j->async * (size_t)n);
  if (!j->async) {
    free(strs);
    return core_err_set(CORE_ENOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++)
    j->async[i] = strcmp(strs[i], "async") == 0;
  free(strs);
  s->n[SIM_DIM_CKPT_MODE] = n;
  if ((rc = core_cfg_bool(cg, "sharded", 0, 0, &j->sharded)) != 0 ||
      (rc = core_cfg_double(cg, "storage_GBps", 0, 0, 0, 1e7, &j->storage_GBps)) != 0 ||
      (rc = core_cfg_double(cg, "snapshot_GBps", 0, 0, 0, 1e7, &j->snapshot_GBps)) != 0)
    return rc;
  if (!(s->profile->write_GBps > 0))
    return core_err_set(CORE_EINVAL, "%s: checkpoints need the storage bandwidth, and profile '%s' has no storage group; calibrate, or add storage = { write_GBps; read_GBps; } to the profile",
                        where(cg, w), s->profile_path);

  j->fail_dist = 0;
  j->replications = j->replications > 0 ? j->replications : 100;
  if (fg) {
    j->rate_key = rate_key(fg);
    if ((rc = core_cfg_check_keys(fg, fail_keys, "failures")) != 0 ||
        (rc = core_cfg_string(fg, "distribution", 0, "exponential", dists, &str)) != 0)
      return rc;
    j->fail_dist = !strcmp(str, "exponential") ? 1 : !strcmp(str, "weibull") ? 2 : !strcmp(str, "scheduled") ? 3 : 0;
    if (j->fail_dist == 3) {
      if ((rc = core_cfg_double_list(fg, "at_steps", 1, 0, 0, 1e15, &j->at_steps, &j->n_at_steps)) != 0)
        return rc;
      for (int i = 1; i < j->n_at_steps; i++)
        if (!(j->at_steps[i] > j->at_steps[i - 1]))
          return core_err_set(CORE_EINVAL, "%s: at_steps must be strictly ascending (each failure happens after a restart from an earlier checkpoint)",
                              where(config_setting_get_member(fg, "at_steps"), w));
    } else if (config_setting_get_member(fg, "at_steps")) {
      return core_err_set(CORE_EINVAL, "%s: at_steps needs distribution = \"scheduled\"",
                          where(config_setting_get_member(fg, "at_steps"), w));
    }
    if (j->fail_dist == 1) {
      if ((rc = core_cfg_double(fg, "mtbf_h", 1, 0, 1e-3, 1e12, &j->mtbf_h)) != 0)
        return rc;
      if (config_setting_get_member(fg, "weibull_scale_h") || config_setting_get_member(fg, "weibull_shape"))
        return core_err_set(CORE_EINVAL, "%s: weibull_scale_h and weibull_shape need distribution = \"weibull\"", where(fg, w));
    } else if (j->fail_dist == 2) {
      if ((rc = core_cfg_double(fg, "weibull_scale_h", 1, 0, 1e-3, 1e12, &j->weibull_scale_h)) != 0 ||
          (rc = core_cfg_double(fg, "weibull_shape", 1, 0, 0.05, 20, &j->weibull_shape)) != 0)
        return rc;
      if (config_setting_get_member(fg, "mtbf_h"))
        return core_err_set(CORE_EINVAL, "%s: mtbf_h is for distribution = \"exponential\"; a Weibull takes weibull_scale_h and weibull_shape",
                            where(config_setting_get_member(fg, "mtbf_h"), w));
    }
    if ((rc = core_cfg_string(fg, "per", 0, "node", pers, &str)) != 0)
      return rc;
    j->per_gpu = !strcmp(str, "gpu");
    if ((rc = core_cfg_double(fg, "detect_s", 0, -1, 0, 1e7, &j->detect_s)) != 0 ||
        (rc = core_cfg_double(fg, "mttr_h", 0, 24, 0, 1e6, &j->mttr_h)) != 0 ||
        (rc = core_cfg_double(fg, "restart_s", 0, -1, 0, 1e7, &j->restart_s)) != 0)
      return rc;
    free(j->spares);
    j->spares = NULL;
    if ((rc = core_cfg_int_list(fg, "spares", 0, 0, 0, 1 << 20, &j->spares, &s->n[SIM_DIM_SPARES])) != 0)
      return rc;
    if (j->restart_s < 0 && !(s->profile->process_start_s + s->profile->rendezvous_s + s->profile->comm_init_s > 0))
      return core_err_set(CORE_EINVAL, "%s: failures need the restart cost, and profile '%s' has no restart group; calibrate, or set failures.restart_s",
                          where(fg, w), s->profile_path);
  }
  return 0;
}

/* simulation = { steps; seed; ranks; replications; max_events; } */
static int parse_simulation(sim_scenario *s, const config_setting_t *root) {
  static const char *const simk[] = {"steps", "seed", "ranks", "replications", "max_events", NULL};
  const config_setting_t *g;
  const char *str;
  long long v;
  int rc;
  s->steps = 10;
  s->seed = 1;
  s->job.replications = 100;
  s->job.max_events = SIM_DEFAULT_MAX_EVENTS;
  if ((rc = core_cfg_group(root, "simulation", 0, &g)) != 0 || !g)
    return rc;
  if ((rc = core_cfg_check_keys(g, simk, "simulation")) != 0 ||
      (rc = core_cfg_int(g, "steps", 0, 10, 1, 100000, &v)) != 0)
    return rc;
  s->steps = (int)v;
  if ((rc = core_cfg_int(g, "seed", 0, 1, 0, INT64_MAX, &v)) != 0)
    return rc;
  s->seed = (uint64_t)v;
  if ((rc = core_cfg_string(g, "ranks", 0, "representative", ranks_choices, &str)) != 0)
    return rc;
  s->every_rank = strcmp(str, "every") == 0;
  if ((rc = core_cfg_int(g, "replications", 0, 100, 1, 1000000, &v)) != 0)
    return rc;
  s->job.replications = (int)v;
  if ((rc = core_cfg_double(g, "max_events", 0, SIM_DEFAULT_MAX_EVENTS, 1e3, 1e15, &s->job.max_events)) != 0)
    return rc;
  s->job.max_events_key = config_setting_get_member(g, "max_events");
  return 0;
}

/* output = { csv = "NAME.csv"; }: a plain file name, checked now, so that a
 * name the directory of -o cannot hold fails here with its line, not at the
 * end of the run. */
static int parse_output(sim_scenario *s, const config_setting_t *root) {
  static const char *const out_keys[] = {"csv", NULL};
  char def_csv[sizeof s->csv_name], w[4200];
  const config_setting_t *g;
  const char *str;
  int rc;
  snprintf(def_csv, sizeof def_csv, "%s.csv", s->name);
  snprintf(s->csv_name, sizeof s->csv_name, "%s", def_csv);
  if ((rc = core_cfg_group(root, "output", 0, &g)) != 0 || !g)
    return rc;
  if ((rc = core_cfg_check_keys(g, out_keys, "output")) != 0 ||
      (rc = core_cfg_string(g, "csv", 0, def_csv, NULL, &str)) != 0)
    return rc;
  if (!str[0] || !strcmp(str, ".") || !strcmp(str, "..") || strchr(str, '/') || strlen(str) >= sizeof s->csv_name)
    return core_err_set(CORE_EINVAL, "%s: output csv \"%s\" must be a plain file name, not empty, \".\" or \"..\" and without '/' (the directory comes from -o)",
                        where(config_setting_get_member(g, "csv") ? config_setting_get_member(g, "csv") : g, w), str);
  snprintf(s->csv_name, sizeof s->csv_name, "%s", str);
  return 0;
}

static int parse(sim_scenario *s) {
  static const char *const top_keys[] = {"name", "description", "profile", "model", "training",
                                         "cluster", "networks", "fabric", "ddp", "simulation", "output",
                                         "job", "failures", "checkpoint", NULL};
  static const char *const train_keys[] = {"batch", "precision", "optimizer", NULL};
  static const char *const cluster_keys[] = {"nodes", "devices_per_node", NULL};
  static const char *const ddp_keys[] = {"backend", "algorithm", "bucket_cap_mb", "first_bucket_mb",
                                         "overlap", "find_unused_parameters", "gradient_as_bucket_view",
                                         "timeout_s", "compression",
                                         "powersgd_min_rate", NULL};
  char w[4200], path[4096];
  const config_setting_t *root = core_cfg_root(&s->cfg), *g, *set;
  const char *str, **strs = NULL;
  int rc, n;

  if ((rc = core_cfg_check_keys(root, top_keys, "the scenario")) != 0)
    return rc;
  /* Default name: the file's base name without .cfg. */
  const char *base = strrchr(s->path, '/');
  base = base ? base + 1 : s->path;
  /* The default goes through a copy: printing s->name into itself overlaps. */
  char def_name[sizeof s->name];
  snprintf(def_name, sizeof def_name, "%.*s", (int)(strcspn(base, ".")), base);
  if ((rc = core_cfg_string(root, "name", 0, def_name, NULL, &str)) != 0)
    return rc;
  if (strchr(str, '/'))
    return core_err_set(CORE_EINVAL, "%s: scenario name \"%s\" names the CSV file, so it must not contain '/'",
                        where(config_setting_get_member(root, "name"), w), str);
  snprintf(s->name, sizeof s->name, "%s", str);
  if ((rc = core_cfg_string(root, "description", 0, "", NULL, &str)) != 0)
    return rc;
  snprintf(s->description, sizeof s->description, "%s", str);

  /* Profile. */
  if ((rc = core_cfg_string(root, "profile", 1, NULL, NULL, &str)) != 0)
    return rc;
  set = config_setting_get_member(root, "profile");
  if (s->profile_override[0]) {
    /* Another profile for the same study (simulate --profile): checked
     * against the scenario exactly as its own would be. */
    snprintf(s->profile_path, sizeof s->profile_path, "%s", s->profile_override);
    if ((rc = core_profile_load(s->profile_path, &s->profile)) != 0)
      return core_err_wrap(rc, "--profile");
  } else {
    if ((rc = core_cfg_path(set, str, s->profile_path, sizeof s->profile_path)) != 0)
      return rc;
    if ((rc = core_profile_load(s->profile_path, &s->profile)) != 0)
      return core_err_wrap(rc, "%s: profile \"%s\"", where(set, w), str);
  }

  /* Models. */
  if ((rc = core_cfg_string_list(root, "model", 1, NULL, NULL, &strs, &n)) != 0)
    return rc;
  set = config_setting_get_member(root, "model");
  s->models = calloc((size_t)n, sizeof *s->models);
  if (!s->models) {
    free(strs);
    return core_err_set(CORE_ENOMEM, "out of memory loading models");
  }
  for (int i = 0; i < n; i++) {
    if ((rc = core_cfg_path(set, strs[i], path, sizeof path)) != 0 ||
        (rc = core_model_load(path, &s->models[i])) != 0) {
      rc = core_err_wrap(rc, "%s: model \"%s\"", where(set, w), strs[i]);
      free(strs);
      return rc;
    }
    s->n_models = i + 1;
    for (int j = 0; j < i; j++)
      if (strcmp(s->models[j]->name, s->models[i]->name) == 0) {
        free(strs);
        return core_err_set(CORE_EINVAL, "%s: two models are named '%s'; results could not tell them apart",
                            where(set, w), s->models[i]->name);
      }
  }
  free(strs);
  strs = NULL;
  s->n[SIM_DIM_MODEL] = s->n_models;

  /* Training. */
  if ((rc = core_cfg_group(root, "training", 1, &g)) != 0 ||
      (rc = core_cfg_check_keys(g, train_keys, "training")) != 0 ||
      (rc = core_cfg_int_list(g, "batch", 1, 0, 1, 1 << 24, &s->batch, &s->n[SIM_DIM_BATCH])) != 0 ||
      (rc = core_cfg_string_list(g, "precision", 0, "fp32", prec_choices, &strs, &n)) != 0)
    return rc;
  s->precisions = malloc(sizeof *s->precisions * (size_t)n);
  if (!s->precisions) {
    free(strs);
    return core_err_set(CORE_ENOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++)
    s->precisions[i] = (enum sim_precision)index_of(prec_choices, strs[i]);
  s->n[SIM_DIM_PRECISION] = n;
  free(strs);
  strs = NULL;
  if ((rc = core_cfg_string(g, "optimizer", 0, "sgd", opt_choices, &str)) != 0)
    return rc;
  s->optimizer = (enum sim_optimizer)index_of(opt_choices, str);

  /* Cluster. */
  if ((rc = core_cfg_group(root, "cluster", 1, &g)) != 0 ||
      (rc = core_cfg_check_keys(g, cluster_keys, "cluster")) != 0 ||
      (rc = core_cfg_int_list(g, "nodes", 1, 0, 1, 1 << 20, &s->nodes, &s->n[SIM_DIM_NODES])) != 0 ||
      (rc = core_cfg_int_list(g, "devices_per_node", 1, 0, 1, 1024, &s->per_node, &s->n[SIM_DIM_PER_NODE])) != 0)
    return rc;
  for (int i = 0; i < s->n[SIM_DIM_NODES]; i++)
    for (int j = 0; j < s->n[SIM_DIM_PER_NODE]; j++)
      if (s->nodes[i] * s->per_node[j] > (1 << 24))
        return core_err_set(CORE_EINVAL, "%s: %lld nodes x %lld devices is more than %d ranks",
                            where(g, w), s->nodes[i], s->per_node[j], 1 << 24);

  /* Networks. */
  if ((rc = core_cfg_list(root, "networks", 1, &set)) != 0 || (rc = parse_networks(s, set)) != 0)
    return rc;
  s->n[SIM_DIM_NETWORK] = s->n_networks;

  /* DDP. */
  if ((rc = core_cfg_group(root, "ddp", 0, &g)) != 0)
    return rc;
  /* Without a ddp group every key takes its default: look them up in the
   * root, where the top-level key check has ruled them out. */
  const config_setting_t *dg = g ? g : root;
  if (g && (rc = core_cfg_check_keys(g, ddp_keys, "ddp")) != 0)
    return rc;
  const char *def_backend = strcmp(s->profile->device_kind, "gpu") == 0 ? "nccl" : "gloo";
  if ((rc = core_cfg_string_list(dg, "backend", 0, def_backend, backend_choices, &strs, &n)) != 0)
    return rc;
  s->backends = malloc(sizeof *s->backends * (size_t)n);
  if (!s->backends) {
    free(strs);
    return core_err_set(CORE_ENOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++)
    s->backends[i] = strcmp(strs[i], "nccl") == 0 ? SIM_BACKEND_NCCL : SIM_BACKEND_GLOO;
  s->n[SIM_DIM_BACKEND] = n;
  free(strs);
  strs = NULL;
  if ((rc = core_cfg_string_list(dg, "algorithm", 0, "auto", algo_choices, &strs, &n)) != 0)
    return rc;
  s->algorithms = malloc(sizeof *s->algorithms * (size_t)n);
  if (!s->algorithms) {
    free(strs);
    return core_err_set(CORE_ENOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++) {
    enum sim_algo a;
    s->algorithms[i] = strcmp(strs[i], "auto") == 0 ? -1 : (sim_algo_parse(strs[i], &a), (int)a);
  }
  s->n[SIM_DIM_ALGORITHM] = n;
  free(strs);
  strs = NULL;
  if ((rc = core_cfg_double_list(dg, "bucket_cap_mb", 0, 25.0, 1e-3, 1e6, &s->bucket_cap_mb, &s->n[SIM_DIM_BUCKET_CAP])) != 0 ||
      (rc = core_cfg_bool_list(dg, "overlap", 0, 1, &s->overlap, &s->n[SIM_DIM_OVERLAP])) != 0 ||
      (rc = core_cfg_bool_list(dg, "find_unused_parameters", 0, 0, &s->find_unused,
                               &s->n[SIM_DIM_FIND_UNUSED])) != 0 ||
      /* PyTorch's PowerSGD default min_compression_rate (powerSGD_hook.py). */
      (rc = core_cfg_double(dg, "powersgd_min_rate", 0, 2.0, 1e-3, 1e6, &s->powersgd_min_rate)) != 0 ||
      (rc = core_cfg_double(dg, "first_bucket_mb", 0, 1.0, 0, 1e6, &s->first_bucket_mb)) != 0 ||
      (rc = core_cfg_bool(dg, "gradient_as_bucket_view", 0, 0, &s->gradient_as_bucket_view)) != 0 ||
      (rc = core_cfg_double(dg, "timeout_s", 0, 0, 1e-3, 1e7, &s->timeout_s)) != 0)
    return rc;

  if ((rc = core_cfg_string_list(dg, "compression", 0, "none", NULL, &strs, &n)) != 0)
    return rc;
  s->compression = malloc(sizeof *s->compression * (size_t)n);
  if (!s->compression) {
    free(strs);
    return core_err_set(CORE_ENOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++)
    if (sim_compression_parse(strs[i], &s->compression[i]) != 0) {
      const config_setting_t *cs = config_setting_get_member(dg, "compression");
      rc = core_err_set(CORE_EINVAL, "%s: compression \"%s\" is not one of \"none\", \"fp16\", \"bf16\", \"powersgd:R\" (R a rank from 1 to 1024)",
                        where(cs ? cs : dg, w), strs[i]);
      free(strs);
      return rc;
    }
  s->n[SIM_DIM_COMPRESSION] = n;
  free(strs);
  strs = NULL;

  if ((rc = sim_fabric_parse(s, root)) != 0)
    return rc;
  if ((rc = parse_simulation(s, root)) != 0)
    return rc;
  if ((rc = parse_job(s, root)) != 0)
    return rc;

  if ((rc = parse_output(s, root)) != 0)
    return rc;

  long total = 1;
  for (int d = 0; d < SIM_N_DIMS; d++) {
    if (total > SIM_MAX_POINTS / s->n[d])
      return core_err_set(CORE_EINVAL, "%s: the sweep has more than %ld points; check for an extra array, or split the study",
                          s->path, SIM_MAX_POINTS);
    total *= s->n[d];
  }
  return cross_check(s, root);
}

static int finish_load(sim_scenario *s, int rc, sim_scenario **out) {
  if (rc == 0)
    rc = parse(s);
  if (rc) {
    sim_scenario_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int sim_scenario_load(const char *path, sim_scenario **out) {
  return sim_scenario_load_with(path, NULL, out);
}

int sim_scenario_load_with(const char *path, const char *profile, sim_scenario **out) {
  *out = NULL;
  sim_scenario *s = calloc(1, sizeof *s);
  if (!s)
    return core_err_set(CORE_ENOMEM, "out of memory loading scenario %s", path);
  snprintf(s->path, sizeof s->path, "%s", path);
  if (profile)
    snprintf(s->profile_override, sizeof s->profile_override, "%s", profile);
  return finish_load(s, core_cfg_load(&s->cfg, path, "scenario"), out);
}

int sim_scenario_load_string(const char *text, const char *name, sim_scenario **out) {
  *out = NULL;
  sim_scenario *s = calloc(1, sizeof *s);
  if (!s)
    return core_err_set(CORE_ENOMEM, "out of memory loading scenario %s", name);
  snprintf(s->path, sizeof s->path, "%s", name);
  return finish_load(s, core_cfg_load_string(&s->cfg, text, name, "scenario"), out);
}

long sim_scenario_points(const sim_scenario *s) {
  long total = 1;
  for (int d = 0; d < SIM_N_DIMS; d++)
    total *= s->n[d];
  return total;
}

void sim_scenario_point(const sim_scenario *s, long index, sim_point *p) {
  int idx[SIM_N_DIMS];
  long rest = index;
  for (int d = SIM_N_DIMS - 1; d >= 0; d--) {
    idx[d] = (int)(rest % s->n[d]);
    rest /= s->n[d];
  }
  p->index = index;
  p->model = s->models[idx[SIM_DIM_MODEL]];
  p->network = &s->networks[idx[SIM_DIM_NETWORK]];
  p->fabric = s->n_fabrics ? &s->fabrics[idx[SIM_DIM_FABRIC]] : NULL;
  p->fabric_given = NULL;
  p->backend = s->backends[idx[SIM_DIM_BACKEND]];
  p->algorithm = s->algorithms[idx[SIM_DIM_ALGORITHM]];
  p->precision = s->precisions[idx[SIM_DIM_PRECISION]];
  p->batch = (int)s->batch[idx[SIM_DIM_BATCH]];
  p->bucket_cap_mb = s->bucket_cap_mb[idx[SIM_DIM_BUCKET_CAP]];
  p->overlap = s->overlap[idx[SIM_DIM_OVERLAP]];
  p->find_unused = s->find_unused[idx[SIM_DIM_FIND_UNUSED]];
  p->compression = s->compression[idx[SIM_DIM_COMPRESSION]];
  p->per_node = (int)s->per_node[idx[SIM_DIM_PER_NODE]];
  p->nodes = (int)s->nodes[idx[SIM_DIM_NODES]];
  p->ckpt_async = s->job.async[idx[SIM_DIM_CKPT_MODE]];
  p->spares = s->job.spares[idx[SIM_DIM_SPARES]];
  p->ckpt_every = s->job.every[idx[SIM_DIM_CKPT_EVERY]];
  long job_points = 1;
  for (int d = SIM_N_STEP_DIMS; d < SIM_N_DIMS; d++)
    job_points *= s->n[d];
  p->step_index = index / job_points;
}

double sim_scenario_timeout(const sim_scenario *s, enum sim_backend b) {
  if (s->timeout_s > 0)
    return s->timeout_s;
  return b == SIM_BACKEND_NCCL ? SIM_NCCL_TIMEOUT_S : SIM_GLOO_TIMEOUT_S;
}

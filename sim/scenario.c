#include "scenario.h"

#include "sim/bounds.h"
#include "sim/compute.h"
#include "sim/dims.h"
#include "sim/layer_cache.h"
#include "sim/fabric.h"
#include "sim/job.h"
#include "sim/replay.h"

#include "core/bucket.h"
#include "core/err.h"
#include "core/path.h"
#include "core/traced.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const prec_names[SIM_N_PRECS] = {"fp32", "tf32", "fp16", "bf16", "amp_fp16", "amp_bf16"};
static const char *const prec_choices[] = {"fp32", "tf32", "fp16", "bf16", "amp_fp16", "amp_bf16", NULL};
static const char *const opt_choices[] = {"sgd", "sgd_momentum", "adam", NULL};
static const char *const attn_choices[] = {"auto", "fused", "math", NULL}; /* in enum sim_attention's order */
static const char *const backend_choices[] = {"nccl", "gloo", NULL};
static const char *const algo_choices[] = {"auto", "ring", "tree", "hierarchical", "halving_doubling", "ring_chunked",
    "bcube", "gloo_ring", "segmented_ring", "collnet", "nvls", "nvls_tree", NULL};
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
int sim_precision_grad_bytes(enum sim_precision p) { return (p == SIM_PREC_FP16 || p == SIM_PREC_BF16) ? 2 : 4; }

static int index_of(const char *const names[], const char *s) {
  for (int i = 0; names[i]; i++)
    if (strcmp(names[i], s) == 0)
      return i;
  return -1;
}

void sim_scenario_free(sim_scenario *s) {
  if (!s)
    return;
  sim_layer_cache_free(s->layer_cache);
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
  sim_jobcfg_free(&s->job);
  core_cfg_free(&s->cfg);
  free(s);
}

static const char *where(const config_setting_t *s, char *buf) { return core_cfg_where(s, buf, 4200); }

static int check_compute(const sim_scenario *s, const config_setting_t *root);

/* Each backend against the profile: NCCL needs GPUs, algorithms their
 * backend, and several devices a node or a network from the profile the
 * profile's measurements. */
static int check_backends(const sim_scenario *s, const config_setting_t *root) {
  char w[4200];
  const config_setting_t *ddp = config_setting_get_member(root, "ddp");
  const config_setting_t *bk = ddp ? config_setting_get_member(ddp, "backend") : NULL;
  const config_setting_t *al = ddp ? config_setting_get_member(ddp, "algorithm") : NULL;
  const config_setting_t *cl = config_setting_get_member(root, "cluster");
  const config_setting_t *pn = cl ? config_setting_get_member(cl, "devices_per_node") : NULL;
  const config_setting_t *nd = cl ? config_setting_get_member(cl, "nodes") : NULL;
  const core_profile *p = s->profile;
  int gpu = strcmp(p->device_kind, "gpu") == 0;
  for (int b = 0; b < s->n[SIM_DIM_BACKEND]; b++) {
    enum sim_backend be = s->backends[b];
    if (be == SIM_BACKEND_NCCL && !gpu)
      return core_err_set(CORE_EINVAL,
          "%s: backend \"nccl\" needs GPUs, but profile '%s' describes %s devices; use backend = \"gloo\" or a GPU "
          "profile",
          where(bk ? bk : root, w), s->profile_path, p->device_kind);
    for (int a = 0; a < s->n[SIM_DIM_ALGORITHM]; a++)
      if (s->algorithms[a] >= 0 && !sim_algo_valid(be, (enum sim_algo)s->algorithms[a]))
        return core_err_set(CORE_EINVAL,
            "%s: algorithm \"%s\" is not one of %s's allreduce algorithms (%s%s); use \"auto\" or sweep the "
            "backends separately",
            where(al ? al : root, w), sim_algo_name((enum sim_algo)s->algorithms[a]), sim_backend_name(be),
            sim_algo_link_names(be),
            be == SIM_BACKEND_NCCL ? "; collnet, nvls, nvls_tree on a fabric that offers them" : "");
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
      return core_err_set(CORE_EINVAL,
          "%s: %d devices per node need an intra-node allreduce measurement for %s, and profile '%s' has none; "
          "calibrate with several ranks per node, simulate with --profile of a profile of that device that has one "
          "(the GPU profiles of scenarios/profiles/ do), or use devices_per_node = 1",
          where(pn ? pn : root, w), need_intra, sim_backend_name(be), s->profile_path);
    if (need_inter_profile && multi_node && !core_profile_allreduce(p, sim_backend_name(be), "inter"))
      return core_err_set(CORE_EINVAL,
          "%s: a network with from_profile = true needs an inter-node allreduce measurement for %s, and profile '%s' "
          "has none; calibrate across nodes, or give the network's gbps and latency_us",
          where(nd ? nd : root, w), sim_backend_name(be), s->profile_path);
  }
  return 0;
}

/* devices_per_node no more than a node holds: the profile's, or a traced
 * job's host's where it had more. */
static int check_node_size(const sim_scenario *s, const config_setting_t *root) {
  char w[4200];
  const config_setting_t *cl = config_setting_get_member(root, "cluster");
  const config_setting_t *pn = cl ? config_setting_get_member(cl, "devices_per_node") : NULL;
  int gpu = strcmp(s->profile->device_kind, "gpu") == 0, node_max = core_profile_node_devices(s->profile);
  /* A traced job's host may have had more GPUs than the job used: its node
   * holds those (the profile the importer wrote has the job's ranks). */
  int host = 0;
  for (int m = 0; m < s->n_models; m++)
    if (s->models[m]->traced && s->models[m]->traced->host_devices > host)
      host = s->models[m]->traced->host_devices;
  if (host > node_max)
    node_max = host;
  char from[4200];
  if (node_max == host)
    snprintf(from, sizeof from, "the traced job's host");
  else
    snprintf(from, sizeof from, "profile '%s': its meta.ranks_per_node and one-node collectives", s->profile_path);
  for (int i = 0; i < s->n[SIM_DIM_PER_NODE]; i++)
    if (s->per_node[i] > node_max)
      return core_err_set(CORE_EINVAL,
          "%s: devices_per_node = %lld, but a node holds %d %s%s (%s); %s; use at most %d, or a profile of a node "
          "with more",
          where(pn ? pn : root, w), s->per_node[i], node_max, gpu ? "GPU" : "CPU rank", node_max == 1 ? "" : "s", from,
          gpu ? "a node has no more GPUs than that, and the profile measured no intra-node link among more"
              : "its rates are each rank's share of the machine calibrated, which more ranks would divide further "
                "(calibrate with that many ranks a node)",
          node_max);
  return 0;
}

static int cross_check(sim_scenario *s, const config_setting_t *root) {
  int rc = check_backends(s, root);
  if (!rc)
    rc = check_node_size(s, root);
  return rc ? rc : check_compute(s, root);
}

/* Every model can be costed (or, traced, retargeted) at every precision on
 * the profile. */
static int check_compute(const sim_scenario *s, const config_setting_t *root) {
  char w[4200];
  const config_setting_t *tr = config_setting_get_member(root, "training");
  const config_setting_t *pr = tr ? config_setting_get_member(tr, "precision") : NULL;
  const config_setting_t *prof = config_setting_get_member(root, "profile");
  const core_profile *p = s->profile;
  for (int m = 0; m < s->n_models; m++) {
    const core_model *md = s->models[m];
    const config_setting_t *mk = config_setting_get_member(root, "model");
    for (int i = 0; md->traced && i < s->n[SIM_DIM_PRECISION]; i++) {
      double cs, ms;
      int rc = sim_replay_retarget(
          md->traced, md->path, p, s->profile_path, sim_precision_compute(s->precisions[i]), &cs, &ms);
      if (rc)
        return core_err_wrap(rc, "%s: model \"%s\" on profile '%s' at precision \"%s\"", where(mk ? mk : root, w),
            md->name, s->profile_path, sim_precision_name(s->precisions[i]));
    }
    if (s->models[m]->measured)
      continue;
    for (int i = 0; i < s->n[SIM_DIM_PRECISION]; i++) {
      enum core_prec cp = sim_precision_compute(s->precisions[i]);
      int rc = sim_compute_check(s->models[m], p, s->precisions[i]);
      if (rc)
        return core_err_wrap(rc, "%s: model \"%s\" at precision \"%s\"", where(mk ? mk : root, w), md->name,
            sim_precision_name(s->precisions[i]));
      if (!p->rate[cp].present)
        return core_err_set(CORE_EINVAL,
            "%s: precision \"%s\" computes in %s, but profile '%s' has no %s compute rates; choose a precision the "
            "profile measured, or add its rates",
            where(pr ? pr : (prof ? prof : root), w), sim_precision_name(s->precisions[i]), core_prec_name(cp),
            s->profile_path, core_prec_name(cp));
    }
  }
  return 0;
}

/* simulation = { steps; seed; ranks; replications; max_replications;
 * tie_goodput; max_events; max_points; } */
static int parse_simulation(sim_scenario *s, const config_setting_t *root) {
  static const char *const simk[] = {
      "steps", "seed", "ranks", "replications", "max_replications", "tie_goodput", "max_events", "max_points", NULL};
  const config_setting_t *g;
  const char *str;
  long long v;
  int rc;
  s->steps = 10;
  s->seed = 1;
  s->job.replications = 100;
  s->job.max_replications = 1600;
  s->job.tie_goodput = SIM_DEFAULT_TIE_GOODPUT;
  s->job.max_events = SIM_DEFAULT_MAX_EVENTS;
  s->max_points = SIM_DEFAULT_MAX_POINTS;
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
  /* By default up to 16 times the replications to start with. */
  if ((rc = core_cfg_int(g, "max_replications", 0, 16 * v, v, 16000000, &v)) != 0)
    return rc;
  s->job.max_replications = (int)v;
  if ((rc = core_cfg_double(g, "tie_goodput", 0, SIM_DEFAULT_TIE_GOODPUT, 0, 1, &s->job.tie_goodput)) != 0 ||
      (rc = core_cfg_double(g, "max_events", 0, SIM_DEFAULT_MAX_EVENTS, 1e3, 1e15, &s->job.max_events)) != 0 ||
      (rc = core_cfg_int(g, "max_points", 0, SIM_DEFAULT_MAX_POINTS, 1, 1000000000000LL, &v)) != 0)
    return rc;
  s->max_points = (double)v;
  s->job.max_events_key = config_setting_get_member(g, "max_events");
  s->max_points_key = config_setting_get_member(g, "max_points");
  return 0;
}

/* cost (sim/cost.h), with every priced network needing a price of compute,
 * and advise (sim/objective.h), which may need both. */
static int parse_cost(sim_scenario *s, const config_setting_t *root) {
  int rc = sim_cost_parse(root, s->profile, &s->prices);
  if (rc)
    return rc;
  for (int i = 0; i < s->n_networks && !s->prices.priced; i++)
    if (s->networks[i].priced)
      return core_err_set(CORE_EINVAL,
          "%s:%d: network '%s' has a price but compute has none: add cost = { gpu_hour_usd = ...; } (or "
          "node_hour_usd), or price = { ... } to profile '%s'",
          s->path, s->networks[i].line, s->networks[i].name, s->profile_path);
  return sim_objective_parse(root, s->job.present, s->prices.priced, &s->objective);
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
    return core_err_set(CORE_EINVAL,
        "%s: output csv \"%s\" must be a plain file name, not empty, \".\" or \"..\" and without '/' (the directory "
        "comes from -o)",
        where(config_setting_get_member(g, "csv") ? config_setting_get_member(g, "csv") : g, w), str);
  snprintf(s->csv_name, sizeof s->csv_name, "%s", str);
  return 0;
}

/* name and description; the name defaults to the file's base name up to
 * its first '.'. */
static int parse_name(sim_scenario *s, const config_setting_t *root) {
  char w[4200];
  const char *str;
  int rc;
  const char *base = core_path_base(s->path);
  /* The default goes through a copy: printing s->name into itself overlaps. */
  char def_name[sizeof s->name];
  snprintf(def_name, sizeof def_name, "%.*s", (int)(strcspn(base, ".")), base);
  if ((rc = core_cfg_string(root, "name", 0, def_name, NULL, &str)) != 0)
    return rc;
  const config_setting_t *at = config_setting_get_member(root, "name");
  if (strchr(str, '/'))
    return core_err_set(CORE_EINVAL, "%s: scenario name \"%s\" names the CSV file, so it must not contain '/'",
        where(at ? at : root, w), str);
  /* Kept whole or refused: a cut name would write a CSV of another name. */
  if (!str[0] || strlen(str) >= sizeof s->name)
    return core_err_set(CORE_EINVAL,
        "%s: scenario name \"%.40s%s\" names the CSV file, so it must have 1 to %zu characters; %s it",
        where(at ? at : root, w), str, strlen(str) > 40 ? "..." : "", sizeof s->name - 1, str[0] ? "shorten" : "give");
  snprintf(s->name, sizeof s->name, "%s", str);
  if ((rc = core_cfg_string(root, "description", 0, "", NULL, &str)) != 0)
    return rc;
  snprintf(s->description, sizeof s->description, "%s", str);
  return 0;
}

/* profile = "FILE": required even where another one replaces it. */
static int parse_profile(sim_scenario *s, const config_setting_t *root) {
  char w[4200];
  const char *str;
  int rc;
  if ((rc = core_cfg_string(root, "profile", 1, NULL, NULL, &str)) != 0)
    return rc;
  const config_setting_t *set = config_setting_get_member(root, "profile");
  if (s->profile_override[0]) {
    /* Another profile for the same study (simulate --profile): checked
     * against the scenario exactly as its own would be. */
    snprintf(s->profile_path, sizeof s->profile_path, "%s", s->profile_override);
    if ((rc = core_profile_load(s->profile_path, &s->profile)) != 0)
      return core_err_wrap(rc, "--profile");
    return 0;
  }
  if ((rc = core_cfg_path(set, str, s->profile_path, sizeof s->profile_path)) != 0)
    return rc;
  if ((rc = core_profile_load(s->profile_path, &s->profile)) != 0)
    return core_err_wrap(rc, "%s: profile \"%s\"", where(set, w), str);
  return 0;
}

/* One model file of the scenario, loaded on a thread of its own when there
 * are several: the path, then the model or the failure's code and message
 * (messages are per thread). */
typedef struct model_job {
  char path[4096];
  core_model *m;
  int rc;
  char msg[2048];
} model_job;

static void *load_model_job(void *arg) {
  model_job *j = arg;
  j->rc = core_model_load(j->path, &j->m);
  if (j->rc)
    snprintf(j->msg, sizeof j->msg, "%s", core_err_msg());
  return NULL;
}

/* Every job whose path resolved, the others on threads while this one loads
 * the first: the files are independent, and parsing is a small study's
 * start-up (bench/NOTES.md, Start-up). A thread that cannot start loads here.
 * state[i]: 0 nothing to load, 1 to load here, 2 loading on th[i]; a job
 * is not read here while its thread runs. */
static void load_model_jobs(model_job *jobs, int n) {
  pthread_t *th = calloc((size_t)n, sizeof *th);
  char *state = calloc((size_t)n, 1);
  if (!th || !state) {
    for (int i = 0; i < n; i++)
      if (!jobs[i].rc)
        load_model_job(&jobs[i]);
    goto free_state;
  }
  for (int i = 0; i < n; i++)
    state[i] = !jobs[i].rc;
  for (int i = 1; i < n; i++)
    if (state[i] && pthread_create(&th[i], NULL, load_model_job, &jobs[i]) == 0)
      state[i] = 2;
  for (int i = 0; i < n; i++)
    if (state[i] == 1)
      load_model_job(&jobs[i]);
  for (int i = 1; i < n; i++)
    if (state[i] == 2)
      pthread_join(th[i], NULL);
free_state:
  free(state);
  free(th);
}

/* model = "FILE" or ["A", "B"]: models with names of their own, in the
 * order listed; the first failure in that order is the
 * one reported, as if they loaded one after another. */
static int parse_models(sim_scenario *s, const config_setting_t *root) {
  char w[4200];
  const char **strs;
  int rc, n;
  if ((rc = core_cfg_string_list(root, "model", 1, NULL, NULL, &strs, &n)) != 0)
    return rc;
  const config_setting_t *set = core_cfg_member(root, "model");
  s->models = calloc((size_t)n, sizeof *s->models);
  model_job *jobs = calloc((size_t)n, sizeof *jobs);
  if (!s->models || !jobs) {
    rc = core_err_set(CORE_ENOMEM, "out of memory loading models");
    goto free_jobs;
  }
  for (int i = 0; i < n; i++)
    if ((jobs[i].rc = core_cfg_path(set, strs[i], jobs[i].path, sizeof jobs[i].path)) != 0)
      snprintf(jobs[i].msg, sizeof jobs[i].msg, "%s", core_err_msg());
  load_model_jobs(jobs, n);
  for (int i = 0; i < n && !rc; i++) {
    if (jobs[i].rc) {
      core_err_set(jobs[i].rc, "%s", jobs[i].msg);
      rc = core_err_wrap(jobs[i].rc, "%s: model \"%s\"", where(set, w), strs[i]);
      break;
    }
    s->models[i] = jobs[i].m;
    jobs[i].m = NULL;
    s->n_models = i + 1;
    for (int j = 0; j < i && !rc; j++)
      if (strcmp(s->models[j]->name, s->models[i]->name) == 0)
        rc = core_err_set(CORE_EINVAL, "%s: two models are named '%s'; results could not tell them apart",
            where(set, w), s->models[i]->name);
  }
  s->n[SIM_DIM_MODEL] = s->n_models;
free_jobs:
  for (int i = 0; jobs && i < n; i++)
    core_model_free(jobs[i].m);
  free(jobs);
  free(strs);
  return rc;
}

/* A sweepable text key of g: its values in *strs (free() it; the texts are
 * borrowed), n of them, and room for as many values of size bytes in *vals. */
static int text_sweep(const config_setting_t *g, const char *key, const char *def, const char *const choices[],
    size_t size, const char ***strs, void **vals, int *n) {
  int rc = core_cfg_string_list(g, key, 0, def, choices, strs, n);
  if (rc)
    return rc;
  *vals = malloc(size * (size_t)*n);
  if (!*vals) {
    free(*strs);
    return core_err_set(CORE_ENOMEM, "out of memory");
  }
  return 0;
}

static int parse_training(sim_scenario *s, const config_setting_t *root) {
  static const char *const keys[] = {"batch", "precision", "optimizer", "attention", NULL};
  const config_setting_t *g;
  const char *str, **strs;
  void *vals;
  int rc, n;
  if ((rc = core_cfg_group(root, "training", 1, &g)) != 0 || (rc = core_cfg_check_keys(g, keys, "training")) != 0 ||
      (rc = core_cfg_int_list(g, "batch", 1, 0, 1, CORE_BATCH_MAX, &s->batch, &s->n[SIM_DIM_BATCH])) != 0 ||
      (rc = text_sweep(g, "precision", "fp32", prec_choices, sizeof *s->precisions, &strs, &vals, &n)) != 0)
    return rc;
  s->precisions = vals;
  for (int i = 0; i < n; i++)
    s->precisions[i] = (enum sim_precision)index_of(prec_choices, strs[i]);
  s->n[SIM_DIM_PRECISION] = n;
  free(strs);
  if ((rc = core_cfg_string(g, "optimizer", 0, "sgd", opt_choices, &str)) != 0)
    return rc;
  s->optimizer = (enum sim_optimizer)index_of(opt_choices, str);
  if ((rc = core_cfg_string(g, "attention", 0, "auto", attn_choices, &str)) != 0)
    return rc;
  s->attention = (enum sim_attention)index_of(attn_choices, str);
  return 0;
}

static int parse_cluster(sim_scenario *s, const config_setting_t *root) {
  static const char *const keys[] = {"nodes", "devices_per_node", NULL};
  char w[4200];
  const config_setting_t *g;
  int rc;
  if ((rc = core_cfg_group(root, "cluster", 1, &g)) != 0 || (rc = core_cfg_check_keys(g, keys, "cluster")) != 0 ||
      (rc = core_cfg_int_list(g, "nodes", 1, 0, 1, 1 << 20, &s->nodes, &s->n[SIM_DIM_NODES])) != 0 ||
      (rc = core_cfg_int_list(g, "devices_per_node", 1, 0, 1, 1024, &s->per_node, &s->n[SIM_DIM_PER_NODE])) != 0)
    return rc;
  for (int i = 0; i < s->n[SIM_DIM_NODES]; i++)
    for (int j = 0; j < s->n[SIM_DIM_PER_NODE]; j++)
      if (s->nodes[i] * s->per_node[j] > (1 << 24))
        return core_err_set(CORE_EINVAL, "%s: %lld nodes x %lld devices is more than %d ranks", where(g, w),
            s->nodes[i], s->per_node[j], 1 << 24);
  return 0;
}

static int parse_networks(sim_scenario *s, const config_setting_t *root) {
  const config_setting_t *set;
  int rc;
  if ((rc = core_cfg_list(root, "networks", 1, &set)) != 0 ||
      (rc = sim_network_parse_list(set, s->profile, s->profile_path, &s->networks, &s->n_networks)) != 0)
    return rc;
  s->n[SIM_DIM_NETWORK] = s->n_networks;
  return 0;
}

/* ddp.backend (by default the profile's devices': NCCL on GPUs) and
 * ddp.algorithm ("auto" is -1). */
static int parse_ddp_comm(sim_scenario *s, const config_setting_t *dg) {
  const char *def_backend = strcmp(s->profile->device_kind, "gpu") == 0 ? "nccl" : "gloo";
  const char **strs;
  void *vals;
  int rc, n;
  if ((rc = text_sweep(dg, "backend", def_backend, backend_choices, sizeof *s->backends, &strs, &vals, &n)) != 0)
    return rc;
  s->backends = vals;
  for (int i = 0; i < n; i++)
    s->backends[i] = strcmp(strs[i], "nccl") == 0 ? SIM_BACKEND_NCCL : SIM_BACKEND_GLOO;
  s->n[SIM_DIM_BACKEND] = n;
  free(strs);
  if ((rc = text_sweep(dg, "algorithm", "auto", algo_choices, sizeof *s->algorithms, &strs, &vals, &n)) != 0)
    return rc;
  s->algorithms = vals;
  for (int i = 0; i < n; i++) {
    enum sim_algo a;
    s->algorithms[i] = strcmp(strs[i], "auto") == 0 ? -1 : (sim_algo_parse(strs[i], &a), (int)a);
  }
  s->n[SIM_DIM_ALGORITHM] = n;
  free(strs);
  return 0;
}

/* ddp.compression: DDP's communication hook, core/vocab.h's forms. */
static int parse_ddp_compression(sim_scenario *s, const config_setting_t *dg) {
  char w[4200];
  const char **strs;
  void *vals;
  int rc, n;
  if ((rc = text_sweep(dg, "compression", "none", NULL, sizeof *s->compression, &strs, &vals, &n)) != 0)
    return rc;
  s->compression = vals;
  for (int i = 0; i < n && !rc; i++)
    if (core_compression_parse(strs[i], &s->compression[i]) != 0) {
      const config_setting_t *cs = config_setting_get_member(dg, "compression");
      rc = core_err_wrap(CORE_EINVAL, "%s", where(cs ? cs : dg, w));
    }
  s->n[SIM_DIM_COMPRESSION] = n;
  free(strs);
  return rc;
}

/* ddp.first_bucket_mb: MiB, or "cap" for each point's bucket_cap_mb. */
static int parse_first_bucket(sim_scenario *s, const config_setting_t *dg) {
  char w[4200];
  const config_setting_t *f = config_setting_get_member(dg, "first_bucket_mb");
  if (!f || config_setting_type(f) != CONFIG_TYPE_STRING)
    return core_cfg_double(dg, "first_bucket_mb", 0, 1.0, 0, 1e6, &s->first_bucket_mb);
  if (strcmp(config_setting_get_string(f), "cap") != 0)
    return core_err_set(CORE_EINVAL,
        "%s: bad value for 'first_bucket_mb': expected a number in [0, 1e+06] (MiB) or \"cap\" (each point's "
        "bucket_cap_mb)",
        where(f, w));
  s->first_bucket_mb = SIM_FIRST_BUCKET_CAP;
  return 0;
}

static int parse_ddp(sim_scenario *s, const config_setting_t *root) {
  static const char *const keys[] = {"backend", "algorithm", "bucket_cap_mb", "first_bucket_mb", "overlap",
      "find_unused_parameters", "gradient_as_bucket_view", "zero_optimizer", "timeout_s", "compression",
      "powersgd_min_rate", NULL};
  const config_setting_t *g;
  int rc;
  if ((rc = core_cfg_group(root, "ddp", 0, &g)) != 0)
    return rc;
  /* Without a ddp group every key takes its default: look them up in the
   * root, where the top-level key check has ruled them out. */
  const config_setting_t *dg = g ? g : root;
  if ((g && (rc = core_cfg_check_keys(g, keys, "ddp")) != 0) || (rc = parse_ddp_comm(s, dg)) != 0)
    return rc;
  if ((rc = core_cfg_double_list(dg, "bucket_cap_mb", 0, CORE_BUCKET_DEFAULT_CAP_MB, CORE_BUCKET_MIN_CAP_MB, 1e6,
           &s->bucket_cap_mb, &s->n[SIM_DIM_BUCKET_CAP])) != 0 ||
      (rc = core_cfg_bool_list(dg, "overlap", 0, 1, &s->overlap, &s->n[SIM_DIM_OVERLAP])) != 0 ||
      (rc = core_cfg_bool_list(dg, "find_unused_parameters", 0, 0, &s->find_unused, &s->n[SIM_DIM_FIND_UNUSED])) != 0 ||
      /* PyTorch's PowerSGD default min_compression_rate (powerSGD_hook.py). */
      (rc = core_cfg_double(dg, "powersgd_min_rate", 0, 2.0, 1e-3, 1e6, &s->powersgd_min_rate)) != 0 ||
      (rc = parse_first_bucket(s, dg)) != 0 ||
      (rc = core_cfg_bool(dg, "gradient_as_bucket_view", 0, 0, &s->gradient_as_bucket_view)) != 0 ||
      (rc = core_cfg_bool(dg, "zero_optimizer", 0, 0, &s->zero_optimizer)) != 0 ||
      (rc = core_cfg_double(dg, "timeout_s", 0, 0, 1e-3, 1e7, &s->timeout_s)) != 0)
    return rc;
  return parse_ddp_compression(s, dg);
}

static int parse_job(sim_scenario *s, const config_setting_t *root) {
  return sim_jobcfg_parse(root, s->profile, s->profile_path, &s->job, &s->n[SIM_DIM_FAIL_RATE]);
}

/* No sweep holds a value twice, in either spelling of its key (the named
 * lists, networks and fabrics, check their names where they are read). */
static int check_repeats(sim_scenario *s, const config_setting_t *root) {
  int rc = 0;
  for (int d = 0; !rc && d < SIM_N_DIMS; d++)
    for (int other = 0; !rc && other < 2; other++) {
      const char *path = sim_dim_path(s, (enum sim_dim)d, other), *dot = path ? strchr(path, '.') : NULL;
      char group[64];
      if (!path || d == SIM_DIM_NETWORK || d == SIM_DIM_FABRIC)
        continue;
      snprintf(group, sizeof group, "%.*s", dot ? (int)(dot - path) : 0, path);
      const config_setting_t *g = dot ? config_setting_get_member(root, group) : root;
      if (g && config_setting_is_group(g))
        rc = core_cfg_distinct(g, dot ? dot + 1 : path);
    }
  return rc;
}

/* The study's size and its scheduled failures within their bounds
 * (sim/bounds.h). */
static int check_points(sim_scenario *s, const config_setting_t *root) { return sim_bounds_points(s, root); }
static int check_schedule(sim_scenario *s, const config_setting_t *root) { return sim_bounds_schedule(s, root); }

/* DDP settings a traced job cannot follow (sim/replay.h); zero_optimizer's
 * collectives are not a fabric's, which are DDP's allreduces only. */
static int check_zero(sim_scenario *s, const config_setting_t *root) {
  char w[4200];
  const config_setting_t *ddp = config_setting_get_member(root, "ddp");
  const config_setting_t *z = ddp ? config_setting_get_member(ddp, "zero_optimizer") : NULL;
  const config_setting_t *v = ddp ? config_setting_get_member(ddp, "gradient_as_bucket_view") : NULL;
  int rc = 0;
  for (int m = 0; !rc && m < s->n_models; m++)
    rc = sim_replay_check_ddp(s->models[m]->traced, s->models[m]->name, s->zero_optimizer, s->gradient_as_bucket_view,
        where(s->zero_optimizer && z ? z
              : v                    ? v
                                     : root,
            w));
  if (rc || !s->zero_optimizer)
    return rc;
  if (s->n_fabrics)
    return core_err_set(CORE_EINVAL,
        "%s: zero_optimizer = true is not costed on a fabric, which models DDP's allreduces only; simulate it "
        "without the fabric group (on the networks), or set zero_optimizer = false",
        where(z ? z : root, w));
  return 0;
}

/* The scenario's groups in the order they are read (a later one may use
 * what an earlier one read: the profile, the networks), then the checks
 * across them. */
static int (*const parsers[])(sim_scenario *s, const config_setting_t *root) = {parse_name, parse_profile, parse_models,
    parse_training, parse_cluster, parse_networks, parse_ddp, sim_fabric_parse, parse_simulation, parse_job, parse_cost,
    parse_output, check_repeats, check_points, cross_check, check_zero, check_schedule};

static int parse(sim_scenario *s) {
  static const char *const top_keys[] = {"name", "description", "profile", "model", "training", "cluster", "networks",
      "fabric", "ddp", "simulation", "output", "job", "failures", "checkpoint", "cost", "advise", NULL};
  const config_setting_t *root = core_cfg_root(&s->cfg);
  int rc = core_cfg_expect_kind(root, CORE_CFG_SCENARIO);
  if (rc == 0)
    rc = core_cfg_check_keys(root, top_keys, "the scenario");
  for (size_t i = 0; !rc && i < sizeof parsers / sizeof *parsers; i++)
    rc = parsers[i](s, root);
  return rc;
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

int sim_scenario_load(const char *path, sim_scenario **out) { return sim_scenario_load_with(path, NULL, out); }

int sim_scenario_load_with(const char *path, const char *profile, sim_scenario **out) {
  *out = NULL;
  if (profile && !*profile) /* not the scenario's profile, which an empty --profile would silently leave */
    return core_err_set(CORE_EUSAGE, "--profile is empty: name the profile file to use instead of the scenario's");
  sim_scenario *s = calloc(1, sizeof *s);
  if (!s)
    return core_err_set(CORE_ENOMEM, "out of memory loading scenario %s", path);
  s->layer_cache = sim_layer_cache_new();
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
  s->layer_cache = sim_layer_cache_new();
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
  const sim_job_cfg *j = &s->job;
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
  p->fail_rate_h = j->rate_h[idx[SIM_DIM_FAIL_RATE]];
  p->weibull_shape = j->shape[idx[SIM_DIM_WEIBULL_SHAPE]];
  p->detect_s = j->detect_s[idx[SIM_DIM_DETECT]];
  p->mttr_h = j->mttr_h[idx[SIM_DIM_MTTR]];
  p->restart_s = j->restart_s[idx[SIM_DIM_RESTART]];
  p->load_s = j->load_s[idx[SIM_DIM_LOAD]];
  p->ckpt_cost_s = j->cost_s[idx[SIM_DIM_CKPT_COST]];
  p->ckpt_async = j->async[idx[SIM_DIM_CKPT_MODE]];
  p->spares = j->spares[idx[SIM_DIM_SPARES]];
  p->ckpt_every = j->every[idx[SIM_DIM_CKPT_EVERY]];
  long job_points = 1;
  for (int d = SIM_N_STEP_DIMS; d < SIM_N_DIMS; d++)
    job_points *= s->n[d];
  p->step_index = index / job_points;
  p->group = index / s->n[SIM_DIM_CKPT_EVERY];
  /* The failures of a point depend on its nodes, devices per node and
   * failure distribution alone: points alike in these draw the same ones. */
  long crn = 0;
  for (int d = 0; d < SIM_N_DIMS; d++) {
    int keep = d == SIM_DIM_NODES || d == SIM_DIM_PER_NODE || d == SIM_DIM_FAIL_RATE || d == SIM_DIM_WEIBULL_SHAPE;
    crn = crn * s->n[d] + (keep ? idx[d] : 0);
  }
  p->crn_index = crn;
  /* The jitter of a point's steps depends on its world alone: points that
   * differ in the network, backend or DDP's settings draw the same, so that
   * their differences are the model's, not noise. */
  long step_crn = 0;
  for (int d = 0; d < SIM_N_DIMS; d++)
    step_crn = step_crn * s->n[d] + (d == SIM_DIM_NODES || d == SIM_DIM_PER_NODE ? idx[d] : 0);
  p->step_crn_index = step_crn;
}

double sim_scenario_timeout(const sim_scenario *s, enum sim_backend b) {
  if (s->timeout_s > 0)
    return s->timeout_s;
  return b == SIM_BACKEND_NCCL ? SIM_NCCL_TIMEOUT_S : SIM_GLOO_TIMEOUT_S;
}

void sim_point_name(const sim_point *p, char *buf, size_t n) {
  snprintf(buf, n, "point %ld (model %s, %d x %d, batch %d, network %s, %s)", p->index, p->model->name, p->nodes,
      p->per_node, p->batch, p->network->name, sim_backend_name(p->backend));
}

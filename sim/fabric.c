/* The fabric group of a scenario: reading, checking against the study, and
 * the layout of switches for a node count (sim/fabric.h). */
#include "fabric.h"

#include "sim/scenario.h"

#include "core/err.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* file:line of a setting; a fabric built in code (tests) has none. */
static const char *where(const config_setting_t *s, char *buf) {
  if (!s) {
    snprintf(buf, 4200, "fabric");
    return buf;
  }
  return core_cfg_where(s, buf, 4200);
}

static const char *const tier_names[SIM_N_TIERS] = {"leaf", "spine", "core"};

void sim_fabric_free_all(sim_fabric *f, int n) {
  for (int i = 0; f && i < n; i++) {
    for (int j = 0; j < f[i].n_jobs; j++)
      core_model_free(f[i].jobs[j].model);
    free(f[i].jobs);
  }
  free(f);
}

/* ports split into down and up by oversubscription o = down/up. */
static int split_ports(int ports, double o, int *down, int *up) {
  double d = ports * o / (1.0 + o);
  *down = (int)llround(d);
  *up = ports - *down;
  return fabs(d - *down) < 1e-9 && *up >= 1 && *down >= 1;
}

static int parse_tier(sim_fabric *f, const config_setting_t *g, int t, int top) {
  static const char *const keys[] = {"ports", "oversubscription", "background", NULL};
  char w[4200], what[64];
  const config_setting_t *tg;
  long long v;
  int rc;
  sim_fabric_tier *x = &f->tier[t];
  if ((rc = core_cfg_group(g, tier_names[t], t < SIM_TIER_CORE, &tg)) != 0 || !tg)
    return rc;
  snprintf(what, sizeof what, "fabric.%s", tier_names[t]);
  if ((rc = core_cfg_check_keys(tg, keys, what)) != 0 || (rc = core_cfg_int(tg, "ports", 1, 0, 2, 65536, &v)) != 0 ||
      (rc = core_cfg_double(tg, "oversubscription", 0, 1.0, 1.0, 100.0, &x->oversub)) != 0 ||
      (rc = core_cfg_double(tg, "background", 0, 0.0, 0.0, 0.99, &x->background)) != 0)
    return rc;
  x->present = 1;
  x->ports = (int)v;
  x->at = tg;
  for (const char *const *k = keys + 1; top && *k; k++)
    if (config_setting_get_member(tg, *k))
      return core_err_set(CORE_EINVAL,
          "%s: the %s is the fabric's top tier: all its ports face down, so '%s' does not apply; remove it, or add a "
          "tier above",
          where(config_setting_get_member(tg, *k), w), tier_names[t], *k);
  int down, up;
  if (!top && !split_ports(x->ports, x->oversub, &down, &up))
    return core_err_set(CORE_EINVAL,
        "%s: %d ports do not split %g:1 into whole down and up ports (%g down); choose ports that divide, e.g. %d for "
        "%g:1, or another oversubscription",
        where(config_setting_get_member(tg, "ports"), w), x->ports, x->oversub,
        x->ports * x->oversub / (1.0 + x->oversub),
        (int)(ceil(x->ports / (1.0 + x->oversub)) * (1.0 + x->oversub) + 0.5), x->oversub);
  return 0;
}

static int parse_jobs(sim_scenario *s, sim_fabric *f, const config_setting_t *g) {
  static const char *const keys[] = {"name", "model", "nodes", "batch", "precision", "traffic", NULL};
  static const char *const precs[] = {"fp32", "tf32", "fp16", "bf16", "amp_fp16", "amp_bf16", NULL};
  const config_setting_t *list;
  char w[4200], path[4096];
  int rc;
  if ((rc = core_cfg_list(g, "neighbours", 0, &list)) != 0 || !list)
    return rc;
  f->n_jobs = config_setting_length(list);
  f->jobs = calloc((size_t)f->n_jobs, sizeof *f->jobs);
  if (!f->jobs)
    return core_err_set(CORE_ENOMEM, "out of memory reading neighbours");
  for (int i = 0; i < f->n_jobs; i++) {
    const config_setting_t *jg = config_setting_get_elem(list, (unsigned)i);
    sim_fabric_job *j = &f->jobs[i];
    const char *name, *model, *prec;
    long long v;
    j->at = jg;
    j->precision = -1;
    if ((rc = core_cfg_check_keys(jg, keys, "a neighbour")) != 0 ||
        (rc = core_cfg_string(jg, "name", 0, "neighbour", NULL, &name)) != 0 ||
        (rc = core_cfg_string(jg, "model", 1, NULL, NULL, &model)) != 0 ||
        (rc = core_cfg_int(jg, "nodes", 1, 0, 1, 1 << 20, &v)) != 0)
      return rc;
    j->nodes = (int)v;
    if ((rc = core_cfg_int(jg, "batch", 1, 0, 1, 1 << 24, &v)) != 0 ||
        (rc = core_cfg_string(jg, "precision", 0, "", precs, &prec)) != 0 ||
        (rc = core_cfg_bool(jg, "traffic", 0, 1, &j->traffic)) != 0)
      return rc;
    j->batch = (int)v;
    for (int k = 0; prec[0] && precs[k]; k++)
      if (!strcmp(precs[k], prec))
        j->precision = k;
    const config_setting_t *nm = config_setting_get_member(jg, "name");
    if (nm)
      snprintf(j->name, sizeof j->name, "%s", name);
    else
      snprintf(j->name, sizeof j->name, "neighbour %d", i + 1); /* unnamed ones apart in messages */
    for (int k = 0; k < i; k++)
      if (!strcmp(f->jobs[k].name, j->name))
        return core_err_set(CORE_EINVAL, "%s: a second neighbour named '%s' (the first is at line %d); name each once",
            where(nm ? nm : jg, w), j->name, config_setting_source_line(f->jobs[k].at));
    const config_setting_t *ms = config_setting_get_member(jg, "model");
    if ((rc = core_cfg_path(ms, model, path, sizeof path)) != 0 || (rc = core_model_load(path, &j->model)) != 0)
      return core_err_wrap(rc, "%s: neighbour model \"%s\"", where(ms, w), model);
    if (j->model->traced)
      return core_err_set(CORE_EINVAL,
          "%s: neighbour '%s' is a traced job; a neighbour is predicted from its layers, so give a model file of "
          "layers",
          where(ms, w), j->name);
    if (j->precision >= 0 && !j->model->measured &&
        !s->profile->rate[sim_precision_compute((enum sim_precision)j->precision)].present)
      return core_err_set(CORE_EINVAL, "%s: precision \"%s\" has no compute rates in profile '%s'",
          where(config_setting_get_member(jg, "precision"), w), prec, s->profile_path);
  }
  return 0;
}

/* NVLS reduces in NVLink SHARP switches: NCCL enables it only where the
 * device reports multicast support (ncclNvlsInit; see docs/fabrics.md),
 * which NVSwitch systems of Hopper and later GPUs have. Told by the device
 * name a calibration or a datasheet profile gives: an A100's or V100's
 * NVSwitches carry NVLink but do not reduce. */
static int has_nvlink_sharp(const core_profile *p) {
  static const char *const gens[] = {"H100", "H200", "H800", "H20", "B100", "B200", "B300", NULL};
  char up[sizeof p->device_name];
  size_t i = 0;
  for (; p->device_name[i] && i + 1 < sizeof up; i++)
    up[i] = (char)toupper((unsigned char)p->device_name[i]);
  up[i] = '\0';
  for (int k = 0; gens[k]; k++)
    if (!strcmp(p->device_kind, "gpu") && strstr(up, gens[k]))
      return 1;
  return 0;
}

static int parse_in_network(const sim_scenario *s, sim_fabric *f, const config_setting_t *g) {
  static const char *const kinds[] = {"sharp", "nvls", NULL};
  const char **v = NULL;
  char w[4200];
  int n, rc;
  if ((rc = core_cfg_distinct_as(g, "in_network", "name each kind once")) != 0 ||
      (rc = core_cfg_string_list(g, "in_network", 0, "none", NULL, &v, &n)) != 0)
    return rc;
  for (int i = 0; i < n && !rc; i++) {
    if (!strcmp(v[i], "none"))
      continue;
    if (!strcmp(v[i], kinds[0]))
      f->sharp = 1;
    else if (!strcmp(v[i], kinds[1]))
      f->nvls = 1;
    else {
      rc = core_err_set(CORE_EINVAL,
          "%s: in_network \"%s\" is not \"sharp\" (switches that reduce, NCCL's CollNet), \"nvls\" (NVSwitches that "
          "reduce, NVLink SHARP) or \"none\"",
          where(config_setting_get_member(g, "in_network"), w), v[i]);
      break;
    }
  }
  free(v);
  if (!rc && f->nvls && f->intra != SIM_INTRA_NVSWITCH)
    rc = core_err_set(CORE_EINVAL,
        "%s: in_network \"nvls\" reduces in the NVSwitches of a node, but fabric '%s' %s; set intra = "
        "\"nvswitch\" if its nodes have them, or drop \"nvls\"",
        where(config_setting_get_member(g, "in_network"), w), f->name,
        f->intra == SIM_INTRA_NVLINK ? "has intra = \"nvlink\""
        : f->intra == SIM_INTRA_PCIE ? "has intra = \"pcie\""
                                     : "leaves intra to the profile, whose node may not have NVSwitches");
  if (!rc && f->nvls && !has_nvlink_sharp(s->profile))
    rc = core_err_set(CORE_EINVAL,
        "%s: in_network \"nvls\" needs NVLink SHARP, which only third-generation NVSwitches have (systems of Hopper "
        "and later GPUs: H100, H200, B200), but profile '%s' is of a %s, '%s'; drop \"nvls\" (NCCL runs ring or tree "
        "over these NVSwitches), or use the profile of such a GPU",
        where(config_setting_get_member(g, "in_network"), w), s->profile_path,
        strcmp(s->profile->device_kind, "gpu") ? "CPU" : "GPU", s->profile->device_name);
  return rc;
}

static int parse_one(sim_scenario *s, sim_fabric *f, const config_setting_t *g, int named) {
  static const char *const keys[] = {"name", "leaf", "spine", "core", "rail_optimized", "leaves_per_rack", "intra",
      "intra_GBps", "in_network", "placement", "rank_order", "neighbours", NULL};
  static const char *const intras[] = {"profile", "nvswitch", "nvlink", "pcie", NULL};
  static const char *const places[] = {"packed", "interleaved", "random", NULL};
  static const char *const orders[] = {"rack", "random", NULL};
  const char *str;
  char w[4200];
  long long v;
  int rc;
  f->at = g;
  f->line = (int)config_setting_source_line(g);
  if ((rc = core_cfg_check_keys(g, keys, "fabric")) != 0 ||
      (rc = core_cfg_string(g, "name", named, "fabric", NULL, &str)) != 0)
    return rc;
  if (strlen(str) >= sizeof f->name ||
      strspn(str, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") != strlen(str))
    return core_err_set(CORE_EINVAL,
        "%s: fabric name \"%.40s\" may use only letters, digits and . _ + -, up to %zu of them (it labels CSV rows and "
        "plots)",
        where(config_setting_get_member(g, "name"), w), str, sizeof f->name - 1);
  snprintf(f->name, sizeof f->name, "%s", str);
  f->n_tiers = config_setting_get_member(g, "core") ? 3 : 2;
  for (int t = 0; t < f->n_tiers; t++)
    if ((rc = parse_tier(f, g, t, t == f->n_tiers - 1)) != 0)
      return rc;
  if ((rc = core_cfg_bool(g, "rail_optimized", 0, 0, &f->rail_optimized)) != 0 ||
      (rc = core_cfg_int(g, "leaves_per_rack", 0, 0, 1, 4096, &v)) != 0)
    return rc;
  f->leaves_per_rack = (int)v;
  if ((rc = core_cfg_string(g, "intra", 0, "profile", intras, &str)) != 0)
    return rc;
  for (int k = 0; intras[k]; k++)
    if (!strcmp(intras[k], str))
      f->intra = (enum sim_intra_kind)k;
  if ((rc = core_cfg_double(g, "intra_GBps", 0, 0.0, 0.1, 1e5, &f->intra_GBps)) != 0)
    return rc;
  if (f->intra_GBps > 0 && f->intra == SIM_INTRA_PROFILE)
    return core_err_set(CORE_EINVAL,
        "%s: intra_GBps gives the bandwidth of the node's own fabric; say which it is with intra = \"nvswitch\", "
        "\"nvlink\" or \"pcie\"",
        where(config_setting_get_member(g, "intra_GBps"), w));
  if ((rc = parse_in_network(s, f, g)) != 0 || (rc = core_cfg_string(g, "placement", 0, "packed", places, &str)) != 0)
    return rc;
  for (int k = 0; places[k]; k++)
    if (!strcmp(places[k], str))
      f->placement = (enum sim_placement)k;
  if ((rc = core_cfg_string(g, "rank_order", 0, "rack", orders, &str)) != 0)
    return rc;
  f->rank_order = strcmp(str, "random") ? SIM_ORDER_RACK : SIM_ORDER_RANDOM;
  return parse_jobs(s, f, g);
}

/* The scenario's network entry at index i, for its keys' lines. */
static const config_setting_t *network_setting(const config_setting_t *root, int i) {
  const config_setting_t *l = config_setting_get_member(root, "networks");
  return l ? config_setting_get_elem(l, (unsigned)i) : root;
}

/* Every network of the study must give a line rate the fabric can carry. */
static int check_networks(const sim_scenario *s, const sim_fabric *f, const config_setting_t *root) {
  char w[4200];
  for (int i = 0; i < s->n_networks; i++) {
    const sim_network *n = &s->networks[i];
    const config_setting_t *ns = network_setting(root, i);
    if (n->from_profile)
      return core_err_set(CORE_EINVAL,
          "%s: network '%s' takes its link from the profile, but fabric '%s' (line %d) builds its links from a line "
          "rate; give the network gbps, latency_us and nics_per_node instead",
          where(ns, w), n->name, f->name, f->line);
    if (config_setting_get_member(ns, "oversubscription"))
      return core_err_set(CORE_EINVAL,
          "%s: fabric '%s' (line %d) sets oversubscription per tier; remove network '%s''s oversubscription",
          where(config_setting_get_member(ns, "oversubscription"), w), f->name, f->line, n->name);
  }
  return 0;
}

/* Every (network, node count) of the study fits the fabric. */
static int check_sizes(const sim_scenario *s, const sim_fabric *f, const config_setting_t *root) {
  const config_setting_t *cl = config_setting_get_member(root, "cluster");
  const config_setting_t *nd = cl ? config_setting_get_member(cl, "nodes") : root;
  long others = 0;
  char w[4200];
  for (int j = 0; j < f->n_jobs; j++)
    others += f->jobs[j].nodes;
  for (int i = 0; i < s->n_networks; i++)
    for (int k = 0; k < s->n[SIM_DIM_NODES]; k++) {
      const sim_network *n = &s->networks[i];
      sim_fabric_layout L;
      int rc =
          sim_fabric_layout_for(f, s->nodes[k] + others, n->nics_per_node, n->gbps * 1e9 / 8.0 * n->efficiency, &L);
      if (rc) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", core_err_msg());
        return core_err_set(rc, "%s (network '%s': %d NICs a node; cluster.nodes = %lld at %s%s)", msg, n->name,
            n->nics_per_node, s->nodes[k], where(nd, w), others ? ", plus the neighbours' nodes" : "");
      }
    }
  return 0;
}

/* Is the algorithm in-network (collnet, nvls, nvls_tree), and does the
 * fabric offer what it needs? Returns 0, or CORE_EINVAL with the reason. */
static int algo_ok(const sim_fabric *f, int nodes, enum sim_algo a, char *why, size_t n);

/* In-network algorithms need a fabric that has them (at every node count
 * of the study). */
static int check_algorithms(const sim_scenario *s, const config_setting_t *root) {
  const config_setting_t *ddp = config_setting_get_member(root, "ddp");
  const config_setting_t *al = ddp ? config_setting_get_member(ddp, "algorithm") : NULL;
  char w[4200], why[512];
  for (int a = 0; a < s->n[SIM_DIM_ALGORITHM]; a++) {
    enum sim_algo x = (enum sim_algo)s->algorithms[a];
    if (s->algorithms[a] < 0 || !sim_algo_in_network(x))
      continue;
    if (!s->n_fabrics)
      return core_err_set(CORE_EINVAL,
          "%s: algorithm \"%s\" reduces in the network, and the scenario has no fabric group to say which switches "
          "can; add fabric = { ...; in_network = [\"%s\"]; }, or use \"auto\", ring or tree",
          where(al ? al : root, w), sim_algo_name(x), x == SIM_ALGO_COLLNET ? "sharp" : "nvls");
    for (int f = 0; f < s->n_fabrics; f++)
      for (int k = 0; k < s->n[SIM_DIM_NODES]; k++)
        if (algo_ok(&s->fabrics[f], (int)s->nodes[k], x, why, sizeof why))
          return core_err_set(CORE_EINVAL, "%s: algorithm \"%s\" on fabric '%s' (line %d) at %lld nodes: %s",
              where(al ? al : root, w), sim_algo_name(x), s->fabrics[f].name, s->fabrics[f].line, s->nodes[k], why);
    for (int k = 0; x != SIM_ALGO_COLLNET && k < s->n[SIM_DIM_PER_NODE]; k++)
      if (!sim_fabric_nvls_runs((int)s->per_node[k]))
        return core_err_set(CORE_EINVAL,
            "%s: algorithm \"%s\" at %lld GPUs per node: NCCL runs NVLS only with more than 2 GPUs in a node "
            "(ncclNvlsInit); use \"auto\", ring or tree, or more devices_per_node",
            where(al ? al : root, w), sim_algo_name(x), s->per_node[k]);
  }
  return 0;
}

int sim_fabric_parse(sim_scenario *s, const config_setting_t *root) {
  const config_setting_t *g = config_setting_get_member(root, "fabric");
  char w[4200];
  int rc = 0;
  s->n_fabrics = 0;
  s->n[SIM_DIM_FABRIC] = 1;
  if (g) {
    int list = config_setting_type(g) == CONFIG_TYPE_LIST;
    if (!list && config_setting_type(g) != CONFIG_TYPE_GROUP)
      return core_err_set(CORE_EINVAL,
          "%s: fabric must be a group { ... } or a list of named groups ( { name = ...; ... }, ... )", where(g, w));
    int n = list ? config_setting_length(g) : 1;
    if (n < 1)
      return core_err_set(
          CORE_EINVAL, "%s: the fabric list is empty; give at least one fabric, or remove the key", where(g, w));
    s->fabrics = calloc((size_t)n, sizeof *s->fabrics);
    if (!s->fabrics)
      return core_err_set(CORE_ENOMEM, "out of memory reading fabrics");
    s->n_fabrics = n;
    for (int i = 0; i < n && !rc; i++) {
      const config_setting_t *fg = list ? config_setting_get_elem(g, (unsigned)i) : g;
      if (config_setting_type(fg) != CONFIG_TYPE_GROUP)
        return core_err_set(CORE_EINVAL, "%s: each fabric of the list must be a group { ... }", where(fg, w));
      rc = parse_one(s, &s->fabrics[i], fg, list);
      for (int j = 0; !rc && j < i; j++)
        if (!strcmp(s->fabrics[j].name, s->fabrics[i].name))
          rc = core_err_set(CORE_EINVAL, "%s: fabric name '%s' is already used at line %d; names must be unique",
              where(fg, w), s->fabrics[i].name, s->fabrics[j].line);
      if (!rc)
        rc = check_networks(s, &s->fabrics[i], root);
      if (!rc)
        rc = check_sizes(s, &s->fabrics[i], root);
    }
    s->n[SIM_DIM_FABRIC] = n;
  }
  return rc ? rc : check_algorithms(s, root);
}

/* Leaves a rack has, by default: one per rail when rail-optimized. */
static int rack_leaves(const sim_fabric *f, int rails) {
  return f->leaves_per_rack ? f->leaves_per_rack : f->rail_optimized ? rails : 1;
}

static const config_setting_t *key_or(const config_setting_t *g, const char *key) {
  const config_setting_t *k = g ? config_setting_get_member(g, key) : NULL;
  return k ? k : g;
}

/* Leaves and racks: how nodes attach. */
static int layout_leaves(const sim_fabric *f, int rails, sim_fabric_layout *L) {
  char w[4200];
  const sim_fabric_tier *leaf = &f->tier[SIM_TIER_LEAF];
  split_ports(leaf->ports, leaf->oversub, &L->leaf_down, &L->leaf_up);
  L->leaves_per_rack = rack_leaves(f, rails);
  const config_setting_t *lpr = key_or(f->at, f->leaves_per_rack ? "leaves_per_rack" : "rail_optimized");
  if (f->rail_optimized) {
    if (L->leaves_per_rack < rails)
      return core_err_set(CORE_EINVAL,
          "%s: fabric '%s' is rail-optimized (NIC k of every node on leaf k of its rack), but a rack has %d leaves for "
          "nodes of %d NICs; set leaves_per_rack to %d or a multiple, or rail_optimized = false",
          where(lpr, w), f->name, L->leaves_per_rack, rails, rails);
    if (L->leaves_per_rack % rails)
      return core_err_set(CORE_EINVAL,
          "%s: %d leaves a rack do not divide among %d rails; set leaves_per_rack to a multiple of %d", where(lpr, w),
          L->leaves_per_rack, rails, rails);
    L->nodes_per_leaf = L->leaf_down;
    L->nodes_per_rack = L->leaves_per_rack / rails * L->leaf_down;
  } else {
    if (L->leaf_down % rails)
      return core_err_set(CORE_EINVAL,
          "%s: a leaf's %d node ports do not divide among nodes of %d NICs (all of a node's NICs on one leaf); choose "
          "leaf ports whose node-facing share is a multiple of %d, or rail_optimized = true",
          where(key_or(leaf->at, "ports"), w), L->leaf_down, rails, rails);
    L->nodes_per_leaf = L->leaf_down / rails;
    L->nodes_per_rack = L->leaves_per_rack * L->nodes_per_leaf;
  }
  return 0;
}

/* Pods a fabric can have: one under its spines, or one a core port. */
static long max_pods(const sim_fabric *f) { return f->n_tiers == 3 ? f->tier[SIM_TIER_CORE].ports : 1; }

/* Spines and pods; the most nodes the fabric can hold. */
static int layout_pods(const sim_fabric *f, sim_fabric_layout *L) {
  char w[4200];
  const sim_fabric_tier *spine = &f->tier[SIM_TIER_SPINE];
  if (f->n_tiers == 3)
    split_ports(spine->ports, spine->oversub, &L->spine_down, &L->spine_up);
  else
    L->spine_down = spine->ports, L->spine_up = 0;
  L->leaves_per_pod = L->spine_down;
  if (L->leaves_per_pod % L->leaves_per_rack)
    return core_err_set(CORE_EINVAL,
        "%s: a spine's %d leaf-facing ports do not hold whole racks of %d leaves; choose spine ports whose down share "
        "is a multiple of %d, or another leaves_per_rack",
        where(key_or(spine->at, "ports"), w), L->leaves_per_pod, L->leaves_per_rack, L->leaves_per_rack);
  L->racks_per_pod = L->leaves_per_pod / L->leaves_per_rack;
  L->spines_per_pod = L->leaf_up;
  L->max_nodes = max_pods(f) * L->racks_per_pod * L->nodes_per_rack;
  return 0;
}

int sim_fabric_layout_for(const sim_fabric *f, long nodes, int rails, double nic_Bps, sim_fabric_layout *L) {
  char w[4200];
  int rc;
  memset(L, 0, sizeof *L);
  L->rails = rails;
  if ((rc = layout_leaves(f, rails, L)) != 0 || (rc = layout_pods(f, L)) != 0)
    return rc;
  if (nodes > L->max_nodes) {
    const sim_fabric_tier *top = &f->tier[f->n_tiers - 1];
    return core_err_set(CORE_EINVAL,
        "%s: fabric '%s' holds at most %ld nodes (%ld pod%s of %d racks of %d nodes under %d-port %s switches), but "
        "%ld are asked for; use switches with more ports, %s, or fewer nodes",
        where(key_or(top->at, "ports"), w), f->name, L->max_nodes, max_pods(f), max_pods(f) == 1 ? "" : "s",
        L->racks_per_pod, L->nodes_per_rack, top->ports, tier_names[f->n_tiers - 1], nodes,
        f->n_tiers == 3 ? "less oversubscription" : "a core tier above the spines");
  }
  L->nodes = (int)nodes;
  L->racks = (int)((nodes + L->nodes_per_rack - 1) / L->nodes_per_rack);
  L->leaves = L->racks * L->leaves_per_rack;
  L->pods = (L->racks + L->racks_per_pod - 1) / L->racks_per_pod;
  L->nic_Bps = nic_Bps;
  L->leaf_up_Bps = L->leaf_up * nic_Bps * (1.0 - f->tier[SIM_TIER_LEAF].background);
  L->pod_up_Bps = (double)L->spines_per_pod * L->spine_up * nic_Bps * (1.0 - f->tier[SIM_TIER_SPINE].background);
  return 0;
}

int sim_fabric_nvls_runs(int per_node) { return per_node > 2; }

static int algo_ok(const sim_fabric *f, int nodes, enum sim_algo a, char *why, size_t n) {
  const char *msg = NULL;
  if (a == SIM_ALGO_COLLNET && !f->sharp)
    msg = "its switches do not reduce; add in_network = [\"sharp\"] if they do (SHARP), or use \"auto\", ring or tree";
  else if ((a == SIM_ALGO_NVLS || a == SIM_ALGO_NVLS_TREE) && !f->nvls)
    msg = "its nodes' NVSwitches do not reduce; add in_network = [\"nvls\"] (with intra = \"nvswitch\") if they do, or "
          "use \"auto\", ring or tree";
  else if (a == SIM_ALGO_NVLS && nodes > 1 && !f->sharp)
    msg = "NVLink SHARP across nodes reduces in the network as well (NCCL runs NVLS on several nodes only with "
          "CollNet); add \"sharp\" to in_network, or use nvls_tree";
  if (!msg)
    return 0;
  snprintf(why, n, "%s", msg);
  return CORE_EINVAL;
}

#include "profile.h"

#include "afile.h"
#include "cfg.h"
#include "err.h"

#include <gsl/gsl_interp.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const jitter_choices[] = {"none", "normal", "lognormal", "shifted_exponential", NULL};
static const char *const backend_choices[] = {"nccl", "gloo", NULL};
static const char *const scope_choices[] = {"intra", "inter", NULL};
static const char *const kind_choices[] = {"gpu", "cpu", NULL};
static const char *const algo_choices[] = {"ring", "tree", "hierarchical", "halving_doubling",
                                           "ring_chunked", "bcube", "gloo_ring", "segmented_ring",
                                           NULL};

const char *core_jitter_name(enum core_jitter_dist d) {
  return (unsigned)d < 4 ? jitter_choices[d] : "?";
}

core_profile *core_profile_new(void) {
  core_profile *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->format = 1;
  p->compute_slowdown = 1.0;
  p->comm_slowdown = 1.0;
  p->cpu_slowdown = 1.0;
  return p;
}

void core_profile_free(core_profile *p) {
  if (!p)
    return;
  for (int i = 0; i < CORE_N_PREC; i++) {
    free(p->rate[i].gemm_flops);
    free(p->rate[i].tflops);
  }
  for (int i = 0; i < p->n_colls; i++) {
    free(p->colls[i].fits);
    free(p->colls[i].bytes);
    free(p->colls[i].time_us);
  }
  free(p->colls);
  free(p->jitter_samples);
  free(p);
}

static int copy_string(const config_setting_t *g, const char *key, int required, const char *def,
                       const char *const choices[], char *dst, size_t n) {
  const char *s;
  int rc = core_cfg_string(g, key, required, def, choices, &s);
  if (rc)
    return rc;
  snprintf(dst, n, "%s", s ? s : "");
  return 0;
}

/* A fixed array of numbers (not a sweep): an empty array is allowed when
 * allow_empty, a scalar is not. */
static int number_array(const config_setting_t *g, const char *key, int required, double lo,
                        double hi, int allow_empty, double **vals, int *n) {
  char w[4200];
  const config_setting_t *s = config_setting_get_member(g, key);
  *vals = NULL;
  *n = 0;
  if (!s) {
    if (required)
      return core_err_set(CORE_EINVAL, "%s: group is missing key '%s'; add it (an array of numbers, e.g. %s = [1.0, 2.0];)",
                          core_cfg_where(g, w, sizeof w), key, key);
    return 0;
  }
  if (!config_setting_is_array(s))
    return core_err_set(CORE_EINVAL, "%s: bad value for '%s': expected an array of numbers in [ ]",
                        core_cfg_where(s, w, sizeof w), key);
  if (config_setting_length(s) == 0) {
    if (allow_empty)
      return 0;
    return core_err_set(CORE_EINVAL, "%s: '%s' is empty; expected at least one number",
                        core_cfg_where(s, w, sizeof w), key);
  }
  return core_cfg_double_list(g, key, 1, 0, lo, hi, vals, n);
}

static int parse_rate(const config_setting_t *e, core_profile *p) {
  static const char *const keys[] = {"precision", "gemm_flops", "tflops", "peak_tflops", NULL};
  char w[4200];
  const char *s;
  int rc;
  enum core_prec prec = CORE_PREC_FP32;
  if ((rc = core_cfg_check_keys(e, keys, "a compute entry")) != 0)
    return rc;
  if ((rc = core_cfg_string(e, "precision", 1, NULL, core_prec_names, &s)) != 0)
    return rc;
  core_prec_parse(s, &prec);
  core_prof_rate *r = &p->rate[prec];
  if (r->present)
    return core_err_set(CORE_EINVAL, "%s: precision \"%s\" appears twice in compute; merge the entries",
                        core_cfg_where(e, w, sizeof w), s);
  int nx, ny;
  if ((rc = number_array(e, "gemm_flops", 1, 1, 1e30, 0, &r->gemm_flops, &nx)) != 0)
    return rc;
  if ((rc = number_array(e, "tflops", 1, 1e-9, 1e9, 0, &r->tflops, &ny)) != 0 ||
      (rc = core_cfg_double(e, "peak_tflops", 0, 0, 1e-9, 1e9, &r->peak_tflops)) != 0)
    return rc;
  if (nx != ny)
    return core_err_set(CORE_EINVAL, "%s: gemm_flops has %d values but tflops has %d; they pair up one to one",
                        core_cfg_where(e, w, sizeof w), nx, ny);
  /* Rates are interpolated in log(size) (core_profile_flops), and GSL aborts
   * the process on x values that are not strictly increasing: sizes so close
   * that their logarithms are equal are not ascending either. */
  for (int i = 1; i < nx; i++)
    if (!(log(r->gemm_flops[i]) > log(r->gemm_flops[i - 1])))
      return core_err_set(CORE_EINVAL, "%s: gemm_flops must be strictly ascending (value %d is %.17g after %.17g)",
                          core_cfg_where(e, w, sizeof w), i, r->gemm_flops[i], r->gemm_flops[i - 1]);
  r->n = nx;
  r->present = 1;
  return 0;
}

static int parse_fit(const config_setting_t *f, core_prof_fit *fit) {
  static const char *const keys[] = {"min_bytes", "max_bytes", "alpha_us", "algbw_GBps", "r2",
                                     "alpha_us_ci", "algbw_GBps_ci", NULL};
  char w[4200];
  int rc;
  if ((rc = core_cfg_check_keys(f, keys, "a fit")) != 0)
    return rc;
  if ((rc = core_cfg_double(f, "min_bytes", 1, 0, 0, 1e15, &fit->min_bytes)) != 0 ||
      (rc = core_cfg_double(f, "max_bytes", 1, 0, 0, 1e15, &fit->max_bytes)) != 0 ||
      (rc = core_cfg_double(f, "alpha_us", 1, 0, 0, 1e9, &fit->alpha_us)) != 0 ||
      (rc = core_cfg_double(f, "algbw_GBps", 1, 0, 1e-9, 1e9, &fit->algbw_GBps)) != 0 ||
      (rc = core_cfg_double(f, "r2", 0, NAN, -1e9, 1, &fit->r2)) != 0)
    return rc;
  if (!(fit->max_bytes > fit->min_bytes))
    return core_err_set(CORE_EINVAL, "%s: max_bytes (%g) must exceed min_bytes (%g)",
                        core_cfg_where(f, w, sizeof w), fit->max_bytes, fit->min_bytes);
  double *a = NULL, *b = NULL;
  int na = 0, nb = 0;
  if ((rc = number_array(f, "alpha_us_ci", 0, -1e9, 1e9, 0, &a, &na)) != 0 ||
      (rc = number_array(f, "algbw_GBps_ci", 0, -1e9, 1e9, 0, &b, &nb)) != 0)
    goto done;
  if (na || nb) {
    if (na != 2 || nb != 2) {
      rc = core_err_set(CORE_EINVAL, "%s: alpha_us_ci and algbw_GBps_ci go together, each [low, high]",
                        core_cfg_where(f, w, sizeof w));
      goto done;
    }
    fit->has_ci = 1;
    fit->alpha_us_lo = a[0];
    fit->alpha_us_hi = a[1];
    fit->algbw_GBps_lo = b[0];
    fit->algbw_GBps_hi = b[1];
  }
done:
  free(a);
  free(b);
  return rc;
}

static int parse_coll(const config_setting_t *e, core_prof_coll *c) {
  static const char *const keys[] = {"backend", "op", "algorithm", "scope", "ranks", "nodes",
                                     "fits", "points", NULL};
  static const char *const point_keys[] = {"bytes", "time_us", NULL};
  char w[4200];
  int rc;
  long long v;
  const config_setting_t *fits, *pts;
  if ((rc = core_cfg_check_keys(e, keys, "a collective entry")) != 0)
    return rc;
  if ((rc = copy_string(e, "backend", 1, NULL, backend_choices, c->backend, sizeof c->backend)) != 0 ||
      (rc = copy_string(e, "op", 1, NULL, core_coll_names, c->op, sizeof c->op)) != 0 ||
      (rc = copy_string(e, "algorithm", 1, NULL, algo_choices, c->algorithm, sizeof c->algorithm)) != 0 ||
      (rc = copy_string(e, "scope", 1, NULL, scope_choices, c->scope, sizeof c->scope)) != 0)
    return rc;
  if ((rc = core_cfg_int(e, "ranks", 1, 0, 2, 1 << 24, &v)) != 0)
    return rc;
  c->ranks = (int)v;
  if ((rc = core_cfg_int(e, "nodes", 1, 0, 1, 1 << 24, &v)) != 0)
    return rc;
  c->nodes = (int)v;
  if (c->nodes > c->ranks || c->ranks % c->nodes != 0)
    return core_err_set(CORE_EINVAL, "%s: %d ranks do not spread evenly over %d nodes",
                        core_cfg_where(e, w, sizeof w), c->ranks, c->nodes);
  if (strcmp(c->scope, "intra") == 0 && c->nodes != 1)
    return core_err_set(CORE_EINVAL, "%s: an intra-node entry has nodes = 1 (it has %d)",
                        core_cfg_where(e, w, sizeof w), c->nodes);
  if (strcmp(c->scope, "inter") == 0 && c->nodes < 2)
    return core_err_set(CORE_EINVAL, "%s: an inter-node entry spans at least 2 nodes", core_cfg_where(e, w, sizeof w));
  if ((rc = core_cfg_list(e, "fits", 1, &fits)) != 0)
    return rc;
  c->n_fits = config_setting_length(fits);
  c->fits = calloc((size_t)c->n_fits, sizeof *c->fits);
  if (!c->fits)
    return core_err_set(CORE_ENOMEM, "out of memory reading fits");
  for (int i = 0; i < c->n_fits; i++) {
    if ((rc = parse_fit(config_setting_get_elem(fits, (unsigned)i), &c->fits[i])) != 0)
      return rc;
    if (i > 0 && c->fits[i].min_bytes != c->fits[i - 1].max_bytes)
      return core_err_set(CORE_EINVAL, "%s: fit %d starts at %g bytes but fit %d ends at %g; fits must tile the size range in order",
                          core_cfg_where(config_setting_get_elem(fits, (unsigned)i), w, sizeof w), i,
                          c->fits[i].min_bytes, i - 1, c->fits[i - 1].max_bytes);
  }
  if ((rc = core_cfg_group(e, "points", 0, &pts)) != 0)
    return rc;
  if (pts) {
    int nb, nt;
    if ((rc = core_cfg_check_keys(pts, point_keys, "points")) != 0)
      return rc;
    if ((rc = number_array(pts, "bytes", 1, 0, 1e15, 1, &c->bytes, &nb)) != 0 ||
        (rc = number_array(pts, "time_us", 1, 0, 1e12, 1, &c->time_us, &nt)) != 0)
      return rc;
    if (nb != nt)
      return core_err_set(CORE_EINVAL, "%s: points has %d sizes but %d times; they pair up one to one",
                          core_cfg_where(pts, w, sizeof w), nb, nt);
    c->n_points = nb;
  }
  return 0;
}

/* price = { gpu_hour_usd | node_hour_usd; }: one of them. */
static int parse_price(const config_setting_t *g, core_profile *p) {
  static const char *const keys[] = {"gpu_hour_usd", "node_hour_usd", NULL};
  char w[4200];
  const config_setting_t *s;
  int rc;
  if ((rc = core_cfg_group(g, "price", 0, &s)) != 0 || !s)
    return rc;
  if ((rc = core_cfg_check_keys(s, keys, "price")) != 0 ||
      (rc = core_cfg_double(s, "gpu_hour_usd", 0, 0, 1e-9, 1e9, &p->price_gpu_hour_usd)) != 0 ||
      (rc = core_cfg_double(s, "node_hour_usd", 0, 0, 1e-9, 1e9, &p->price_node_hour_usd)) != 0)
    return rc;
  if (!config_setting_get_member(s, "gpu_hour_usd") == !config_setting_get_member(s, "node_hour_usd"))
    return core_err_set(CORE_EINVAL, "%s: price takes one of gpu_hour_usd (per device and hour) and node_hour_usd (per node and hour)",
                        core_cfg_where(s, w, sizeof w));
  return 0;
}

int core_profile_from_setting(const config_setting_t *root, const char *path, core_profile **out) {
  static const char *const top_keys[] = {"profile", NULL};
  static const char *const keys[] = {"format", "name", "provenance", "meta", "device", "host",
                                     "compute", "collectives", "jitter", "storage", "restart",
                                     "interference", "hooks", "price", NULL};
  static const char *const meta_keys[] = {"host", "date", "backend", "versions", "nodes",
                                          "ranks_per_node", "link_gbps", "nics_per_node", NULL};
  static const char *const device_keys[] = {"kind", "name", "memory_GBps", "update_GBps", "host_link_GBps",
                                            "peak_memory_GBps", "nvlink_GBps", NULL};
  static const char *const host_keys[] = {"reduce_GBps", "launch_us", NULL};
  static const char *const jitter_keys[] = {"distribution", "params", "samples", NULL};
  static const char *const storage_keys[] = {"write_GBps", "read_GBps", NULL};
  static const char *const restart_keys[] = {"process_start_s", "rendezvous_s", "comm_init_s", NULL};
  static const char *const interf_keys[] = {"compute_slowdown", "comm_slowdown", "cpu_slowdown", "busbw_GBps",
                                            "comm_cpus", "rank_cpus", NULL};
  static const char *const hook_keys[] = {"cast_GBps", "cast_bf16_GBps", "orth_gflops", "sum_fp32_GBps",
                                          "sum_fp16_GBps", "sum_bf16_GBps", "psgd_gemm_GBps", "psgd_pass_GBps",
                                          "psgd_sync_us", NULL};
  char w[4200];
  const config_setting_t *g, *s;
  int rc;
  long long v;
  const char *str;
  *out = NULL;
  core_profile *p = core_profile_new();
  if (!p)
    return core_err_set(CORE_ENOMEM, "out of memory loading profile %s", path);
  snprintf(p->path, sizeof p->path, "%s", path);

  if ((rc = core_cfg_check_keys(root, top_keys, "a profile file")) != 0 ||
      (rc = core_cfg_group(root, "profile", 1, &g)) != 0 ||
      (rc = core_cfg_check_keys(g, keys, "profile")) != 0)
    goto fail_free;
  if ((rc = core_cfg_int(g, "format", 1, 1, 1, 1, &v)) != 0)
    goto fail_free;
  p->format = (int)v;
  if ((rc = copy_string(g, "name", 1, NULL, NULL, p->name, sizeof p->name)) != 0 ||
      (rc = copy_string(g, "provenance", 1, NULL, NULL, p->provenance, sizeof p->provenance)) != 0)
    goto fail_free;

  if ((rc = core_cfg_group(g, "meta", 1, &s)) != 0 || (rc = core_cfg_check_keys(s, meta_keys, "meta")) != 0 ||
      (rc = copy_string(s, "host", 0, "", NULL, p->host, sizeof p->host)) != 0 ||
      (rc = copy_string(s, "date", 0, "", NULL, p->date, sizeof p->date)) != 0 ||
      (rc = copy_string(s, "backend", 0, "", NULL, p->backend, sizeof p->backend)) != 0 ||
      (rc = copy_string(s, "versions", 0, "", NULL, p->versions, sizeof p->versions)) != 0)
    goto fail_free;
  if ((rc = core_cfg_int(s, "nodes", 0, 1, 1, 1 << 24, &v)) != 0)
    goto fail_free;
  p->nodes = (int)v;
  if ((rc = core_cfg_int(s, "ranks_per_node", 0, 1, 1, 1 << 16, &v)) != 0)
    goto fail_free;
  p->ranks_per_node = (int)v;
  if ((rc = core_cfg_double(s, "link_gbps", 0, 0, 0, 1e5, &p->link_gbps)) != 0 ||
      (rc = core_cfg_int(s, "nics_per_node", 0, 0, 1, 1024, &v)) != 0)
    goto fail_free;
  p->nics_per_node = (int)v;

  if ((rc = core_cfg_group(g, "device", 1, &s)) != 0 ||
      (rc = core_cfg_check_keys(s, device_keys, "device")) != 0 ||
      (rc = copy_string(s, "kind", 1, NULL, kind_choices, p->device_kind, sizeof p->device_kind)) != 0 ||
      (rc = copy_string(s, "name", 0, "", NULL, p->device_name, sizeof p->device_name)) != 0 ||
      (rc = core_cfg_double(s, "memory_GBps", 1, 0, 1e-3, 1e6, &p->memory_GBps)) != 0 ||
      (rc = core_cfg_double(s, "update_GBps", 0, 0, 1e-3, 1e6, &p->update_GBps)) != 0 ||
      (rc = core_cfg_double(s, "host_link_GBps", strcmp(p->device_kind, "gpu") == 0, 0, 1e-3, 1e6,
                            &p->host_link_GBps)) != 0 ||
      (rc = core_cfg_double(s, "peak_memory_GBps", 0, 0, 1e-3, 1e6, &p->peak_memory_GBps)) != 0 ||
      (rc = core_cfg_double(s, "nvlink_GBps", 0, 0, 1e-3, 1e6, &p->nvlink_GBps)) != 0)
    goto fail_free;

  if ((rc = core_cfg_group(g, "host", 1, &s)) != 0 || (rc = core_cfg_check_keys(s, host_keys, "host")) != 0 ||
      (rc = core_cfg_double(s, "reduce_GBps", 1, 0, 1e-3, 1e6, &p->reduce_GBps)) != 0 ||
      (rc = core_cfg_double(s, "launch_us", 0, 0, 0, 1e6, &p->launch_us)) != 0)
    goto fail_free;

  if ((rc = core_cfg_list(g, "compute", 1, &s)) != 0)
    goto fail_free;
  for (int i = 0; i < config_setting_length(s); i++)
    if ((rc = parse_rate(config_setting_get_elem(s, (unsigned)i), p)) != 0)
      goto fail_free;

  if ((rc = core_cfg_list_or_empty(g, "collectives", 1, &s)) != 0)
    goto fail_free;
  p->n_colls = config_setting_length(s);
  p->colls = calloc((size_t)p->n_colls, sizeof *p->colls);
  if (!p->colls && p->n_colls) {
    rc = core_err_set(CORE_ENOMEM, "out of memory loading profile %s", path);
    goto fail_free;
  }
  for (int i = 0; i < p->n_colls; i++) {
    const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    if ((rc = parse_coll(e, &p->colls[i])) != 0)
      goto fail_free;
    const core_prof_coll *c = &p->colls[i];
    for (int j = 0; j < i; j++) {
      const core_prof_coll *d = &p->colls[j];
      if (!strcmp(c->backend, d->backend) && !strcmp(c->op, d->op) &&
          !strcmp(c->algorithm, d->algorithm) && !strcmp(c->scope, d->scope)) {
        rc = core_err_set(CORE_EINVAL, "%s: a second %s %s %s %s entry; keep one per backend, op, algorithm and scope",
                          core_cfg_where(e, w, sizeof w), c->backend, c->op, c->algorithm, c->scope);
        goto fail_free;
      }
    }
  }

  if ((rc = core_cfg_group(g, "jitter", 0, &s)) != 0)
    goto fail_free;
  if (s) {
    double *params = NULL;
    int np = 0;
    if ((rc = core_cfg_check_keys(s, jitter_keys, "jitter")) != 0 ||
        (rc = core_cfg_string(s, "distribution", 1, NULL, jitter_choices, &str)) != 0)
      goto fail_free;
    for (int d = 0; d < 4; d++)
      if (!strcmp(str, jitter_choices[d]))
        p->jitter = (enum core_jitter_dist)d;
    if ((rc = number_array(s, "params", p->jitter != CORE_JITTER_NONE, -1e6, 1e6, 0, &params, &np)) != 0)
      goto fail_free;
    if (p->jitter != CORE_JITTER_NONE) {
      int bad = np != 2;
      /* Relative step times: bounds far beyond any real machine keep the
       * distribution's mean and tail finite in double precision. */
      if (!bad && p->jitter == CORE_JITTER_NORMAL)
        bad = !(params[0] > 0 && params[1] >= 0 && params[1] <= 10 * params[0]);
      if (!bad && p->jitter == CORE_JITTER_LOGNORMAL)
        bad = !(params[0] >= -10 && params[0] <= 10 && params[1] >= 0 && params[1] <= 3);
      if (!bad && p->jitter == CORE_JITTER_SHIFTED_EXP)
        bad = !(params[0] >= 0 && params[1] > 0 && params[0] <= 1e6 && params[1] <= 1e6);
      if (bad) {
        free(params);
        rc = core_err_set(CORE_EINVAL, "%s: jitter params for \"%s\" must be %s",
                          core_cfg_where(s, w, sizeof w), str,
                          p->jitter == CORE_JITTER_NORMAL ? "[mean > 0, 0 <= sd <= 10 mean]"
                          : p->jitter == CORE_JITTER_LOGNORMAL ? "[zeta in [-10, 10], sigma in [0, 3]]"
                                                               : "[shift in [0, 1e6], mean_excess in (0, 1e6]]");
        goto fail_free;
      }
      p->jitter_params[0] = params[0];
      p->jitter_params[1] = params[1];
    } else if (np) {
      free(params);
      rc = core_err_set(CORE_EINVAL, "%s: distribution \"none\" takes no params; remove them", core_cfg_where(s, w, sizeof w));
      goto fail_free;
    }
    free(params);
    if ((rc = number_array(s, "samples", 0, 0, 1e6, 1, &p->jitter_samples, &p->n_jitter_samples)) != 0)
      goto fail_free;
  }

  if ((rc = core_cfg_group(g, "storage", 0, &s)) != 0)
    goto fail_free;
  if (s && ((rc = core_cfg_check_keys(s, storage_keys, "storage")) != 0 ||
            (rc = core_cfg_double(s, "write_GBps", 1, 0, 1e-6, 1e6, &p->write_GBps)) != 0 ||
            (rc = core_cfg_double(s, "read_GBps", 1, 0, 1e-6, 1e6, &p->read_GBps)) != 0))
    goto fail_free;

  if ((rc = core_cfg_group(g, "restart", 0, &s)) != 0)
    goto fail_free;
  if (s && ((rc = core_cfg_check_keys(s, restart_keys, "restart")) != 0 ||
            (rc = core_cfg_double(s, "process_start_s", 1, 0, 0, 1e6, &p->process_start_s)) != 0 ||
            (rc = core_cfg_double(s, "rendezvous_s", 1, 0, 0, 1e6, &p->rendezvous_s)) != 0 ||
            (rc = core_cfg_double(s, "comm_init_s", 1, 0, 0, 1e6, &p->comm_init_s)) != 0))
    goto fail_free;

  if ((rc = core_cfg_group(g, "interference", 0, &s)) != 0)
    goto fail_free;
  if (s && ((rc = core_cfg_check_keys(s, interf_keys, "interference")) != 0 ||
            (rc = core_cfg_double(s, "compute_slowdown", 1, 1, 1, 100, &p->compute_slowdown)) != 0 ||
            (rc = core_cfg_double(s, "comm_slowdown", 0, 1, 1, 100, &p->comm_slowdown)) != 0 ||
            (rc = core_cfg_double(s, "cpu_slowdown", 0, 1, 1, 100, &p->cpu_slowdown)) != 0 ||
            (rc = core_cfg_double(s, "busbw_GBps", 0, 0, 1e-9, 1e6, &p->interf_busbw_GBps)) != 0 ||
            (rc = core_cfg_double(s, "comm_cpus", 0, 0, 1e-6, 1e6, &p->interf_comm_cpus)) != 0 ||
            (rc = core_cfg_double(s, "rank_cpus", 0, 0, 1e-3, 1e6, &p->interf_rank_cpus)) != 0))
    goto fail_free;
  if ((p->interf_busbw_GBps > 0) != (p->interf_comm_cpus > 0) ||
      (p->interf_busbw_GBps > 0) != (p->interf_rank_cpus > 0)) {
    rc = core_err_set(CORE_EINVAL, "%s: interference: busbw_GBps, comm_cpus and rank_cpus go together (the rate "
                      "the factors were measured at, the CPUs it took and those a rank has): give all three or none",
                      core_cfg_where(s, w, sizeof w));
    goto fail_free;
  }

  if ((rc = core_cfg_group(g, "hooks", 0, &s)) != 0)
    goto fail_free;
  if (s && ((rc = core_cfg_check_keys(s, hook_keys, "hooks")) != 0 ||
            (rc = core_cfg_double(s, "cast_GBps", 0, 0, 1e-6, 1e6, &p->cast_GBps)) != 0 ||
            (rc = core_cfg_double(s, "cast_bf16_GBps", 0, 0, 1e-6, 1e6, &p->cast_bf16_GBps)) != 0 ||
            (rc = core_cfg_double(s, "orth_gflops", 0, 0, 1e-6, 1e9, &p->orth_gflops)) != 0 ||
            (rc = core_cfg_double(s, "sum_fp32_GBps", 0, 0, 1e-6, 1e6, &p->sum_fp32_GBps)) != 0 ||
            (rc = core_cfg_double(s, "sum_fp16_GBps", 0, 0, 1e-6, 1e6, &p->sum_fp16_GBps)) != 0 ||
            (rc = core_cfg_double(s, "sum_bf16_GBps", 0, 0, 1e-6, 1e6, &p->sum_bf16_GBps)) != 0 ||
            (rc = core_cfg_double(s, "psgd_gemm_GBps", 0, 0, 1e-6, 1e6, &p->psgd_gemm_GBps)) != 0 ||
            (rc = core_cfg_double(s, "psgd_pass_GBps", 0, 0, 1e-6, 1e6, &p->psgd_pass_GBps)) != 0 ||
            (rc = core_cfg_double(s, "psgd_sync_us", 0, 0, 0, 1e7, &p->psgd_sync_us)) != 0))
    goto fail_free;
  if ((rc = parse_price(g, p)) != 0)
    goto fail_free;

  *out = p;
  return 0;
fail_free:
  core_profile_free(p);
  return rc;
}

int core_profile_load(const char *path, core_profile **out) {
  core_cfg c;
  int rc = core_cfg_load(&c, path, "profile");
  if (rc)
    return rc;
  rc = core_profile_from_setting(core_cfg_root(&c), path, out);
  core_cfg_free(&c);
  return rc;
}

/* --- writing ------------------------------------------------------------ */

static void put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', f);
    if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

/* libconfig reads "1" as an integer, so floats always carry a '.' or 'e'. */
static void put_num(FILE *f, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", v);
  if (!strpbrk(buf, ".eEni"))
    strcat(buf, ".0");
  fputs(buf, f);
}

/* "; key = v" after a group's first setting. */
static void put_field(FILE *f, const char *key, double v) {
  fprintf(f, "; %s = ", key);
  put_num(f, v);
}

static void put_array(FILE *f, const double *v, int n) {
  fputc('[', f);
  for (int i = 0; i < n; i++) {
    if (i)
      fputs(", ", f);
    put_num(f, v[i]);
  }
  fputc(']', f);
}

int core_profile_write(const core_profile *p, const char *path) {
  core_afile a;
  int rc = core_afile_open(&a, path);
  if (rc)
    return rc;
  FILE *f = a.f;
  fprintf(f, "# ddpsim profile: read by `ddpsim simulate`, written by `ddpsim calibrate` and `ddpsim import`.\n");
  fprintf(f, "profile = {\n  format = %d;\n  name = ", p->format);
  put_str(f, p->name);
  fputs(";\n  provenance = ", f);
  put_str(f, p->provenance);
  fputs(";\n  meta = { host = ", f);
  put_str(f, p->host);
  fputs("; date = ", f);
  put_str(f, p->date);
  fputs("; backend = ", f);
  put_str(f, p->backend);
  fputs("; versions = ", f);
  put_str(f, p->versions);
  fprintf(f, "; nodes = %d; ranks_per_node = %d;", p->nodes, p->ranks_per_node);
  if (p->link_gbps > 0) {
    fputs(" link_gbps = ", f);
    put_num(f, p->link_gbps);
    fputc(';', f);
  }
  if (p->nics_per_node > 0)
    fprintf(f, " nics_per_node = %d;", p->nics_per_node);
  fputs(" };\n", f);
  fputs("  device = { kind = ", f);
  put_str(f, p->device_kind);
  fputs("; name = ", f);
  put_str(f, p->device_name);
  put_field(f, "memory_GBps", p->memory_GBps);
  if (p->update_GBps > 0)
    put_field(f, "update_GBps", p->update_GBps);
  if (p->host_link_GBps > 0) {
    put_field(f, "host_link_GBps", p->host_link_GBps);
  }
  if (p->peak_memory_GBps > 0)
    put_field(f, "peak_memory_GBps", p->peak_memory_GBps);
  if (p->nvlink_GBps > 0)
    put_field(f, "nvlink_GBps", p->nvlink_GBps);
  fputs("; };\n  host = { reduce_GBps = ", f);
  put_num(f, p->reduce_GBps);
  if (p->launch_us > 0)
    put_field(f, "launch_us", p->launch_us);
  fputs("; };\n  compute = (", f);
  int first = 1;
  for (int i = 0; i < CORE_N_PREC; i++) {
    const core_prof_rate *r = &p->rate[i];
    if (!r->present)
      continue;
    fprintf(f, "%s\n    { precision = \"%s\";\n      gemm_flops = ", first ? "" : ",", core_prec_names[i]);
    put_array(f, r->gemm_flops, r->n);
    fputs(";\n      tflops = ", f);
    put_array(f, r->tflops, r->n);
    if (r->peak_tflops > 0)
      put_field(f, "peak_tflops", r->peak_tflops);
    fputs("; }", f);
    first = 0;
  }
  fputs("\n  );\n  collectives = (", f);
  for (int i = 0; i < p->n_colls; i++) {
    const core_prof_coll *c = &p->colls[i];
    fprintf(f, "%s\n    { backend = \"%s\"; op = \"%s\"; algorithm = \"%s\"; scope = \"%s\"; ranks = %d; nodes = %d;\n      fits = (",
            i ? "," : "", c->backend, c->op, c->algorithm, c->scope, c->ranks, c->nodes);
    for (int j = 0; j < c->n_fits; j++) {
      const core_prof_fit *t = &c->fits[j];
      fprintf(f, "%s\n        { min_bytes = ", j ? "," : "");
      put_num(f, t->min_bytes);
      put_field(f, "max_bytes", t->max_bytes);
      put_field(f, "alpha_us", t->alpha_us);
      put_field(f, "algbw_GBps", t->algbw_GBps);
      if (!isnan(t->r2)) {
        fputs("; r2 = ", f);
        put_num(f, t->r2);
      }
      if (t->has_ci) {
        double ac[2] = {t->alpha_us_lo, t->alpha_us_hi}, bc[2] = {t->algbw_GBps_lo, t->algbw_GBps_hi};
        fputs(";\n          alpha_us_ci = ", f);
        put_array(f, ac, 2);
        fputs("; algbw_GBps_ci = ", f);
        put_array(f, bc, 2);
      }
      fputs("; }", f);
    }
    fputs("\n      );", f);
    if (c->n_points) {
      fputs("\n      points = { bytes = ", f);
      put_array(f, c->bytes, c->n_points);
      fputs(";\n                 time_us = ", f);
      put_array(f, c->time_us, c->n_points);
      fputs("; };", f);
    }
    fputs("\n    }", f);
  }
  fputs("\n  );\n", f);
  if (p->jitter != CORE_JITTER_NONE || p->n_jitter_samples) {
    fprintf(f, "  jitter = { distribution = \"%s\";", core_jitter_name(p->jitter));
    if (p->jitter != CORE_JITTER_NONE) {
      fputs(" params = ", f);
      put_array(f, p->jitter_params, 2);
      fputc(';', f);
    }
    if (p->n_jitter_samples) {
      fputs("\n    samples = ", f);
      put_array(f, p->jitter_samples, p->n_jitter_samples);
      fputc(';', f);
    }
    fputs(" };\n", f);
  }
  if (p->write_GBps > 0) {
    fputs("  storage = { write_GBps = ", f);
    put_num(f, p->write_GBps);
    put_field(f, "read_GBps", p->read_GBps);
    fputs("; };\n", f);
  }
  if (p->process_start_s > 0 || p->rendezvous_s > 0 || p->comm_init_s > 0) {
    fputs("  restart = { process_start_s = ", f);
    put_num(f, p->process_start_s);
    put_field(f, "rendezvous_s", p->rendezvous_s);
    put_field(f, "comm_init_s", p->comm_init_s);
    fputs("; };\n", f);
  }
  fputs("  interference = { compute_slowdown = ", f);
  put_num(f, p->compute_slowdown);
  if (p->comm_slowdown != 1.0) {
    put_field(f, "comm_slowdown", p->comm_slowdown);
  }
  if (p->cpu_slowdown != 1.0) {
    put_field(f, "cpu_slowdown", p->cpu_slowdown);
  }
  if (p->interf_busbw_GBps > 0) {
    put_field(f, "busbw_GBps", p->interf_busbw_GBps);
    put_field(f, "comm_cpus", p->interf_comm_cpus);
    put_field(f, "rank_cpus", p->interf_rank_cpus);
  }
  fputs("; };\n", f);
  const struct {
    const char *key;
    double v;
  } hooks[] = {{"cast_GBps", p->cast_GBps},         {"cast_bf16_GBps", p->cast_bf16_GBps},
               {"orth_gflops", p->orth_gflops},
               {"sum_fp32_GBps", p->sum_fp32_GBps}, {"sum_fp16_GBps", p->sum_fp16_GBps},
               {"sum_bf16_GBps", p->sum_bf16_GBps}, {"psgd_gemm_GBps", p->psgd_gemm_GBps},
               {"psgd_pass_GBps", p->psgd_pass_GBps}, {"psgd_sync_us", p->psgd_sync_us}};
  int any = 0;
  for (size_t i = 0; i < sizeof hooks / sizeof *hooks; i++) {
    if (hooks[i].v <= 0)
      continue;
    fprintf(f, "%s %s = ", any++ ? "" : "  hooks = {", hooks[i].key);
    put_num(f, hooks[i].v);
    fputc(';', f);
  }
  if (any)
    fputs(" };\n", f);
  if (p->price_gpu_hour_usd > 0 || p->price_node_hour_usd > 0) {
    fprintf(f, "  price = { %s = ", p->price_gpu_hour_usd > 0 ? "gpu_hour_usd" : "node_hour_usd");
    put_num(f, p->price_gpu_hour_usd > 0 ? p->price_gpu_hour_usd : p->price_node_hour_usd);
    fputs("; };\n", f);
  }
  fputs("};\n", f);
  return core_afile_commit(&a);
}

/* --- queries ------------------------------------------------------------ */

double core_profile_peak_flops(const core_profile *p, enum core_prec prec) {
  return p->rate[prec].present ? p->rate[prec].peak_tflops * 1e12 : 0;
}

double core_profile_flops(const core_profile *p, enum core_prec prec, double flops) {
  const core_prof_rate *r = &p->rate[prec];
  if (!r->present || r->n == 0)
    return 0;
  if (r->n == 1 || flops <= r->gemm_flops[0])
    return r->tflops[0] * 1e12;
  if (flops >= r->gemm_flops[r->n - 1])
    return r->tflops[r->n - 1] * 1e12;
  /* GEMM efficiency rises with size roughly linearly in log(size), so
   * interpolate (GSL, linear) over log-sizes. Called once per layer when a
   * point is set up, not per event. */
  double *lx = malloc(sizeof *lx * (size_t)r->n);
  double y = r->tflops[r->n - 1];
  gsl_interp *it = gsl_interp_alloc(gsl_interp_linear, (size_t)r->n);
  if (lx && it) {
    for (int i = 0; i < r->n; i++)
      lx[i] = log(r->gemm_flops[i]);
    if (gsl_interp_init(it, lx, r->tflops, (size_t)r->n) == 0)
      y = gsl_interp_eval(it, lx, r->tflops, log(flops), NULL);
  }
  gsl_interp_free(it);
  free(lx);
  return y * 1e12;
}

const core_prof_coll *core_profile_coll(const core_profile *p, const char *backend,
                                        const char *op, const char *algorithm,
                                        const char *scope) {
  for (int i = 0; i < p->n_colls; i++) {
    const core_prof_coll *c = &p->colls[i];
    if (!strcmp(c->backend, backend) && !strcmp(c->op, op) && !strcmp(c->algorithm, algorithm) &&
        !strcmp(c->scope, scope))
      return c;
  }
  return NULL;
}

const core_prof_fit *core_prof_coll_fit(const core_prof_coll *c, double bytes) {
  for (int i = 0; i < c->n_fits; i++)
    if (bytes < c->fits[i].max_bytes)
      return &c->fits[i];
  return &c->fits[c->n_fits - 1];
}

const core_prof_coll *core_profile_allreduce(const core_profile *p, const char *backend,
                                             const char *scope) {
  static const char *const pref[] = {"ring", "segmented_ring", "ring_chunked", "halving_doubling",
                                     "bcube", "gloo_ring", "tree", NULL};
  for (const char *const *a = pref; *a; a++) {
    const core_prof_coll *c = core_profile_coll(p, backend, "allreduce", *a, scope);
    if (c)
      return c;
  }
  return NULL;
}

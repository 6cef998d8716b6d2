#include "profile.h"

#include "afile.h"
#include "cfg.h"
#include "err.h"

#include <gsl/gsl_interp.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const jitter_choices[] = {"none", "normal", "lognormal", "shifted_exponential", NULL};
static const char *const backend_choices[] = {"nccl", "gloo", NULL};
static const char *const scope_choices[] = {"intra", "inter", NULL};
static const char *const kind_choices[] = {"gpu", "cpu", NULL};
static const char *const source_choices[] = {"datasheet", "calibrated", "imported", NULL};
static const char *const algo_choices[] = {
    "ring", "tree", "hierarchical", "halving_doubling", "ring_chunked", "bcube", "gloo_ring", "segmented_ring", NULL};

const char *core_jitter_name(enum core_jitter_dist d) { return (unsigned)d < 4 ? jitter_choices[d] : "?"; }

core_profile *core_profile_new(void) {
  core_profile *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->format = 1;
  snprintf(p->source, sizeof p->source, "calibrated");
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

/* A fixed array of numbers (not a sweep): an empty array is allowed when
 * allow_empty, a scalar is not. */
static int number_array(const config_setting_t *g, const char *key, int required, double lo, double hi, int allow_empty,
    double **vals, int *n) {
  char w[4200];
  const config_setting_t *s = config_setting_get_member(g, key);
  *vals = NULL;
  *n = 0;
  if (!s) {
    if (required)
      return core_err_set(CORE_EINVAL,
          "%s: group is missing key '%s'; add it (an array of numbers, e.g. %s = [1.0, 2.0];)",
          core_cfg_where(g, w, sizeof w), key, key);
    return 0;
  }
  if (!config_setting_is_array(s))
    return core_err_set(CORE_EINVAL, "%s: bad value for '%s': expected an array of numbers in [ ]",
        core_cfg_where(s, w, sizeof w), key);
  if (config_setting_length(s) == 0) {
    if (allow_empty)
      return 0;
    return core_err_set(
        CORE_EINVAL, "%s: '%s' is empty; expected at least one number", core_cfg_where(s, w, sizeof w), key);
  }
  return core_cfg_double_list(g, key, 1, 0, lo, hi, vals, n);
}

/* --- scalar keys: one description for reading and writing --------------- */

enum ftype { F_TEXT, F_INT, F_NUM };
enum freq { OPTIONAL, REQUIRED, REQUIRED_ON_GPU };
/* When a key is written, its group being written. */
enum fshow {
  SHOW_ALWAYS,
  SHOW_POSITIVE,      /* when > 0: 0 means not given */
  SHOW_UNLESS_NONPOS, /* unless <= 0: a NaN is written as it stands */
  SHOW_NOT_ONE,       /* when not 1: a factor whose default is 1 */
  SHOW_WITH_PREV,     /* when the key before it was written */
  SHOW_ONE_OF,        /* when > 0 and no earlier key of its group was written */
  SHOW_NUMBER         /* when not NaN: NaN means not given */
};

/* One scalar key of a group: where it lives in its struct, whether it must
 * be given, its default, bounds or choices, and when it is written. A table
 * lists a group's keys in file order and ends with END. */
typedef struct field {
  const char *key;
  enum ftype type;
  size_t off, size; /* size: of a text member, its NUL included */
  enum freq req;
  enum fshow show;
  double def, lo, hi;         /* numbers: the default of an absent key, the bounds */
  const char *const *choices; /* text: the accepted values, or NULL for any */
} field;

#define TEXT(T, key, m, req, choices)                                                                                  \
  { key, F_TEXT, offsetof(T, m), sizeof((T *)0)->m, req, SHOW_ALWAYS, 0, 0, 0, choices }
#define INT(T, key, m, req, show, def, lo, hi)                                                                         \
  { key, F_INT, offsetof(T, m), 0, req, show, def, lo, hi, NULL }
#define NUM(T, key, m, req, show, def, lo, hi)                                                                         \
  { key, F_NUM, offsetof(T, m), 0, req, show, def, lo, hi, NULL }
#define END                                                                                                            \
  { NULL, F_NUM, 0, 0, OPTIONAL, SHOW_ALWAYS, 0, 0, 0, NULL }
#define P core_profile

static const field top_fields[] = {INT(P, "format", format, REQUIRED, SHOW_ALWAYS, 1, 1, 1),
    TEXT(P, "name", name, REQUIRED, NULL), TEXT(P, "provenance", provenance, REQUIRED, NULL), END};
static const field meta_fields[] = {TEXT(P, "source", source, OPTIONAL, source_choices),
    TEXT(P, "host", host, OPTIONAL, NULL), TEXT(P, "date", date, OPTIONAL, NULL),
    TEXT(P, "backend", backend, OPTIONAL, NULL), TEXT(P, "versions", versions, OPTIONAL, NULL),
    INT(P, "nodes", nodes, OPTIONAL, SHOW_ALWAYS, 1, 1, 1 << 24),
    INT(P, "ranks_per_node", ranks_per_node, OPTIONAL, SHOW_ALWAYS, 1, 1, 1 << 16),
    NUM(P, "link_gbps", link_gbps, OPTIONAL, SHOW_POSITIVE, 0, 0, 1e5),
    INT(P, "nics_per_node", nics_per_node, OPTIONAL, SHOW_POSITIVE, 0, 1, 1024), END};
static const field device_fields[] = {TEXT(P, "kind", device_kind, REQUIRED, kind_choices),
    TEXT(P, "name", device_name, OPTIONAL, NULL),
    NUM(P, "memory_GBps", memory_GBps, REQUIRED, SHOW_ALWAYS, 0, 1e-3, 1e6),
    NUM(P, "update_GBps", update_GBps, OPTIONAL, SHOW_POSITIVE, 0, 1e-3, 1e6),
    NUM(P, "host_link_GBps", host_link_GBps, REQUIRED_ON_GPU, SHOW_POSITIVE, 0, 1e-3, 1e6),
    NUM(P, "peak_memory_GBps", peak_memory_GBps, OPTIONAL, SHOW_POSITIVE, 0, 1e-3, 1e6),
    NUM(P, "nvlink_GBps", nvlink_GBps, OPTIONAL, SHOW_POSITIVE, 0, 1e-3, 1e6),
    NUM(P, "memory_GB", memory_GB, OPTIONAL, SHOW_POSITIVE, 0, 0, 1e6),
    INT(P, "sms", sms, OPTIONAL, SHOW_POSITIVE, 0, 1, 65536),
    INT(P, "sweep_sms", sweep_sms, OPTIONAL, SHOW_POSITIVE, 0, 1, 65536), END};
static const field host_fields[] = {NUM(P, "reduce_GBps", reduce_GBps, REQUIRED, SHOW_ALWAYS, 0, 1e-3, 1e6),
    NUM(P, "launch_us", launch_us, OPTIONAL, SHOW_POSITIVE, 0, 0, 1e6), END};
static const field storage_fields[] = {NUM(P, "write_GBps", write_GBps, REQUIRED, SHOW_ALWAYS, 0, 1e-6, 1e6),
    NUM(P, "read_GBps", read_GBps, REQUIRED, SHOW_ALWAYS, 0, 1e-6, 1e6), END};
static const field restart_fields[] = {NUM(P, "process_start_s", process_start_s, REQUIRED, SHOW_ALWAYS, 0, 0, 1e6),
    NUM(P, "rendezvous_s", rendezvous_s, REQUIRED, SHOW_ALWAYS, 0, 0, 1e6),
    NUM(P, "comm_init_s", comm_init_s, REQUIRED, SHOW_ALWAYS, 0, 0, 1e6), END};
static const field interf_fields[] = {NUM(P, "compute_slowdown", compute_slowdown, REQUIRED, SHOW_ALWAYS, 1, 1, 100),
    NUM(P, "comm_slowdown", comm_slowdown, OPTIONAL, SHOW_NOT_ONE, 1, 1, 100),
    NUM(P, "cpu_slowdown", cpu_slowdown, OPTIONAL, SHOW_NOT_ONE, 1, 1, 100),
    NUM(P, "busbw_GBps", interf_busbw_GBps, OPTIONAL, SHOW_POSITIVE, 0, 1e-9, 1e6),
    NUM(P, "comm_cpus", interf_comm_cpus, OPTIONAL, SHOW_WITH_PREV, 0, 1e-6, 1e6),
    NUM(P, "rank_cpus", interf_rank_cpus, OPTIONAL, SHOW_WITH_PREV, 0, 1e-3, 1e6), END};
static const field hook_fields[] = {NUM(P, "cast_GBps", cast_GBps, OPTIONAL, SHOW_UNLESS_NONPOS, 0, 1e-6, 1e6),
    NUM(P, "cast_bf16_GBps", cast_bf16_GBps, OPTIONAL, SHOW_UNLESS_NONPOS, 0, 1e-6, 1e6),
    NUM(P, "orth_gflops", orth_gflops, OPTIONAL, SHOW_UNLESS_NONPOS, 0, 1e-6, 1e9),
    NUM(P, "sum_fp32_GBps", sum_fp32_GBps, OPTIONAL, SHOW_UNLESS_NONPOS, 0, 1e-6, 1e6),
    NUM(P, "sum_fp16_GBps", sum_fp16_GBps, OPTIONAL, SHOW_UNLESS_NONPOS, 0, 1e-6, 1e6),
    NUM(P, "sum_bf16_GBps", sum_bf16_GBps, OPTIONAL, SHOW_UNLESS_NONPOS, 0, 1e-6, 1e6),
    NUM(P, "psgd_gemm_GBps", psgd_gemm_GBps, OPTIONAL, SHOW_UNLESS_NONPOS, 0, 1e-6, 1e6),
    NUM(P, "psgd_pass_GBps", psgd_pass_GBps, OPTIONAL, SHOW_UNLESS_NONPOS, 0, 1e-6, 1e6),
    NUM(P, "psgd_sync_us", psgd_sync_us, OPTIONAL, SHOW_UNLESS_NONPOS, 0, 0, 1e7), END};
/* One of the two (check_price). */
static const field price_fields[] = {NUM(P, "gpu_hour_usd", price_gpu_hour_usd, OPTIONAL, SHOW_ONE_OF, 0, 1e-9, 1e9),
    NUM(P, "node_hour_usd", price_node_hour_usd, OPTIONAL, SHOW_ONE_OF, 0, 1e-9, 1e9), END};
#undef P
static const field coll_fields[] = {TEXT(core_prof_coll, "backend", backend, REQUIRED, backend_choices),
    TEXT(core_prof_coll, "op", op, REQUIRED, core_coll_names),
    TEXT(core_prof_coll, "algorithm", algorithm, REQUIRED, algo_choices),
    TEXT(core_prof_coll, "scope", scope, REQUIRED, scope_choices),
    INT(core_prof_coll, "ranks", ranks, REQUIRED, SHOW_ALWAYS, 0, 2, 1 << 24),
    INT(core_prof_coll, "nodes", nodes, REQUIRED, SHOW_ALWAYS, 0, 1, 1 << 24), END};
static const field fit_fields[] = {NUM(core_prof_fit, "min_bytes", min_bytes, REQUIRED, SHOW_ALWAYS, 0, 0, 1e15),
    NUM(core_prof_fit, "max_bytes", max_bytes, REQUIRED, SHOW_ALWAYS, 0, 0, 1e15),
    NUM(core_prof_fit, "alpha_us", alpha_us, REQUIRED, SHOW_ALWAYS, 0, 0, 1e9),
    NUM(core_prof_fit, "algbw_GBps", algbw_GBps, REQUIRED, SHOW_ALWAYS, 0, 1e-9, 1e9),
    NUM(core_prof_fit, "r2", r2, OPTIONAL, SHOW_NUMBER, NAN, -1e9, 1), END};
#undef TEXT
#undef INT
#undef NUM
#undef END

/* Whether a number counts as given: as its key's rule says, else > 0. */
static int given(const field *f, double v) { return f->show == SHOW_UNLESS_NONPOS ? !(v <= 0) : v > 0; }

static double field_num(const field *f, const void *base) {
  const char *at = (const char *)base + f->off;
  if (f->type == F_INT)
    return *(const int *)(const void *)at;
  return f->type == F_NUM ? *(const double *)(const void *)at : 0;
}

/* Read one key of g into base; p (for REQUIRED_ON_GPU) is the profile. */
static int read_field(const config_setting_t *g, const field *f, void *base, const core_profile *p) {
  char *at = (char *)base + f->off;
  int req = f->req == REQUIRED || (f->req == REQUIRED_ON_GPU && strcmp(p->device_kind, "gpu") == 0);
  const char *s;
  long long v;
  int rc;
  if (f->type == F_TEXT) {
    if ((rc = core_cfg_string(g, f->key, req, req ? NULL : "", f->choices, &s)) == 0)
      snprintf(at, f->size, "%s", s ? s : "");
    return rc;
  }
  if (f->type == F_NUM)
    return core_cfg_double(g, f->key, req, f->def, f->lo, f->hi, (double *)(void *)at);
  if ((rc = core_cfg_int(g, f->key, req, (long long)f->def, (long long)f->lo, (long long)f->hi, &v)) != 0)
    return rc;
  *(int *)(void *)at = (int)v;
  return 0;
}

/* Check g's keys (the table's, then extra's), then read the table's keys in
 * order. what names g in messages. */
static int read_fields(const config_setting_t *g, const field *fl, const char *const extra[], const char *what,
    void *base, const core_profile *p) {
  const char *keys[32]; /* more than any group has */
  int n = 0, rc;
  for (const field *f = fl; f->key; f++)
    keys[n++] = f->key;
  for (int i = 0; extra && extra[i]; i++)
    keys[n++] = extra[i];
  keys[n] = NULL;
  if ((rc = core_cfg_check_keys(g, keys, what)) != 0)
    return rc;
  for (const field *f = fl; f->key; f++)
    if ((rc = read_field(g, f, base, p)) != 0)
      return rc;
  return 0;
}

/* --- writing in libconfig's syntax ------------------------------------- */

/* libconfig reads "1" as an integer, so floats always carry a '.' or 'e'. */
static void put_num(FILE *f, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", v);
  if (!strpbrk(buf, ".eEni"))
    strcat(buf, ".0");
  fputs(buf, f);
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

/* Whether key f, of value v, is written; prev: the key before it was, any:
 * an earlier key of its group was. */
static int shown(const field *f, double v, int prev, int any) {
  switch (f->show) {
  case SHOW_POSITIVE:
  case SHOW_UNLESS_NONPOS: return given(f, v);
  case SHOW_NOT_ONE: return v != 1.0;
  case SHOW_WITH_PREV: return prev;
  case SHOW_ONE_OF: return v > 0 && !any;
  case SHOW_NUMBER: return !isnan(v);
  default: return 1;
  }
}

/* The table's keys that are to be written, each as pre "key = value" post. */
static void put_fields(FILE *out, const field *fl, const void *base, const char *pre, const char *post) {
  int prev = 0, any = 0;
  for (const field *f = fl; f->key; f++) {
    const char *at = (const char *)base + f->off;
    double v = field_num(f, base);
    prev = shown(f, v, prev, any);
    any |= prev;
    if (!prev)
      continue;
    fprintf(out, "%s%s = ", pre, f->key);
    if (f->type == F_TEXT)
      core_cfg_put_str(out, at);
    else if (f->type == F_INT)
      fprintf(out, "%d", *(const int *)(const void *)at);
    else
      put_num(out, v);
    fputs(post, out);
  }
}

/* --- entries of compute and collectives --------------------------------- */

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
  static const char *const extra[] = {"alpha_us_ci", "algbw_GBps_ci", NULL};
  char w[4200];
  int rc;
  if ((rc = read_fields(f, fit_fields, extra, "a fit", fit, NULL)) != 0)
    return rc;
  if (!(fit->max_bytes > fit->min_bytes))
    return core_err_set(CORE_EINVAL, "%s: max_bytes (%g) must exceed min_bytes (%g)", core_cfg_where(f, w, sizeof w),
        fit->max_bytes, fit->min_bytes);
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

static int parse_fits(const config_setting_t *e, core_prof_coll *c) {
  char w[4200];
  const config_setting_t *fits;
  int rc;
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
      return core_err_set(CORE_EINVAL,
          "%s: fit %d starts at %g bytes but fit %d ends at %g; fits must tile the size range in order",
          core_cfg_where(config_setting_get_elem(fits, (unsigned)i), w, sizeof w), i, c->fits[i].min_bytes, i - 1,
          c->fits[i - 1].max_bytes);
  }
  return 0;
}

static int parse_points(const config_setting_t *e, core_prof_coll *c) {
  static const char *const keys[] = {"bytes", "time_us", NULL};
  char w[4200];
  const config_setting_t *pts;
  int rc, nb, nt;
  if ((rc = core_cfg_group(e, "points", 0, &pts)) != 0 || !pts)
    return rc;
  if ((rc = core_cfg_check_keys(pts, keys, "points")) != 0 ||
      (rc = number_array(pts, "bytes", 1, 0, 1e15, 1, &c->bytes, &nb)) != 0 ||
      (rc = number_array(pts, "time_us", 1, 0, 1e12, 1, &c->time_us, &nt)) != 0)
    return rc;
  if (nb != nt)
    return core_err_set(CORE_EINVAL, "%s: points has %d sizes but %d times; they pair up one to one",
        core_cfg_where(pts, w, sizeof w), nb, nt);
  c->n_points = nb;
  return 0;
}

static int parse_coll(const config_setting_t *e, core_prof_coll *c) {
  static const char *const extra[] = {"fits", "points", NULL};
  char w[4200];
  int rc;
  if ((rc = read_fields(e, coll_fields, extra, "a collective entry", c, NULL)) != 0)
    return rc;
  if (c->nodes > c->ranks || c->ranks % c->nodes != 0)
    return core_err_set(CORE_EINVAL, "%s: %d ranks do not spread evenly over %d nodes", core_cfg_where(e, w, sizeof w),
        c->ranks, c->nodes);
  if (strcmp(c->scope, "intra") == 0 && c->nodes != 1)
    return core_err_set(
        CORE_EINVAL, "%s: an intra-node entry has nodes = 1 (it has %d)", core_cfg_where(e, w, sizeof w), c->nodes);
  if (strcmp(c->scope, "inter") == 0 && c->nodes < 2)
    return core_err_set(CORE_EINVAL, "%s: an inter-node entry spans at least 2 nodes", core_cfg_where(e, w, sizeof w));
  if ((rc = parse_fits(e, c)) != 0)
    return rc;
  return parse_points(e, c);
}

/* --- sections of the profile group: scalar groups and their own --------- */

static int read_compute(const config_setting_t *g, core_profile *p) {
  const config_setting_t *s;
  int rc = core_cfg_list(g, "compute", 1, &s);
  for (int i = 0; !rc && i < config_setting_length(s); i++)
    rc = parse_rate(config_setting_get_elem(s, (unsigned)i), p);
  return rc;
}

static void put_compute(FILE *f, const core_profile *p) {
  const char *sep = "";
  fputs("  compute = (", f);
  for (int i = 0; i < CORE_N_PREC; i++) {
    const core_prof_rate *r = &p->rate[i];
    if (!r->present)
      continue;
    fprintf(f, "%s\n    { precision = \"%s\";\n      gemm_flops = ", sep, core_prec_names[i]);
    put_array(f, r->gemm_flops, r->n);
    fputs(";\n      tflops = ", f);
    put_array(f, r->tflops, r->n);
    if (r->peak_tflops > 0) {
      fputs("; peak_tflops = ", f);
      put_num(f, r->peak_tflops);
    }
    fputs("; }", f);
    sep = ",";
  }
  fputs("\n  );\n", f);
}

static int read_colls(const config_setting_t *g, core_profile *p) {
  char w[4200];
  const config_setting_t *s;
  int rc;
  if ((rc = core_cfg_list_or_empty(g, "collectives", 1, &s)) != 0)
    return rc;
  p->n_colls = config_setting_length(s);
  p->colls = calloc((size_t)p->n_colls, sizeof *p->colls);
  if (!p->colls && p->n_colls)
    return core_err_set(CORE_ENOMEM, "out of memory loading profile %s", p->path);
  for (int i = 0; i < p->n_colls; i++) {
    const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    const core_prof_coll *c = &p->colls[i];
    if ((rc = parse_coll(e, &p->colls[i])) != 0)
      return rc;
    /* The first entry with these names is an earlier one: a duplicate. */
    if (core_profile_coll(p, c->backend, c->op, c->algorithm, c->scope) != c)
      return core_err_set(CORE_EINVAL, "%s: a second %s %s %s %s entry; keep one per backend, op, algorithm and scope",
          core_cfg_where(e, w, sizeof w), c->backend, c->op, c->algorithm, c->scope);
  }
  return 0;
}

static void put_fit(FILE *f, const core_prof_fit *t, const char *sep) {
  fprintf(f, "%s\n        {", sep);
  put_fields(f, fit_fields, t, " ", ";");
  if (t->has_ci) {
    double ac[2] = {t->alpha_us_lo, t->alpha_us_hi}, bc[2] = {t->algbw_GBps_lo, t->algbw_GBps_hi};
    fputs("\n          alpha_us_ci = ", f);
    put_array(f, ac, 2);
    fputs("; algbw_GBps_ci = ", f);
    put_array(f, bc, 2);
    fputc(';', f);
  }
  fputs(" }", f);
}

static void put_colls(FILE *f, const core_profile *p) {
  fputs("  collectives = (", f);
  for (int i = 0; i < p->n_colls; i++) {
    const core_prof_coll *c = &p->colls[i];
    fprintf(f, "%s\n    {", i ? "," : "");
    put_fields(f, coll_fields, c, " ", ";");
    fputs("\n      fits = (", f);
    for (int j = 0; j < c->n_fits; j++)
      put_fit(f, &c->fits[j], j ? "," : "");
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
}

/* Relative step times: bounds far beyond any real machine keep the
 * distribution's mean and tail finite in double precision. */
static int jitter_params_ok(enum core_jitter_dist d, const double *v, int n) {
  if (n != 2)
    return 0;
  if (d == CORE_JITTER_NORMAL)
    return v[0] > 0 && v[1] >= 0 && v[1] <= 10 * v[0];
  if (d == CORE_JITTER_LOGNORMAL)
    return v[0] >= -10 && v[0] <= 10 && v[1] >= 0 && v[1] <= 3;
  return v[0] >= 0 && v[1] > 0 && v[0] <= 1e6 && v[1] <= 1e6;
}

static int read_jitter_params(const config_setting_t *s, const char *dist, core_profile *p) {
  static const char *const need[] = {"", "[mean > 0, 0 <= sd <= 10 mean]", "[zeta in [-10, 10], sigma in [0, 3]]",
      "[shift in [0, 1e6], mean_excess in (0, 1e6]]"};
  char w[4200];
  double *v = NULL;
  int n = 0;
  int rc = number_array(s, "params", p->jitter != CORE_JITTER_NONE, -1e6, 1e6, 0, &v, &n);
  if (rc)
    return rc;
  if (p->jitter == CORE_JITTER_NONE && n) {
    rc = core_err_set(
        CORE_EINVAL, "%s: distribution \"none\" takes no params; remove them", core_cfg_where(s, w, sizeof w));
  } else if (p->jitter != CORE_JITTER_NONE && !jitter_params_ok(p->jitter, v, n)) {
    rc = core_err_set(
        CORE_EINVAL, "%s: jitter params for \"%s\" must be %s", core_cfg_where(s, w, sizeof w), dist, need[p->jitter]);
  } else if (p->jitter != CORE_JITTER_NONE) {
    p->jitter_params[0] = v[0];
    p->jitter_params[1] = v[1];
  }
  free(v);
  return rc;
}

static int read_jitter(const config_setting_t *g, core_profile *p) {
  static const char *const keys[] = {"distribution", "params", "samples", NULL};
  const config_setting_t *s;
  const char *dist;
  int rc;
  if ((rc = core_cfg_group(g, "jitter", 0, &s)) != 0 || !s)
    return rc;
  if ((rc = core_cfg_check_keys(s, keys, "jitter")) != 0 ||
      (rc = core_cfg_string(s, "distribution", 1, NULL, jitter_choices, &dist)) != 0)
    return rc;
  for (int d = 0; d < 4; d++)
    if (!strcmp(dist, jitter_choices[d]))
      p->jitter = (enum core_jitter_dist)d;
  if ((rc = read_jitter_params(s, dist, p)) != 0)
    return rc;
  return number_array(s, "samples", 0, 0, 1e6, 1, &p->jitter_samples, &p->n_jitter_samples);
}

static void put_jitter(FILE *f, const core_profile *p) {
  if (p->jitter == CORE_JITTER_NONE && !p->n_jitter_samples)
    return;
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

static int check_interference(const config_setting_t *s, const core_profile *p) {
  char w[4200];
  if ((p->interf_busbw_GBps > 0) != (p->interf_comm_cpus > 0) ||
      (p->interf_busbw_GBps > 0) != (p->interf_rank_cpus > 0))
    return core_err_set(CORE_EINVAL,
        "%s: interference: busbw_GBps, comm_cpus and rank_cpus go together (the rate "
        "the factors were measured at, the CPUs it took and those a rank has): give all three or none",
        core_cfg_where(s, w, sizeof w));
  return 0;
}

static int check_device(const config_setting_t *s, const core_profile *p) {
  char w[4200];
  if (p->sweep_sms > 0 && p->sms <= 0)
    return core_err_set(CORE_EINVAL,
        "%s: device.sweep_sms (the SMs of the GPU whose GEMM sweep compute[] holds) scales GEMMs by shape only "
        "with this GPU's own count: add device.sms, or remove sweep_sms",
        core_cfg_where(config_setting_get_member(s, "sweep_sms"), w, sizeof w));
  return 0;
}

static int check_price(const config_setting_t *s, const core_profile *p) {
  char w[4200];
  (void)p;
  if (!config_setting_get_member(s, "gpu_hour_usd") == !config_setting_get_member(s, "node_hour_usd"))
    return core_err_set(CORE_EINVAL,
        "%s: price takes one of gpu_hour_usd (per device and hour) and node_hour_usd (per node and hour)",
        core_cfg_where(s, w, sizeof w));
  return 0;
}

/* When a group of scalar keys is written: always, when its first key is
 * given(), or when any of them is. */
enum gwrite { GROUP_ALWAYS, GROUP_IF_FIRST, GROUP_IF_ANY };

/* One key of the profile group, in file order: a group of scalar keys
 * (fields, with the rules that join them in check), or a section read and
 * written by functions of its own. The profile's own scalar keys come first,
 * with key NULL. */
typedef struct section {
  const char *key;
  int required;
  const field *fields;
  enum gwrite write;
  int (*check)(const config_setting_t *s, const core_profile *p);
  int (*read)(const config_setting_t *profile, core_profile *p);
  void (*put)(FILE *f, const core_profile *p);
} section;

static const section sections[] = {
    {NULL, 1, top_fields, GROUP_ALWAYS, NULL, NULL, NULL},
    {"meta", 1, meta_fields, GROUP_ALWAYS, NULL, NULL, NULL},
    {"device", 1, device_fields, GROUP_ALWAYS, check_device, NULL, NULL},
    {"host", 1, host_fields, GROUP_ALWAYS, NULL, NULL, NULL},
    {"compute", 1, NULL, GROUP_ALWAYS, NULL, read_compute, put_compute},
    {"collectives", 1, NULL, GROUP_ALWAYS, NULL, read_colls, put_colls},
    {"jitter", 0, NULL, GROUP_ALWAYS, NULL, read_jitter, put_jitter},
    {"storage", 0, storage_fields, GROUP_IF_FIRST, NULL, NULL, NULL},
    {"restart", 0, restart_fields, GROUP_IF_ANY, NULL, NULL, NULL},
    {"interference", 0, interf_fields, GROUP_ALWAYS, check_interference, NULL, NULL},
    {"hooks", 0, hook_fields, GROUP_IF_ANY, NULL, NULL, NULL},
    {"price", 0, price_fields, GROUP_IF_ANY, check_price, NULL, NULL},
};
#define N_SECTIONS (sizeof sections / sizeof *sections)

/* Read one section from the profile group g; keys: the group's keys, which
 * the profile's own scalars check. */
static int read_section(const config_setting_t *g, const section *sec, const char *const keys[], core_profile *p) {
  const config_setting_t *s = g;
  int rc;
  if (sec->read)
    return sec->read(g, p);
  if (sec->key && ((rc = core_cfg_group(g, sec->key, sec->required, &s)) != 0 || !s))
    return rc;
  if ((rc = read_fields(s, sec->fields, sec->key ? NULL : keys, sec->key ? sec->key : "profile", p, p)) != 0)
    return rc;
  return sec->check ? sec->check(s, p) : 0;
}

int core_profile_from_setting(const config_setting_t *root, const char *path, core_profile **out) {
  static const char *const top_keys[] = {"profile", NULL};
  const char *keys[N_SECTIONS + 1];
  const config_setting_t *g;
  int rc, n = 0;
  *out = NULL;
  core_profile *p = core_profile_new();
  if (!p)
    return core_err_set(CORE_ENOMEM, "out of memory loading profile %s", path);
  snprintf(p->path, sizeof p->path, "%s", path);
  for (size_t i = 0; i < N_SECTIONS; i++)
    if (sections[i].key)
      keys[n++] = sections[i].key;
  keys[n] = NULL;
  if ((rc = core_cfg_expect_kind(root, CORE_CFG_PROFILE)) != 0 ||
      (rc = core_cfg_check_keys(root, top_keys, "a profile file")) != 0 ||
      (rc = core_cfg_group(root, "profile", 1, &g)) != 0)
    goto fail_free;
  for (size_t i = 0; i < N_SECTIONS; i++)
    if ((rc = read_section(g, &sections[i], keys, p)) != 0)
      goto fail_free;
  /* A profile from before meta.source: its provenance told. */
  if (!p->source[0])
    snprintf(p->source, sizeof p->source, "%s",
        strncasecmp(p->provenance, "datasheet", 9) == 0 ? "datasheet" : "calibrated");
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

static int group_written(const section *sec, const core_profile *p) {
  if (sec->write == GROUP_ALWAYS)
    return 1;
  for (const field *f = sec->fields; f->key; f++) {
    if (given(f, field_num(f, p)))
      return 1;
    if (sec->write == GROUP_IF_FIRST)
      return 0;
  }
  return 0;
}

int core_profile_write(const core_profile *p, const char *path) {
  core_afile a;
  int rc = core_afile_open(&a, path);
  if (rc)
    return rc;
  fputs("# ddpsim profile: read by `ddpsim simulate`, written by `ddpsim calibrate` and `ddpsim import`.\n", a.f);
  fputs("profile = {\n", a.f);
  for (size_t i = 0; i < N_SECTIONS; i++) {
    const section *sec = &sections[i];
    if (sec->put) {
      sec->put(a.f, p);
    } else if (!sec->key) {
      put_fields(a.f, sec->fields, p, "  ", ";\n");
    } else if (group_written(sec, p)) {
      fprintf(a.f, "  %s = {", sec->key);
      put_fields(a.f, sec->fields, p, " ", ";");
      fputs(" };\n", a.f);
    }
  }
  fputs("};\n", a.f);
  return core_afile_commit(&a);
}

/* --- queries ------------------------------------------------------------ */

int core_profile_is_datasheet(const core_profile *p) { return strcmp(p->source, "datasheet") == 0; }

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

const core_prof_coll *core_profile_coll(
    const core_profile *p, const char *backend, const char *op, const char *algorithm, const char *scope) {
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

int core_profile_node_devices(const core_profile *p) {
  int n = p->ranks_per_node;
  for (int i = 0; i < p->n_colls; i++)
    if (p->colls[i].nodes == 1 && p->colls[i].ranks > n)
      n = p->colls[i].ranks;
  return n;
}

const core_prof_coll *core_profile_allreduce(const core_profile *p, const char *backend, const char *scope) {
  static const char *const pref[] = {
      "ring", "segmented_ring", "ring_chunked", "halving_doubling", "bcube", "gloo_ring", "tree", NULL};
  for (const char *const *a = pref; *a; a++) {
    const core_prof_coll *c = core_profile_coll(p, backend, "allreduce", *a, scope);
    if (c)
      return c;
  }
  return NULL;
}

#include "import_gpu.h"

#include "calibrate/gpu_step.h"
#include "calibrate/import_common.h"
#include "calibrate/import_gpu_int.h"
#include "calibrate/import_trace.h"
#include "calibrate/trace_scenario.h"
#include "core/afile.h"
#include "core/cfg.h"
#include "core/err.h"
#include "core/path.h"
#include "core/model.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <libconfig.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cal_gimport_note(gimport *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cal_vnote(m->notes, m->notes_len, fmt, ap);
  va_end(ap);
}

/* ---- loading ---------------------------------------------------------------- */

static int cut_steps(gimport *m, int k) {
  const cal_gindex *g = &m->tr[k].g;
  cal_gstep *more = realloc(m->steps, sizeof *more * (size_t)(m->n_steps + g->n_steps));
  int *st = realloc(m->step_trace, sizeof *st * (size_t)(m->n_steps + g->n_steps));
  if (more)
    m->steps = more;
  if (st)
    m->step_trace = st;
  if (!more || !st)
    return core_err_set(CORE_ENOMEM, "out of memory cutting the steps of %s", g->t->path);
  m->roofs.floor_s = g->kernel_min_s;
  m->roofs.has_tf32 = g->t->cc_major >= 8;
  for (int s = 0; s < g->n_steps; s++) {
    int rc = cal_gstep_cut(g, s, &m->roofs, &m->steps[m->n_steps]);
    if (rc)
      return rc;
    m->step_trace[m->n_steps++] = k;
  }
  return 0;
}

/* 1 with GPU kernels, 0 without any GPU activity (a CPU trace), CORE_EINVAL
 * when it has CUDA runtime calls or GPU copies but no kernels: a step whose
 * compute was not recorded, which would import as a step of no time. */
static int has_gpu_work(const cal_ktrace *t) {
  int calls = 0, copies = 0;
  for (int64_t i = 0; i < t->n; i++) {
    if (t->ev[i].cat == CAL_K_KERNEL)
      return 1;
    copies |= t->ev[i].cat == CAL_K_MEMCPY || t->ev[i].cat == CAL_K_MEMSET;
    calls |= t->ev[i].cat == CAL_K_RUNTIME;
  }
  if (copies)
    return core_err_set(CORE_EINVAL,
        "%s: GPU copies (gpu_memcpy, gpu_memset) but no GPU kernels: the step's compute was not recorded; profile "
        "steps that run the model's kernels, with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]",
        t->path);
  if (calls)
    return core_err_set(CORE_EINVAL,
        "%s: CUDA runtime calls but no GPU kernels or copies: profile with activities=[ProfilerActivity.CPU, "
        "ProfilerActivity.CUDA]",
        t->path);
  return 0;
}

/* The traced GPU's roofs (calibrate/kclass.h), noted when unknown. */
static int find_roofs(gimport *m, const cal_ktrace *t) {
  int rc =
      cal_kroofs_find(t->device_name, t->device_mem, m->o->profile, &m->roofs, m->roofs_from, sizeof m->roofs_from);
  if (rc == 0 && !m->roofs_from[0])
    cal_gimport_note(m,
        "no datasheet figures for '%s': kernels classed by their names and durations; retargeting it to another GPU "
        "needs --profile-base with its peaks\n",
        t->device_name);
  return rc;
}

static int load(gimport *m, const char *const *paths, int n) {
  if (!(m->tr = calloc((size_t)n, sizeof *m->tr)))
    return core_err_set(CORE_ENOMEM, "out of memory reading %d traces", n);
  m->n_traces = n;
  for (int k = 0; k < n; k++) {
    gtrace *g = &m->tr[k];
    int rc = cal_ktrace_read(paths[k], &g->t);
    if (rc)
      return rc;
    g->loaded = 1;
    if ((rc = has_gpu_work(&g->t)) < 0)
      return rc;
    if (rc == 0) {
      if (k == 0)
        return CORE_EUNSUPPORTED;
      return core_err_set(CORE_EINVAL, "%s holds no GPU work but %s does: give traces of one job", paths[k], paths[0]);
    }
    if (k == 0 && (rc = find_roofs(m, &g->t)) != 0)
      return rc;
    if ((rc = cal_gindex_build(&g->t, &g->g)) != 0)
      return rc;
    g->indexed = 1;
    if (g->g.n_unlaunched > g->g.n_unlaunched_late)
      cal_gimport_note(m,
          "%s: %d GPU activities without a launching call (begun before profiling started) were left out\n", paths[k],
          g->g.n_unlaunched - g->g.n_unlaunched_late);
    if (g->g.n_unlaunched_late)
      cal_gimport_note(m,
          "%s: %d GPU activities after launched work on their stream have a correlation id no CUDA runtime call has "
          "(the trace lost or changed those calls: edited, merged, or events dropped by the profiler); left out, and "
          "steps holding them may be cut otherwise than the rest\n",
          paths[k], g->g.n_unlaunched_late);
    int first = m->n_steps;
    if ((rc = cut_steps(m, k)) != 0 || (k > 0 && (rc = cal_gimport_same_job(m, k, first)) != 0))
      return rc;
  }
  return 0;
}

/* ---- compute beside DDP's allreduces -------------------------------------------- */

static int by_index(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Step k's compute-stream kernels in launch order (activity indices): what
 * the runtime calls of every thread launched in the step's span. */
static int step_kernels(const gimport *m, int k, int64_t **out, int *n) {
  const cal_gindex *g = &m->tr[m->step_trace[k]].g;
  const cal_kevent *st = &g->t->ev[m->steps[k].ev];
  int cap = 0;
  *out = NULL;
  *n = 0;
  for (int th = 0; th < g->n_threads; th++) {
    const cal_gthread *t = &g->threads[th];
    int lo = 0, hi = t->n_rt;
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (t->rt_ts[mid] < st->ts_ns)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (int i = lo; i < t->n_rt && t->rt_ts[i] < st->ts_ns + st->dur_ns; i++)
      for (int64_t a = g->by_rt[t->rt[i]]; a >= 0; a = g->next_of_rt[a]) {
        const cal_gact *ac = &g->acts[a];
        if (ac->stream != g->compute || ac->nccl || g->t->ev[ac->ev].cat != CAL_K_KERNEL)
          continue;
        if (*n == cap) {
          int64_t *more = realloc(*out, sizeof *more * (size_t)(cap = cap ? 2 * cap : 1024));
          if (!more)
            return core_err_set(CORE_ENOMEM, "out of memory comparing kernels");
          *out = more;
        }
        (*out)[(*n)++] = a;
      }
  }
  if (*n > 1) /* activities are by start time, which on one stream is launch order */
    qsort(*out, (size_t)*n, sizeof **out, by_index);
  return 0;
}

/* The same kernel (its place in the step) in steps where it ran beside an
 * allreduce against steps where it ran alone: the weighted geometric mean of
 * the ratios of their medians. 1 when no kernel did both. */
static int measure_slowdown(gimport *m) {
  int U = m->n_use, n = -1, rc = 0;
  int64_t **k = calloc((size_t)U, sizeof *k);
  double *slow = malloc(sizeof *slow * (size_t)U), *clean = malloc(sizeof *clean * (size_t)U), lsum = 0, wsum = 0;
  m->slowdown = 1.0;
  for (int u = 0; u < U && k && slow && clean && rc == 0; u++) {
    int nk;
    rc = step_kernels(m, m->use[u], &k[u], &nk);
    n = (u == 0 || nk == n) ? nk : -2;
  }
  for (int j = 0; k && slow && clean && rc == 0 && n > 0 && j < n; j++) {
    int ns = 0, nc = 0;
    for (int u = 0; u < U; u++) {
      const cal_gindex *g = &m->tr[m->step_trace[m->use[u]]].g;
      const cal_gact *a = &g->acts[k[u][j]];
      double d = (double)g->t->ev[a->ev].dur_ns;
      if (a->beside >= 0.9f)
        slow[ns++] = d;
      else if (a->beside == 0.0f)
        clean[nc++] = d;
    }
    if (ns && nc) {
      gsl_sort(slow, 1, (size_t)ns);
      gsl_sort(clean, 1, (size_t)nc);
      double s = gsl_stats_median_from_sorted_data(slow, 1, (size_t)ns),
             c = gsl_stats_median_from_sorted_data(clean, 1, (size_t)nc);
      if (s > 0 && c > 0)
        lsum += s * log(s / c), wsum += s;
    }
  }
  if (wsum > 0 && exp(lsum / wsum) > 1.0)
    m->slowdown = exp(lsum / wsum);
  for (int u = 0; k && u < U; u++)
    free(k[u]);
  free(k), free(slow), free(clean);
  if (!rc && (!k || !slow || !clean))
    rc = core_err_set(CORE_ENOMEM, "out of memory comparing kernels");
  /* each step's pieces as their kernels run alone: the replay slows them
   * again where they run beside an allreduce */
  for (int u = 0; u < U && rc == 0; u++) {
    cal_gstep *s = &m->steps[m->use[u]];
    for (int i = 0; i < s->tr.n_pieces; i++) {
      core_piece *p = &s->tr.pieces[i];
      double before = p->dev_s;
      p->dev_s -= s->beside_s[i] * (1.0 - 1.0 / m->slowdown);
      for (int c = 0; c < 3 && before > 0; c++)
        p->dev_class_s[c] *= p->dev_s / before;
    }
  }
  return rc;
}

/* ---- medians over the steps used ------------------------------------------------ */

/* The pieces' median wall times against the median spans they cover. */
/* The pieces against the measured spans of forward, backward and what
 * follows: each used step's own pieces against its own spans (the worst
 * step), and the pieces' medians against the spans' medians. */
static int report_parts(gimport *m, const double parts[3]) {
  static const char *const names[3] = {"forward (to backward)", "backward", "after backward"};
  double sum[3] = {0, 0, 0}, worst[3] = {0, 0, 0};
  const cal_gstep *r = ref_step(m);
  for (int i = 0; i < m->agg.n_pieces; i++)
    sum[r->part[i]] += m->span_s[i];
  for (int u = 0; u < m->n_use; u++) {
    const cal_gstep *q = &m->steps[m->use[u]];
    double own[3] = {0, 0, 0}, span[3] = {q->fwd_s, q->bwd_s, q->post_s};
    for (int i = 0; i < q->tr.n_pieces; i++)
      own[q->part[i]] += q->span_s[i];
    for (int k = 0; k < 3; k++)
      if (span[k] > 0 && fabs(own[k] - span[k]) / span[k] > fabs(worst[k]))
        worst[k] = (own[k] - span[k]) / span[k];
  }
  for (int k = 0; k < 3; k++)
    cal_gimport_note(m, "  %-22s pieces %9.3f ms, measured span %9.3f ms (%+.2f%%; each step's own: worst %+.2f%%)\n",
        names[k], sum[k] * 1e3, parts[k] * 1e3, parts[k] > 0 ? 100 * (sum[k] - parts[k]) / parts[k] : 0.0,
        100 * worst[k]);
  return 0;
}

typedef struct medians {
  double *v; /* [n_use] scratch */
  int n;
} medians;

/* Median of get(step, i) over the steps used. */
static double median_of(const gimport *m, medians *w, double (*get)(const cal_gstep *, int), int i) {
  for (int k = 0; k < m->n_use; k++)
    w->v[k] = get(&m->steps[m->use[k]], i);
  gsl_sort(w->v, 1, (size_t)m->n_use);
  return gsl_stats_median_from_sorted_data(w->v, 1, (size_t)m->n_use);
}

static double g_host(const cal_gstep *s, int i) { return s->tr.pieces[i].host_s; }
static double g_dev(const cal_gstep *s, int i) { return s->tr.pieces[i].dev_s; }
static double g_chost(const cal_gstep *s, int i) { return s->tr.pieces[i].copy_host_s; }
static double g_cdev(const cal_gstep *s, int i) { return s->tr.pieces[i].copy_dev_s; }
static double g_span(const cal_gstep *s, int i) { return s->span_s[i]; }
static double g_compute(const cal_gstep *s, int i) { return s->tr.pieces[i].dev_class_s[CORE_DEV_COMPUTE]; }
static double g_memory(const cal_gstep *s, int i) { return s->tr.pieces[i].dev_class_s[CORE_DEV_MEMORY]; }
static double g_launch_dev(const cal_gstep *s, int i) { return s->tr.pieces[i].dev_class_s[CORE_DEV_LAUNCH]; }
static double g_side_at(const cal_gstep *s, int i) { return s->tr.side[i].at; }
static double g_side_dur(const cal_gstep *s, int i) { return s->tr.side[i].dur_s; }
static double g_sync_at(const cal_gstep *s, int i) { return s->tr.syncs[i].at; }
static double g_bucket_bytes(const cal_gstep *s, int i) { return s->bucket_bytes[i]; }
static double g_bucket_s(const cal_gstep *s, int i) { return s->bucket_s[i]; }
static double g_step(const cal_gstep *s, int i) { return (void)i, s->step_s; }
static double g_launch(const cal_gstep *s, int i) {
  return (void)i, s->n_buckets ? s->launch_host_s / s->n_buckets : 0;
}
static double g_fwd(const cal_gstep *s, int i) { return (void)i, s->fwd_s; }
static double g_bwd(const cal_gstep *s, int i) { return (void)i, s->bwd_s; }
static double g_post(const cal_gstep *s, int i) { return (void)i, s->post_s; }
static double g_host_sum(const cal_gstep *s, int i) {
  double h = 0;
  (void)i;
  for (int k = 0; k < s->tr.n_pieces; k++)
    h += s->tr.pieces[k].host_s;
  return h;
}
static double g_dev_sum(const cal_gstep *s, int i) {
  double d = 0;
  (void)i;
  for (int k = 0; k < s->tr.n_pieces; k++)
    d += s->tr.pieces[k].dev_s;
  return d;
}

/* The used step whose host time is the median one. */
static void pick_ref(gimport *m) {
  double best = -1, mid;
  medians w = {malloc(sizeof *w.v * (size_t)m->n_use), m->n_use};
  m->ref = m->use[0];
  if (!w.v)
    return;
  mid = median_of(m, &w, g_host_sum, 0);
  for (int k = 0; k < m->n_use; k++) {
    double d = g_host_sum(&m->steps[m->use[k]], 0) - mid;
    d = d < 0 ? -d : d;
    if (best < 0 || d < best)
      best = d, m->ref = m->use[k];
  }
  free(w.v);
}

/* agg: the reference step's structure with every time its median. */
static int copy_structure(gimport *m) {
  const core_traced *r = &ref_step(m)->tr;
  core_traced *a = &m->agg;
  *a = *r;
  a->pieces = malloc(sizeof *a->pieces * (size_t)r->n_pieces);
  a->side = malloc(sizeof *a->side * (size_t)(r->n_side ? r->n_side : 1));
  a->syncs = malloc(sizeof *a->syncs * (size_t)(r->n_syncs ? r->n_syncs : 1));
  m->span_s = malloc(sizeof *m->span_s * (size_t)r->n_pieces);
  if (!a->pieces || !a->side || !a->syncs || !m->span_s)
    return core_err_set(CORE_ENOMEM, "out of memory aggregating steps");
  memcpy(a->pieces, r->pieces, sizeof *a->pieces * (size_t)r->n_pieces);
  if (r->n_side)
    memcpy(a->side, r->side, sizeof *a->side * (size_t)r->n_side);
  if (r->n_syncs)
    memcpy(a->syncs, r->syncs, sizeof *a->syncs * (size_t)r->n_syncs);
  a->bucket_bytes = a->bucket_s = a->bucket_min_s = NULL;
  return 0;
}

/* Cross-stream waits are told by timing, and a step's timing can make a
 * coincidence look like one (a stream busy throughout ends a kernel just
 * before any delayed activity starts): a wait the program makes shows in
 * step after step, so each one kept is what at least half the steps used
 * show, not what the reference step alone does. */
static int most(const gimport *m, int n) { return n > 0 && 2 * n >= m->n_use; }

static uint64_t g_sync_mask(const cal_gstep *s, int i) { return s->tr.syncs[i].streams; }
static uint64_t g_waits(const cal_gstep *s, int i) { return s->tr.pieces[i].waits; }

/* The bits of get(step, i) that most steps used set. */
static uint64_t mask_of_most(const gimport *m, uint64_t (*get)(const cal_gstep *, int), int i) {
  uint64_t out = 0;
  for (int b = 0; b < 64; b++) {
    int n = 0;
    for (int k = 0; k < m->n_use; k++)
      n += (int)(get(&m->steps[m->use[k]], i) >> b & 1);
    out |= most(m, n) ? 1ull << b : 0;
  }
  return out;
}

/* The stream side entry i waited for in the most steps used (none, -1,
 * counting as one; a tie goes to none). */
static int dep_of_most(const gimport *m, int i) {
  int best = -1, best_n = 0;
  for (int k = 0; k < m->n_use; k++) {
    int d = m->steps[m->use[k]].tr.side[i].dep, n = 0;
    for (int j = 0; j < m->n_use; j++)
      n += m->steps[m->use[j]].tr.side[i].dep == d;
    if (n > best_n || (n == best_n && d < best))
      best = d, best_n = n;
  }
  return best;
}

static void vote_waits(gimport *m) {
  core_traced *a = &m->agg;
  for (int i = 0; i < a->n_side; i++) {
    int held = 0;
    for (int k = 0; k < m->n_use; k++)
      held += m->steps[m->use[k]].tr.side[i].held != 0;
    a->side[i].held = most(m, held);
    a->side[i].dep = a->side[i].held ? -1 : dep_of_most(m, i);
  }
  for (int i = 0; i < a->n_syncs; i++)
    a->syncs[i].streams = mask_of_most(m, g_sync_mask, i);
  for (int i = 0; i < a->n_pieces; i++)
    a->pieces[i].waits = mask_of_most(m, g_waits, i);
}

/* The piece's classes: their medians, scaled to add up to its device time. */
static void split_classes(gimport *m, medians *w, int i, core_piece *p) {
  double c[3] = {median_of(m, w, g_compute, i), median_of(m, w, g_memory, i), median_of(m, w, g_launch_dev, i)};
  double sum = c[0] + c[1] + c[2];
  for (int k = 0; k < 3; k++)
    p->dev_class_s[k] = sum > 0 ? c[k] * p->dev_s / sum : k == CORE_DEV_MEMORY ? p->dev_s : 0;
}

/* The precision of most compute-bound kernel time over the steps used, and
 * the traced GPU's roofs at it. */
static void traced_roofs(gimport *m) {
  double t[CORE_N_PREC] = {0};
  int best = CORE_PREC_FP32;
  for (int u = 0; u < m->n_use; u++)
    for (int k = 0; k < CORE_N_PREC; k++)
      t[k] += m->steps[m->use[u]].prec_s[k];
  for (int k = 0; k < CORE_N_PREC; k++)
    if (t[k] > t[best])
      best = k;
  m->agg.precision = (enum core_prec)best;
  m->agg.peak_flops = m->roofs.flops[best];
  m->agg.peak_memory_Bps = m->roofs.mem_Bps;
  snprintf(m->agg.roofs_from, sizeof m->agg.roofs_from, "%s", m->roofs_from);
}

/* Every piece's, side entry's and sync's times: their medians over the
 * steps used; *host and *dev the sums of the pieces' host and device times. */
static void median_entries(gimport *m, medians *w, double *host, double *dev) {
  core_traced *a = &m->agg;
  *host = *dev = 0;
  for (int i = 0; i < a->n_pieces; i++) {
    core_piece *p = &a->pieces[i];
    *host += p->host_s = median_of(m, w, g_host, i);
    *dev += p->dev_s = median_of(m, w, g_dev, i);
    p->copy_host_s = median_of(m, w, g_chost, i);
    p->copy_dev_s = median_of(m, w, g_cdev, i);
    m->span_s[i] = median_of(m, w, g_span, i);
  }
  for (int i = 0; i < a->n_side; i++) {
    a->side[i].at = median_of(m, w, g_side_at, i);
    a->side[i].dur_s = median_of(m, w, g_side_dur, i);
  }
  for (int i = 0; i < a->n_syncs; i++)
    a->syncs[i].at = median_of(m, w, g_sync_at, i);
}

/* Scale the pieces' times to the median step's totals (host and dev their
 * sums), then split each piece's device time into its classes. Medians of
 * parts add up to less than the median of their sum when the parts' noise
 * is skewed. */
static void scale_pieces(gimport *m, medians *w, double host, double dev) {
  core_traced *a = &m->agg;
  double fh = host > 0 ? median_of(m, w, g_host_sum, 0) / host : 1,
         fd = dev > 0 ? median_of(m, w, g_dev_sum, 0) / dev : 1;
  for (int i = 0; i < a->n_pieces; i++) {
    core_piece *p = &a->pieces[i];
    p->host_s *= fh;
    p->dev_s *= fd;
    split_classes(m, w, i, p);
    p->copy_host_s = p->copy_host_s * fh < p->host_s ? p->copy_host_s * fh : p->host_s;
    p->copy_dev_s = p->copy_dev_s * fd < p->dev_s ? p->copy_dev_s * fd : p->dev_s;
  }
}

/* Least of get(step, i) over the steps used. */
static double min_of(const gimport *m, double (*get)(const cal_gstep *, int), int i) {
  double v = get(&m->steps[m->use[0]], i);
  for (int k = 1; k < m->n_use; k++)
    if (get(&m->steps[m->use[k]], i) < v)
      v = get(&m->steps[m->use[k]], i);
  return v;
}

/* The reference step's buckets, each with its median size and time, and its
 * fastest step's time: one rank's kernel also spans the wait for the later
 * ranks, which only adds, so the fastest step bounds the transfer. */
static int median_buckets(gimport *m, medians *w) {
  core_traced *a = &m->agg;
  const cal_gstep *r = ref_step(m);
  a->n_buckets = r->n_buckets;
  if (!r->n_buckets)
    return 0;
  a->bucket_bytes = malloc(sizeof *a->bucket_bytes * (size_t)r->n_buckets);
  a->bucket_s = malloc(sizeof *a->bucket_s * (size_t)r->n_buckets);
  a->bucket_min_s = malloc(sizeof *a->bucket_min_s * (size_t)r->n_buckets);
  if (!a->bucket_bytes || !a->bucket_s || !a->bucket_min_s)
    return core_err_set(CORE_ENOMEM, "out of memory aggregating steps");
  for (int b = 0; b < r->n_buckets; b++) {
    a->bucket_bytes[b] = median_of(m, w, g_bucket_bytes, b);
    a->bucket_s[b] = median_of(m, w, g_bucket_s, b);
    a->bucket_min_s[b] = min_of(m, g_bucket_s, b);
  }
  return 0;
}

/* The step's launch time, median, range and count, noted for the user. */
static void median_step(gimport *m, medians *w) {
  core_traced *a = &m->agg;
  a->launch_host_s = median_of(m, w, g_launch, 0);
  a->step_s = median_of(m, w, g_step, 0);
  a->step_min_s = w->v[0]; /* median_of left the step times sorted */
  a->step_max_s = w->v[m->n_use - 1];
  a->steps = m->n_use;
  cal_gimport_note(m, "steps: %d of %d used (%d warm-up%s, %d cut otherwise); step %.3f ms median, %.3f-%.3f ms\n",
      m->n_use, m->n_steps, m->n_warm, m->n_warm == 1 ? "" : "s", m->n_other, a->step_s * 1e3, a->step_min_s * 1e3,
      a->step_max_s * 1e3);
}

/* The traced step of m->agg: the reference step's structure with every
 * time the median over the steps used and every wait what most showed. */
static int aggregate(gimport *m) {
  int rc = copy_structure(m);
  medians w = {malloc(sizeof *w.v * (size_t)m->n_use), m->n_use};
  if (rc || !w.v) {
    free(w.v);
    return rc ? rc : core_err_set(CORE_ENOMEM, "out of memory aggregating steps");
  }
  double host, dev;
  median_entries(m, &w, &host, &dev);
  vote_waits(m);
  scale_pieces(m, &w, host, dev);
  if ((rc = median_buckets(m, &w)) != 0) {
    free(w.v);
    return rc;
  }
  median_step(m, &w);
  double parts[3] = {median_of(m, &w, g_fwd, 0), median_of(m, &w, g_bwd, 0), median_of(m, &w, g_post, 0)};
  free(w.v);
  return report_parts(m, parts);
}

/* ---- the model file --------------------------------------------------------------- */

static int set_str(config_setting_t *g, const char *k, const char *v) {
  config_setting_t *s = config_setting_add(g, k, CONFIG_TYPE_STRING);
  return s && config_setting_set_string(s, v) == CONFIG_TRUE ? 0 : -1;
}
static int set_num(config_setting_t *g, const char *k, double v) {
  config_setting_t *s = config_setting_add(g, k, CONFIG_TYPE_FLOAT);
  return s && config_setting_set_float(s, v) == CONFIG_TRUE ? 0 : -1;
}

/* Tensors the model names: every arrival's, when their sizes are known. */
static int n_tensors(const gimport *m) { return m->sizes_from ? ref_step(m)->n_grads : 0; }

static const char *layer_kind(const gimport *m, int l) {
  const cal_gstep *r = ref_step(m);
  if (l >= r->n_layers)
    return "other";
  const cal_ktrace *t = trace_of(m, m->ref);
  const char *k = cal_gpu_layer_kind(cal_ktrace_str(t, t->ev[r->layer_op[l]].name));
  return k ? k : "other";
}

/* "conv3": the kind and how many of that kind came before. */
static void layer_name(const gimport *m, int l, char *buf, size_t n) {
  const char *k = layer_kind(m, l);
  int before = 0;
  if (l >= ref_step(m)->n_layers) {
    snprintf(buf, n, "unattributed");
    return;
  }
  for (int i = 0; i < l; i++)
    before += !strcmp(layer_kind(m, i), k);
  snprintf(buf, n, "%s%d", k, before);
}

static int add_layer(const gimport *m, config_setting_t *layers, int l) {
  char name[64];
  double fwd = 0, bwd = 0;
  config_setting_t *g = config_setting_add(layers, NULL, CONFIG_TYPE_GROUP), *p;
  layer_name(m, l, name, sizeof name);
  for (int i = 0; i < m->agg.n_pieces; i++) {
    const core_piece *pc = &m->agg.pieces[i];
    if (pc->index == l && pc->kind == CORE_PIECE_FWD)
      fwd += pc->dev_s;
    if (pc->index == l && pc->kind == CORE_PIECE_BWD)
      bwd += pc->dev_s;
  }
  if (!g || set_str(g, "name", name) || set_str(g, "kind", layer_kind(m, l)) ||
      !(p = config_setting_add(g, "params", CONFIG_TYPE_ARRAY)))
    return -1;
  for (int k = 0; k < n_tensors(m); k++)
    if (m->param_layer[k] == l && !config_setting_set_int64_elem(p, -1, m->param_elems[k]))
      return -1;
  return set_num(g, "fwd_flops", 0) || set_num(g, "fwd_ms", fwd * 1e3) || set_num(g, "bwd_ms", bwd * 1e3) ? -1 : 0;
}

/* The traced step with grad pieces indexed by parameter, not by arrival. */
static int add_traced(gimport *m, config_setting_t *model) {
  const cal_ktrace *t = trace_of(m, m->ref);
  core_traced *a = &m->agg;
  snprintf(a->device, sizeof a->device, "%s", t->device_name);
  snprintf(a->backend, sizeof a->backend, "%s", t->backend[0] ? t->backend : "nccl");
  a->world_size = t->world_size > 0 ? t->world_size : 1;
  a->host_devices = t->n_devices > 0 ? t->n_devices : 0;
  a->device_memory_GB = t->device_mem > 0 ? (double)t->device_mem / 1e9 : 0;
  a->rank = t->rank >= 0 && t->rank < a->world_size ? t->rank : 0;
  a->overlap_slowdown = m->slowdown;
  a->ddp = ref_step(m)->ddp;

  for (int i = 0; i < a->n_pieces; i++) {
    core_piece *p = &a->pieces[i];
    if (p->kind == CORE_PIECE_GRAD && n_tensors(m)) {
      p->index = m->param_of[p->index];
    } else if (p->kind == CORE_PIECE_GRAD) { /* sizes unknown: no tensors to name */
      p->kind = CORE_PIECE_OTHER;
      p->index = -1;
      snprintf(p->label, sizeof p->label, "gradient arrival");
    }
  }
  return core_traced_write(a, model);
}

static int build_model(gimport *m, config_t *cfg, const char *name, const char *const *paths) {
  config_setting_t *root = config_root_setting(cfg), *g = config_setting_add(root, "model", CONFIG_TYPE_GROUP);
  config_setting_t *layers, *ready = NULL;
  char src[1024];
  const cal_ktrace *t = trace_of(m, m->ref);
  snprintf(src, sizeof src, "ddpsim import torch-trace of %s%s: %s, rank %d of %d (%s), %d steps", paths[0],
      m->n_traces > 1 ? " and more" : "", t->device_name[0] ? t->device_name : "a GPU", t->rank < 0 ? 0 : t->rank,
      t->world_size > 0 ? t->world_size : 1, t->backend[0] ? t->backend : "no process group", m->n_use);
  if (!g || set_str(g, "name", name) || set_str(g, "source", src) ||
      !(layers = config_setting_add(g, "layers", CONFIG_TYPE_LIST)))
    return core_err_set(CORE_ENOMEM, "out of memory building the model");
  for (int l = 0; l < m->n_layers; l++)
    if (add_layer(m, layers, l))
      return core_err_set(CORE_ENOMEM, "out of memory building the model");
  if (set_num(g, "measured_batch", m->batch) ||
      (n_tensors(m) && !(ready = config_setting_add(g, "ready_order", CONFIG_TYPE_ARRAY))))
    return core_err_set(CORE_ENOMEM, "out of memory building the model");
  for (int k = 0; k < n_tensors(m); k++)
    if (!config_setting_set_int_elem(ready, -1, m->param_of[k]))
      return core_err_set(CORE_ENOMEM, "out of memory building the model");
  return add_traced(m, g);
}

/* The batch: the first layer's input's first dimension, which --batch must
 * match (as for a CPU trace); --batch alone where the trace has no shapes. */
static int find_batch(gimport *m) {
  const cal_gstep *r = ref_step(m);
  const cal_ktrace *t = trace_of(m, m->ref);
  const cal_kevent *first = r->n_layers > 0 ? &t->ev[r->layer_op[0]] : NULL;
  int64_t dims[8];
  int shaped = first && cal_ktrace_dims(t, first, 0, dims, 8) >= 1 && dims[0] > 0;
  if (shaped && m->o->batch > 0 && m->o->batch != dims[0])
    return core_err_set(CORE_EINVAL,
        "%s: traceEvents[%lld]: --batch %d, but the first layer's input has %lld rows; give the batch the trace was "
        "taken at",
        t->path, (long long)first->index, m->o->batch, (long long)dims[0]);
  if (m->o->batch > 0) {
    m->batch = m->o->batch;
    return 0;
  }
  if (shaped && (double)dims[0] > CORE_MODEL_BATCH_MAX)
    return core_err_set(CORE_EINVAL,
        "%s: traceEvents[%lld]: the first layer's input has %lld rows, more than a model's batch can be (%.0e): the "
        "recorded shapes are damaged; export the trace again",
        t->path, (long long)first->index, (long long)dims[0], CORE_MODEL_BATCH_MAX);
  if (shaped) {
    m->batch = (double)dims[0];
    cal_gimport_note(m, "batch %.0f per GPU, from the first layer's input shape\n", m->batch);
    return 0;
  }
  return core_err_set(CORE_EINVAL,
      "%s records no shapes to tell the batch from: pass --batch B, the batch per GPU it was taken at", t->path);
}

static double sum_of(const double *v, int n) {
  double s = 0;
  for (int i = 0; i < n; i++)
    s += v[i];
  return s;
}

static void describe(gimport *m) {
  const core_traced *a = &m->agg;
  const cal_gstep *r = ref_step(m);
  const cal_gindex *g = &m->tr[m->step_trace[m->ref]].g;
  double host = 0, dev = 0;
  for (int i = 0; i < a->n_pieces; i++)
    host += a->pieces[i].host_s, dev += a->pieces[i].dev_s;
  cal_gimport_note(m, "%d layers, %d parameter tensors (sizes from %s); %d pieces a step, %d side launches, %d syncs\n",
      r->n_layers, n_tensors(m), m->sizes_from ? m->sizes_from : "nowhere", a->n_pieces, a->n_side, a->n_syncs);
  cal_gimport_note(m, "a step: host %.3f ms dispatching, compute stream %.3f ms (gap %.2f us an activity): %s-bound\n",
      host * 1e3, dev * 1e3, g->gap_s * 1e6, dev > host ? "device" : "host");
  double cl[3] = {0, 0, 0};
  for (int i = 0; i < a->n_pieces; i++)
    for (int k = 0; k < 3; k++)
      cl[k] += a->pieces[i].dev_class_s[k];
  cal_gimport_note(m,
      "kernels: %.3f ms compute-bound (%s), %.3f ms memory-bound, %.3f ms launch-bound (%.2f us or less); roofs %s\n",
      cl[0] * 1e3, core_prec_name(a->precision), cl[1] * 1e3, cl[2] * 1e3, 2 * m->roofs.floor_s * 1e6,
      m->roofs_from[0] ? m->roofs_from : "unknown");
  if (r->ddp && a->n_buckets == 0)
    cal_gimport_note(m, "DDP: the trace has no bucket allreduces (a world of %d%s)\n",
        g->t->world_size > 0 ? g->t->world_size : 1, g->t->world_size > 1 ? "" : ": one rank has nothing to reduce");
  else if (r->ddp)
    cal_gimport_note(m,
        "DDP: %d bucket allreduces a step (%.3f ms; %.3f ms in each bucket's fastest step, the rest, %.3f ms, taken as "
        "the wait for the later rank: skew), %.1f us of host work each to launch; compute beside them %.2fx slower\n",
        a->n_buckets, sum_of(a->bucket_s, a->n_buckets) * 1e3, sum_of(a->bucket_min_s, a->n_buckets) * 1e3,
        (sum_of(a->bucket_s, a->n_buckets) - sum_of(a->bucket_min_s, a->n_buckets)) * 1e3, a->launch_host_s * 1e6,
        m->slowdown);
  if (r->ddp && a->n_buckets > 0 && g->t->world_size < 1)
    cal_gimport_note(m,
        "the trace has no distributedInfo: its world size is not known and is taken as 1, though DDP allreduced %d "
        "buckets a step: the job's scenario (--scenario) is of one GPU, without them\n",
        a->n_buckets);
  if (!r->ddp)
    cal_gimport_note(m, "no DDP: the job's own communication is kept as measured side work\n");
}

static void gimport_free(gimport *m) {
  for (int k = 0; k < m->n_steps; k++)
    cal_gstep_free(&m->steps[k]);
  for (int k = 0; k < m->n_traces; k++) {
    if (m->tr[k].indexed)
      cal_gindex_free(&m->tr[k].g);
    if (m->tr[k].loaded)
      cal_ktrace_free(&m->tr[k].t);
  }
  free(m->tr);
  free(m->steps);
  free(m->step_trace);
  free(m->use);
  free(m->agg.pieces);
  free(m->agg.side);
  free(m->agg.syncs);
  free(m->agg.bucket_bytes);
  free(m->agg.bucket_s);
  free(m->agg.bucket_min_s);
  free(m->span_s);
  free(m->arrival_elems);
  free(m->param_of);
  free(m->param_layer);
  free(m->param_elems);
}

int cal_import_gpu(
    const char *const *traces, int n_traces, const cal_gpu_opts *o, const char *out, char *notes, size_t notes_len) {
  gimport m = {.o = o, .notes = notes, .notes_len = notes_len};
  char name[CAL_MODEL_NAME_LEN];
  config_t cfg;
  int rc;
  if (notes && notes_len)
    notes[0] = '\0';
  /* --base is an input whether or not its sizes are needed. */
  if ((rc = cal_check_model_name(o->name)) != 0 ||
      (rc = cal_trace_check_io(traces, n_traces, o->base, o->profile, out, NULL)) != 0 ||
      (rc = load(&m, traces, n_traces)) != 0 || (rc = cal_gimport_choose_steps(&m)) != 0)
    goto out_free;
  pick_ref(&m);
  if ((rc = measure_slowdown(&m)) != 0 || (rc = aggregate(&m)) != 0 || (rc = cal_gimport_tensors(&m)) != 0 ||
      (rc = find_batch(&m)) != 0)
    goto out_free;
  traced_roofs(&m);
  describe(&m);
  if (o->name)
    snprintf(name, sizeof name, "%s", o->name);
  else
    cal_model_name_from(out, NULL, name, sizeof name);
  config_init(&cfg);
  if ((rc = build_model(&m, &cfg, name, traces)) == 0 &&
      (!o->scenario || (rc = cal_trace_scenario_check(&m.agg, m.batch, o->profile != NULL)) == 0))
    rc = cal_write_model(
        &cfg, out, "# Imported by `ddpsim import torch-trace` from a GPU profiler trace (see source below).\n");
  config_destroy(&cfg);
out_free:
  gimport_free(&m);
  return rc;
}

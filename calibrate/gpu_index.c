#include "gpu_index.h"

#include "core/err.h"

#include <stdlib.h>
#include <string.h>

/* A GPU activity that starts this much later than it could have waited for
 * something; shorter delays are the device's own gap. */
#define DELAY_NS 5000
/* Gaps above this between queued activities are waits, not the device's gap. */
#define GAP_MAX_NS 50000

static const cal_ktrace *sort_trace; /* qsort has no context argument */

static int by_time(const void *a, const void *b) {
  const cal_kevent *x = &sort_trace->ev[*(const int64_t *)a], *y = &sort_trace->ev[*(const int64_t *)b];
  if (x->ts_ns != y->ts_ns)
    return x->ts_ns < y->ts_ns ? -1 : 1;
  if (x->dur_ns != y->dur_ns)
    return x->dur_ns > y->dur_ns ? -1 : 1; /* the enclosing op first */
  return x->index < y->index ? -1 : x->index > y->index;
}

static void sort_events(const cal_ktrace *t, int64_t *idx, int64_t n) {
  sort_trace = t;
  if (n > 1)
    qsort(idx, (size_t)n, sizeof *idx, by_time);
}

void cal_gindex_free(cal_gindex *g) {
  for (int i = 0; i < g->n_threads; i++) {
    free(g->threads[i].ops);
    free(g->threads[i].parent);
    free(g->threads[i].rt);
    free(g->threads[i].rt_ts);
  }
  free(g->threads);
  free(g->acts);
  free(g->by_rt);
  free(g->next_of_rt);
  free(g->streams);
  free(g->rt_names);
  free(g->rt_median_ns);
  free(g->steps);
  free(g->ends);
  free(g->end_stream);
  memset(g, 0, sizeof *g);
}

const cal_gthread *cal_gindex_thread(const cal_gindex *g, int32_t thread) {
  for (int i = 0; i < g->n_threads; i++)
    if (g->threads[i].thread == thread)
      return &g->threads[i];
  return NULL;
}

static cal_gthread *thread_of(cal_gindex *g, int32_t thread) {
  cal_gthread *th = (cal_gthread *)cal_gindex_thread(g, thread);
  if (th)
    return th;
  cal_gthread *more = realloc(g->threads, sizeof *more * (size_t)(g->n_threads + 1));
  if (!more)
    return NULL;
  g->threads = more;
  th = &g->threads[g->n_threads++];
  memset(th, 0, sizeof *th);
  th->thread = thread;
  return th;
}

static int push(int64_t **a, int *n, int64_t v) {
  if ((*n & (*n - 1)) == 0) { /* grow at powers of two */
    int64_t *m = realloc(*a, sizeof *m * (size_t)(*n ? 2 * *n : 1));
    if (!m)
      return -1;
    *a = m;
  }
  (*a)[(*n)++] = v;
  return 0;
}

/* Each thread's ops in time order with their parents, and its runtime calls. */
static int build_threads(cal_gindex *g) {
  const cal_ktrace *t = g->t;
  for (int64_t i = 0; i < t->n; i++) {
    const cal_kevent *e = &t->ev[i];
    int host = e->cat == CAL_K_CPU_OP || e->cat == CAL_K_USER_ANNOTATION, rt = e->cat == CAL_K_RUNTIME;
    if (!host && !rt)
      continue;
    cal_gthread *th = thread_of(g, e->thread);
    if (!th || push(host ? &th->ops : &th->rt, host ? &th->n_ops : &th->n_rt, i))
      return core_err_set(CORE_ENOMEM, "out of memory indexing %s", t->path);
  }
  for (int k = 0; k < g->n_threads; k++) {
    cal_gthread *th = &g->threads[k];
    sort_events(t, th->ops, th->n_ops);
    sort_events(t, th->rt, th->n_rt);
    th->parent = malloc(sizeof *th->parent * (size_t)(th->n_ops ? th->n_ops : 1));
    th->rt_ts = malloc(sizeof *th->rt_ts * (size_t)(th->n_rt ? th->n_rt : 1));
    int *stack = malloc(sizeof *stack * (size_t)(th->n_ops ? th->n_ops : 1));
    if (!th->parent || !th->rt_ts || !stack) {
      free(stack);
      return core_err_set(CORE_ENOMEM, "out of memory indexing %s", t->path);
    }
    int depth = 0;
    for (int i = 0; i < th->n_ops; i++) {
      const cal_kevent *e = &t->ev[th->ops[i]];
      while (depth > 0) {
        const cal_kevent *top = &t->ev[th->ops[stack[depth - 1]]];
        if (top->ts_ns + top->dur_ns > e->ts_ns)
          break;
        depth--;
      }
      th->parent[i] = depth ? stack[depth - 1] : -1;
      stack[depth++] = i;
    }
    free(stack);
    for (int i = 0; i < th->n_rt; i++)
      th->rt_ts[i] = t->ev[th->rt[i]].ts_ns;
  }
  return 0;
}

typedef struct corr_rt {
  int64_t corr, rt;
} corr_rt;

static int by_corr(const void *a, const void *b) {
  int64_t x = ((const corr_rt *)a)->corr, y = ((const corr_rt *)b)->corr;
  return x < y ? -1 : x > y;
}

static int stream_index(cal_gindex *g, int32_t id) {
  for (int i = 0; i < g->n_streams; i++)
    if (g->streams[i] == id)
      return i;
  int32_t *more = realloc(g->streams, sizeof *more * (size_t)(g->n_streams + 1));
  if (!more)
    return -1;
  g->streams = more;
  g->streams[g->n_streams] = id;
  return g->n_streams++;
}

static int is_gpu(const cal_kevent *e) {
  return e->cat == CAL_K_KERNEL || e->cat == CAL_K_MEMCPY || e->cat == CAL_K_MEMSET;
}

/* The GPU activities by time, each with its stream and launching call. */
static int build_acts(cal_gindex *g) {
  const cal_ktrace *t = g->t;
  int64_t n_rt = 0, n = 0;
  for (int64_t i = 0; i < t->n; i++) {
    n_rt += t->ev[i].cat == CAL_K_RUNTIME && t->ev[i].corr >= 0;
    n += is_gpu(&t->ev[i]);
  }
  corr_rt *map = malloc(sizeof *map * (size_t)(n_rt ? n_rt : 1));
  int64_t *idx = malloc(sizeof *idx * (size_t)(n ? n : 1));
  g->acts = calloc((size_t)(n ? n : 1), sizeof *g->acts);
  g->by_rt = malloc(sizeof *g->by_rt * (size_t)t->n);
  g->next_of_rt = malloc(sizeof *g->next_of_rt * (size_t)(n ? n : 1));
  if (!map || !idx || !g->acts || !g->by_rt || !g->next_of_rt) {
    free(map);
    free(idx);
    return core_err_set(CORE_ENOMEM, "out of memory indexing %s", t->path);
  }
  int64_t k = 0, a = 0;
  for (int64_t i = 0; i < t->n; i++) {
    g->by_rt[i] = -1;
    if (t->ev[i].cat == CAL_K_RUNTIME && t->ev[i].corr >= 0)
      map[k++] = (corr_rt){t->ev[i].corr, i};
    else if (is_gpu(&t->ev[i]))
      idx[a++] = i;
  }
  qsort(map, (size_t)n_rt, sizeof *map, by_corr);
  sort_events(t, idx, n);
  g->n_acts = n;
  int rc = 0;
  for (int64_t i = 0; i < n && rc == 0; i++) {
    const cal_kevent *e = &t->ev[idx[i]];
    cal_gact *ac = &g->acts[i];
    corr_rt key = {e->corr, 0}, *hit = e->corr >= 0 ? bsearch(&key, map, (size_t)n_rt, sizeof *map, by_corr) : NULL;
    ac->ev = idx[i];
    ac->rt = hit ? hit->rt : -1;
    ac->dep = -1;
    ac->nccl = e->cat == CAL_K_KERNEL && strncmp(cal_ktrace_str(t, e->name), "nccl", 4) == 0;
    g->n_unlaunched += !hit;
    if ((ac->stream = stream_index(g, e->stream >= 0 ? e->stream : e->thread)) < 0)
      rc = core_err_set(CORE_ENOMEM, "out of memory indexing %s", t->path);
    g->next_of_rt[i] = -1;
    if (hit) { /* chain the call's activities, first one in by_rt */
      if (g->by_rt[hit->rt] < 0)
        g->by_rt[hit->rt] = i;
      else {
        int64_t j = g->by_rt[hit->rt];
        while (g->next_of_rt[j] >= 0)
          j = g->next_of_rt[j];
        g->next_of_rt[j] = i;
      }
    }
  }
  free(map);
  free(idx);
  return rc;
}

/* Unlaunched activities behind a launched one on their stream: a stream runs
 * in order, so these were not queued before profiling began; their runtime
 * calls are missing from the trace. */
static int count_late(cal_gindex *g) {
  char *seen = calloc((size_t)(g->n_streams ? g->n_streams : 1), 1);
  if (!seen)
    return core_err_set(CORE_ENOMEM, "out of memory indexing %s", g->t->path);
  for (int64_t i = 0; i < g->n_acts; i++) {
    g->n_unlaunched_late += g->acts[i].rt < 0 && seen[g->acts[i].stream];
    seen[g->acts[i].stream] |= g->acts[i].rt >= 0;
  }
  free(seen);
  return 0;
}

static void pick_compute(cal_gindex *g) {
  double *busy = calloc((size_t)(g->n_streams ? g->n_streams : 1), sizeof *busy);
  g->compute = 0;
  if (!busy)
    return;
  for (int64_t i = 0; i < g->n_acts; i++)
    if (!g->acts[i].nccl && g->t->ev[g->acts[i].ev].cat == CAL_K_KERNEL)
      busy[g->acts[i].stream] += (double)g->t->ev[g->acts[i].ev].dur_ns;
  for (int s = 1; s < g->n_streams; s++)
    if (busy[s] > busy[g->compute])
      g->compute = s;
  free(busy);
}

typedef struct name_dur {
  int32_t name;
  int64_t dur;
} name_dur;

static int by_name_dur(const void *a, const void *b) {
  const name_dur *x = a, *y = b;
  if (x->name != y->name)
    return x->name < y->name ? -1 : 1;
  return x->dur < y->dur ? -1 : x->dur > y->dur;
}

/* The median duration of each runtime call name. */
static int rt_medians(cal_gindex *g) {
  const cal_ktrace *t = g->t;
  int64_t n = 0;
  for (int k = 0; k < g->n_threads; k++)
    n += g->threads[k].n_rt;
  name_dur *v = malloc(sizeof *v * (size_t)(n ? n : 1));
  g->rt_names = malloc(sizeof *g->rt_names * (size_t)(n ? n : 1));
  g->rt_median_ns = malloc(sizeof *g->rt_median_ns * (size_t)(n ? n : 1));
  if (!v || !g->rt_names || !g->rt_median_ns) {
    free(v);
    return core_err_set(CORE_ENOMEM, "out of memory indexing %s", t->path);
  }
  int64_t k = 0;
  for (int th = 0; th < g->n_threads; th++)
    for (int i = 0; i < g->threads[th].n_rt; i++) {
      const cal_kevent *e = &t->ev[g->threads[th].rt[i]];
      v[k++] = (name_dur){e->name, e->dur_ns};
    }
  qsort(v, (size_t)n, sizeof *v, by_name_dur);
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j < n && v[j].name == v[i].name)
      j++;
    g->rt_names[g->n_rt_names] = v[i].name;
    g->rt_median_ns[g->n_rt_names++] = v[i + (j - i) / 2].dur;
    i = j;
  }
  free(v);
  return 0;
}

int64_t cal_gindex_blocked_ns(const cal_gindex *g, int64_t rt) {
  const cal_kevent *e = &g->t->ev[rt];
  int lo = 0, hi = g->n_rt_names - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (g->rt_names[mid] == e->name) {
      int64_t x = e->dur_ns - g->rt_median_ns[mid];
      return x > 0 ? x : 0;
    }
    if (g->rt_names[mid] < e->name)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return 0;
}

typedef struct end_stream {
  int64_t end;
  int stream;
} end_stream;

static int by_end(const void *a, const void *b) {
  int64_t x = ((const end_stream *)a)->end, y = ((const end_stream *)b)->end;
  return x < y ? -1 : x > y;
}

/* The stream an activity of stream s that could have started at `from` but
 * started at `start` waited for: the other stream whose activity ended last
 * in between; -1 none. */
static int waited_for(const end_stream *ends, int64_t n, int64_t from, int64_t start, int s) {
  int64_t lo = 0, hi = n;
  while (lo < hi) { /* first end > start */
    int64_t mid = (lo + hi) / 2;
    if (ends[mid].end <= start)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (int64_t i = lo - 1; i >= 0 && ends[i].end >= from; i--)
    if (ends[i].stream != s)
      return ends[i].stream;
  return -1;
}

/* Was a kernel of stream s that could have started at `from` but started at
 * `start` held back by the compute stream: a kernel of it running since
 * `from` or before and still at `start`, holding the SMs? last[k] is 1 +
 * the latest activity begun on stream k. */
static int held_by(const cal_gindex *g, const int64_t *last, int64_t from, int64_t start, int s) {
  int k = g->compute;
  if (k == s || !last[k])
    return 0;
  const cal_kevent *e = &g->t->ev[g->acts[last[k] - 1].ev];
  return e->cat == CAL_K_KERNEL && e->ts_ns <= from && e->ts_ns + e->dur_ns > start;
}

/* Cross-stream waits, and the compute stream's gap between queued work. */
static int deps_and_gap(cal_gindex *g) {
  const cal_ktrace *t = g->t;
  end_stream *ends = malloc(sizeof *ends * (size_t)(g->n_acts ? g->n_acts : 1));
  int64_t *prev_end = calloc((size_t)(g->n_streams ? g->n_streams : 1), sizeof *prev_end);
  int64_t *last = calloc((size_t)(g->n_streams ? g->n_streams : 1), sizeof *last);
  if (!ends || !prev_end || !last) {
    free(ends);
    free(prev_end);
    free(last);
    return core_err_set(CORE_ENOMEM, "out of memory indexing %s", t->path);
  }
  for (int64_t i = 0; i < g->n_acts; i++)
    ends[i] = (end_stream){t->ev[g->acts[i].ev].ts_ns + t->ev[g->acts[i].ev].dur_ns, g->acts[i].stream};
  qsort(ends, (size_t)g->n_acts, sizeof *ends, by_end);
  double gap_sum = 0;
  int64_t gaps = 0;
  for (int64_t i = 0; i < g->n_acts; i++) {
    cal_gact *a = &g->acts[i];
    const cal_kevent *e = &t->ev[a->ev];
    /* launched when its call would have returned unblocked: a synchronous
     * copy's call lasts as long as the copy waits */
    int64_t launched = a->rt >= 0 ? t->ev[a->rt].ts_ns + t->ev[a->rt].dur_ns - cal_gindex_blocked_ns(g, a->rt) : 0;
    int64_t ready = launched > prev_end[a->stream] ? launched : prev_end[a->stream];
    if (e->ts_ns - ready > DELAY_NS) {
      a->held = e->cat == CAL_K_KERNEL && held_by(g, last, ready, e->ts_ns, a->stream);
      if (!a->held)
        a->dep = waited_for(ends, g->n_acts, ready, e->ts_ns, a->stream);
    }
    last[a->stream] = i + 1; /* activities are by start time */
    if (a->stream == g->compute && !a->nccl && e->cat == CAL_K_KERNEL && e->dur_ns > 0 &&
        (g->kernel_min_s == 0 || (double)e->dur_ns * 1e-9 < g->kernel_min_s))
      g->kernel_min_s = (double)e->dur_ns * 1e-9;
    int64_t gap = e->ts_ns - prev_end[a->stream];
    if (a->stream == g->compute && prev_end[a->stream] > 0 && launched < prev_end[a->stream] - DELAY_NS && a->dep < 0 &&
        gap >= 0 && gap < GAP_MAX_NS) {
      gap_sum += (double)gap;
      gaps++;
    }
    if (e->ts_ns + e->dur_ns > prev_end[a->stream])
      prev_end[a->stream] = e->ts_ns + e->dur_ns;
  }
  g->gap_s = gaps ? gap_sum / (double)gaps * 1e-9 : 0;
  free(prev_end);
  free(last);
  g->ends = malloc(sizeof *g->ends * (size_t)(g->n_acts ? g->n_acts : 1));
  g->end_stream = malloc(sizeof *g->end_stream * (size_t)(g->n_acts ? g->n_acts : 1));
  if (!g->ends || !g->end_stream) {
    free(ends);
    return core_err_set(CORE_ENOMEM, "out of memory indexing %s", t->path);
  }
  for (int64_t i = 0; i < g->n_acts; i++) {
    g->ends[i] = ends[i].end;
    g->end_stream[i] = ends[i].stream;
  }
  free(ends);
  return 0;
}

uint64_t cal_gindex_streams_ending(const cal_gindex *g, int64_t t, int64_t window) {
  int64_t lo = 0, hi = g->n_acts;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (g->ends[mid] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  uint64_t mask = 0;
  for (int64_t i = lo - 1; i >= 0 && g->ends[i] >= t - window; i--)
    if (g->end_stream[i] < 64)
      mask |= 1ull << g->end_stream[i];
  return mask;
}

/* ---- kernels beside allreduce kernels --------------------------------------- */

typedef struct ivl {
  int64_t t0, t1;
  int stream;
} ivl;

static int by_t0(const void *a, const void *b) {
  int64_t x = ((const ivl *)a)->t0, y = ((const ivl *)b)->t0;
  return x < y ? -1 : x > y;
}

/* Each compute activity's share beside an allreduce kernel of another stream. */
static int mark_beside(cal_gindex *g, ivl *ar, int64_t n) {
  const cal_ktrace *t = g->t;
  qsort(ar, (size_t)n, sizeof *ar, by_t0);
  for (int64_t i = 0; i < g->n_acts; i++) {
    cal_gact *a = &g->acts[i];
    const cal_kevent *e = &t->ev[a->ev];
    int64_t s = e->ts_ns, f = e->ts_ns + e->dur_ns, lo = 0, hi = n, over = 0;
    if (a->stream != g->compute || a->nccl || e->dur_ns <= 0)
      continue;
    while (lo < hi) { /* first interval starting at or after f */
      int64_t mid = (lo + hi) / 2;
      if (ar[mid].t0 < f)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (int64_t k = lo - 1; k >= 0 && lo - k < 64; k--)
      if (ar[k].stream != a->stream && ar[k].t1 > s)
        over += (ar[k].t1 < f ? ar[k].t1 : f) - (ar[k].t0 > s ? ar[k].t0 : s);
    a->beside = (float)(over > e->dur_ns ? 1.0 : (double)over / (double)e->dur_ns);
  }
  return 0;
}

static int beside_allreduce(cal_gindex *g) {
  const cal_ktrace *t = g->t;
  ivl *ar = malloc(sizeof *ar * (size_t)(g->n_acts ? g->n_acts : 1));
  int64_t n = 0;
  if (!ar)
    return core_err_set(CORE_ENOMEM, "out of memory indexing %s", t->path);
  for (int64_t i = 0; i < g->n_acts; i++) {
    const cal_kevent *e = &t->ev[g->acts[i].ev];
    if (g->acts[i].nccl && strstr(cal_ktrace_str(t, e->name), "AllReduce"))
      ar[n++] = (ivl){e->ts_ns, e->ts_ns + e->dur_ns, g->acts[i].stream};
  }
  mark_beside(g, ar, n);
  free(ar);
  return 0;
}

int cal_gindex_is_annotation(const cal_gindex *g, const cal_kevent *e) {
  const char *n = cal_ktrace_str(g->t, e->name);
  /* record_function spans of DDP (torch/nn/parallel/distributed.py) and of
   * the optimizer (torch/optim/optimizer.py), and user "## x ##" ones. */
  return e->cat == CAL_K_USER_ANNOTATION || !strncmp(n, "DistributedDataParallel.", 24) ||
         !strncmp(n, "Optimizer.", 10) || !strncmp(n, "## ", 3) || !strncmp(n, "ProfilerStep#", 13);
}

static int is_step(const cal_ktrace *t, const cal_kevent *e) {
  return e->cat == CAL_K_USER_ANNOTATION && !strncmp(cal_ktrace_str(t, e->name), "ProfilerStep#", 13);
}

static int steps_follow(const cal_ktrace *t, const int64_t *steps, int n) {
  for (int i = 1; i < n; i++) {
    const cal_kevent *a = &t->ev[steps[i - 1]], *b = &t->ev[steps[i]];
    if (b->ts_ns < a->ts_ns + a->dur_ns - CAL_GPU_SAME_INSTANT_NS)
      return core_err_set(CORE_EINVAL,
          "%s: %s (traceEvents[%lld]) and %s (traceEvents[%lld]) overlap: one rank's steps follow each other, so the "
          "trace holds a step twice or steps of two runs (was it merged or edited?); export it again",
          t->path, cal_ktrace_str(t, a->name), (long long)a->index, cal_ktrace_str(t, b->name), (long long)b->index);
  }
  return 0;
}

int cal_gindex_steps(const cal_ktrace *t, int64_t **steps, int *n) {
  *steps = NULL;
  *n = 0;
  int k = 0;
  for (int64_t i = 0; i < t->n; i++)
    k += is_step(t, &t->ev[i]);
  if (k == 0)
    return core_err_set(CORE_EINVAL,
        "%s: no ProfilerStep#N spans: profile with torch.profiler and call prof.step() after each training step",
        t->path);
  int64_t *s = malloc(sizeof *s * (size_t)k);
  if (!s)
    return core_err_set(CORE_ENOMEM, "out of memory indexing %s", t->path);
  k = 0;
  for (int64_t i = 0; i < t->n; i++)
    if (is_step(t, &t->ev[i]))
      s[k++] = i;
  sort_events(t, s, k);
  int rc = steps_follow(t, s, k);
  if (rc) {
    free(s);
    return rc;
  }
  *steps = s;
  *n = k;
  return 0;
}

static int find_steps(cal_gindex *g) {
  int rc = cal_gindex_steps(g->t, &g->steps, &g->n_steps);
  if (rc == 0)
    g->main_thread = g->t->ev[g->steps[0]].thread;
  return rc;
}

int cal_gindex_build(const cal_ktrace *t, cal_gindex *g) {
  memset(g, 0, sizeof *g);
  g->t = t;
  int rc;
  if ((rc = find_steps(g)) != 0 || (rc = build_threads(g)) != 0 || (rc = build_acts(g)) != 0 ||
      (rc = count_late(g)) != 0 || (rc = rt_medians(g)) != 0)
    goto fail;
  if (g->n_acts == 0) {
    rc = core_err_set(CORE_EINVAL, "%s: no GPU kernels, copies or memsets: not a trace of GPU work", t->path);
    goto fail;
  }
  if (g->n_unlaunched * 2 > g->n_acts) {
    rc = core_err_set(CORE_EINVAL,
        "%s: %lld of %lld GPU activities have a correlation id no CUDA runtime call has: the trace's correlation ids "
        "do not match (was it edited or merged?)",
        t->path, (long long)g->n_unlaunched, (long long)g->n_acts);
    goto fail;
  }
  pick_compute(g);
  if ((rc = deps_and_gap(g)) != 0 || (rc = beside_allreduce(g)) != 0)
    goto fail;
  return 0;
fail:
  cal_gindex_free(g);
  return rc;
}

#include "import_trace.h"
#include "kineto.h"

#include "core/err.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names in PyTorch's profiler output (torch/csrc/autograd/engine.cpp names
 * the backward spans "autograd::engine::evaluate_function: " + node name;
 * torch/profiler/profiler.py names the step spans "ProfilerStep#N"). */
#define BWD_PREFIX "autograd::engine::evaluate_function: "
#define STEP_PREFIX "ProfilerStep#"
#define EPS_US 1e-3 /* trace times are µs with ns resolution */
/* DDP's reducer copies each gradient into its bucket from a post-hook of the
 * parameter's AccumulateGrad node, so the copy runs inside that node's
 * evaluate_function span: as this op (dividing by the world size while
 * copying) without a comm hook, as a bare aten::copy_ with one
 * (torch/csrc/distributed/c10d/reducer.cpp, mark_variable_ready_dense). */
#define BUCKET_COPY_OP "torch::distributed::reducer::mul_out"
#define ACCUM_NODE "torch::autograd::AccumulateGrad"

enum ev_kind { EV_LIN, EV_BWD, EV_STEP, EV_RELU, EV_ACT, EV_BCOPY, EV_COPY, EV_ACCUM };

typedef struct ev {
  const char *name;
  double ts, dur; /* µs */
  int32_t thread; /* interned "pid/tid" */
  enum ev_kind kind;
  long idx; /* in traceEvents */
  const cal_kevent *k;
  int nested; /* inside another linear or backward op of its thread */
} ev;

typedef struct loaded {
  const char *path;
  cal_ktrace kt;
  ev *evs;
  long n;
  ev **by_time; /* evs by start, for the steps' spans */
  int gpu;
} loaded;

/* Nanoseconds as the microseconds the trace wrote: the same double that
 * parsing the text would give (exactly so below 2^53 ns, ~104 days). */
static double us_of(int64_t ns) {
  if (ns > -(INT64_C(1) << 53) && ns < (INT64_C(1) << 53))
    return (double)ns / 1e3;
  return (double)(ns / 1000) + (double)(ns % 1000) / 1e3;
}

static int is_linear_op(const char *n) {
  return !strcmp(n, "aten::linear") || !strcmp(n, "aten::addmm") || !strcmp(n, "aten::mm") ||
         !strcmp(n, "aten::matmul");
}

/* The name of a backward node without its version suffix matches base? */
static int node_is(const char *node, const char *base) {
  size_t n = strlen(base);
  if (strncmp(node, base, n) != 0)
    return 0;
  return node[n + strspn(node + n, "0123456789")] == '\0';
}

static int is_linear_backward(const char *node) {
  return node_is(node, "AddmmBackward") || node_is(node, "MmBackward") || node_is(node, "LinearBackward");
}

/* A later layer's parameter-gradient work, which ends its backward. */
static int is_param_grad(const char *node) {
  return !strcmp(node, "torch::autograd::AccumulateGrad") || node_is(node, "TBackward");
}

/* What the importer makes of a kept event; 0 when nothing. */
static int kind_of(const cal_kevent *e, const char *name, enum ev_kind *kind) {
  if (e->cat == CAL_K_USER_ANNOTATION) {
    *kind = EV_STEP;
    return !strncmp(name, STEP_PREFIX, strlen(STEP_PREFIX));
  }
  if (e->cat != CAL_K_CPU_OP)
    return 0;
  if (!strncmp(name, BWD_PREFIX, strlen(BWD_PREFIX)))
    *kind = EV_BWD;
  else if (is_linear_op(name))
    *kind = EV_LIN;
  else if (!strcmp(name, "aten::relu") || !strcmp(name, "aten::relu_"))
    *kind = EV_RELU;
  else if (!strcmp(name, BUCKET_COPY_OP))
    *kind = EV_BCOPY;
  else if (!strcmp(name, "aten::copy_"))
    *kind = EV_COPY;
  else if (!strcmp(name, ACCUM_NODE))
    *kind = EV_ACCUM;
  else if (!strcmp(name, "aten::gelu") || !strcmp(name, "aten::tanh") || !strcmp(name, "aten::sigmoid") ||
           !strcmp(name, "aten::silu") || !strcmp(name, "aten::leaky_relu"))
    *kind = EV_ACT;
  else
    return 0;
  return 1;
}

static int by_ts(const void *a, const void *b);

static int load(const char *path, loaded *L) {
  memset(L, 0, sizeof *L);
  L->path = path;
  int rc = cal_ktrace_read(path, &L->kt);
  if (rc)
    return rc;
  const cal_ktrace *t = &L->kt;
  if (!(L->evs = malloc(sizeof *L->evs * (size_t)(t->n ? t->n : 1))))
    return core_err_set(CORE_ENOMEM, "out of memory reading %s", path);
  for (int64_t i = 0; i < t->n; i++) {
    const cal_kevent *e = &t->ev[i];
    const char *name = cal_ktrace_str(t, e->name);
    enum ev_kind kind;
    if (e->cat == CAL_K_KERNEL || e->cat == CAL_K_MEMCPY || e->cat == CAL_K_MEMSET || e->cat == CAL_K_GPU_ANNOTATION)
      L->gpu = 1;
    if (!kind_of(e, name, &kind))
      continue;
    L->evs[L->n++] = (ev){.name = name,
        .ts = us_of(e->ts_ns),
        .dur = us_of(e->dur_ns),
        .thread = e->thread,
        .kind = kind,
        .idx = (long)e->index,
        .k = e};
  }
  if (!(L->by_time = malloc(sizeof *L->by_time * (size_t)(L->n ? L->n : 1))))
    return core_err_set(CORE_ENOMEM, "out of memory reading %s", path);
  for (long i = 0; i < L->n; i++)
    L->by_time[i] = &L->evs[i];
  qsort(L->by_time, (size_t)L->n, sizeof *L->by_time, by_ts);
  return 0;
}

static void unload(loaded *L) {
  free(L->by_time);
  free(L->evs);
  cal_ktrace_free(&L->kt);
  memset(L, 0, sizeof *L);
}

static int by_ts(const void *a, const void *b) {
  const ev *x = *(const ev *const *)a, *y = *(const ev *const *)b;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* By thread, then start, longer (enclosing) first. */
static int by_thread_ts(const void *a, const void *b) {
  const ev *x = *(const ev *const *)a, *y = *(const ev *const *)b;
  if (x->thread != y->thread)
    return x->thread < y->thread ? -1 : 1;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  if (x->dur != y->dur)
    return x->dur > y->dur ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Mark linear and backward ops that run inside another one of their thread. */
static int mark_nested(ev **v, long n, const char *path) {
  ev **stack = malloc(sizeof *stack * (size_t)(n ? n : 1));
  if (!stack)
    return core_err_set(CORE_ENOMEM, "out of memory reading %s", path);
  qsort(v, (size_t)n, sizeof *v, by_thread_ts);
  long top = 0;
  for (long i = 0; i < n; i++) {
    if (i > 0 && v[i]->thread != v[i - 1]->thread)
      top = 0;
    while (top > 0 && stack[top - 1]->ts + stack[top - 1]->dur <= v[i]->ts + EPS_US)
      top--;
    v[i]->nested = top > 0 && v[i]->ts + v[i]->dur <= stack[top - 1]->ts + stack[top - 1]->dur + EPS_US;
    stack[top++] = v[i];
  }
  free(stack);
  return 0;
}

/* in, out and batch of a forward linear op from its "Input Dims" (record_shapes):
 * aten::linear [[B, in], [out, in], [out]]; aten::addmm [[out], [B, in], [in, out]];
 * aten::mm and aten::matmul [[B, in], [in, out]]. */
static void linear_shape(const loaded *L, const ev *e, int *batch, int *in, int *out) {
  *batch = *in = *out = 0;
  int xi = 0, wi = 1, w_out_first = 1;
  if (!strcmp(e->name, "aten::addmm"))
    xi = 1, wi = 2, w_out_first = 0;
  else if (strcmp(e->name, "aten::linear") != 0)
    w_out_first = 0;
  int64_t x[2], w[2];
  if (cal_ktrace_dims(&L->kt, e->k, xi, x, 2) < 2 || cal_ktrace_dims(&L->kt, e->k, wi, w, 2) != 2)
    return;
  if (w[0] < 1 || w[1] < 1 || x[0] < 1 || w[0] > INT_MAX || w[1] > INT_MAX || x[0] > INT_MAX)
    return;
  *out = (int)(w_out_first ? w[0] : w[1]);
  *in = (int)(w_out_first ? w[1] : w[0]);
  *batch = (int)x[0];
}

static int inside(const ev *in, const ev *out) {
  return in->thread == out->thread && in->ts >= out->ts - EPS_US && in->ts + in->dur <= out->ts + out->dur + EPS_US;
}

/* DDP's copies of gradients into buckets among the candidates cp[0..ncp)
 * (sorted by start): those inside the evaluate_function span of an
 * AccumulateGrad node (bwd[0..nb)) but outside the node's own op (acc[]),
 * which accumulates into .grad, and not inside a copy already counted. Each
 * one's time comes off the backward of the layer whose span holds it
 * (layer l spans c[l] to c[l-1], layer 0 up to end); the total into *sum. */
static void take_out_bucket_copies(ev **cp, long ncp, ev **acc, long nacc, ev **bwd, long nb, const double *c,
    double end, int F, double *bw, double *sum) {
  const ev *last = NULL;
  *sum = 0;
  for (long i = 0; i < ncp; i++) {
    const ev *e = cp[i];
    if (last && inside(e, last))
      continue;
    int in_node = 0, in_accum = 0;
    for (long j = 0; j < nb && !in_node; j++)
      in_node = !strcmp(bwd[j]->name + strlen(BWD_PREFIX), ACCUM_NODE) && inside(e, bwd[j]);
    for (long j = 0; j < nacc && !in_accum; j++)
      in_accum = inside(e, acc[j]);
    if (!in_node || in_accum)
      continue;
    for (int l = 0; l < F; l++)
      if (e->ts >= c[l] && e->ts < (l == 0 ? end : c[l - 1])) {
        bw[l] -= e->dur;
        *sum += e->dur;
        break;
      }
    last = e;
  }
}

static int by_idx(const void *a, const void *b) {
  const ev *x = *(const ev *const *)a, *y = *(const ev *const *)b;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* by_time[*a .. *b): the events that start within [lo, hi] (binary search:
 * a trace of many steps is read in n log n). */
static void step_range(const loaded *L, double lo, double hi, long *a, long *b) {
  long x = 0, y = L->n;
  while (x < y) {
    long m = x + (y - x) / 2;
    if (L->by_time[m]->ts < lo - EPS_US)
      x = m + 1;
    else
      y = m;
  }
  *a = x;
  y = L->n;
  while (x < y) {
    long m = x + (y - x) / 2;
    if (L->by_time[m]->ts <= hi + EPS_US)
      x = m + 1;
    else
      y = m;
  }
  *b = x;
}

/* One step's events, by role. */
typedef struct step_ev {
  ev **ops, **lin, **bwd, **act, **cp, **acc;
  long nops, nl, nb, na, ncp, nacc;
  long *lbw; /* bwd[lbw[k]]: the k-th linear backward op */
  long nlb;
  double b0, end; /* the first backward op's start; the last one's end */
} step_ev;

static void step_free(step_ev *S) {
  free(S->ops);
  free(S->lin);
  free(S->bwd);
  free(S->act);
  free(S->cp);
  free(S->acc);
  free(S->lbw);
}

/* The step's top-level linear and backward ops (the forward ones before
 * the first backward), activations, copies and AccumulateGrad ops. */
static int step_collect(const loaded *L, double lo, double hi, step_ev *S) {
  long from, to;
  memset(S, 0, sizeof *S);
  step_range(L, lo, hi, &from, &to);
  size_t room = (size_t)(to > from ? to - from : 1);
  if (!(S->ops = malloc(sizeof *S->ops * room)) || !(S->lin = malloc(sizeof *S->lin * room)) ||
      !(S->bwd = malloc(sizeof *S->bwd * room)) || !(S->act = malloc(sizeof *S->act * room)) ||
      !(S->cp = malloc(sizeof *S->cp * room)) || !(S->acc = malloc(sizeof *S->acc * room)) ||
      !(S->lbw = malloc(sizeof *S->lbw * room)))
    return core_err_set(CORE_ENOMEM, "out of memory reading %s", L->path);
  for (long i = from; i < to; i++) {
    ev *e = L->by_time[i];
    if (e->ts + e->dur > hi + EPS_US)
      continue;
    if (e->kind == EV_LIN || e->kind == EV_BWD)
      S->ops[S->nops++] = e;
    else if (e->kind == EV_RELU || e->kind == EV_ACT)
      S->act[S->na++] = e;
    else if (e->kind == EV_BCOPY || e->kind == EV_COPY)
      S->cp[S->ncp++] = e;
    else if (e->kind == EV_ACCUM)
      S->acc[S->nacc++] = e;
  }
  qsort(S->act, (size_t)S->na, sizeof *S->act, by_idx); /* file order: the last activation of a layer names it */
  int rc = mark_nested(S->ops, S->nops, L->path);
  if (rc)
    return rc;
  for (long i = 0; i < S->nops; i++)
    if (!S->ops[i]->nested && S->ops[i]->kind == EV_BWD)
      S->bwd[S->nb++] = S->ops[i];
  qsort(S->bwd, (size_t)S->nb, sizeof *S->bwd, by_ts);
  S->b0 = S->nb ? S->bwd[0]->ts : INFINITY;
  for (long i = 0; i < S->nops; i++)
    if (!S->ops[i]->nested && S->ops[i]->kind == EV_LIN && S->ops[i]->ts < S->b0)
      S->lin[S->nl++] = S->ops[i];
  qsort(S->lin, (size_t)S->nl, sizeof *S->lin, by_ts);
  for (long j = 0; j < S->nb; j++) {
    if (is_linear_backward(S->bwd[j]->name + strlen(BWD_PREFIX)))
      S->lbw[S->nlb++] = j;
    if (S->bwd[j]->ts + S->bwd[j]->dur > S->end)
      S->end = S->bwd[j]->ts + S->bwd[j]->dur;
  }
  return 0;
}

/* Does the step hold whole layers: forward and backward ops, as many of each? */
static int step_check(const loaded *L, const step_ev *S, const char *what) {
  const char *path = L->path;
  if (S->nb == 0)
    return core_err_set(CORE_EINVAL,
        "%s: no backward ops (\"" BWD_PREFIX "...\") in %s; profile a whole training step, loss.backward() included",
        path, what);
  if (S->nl == 0)
    return core_err_set(CORE_EINVAL,
        "%s: no forward linear ops (top-level aten::linear or aten::addmm) before the backward of %s; the importer "
        "reads models built of nn.Linear layers",
        path, what);
  if (S->nl != S->nlb)
    return core_err_set(CORE_EINVAL,
        "%s: %s has %ld forward linear ops (the first is traceEvents[%ld]) but %ld linear backward ops "
        "(AddmmBackward0/MmBackward0); the trace must hold whole steps of one model: profile forward, loss and "
        "backward of each step",
        path, what, S->nl, S->lin[0]->idx, S->nlb);
  if (S->nl > INT_MAX / 2)
    return core_err_set(CORE_EINVAL, "%s: too many layers", path);
  return 0;
}

/* The F layers' forward and backward times, and where each one's backward
 * starts (c[]). */
static void layer_times(const step_ev *S, int F, double *fwd, double *bw, double *c) {
  for (int i = 0; i < F; i++)
    fwd[i] = (i + 1 < F ? S->lin[i + 1]->ts : S->b0) - S->lin[i]->ts;
  /* Backward: the k-th linear backward op is layer F-1-k's. */
  c[F - 1] = S->b0;
  for (int l = F - 2; l >= 0; l--) {
    long k = F - 1 - l, j = S->lbw[k - 1] + 1;
    while (j < S->lbw[k] && is_param_grad(S->bwd[j]->name + strlen(BWD_PREFIX)))
      j++;
    c[l] = S->bwd[j]->ts;
  }
  for (int l = 0; l < F; l++)
    bw[l] = (l == 0 ? S->end : c[l - 1]) - c[l];
}

/* The first step describes the layers: shapes, activations, events. */
static int layer_details(const loaded *L, const step_ev *S, int F, cal_trace *t) {
  if (!(t->layers = calloc((size_t)F, sizeof *t->layers)))
    return core_err_set(CORE_ENOMEM, "out of memory reading %s", L->path);
  t->n_layers = F;
  for (int i = 0; i < F; i++) {
    cal_trace_layer *y = &t->layers[i];
    int b;
    linear_shape(L, S->lin[i], &b, &y->in, &y->out);
    if (i == 0)
      t->batch = b;
    y->fwd_event = S->lin[i]->idx;
    y->bwd_event = S->bwd[S->lbw[F - 1 - i]]->idx;
    double next = i + 1 < F ? S->lin[i + 1]->ts : S->b0;
    for (long a = 0; a < S->na; a++)
      if (S->act[a]->ts >= S->lin[i]->ts && S->act[a]->ts < next) {
        if (S->act[a]->kind == EV_RELU)
          y->relu = 1;
        else
          snprintf(y->other_act, sizeof y->other_act, "%s", S->act[a]->name);
      }
  }
  t->span_us = S->end - S->lin[0]->ts;
  for (long j = 0; j < S->nb; j++)
    if (!strncmp(S->bwd[j]->name + strlen(BWD_PREFIX), "MseLossBackward", 15))
      t->loss_mse = 1;
  return 0;
}

/* One step between lo and hi: per-layer times into fwd[], bwd[] (room for
 * cap layers), the layers' details into t when first; DDP's
 * bucket copies' time (taken out of bwd[]) into *copy_us. */
static int analyse_step(const loaded *L, double lo, double hi, const char *what, int first, cal_trace *t,
    double **fwd_out, double **bwd_out, int *n_out, double *copy_us) {
  step_ev S;
  double *fwd = NULL, *bw = NULL, *c = NULL;
  *fwd_out = *bwd_out = NULL;
  *copy_us = 0;
  int rc = step_collect(L, lo, hi, &S);
  if (rc || (rc = step_check(L, &S, what)) != 0)
    goto free_step;
  int F = (int)S.nl;
  fwd = calloc((size_t)F, sizeof *fwd);
  bw = calloc((size_t)F, sizeof *bw);
  c = calloc((size_t)F, sizeof *c);
  if (!fwd || !bw || !c) {
    rc = core_err_set(CORE_ENOMEM, "out of memory reading %s", L->path);
    goto free_step;
  }
  layer_times(&S, F, fwd, bw, c);
  /* The simulator adds the bucket copy from the profile's memory bandwidth
   * (sim/predict.c), so a trace of a DDP job must not carry it in the layers
   * too: a layer's time is its own computation. */
  qsort(S.cp, (size_t)S.ncp, sizeof *S.cp, by_thread_ts);
  take_out_bucket_copies(S.cp, S.ncp, S.acc, S.nacc, S.bwd, S.nb, c, S.end, F, bw, copy_us);
  for (int l = 0; l < F; l++)
    if (!(fwd[l] > 0) || !(bw[l] > 0)) {
      rc = core_err_set(CORE_EINVAL,
          "%s: traceEvents[%ld]: layer %d of %s gets no %s time: its ops overlap the next layer's; was the step run "
          "with several threads issuing ops?",
          L->path, fwd[l] > 0 ? S.bwd[S.lbw[F - 1 - l]]->idx : S.lin[l]->idx, l + 1, what,
          fwd[l] > 0 ? "backward" : "forward");
      goto free_step;
    }
  if (first && (rc = layer_details(L, &S, F, t)) != 0)
    goto free_step;
  *fwd_out = fwd;
  *bwd_out = bw;
  *n_out = F;
  fwd = bw = NULL;
free_step:
  step_free(&S);
  free(fwd);
  free(bw);
  free(c);
  return rc;
}

void cal_trace_free(cal_trace *t) {
  if (!t)
    return;
  free(t->layers);
  memset(t, 0, sizeof *t);
}

static double median(double *v, size_t n) {
  gsl_sort(v, 1, n);
  return gsl_stats_median_from_sorted_data(v, 1, n);
}

/* Per-step results of every file read so far, step after step. */
typedef struct steps_acc {
  double *f, *b; /* [n * F] layer times, F per step */
  double *copy, *span;
  long n, cap;
} steps_acc;

/* *p resized to n doubles; unchanged when that fails. */
static int grow(double **p, size_t n) {
  double *q = realloc(*p, sizeof *q * n);
  if (!q)
    return -1;
  *p = q;
  return 0;
}

static int acc_push(steps_acc *A, int F, const double *f, const double *b, double copy_us, const char *path) {
  if (A->n == A->cap) {
    long cap = A->cap ? 2 * A->cap : 16;
    if (grow(&A->f, (size_t)cap * (size_t)F) || grow(&A->b, (size_t)cap * (size_t)F) || grow(&A->copy, (size_t)cap) ||
        grow(&A->span, (size_t)cap))
      return core_err_set(CORE_ENOMEM, "out of memory reading %s", path);
    A->cap = cap;
  }
  double span = 0;
  for (int l = 0; l < F; l++) {
    A->f[(size_t)A->n * (size_t)F + (size_t)l] = f[l];
    A->b[(size_t)A->n * (size_t)F + (size_t)l] = b[l];
    span += f[l] + b[l];
  }
  A->copy[A->n] = copy_us;
  A->span[A->n] = span;
  A->n++;
  return 0;
}

/* Every step of one file into A; the layers' details into t from the first
 * step of the first file (first_path NULL: path is it; else its path, which
 * must hold GPU work where path does). */
static int read_one(const char *path, const char *first_path, cal_trace *t, steps_acc *A) {
  loaded L;
  int rc;
  ev **steps = NULL;
  int first_file = first_path == NULL;
  if ((rc = load(path, &L)) != 0)
    goto out;
  if (!first_file && L.gpu != t->gpu) {
    rc = core_err_set(CORE_EINVAL, "%s holds GPU work but %s does not: give traces of one job",
        L.gpu ? path : first_path, L.gpu ? first_path : path);
    goto out;
  }
  t->gpu |= L.gpu;
  long ns = 0;
  steps = malloc(sizeof *steps * (size_t)(L.n ? L.n : 1));
  if (!steps) {
    rc = core_err_set(CORE_ENOMEM, "out of memory reading %s", path);
    goto out;
  }
  for (long i = 0; i < L.n; i++)
    if (L.evs[i].kind == EV_STEP)
      steps[ns++] = &L.evs[i];
  qsort(steps, (size_t)ns, sizeof *steps, by_ts);
  long n_steps = ns ? ns : 1;
  for (long s = 0; s < n_steps; s++) {
    char what[96];
    double lo = -INFINITY, hi = INFINITY;
    if (ns) {
      lo = steps[s]->ts;
      hi = steps[s]->ts + steps[s]->dur;
      snprintf(what, sizeof what, "step %.40s (traceEvents[%ld])", steps[s]->name, steps[s]->idx);
    } else {
      snprintf(what, sizeof what, "the trace (it has no ProfilerStep spans: one step)");
    }
    double *f, *b, copy_us;
    int F = 0, first = first_file && s == 0;
    if ((rc = analyse_step(&L, lo, hi, what, first, t, &f, &b, &F, &copy_us)) != 0)
      goto out;
    if (first && ns)
      t->step_us = steps[0]->dur;
    if (F != t->n_layers)
      rc = core_err_set(CORE_EINVAL,
          "%s: %s has %d linear layers but the first step%s has %d; profile steps of one model", path, what, F,
          first_file ? "" : " of the first trace", t->n_layers);
    else
      rc = acc_push(A, F, f, b, copy_us, path);
    free(f);
    free(b);
    if (rc)
      goto out;
  }
out:
  free(steps);
  unload(&L);
  return rc;
}

int cal_trace_read_many(const char *const *paths, int n_paths, cal_trace *t) {
  steps_acc A = {0};
  double *tmp = NULL;
  int rc = 0;
  memset(t, 0, sizeof *t);
  if (n_paths < 1)
    return core_err_set(CORE_EUSAGE, "no trace to read; give at least one");
  for (int i = 0; i < n_paths; i++)
    if ((rc = read_one(paths[i], i ? paths[0] : NULL, t, &A)) != 0)
      goto out;
  size_t n = (size_t)A.n, F = (size_t)t->n_layers;
  if (!(tmp = malloc(sizeof *tmp * n))) {
    rc = core_err_set(CORE_ENOMEM, "out of memory reading %s", paths[0]);
    goto out;
  }
  t->n_steps = (int)A.n;
  for (size_t l = 0; l < F; l++) {
    for (size_t s = 0; s < n; s++)
      tmp[s] = A.f[s * F + l];
    t->layers[l].fwd_us = median(tmp, n);
    for (size_t s = 0; s < n; s++)
      tmp[s] = A.b[s * F + l];
    t->layers[l].bwd_us = median(tmp, n);
  }
  t->bucket_copy_us = median(A.copy, n);
  t->layers_min_us = gsl_stats_min(A.span, 1, n);
  t->layers_max_us = gsl_stats_max(A.span, 1, n);
  t->layers_median_us = median(A.span, n);
out:
  if (rc)
    cal_trace_free(t);
  free(tmp);
  free(A.f);
  free(A.b);
  free(A.copy);
  free(A.span);
  return rc;
}

int cal_trace_read(const char *path, cal_trace *t) { return cal_trace_read_many(&path, 1, t); }

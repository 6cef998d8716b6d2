#include "gpu_step.h"

#include "core/err.h"

#include <stdlib.h>
#include <string.h>

/* Names PyTorch gives these spans: torch/csrc/autograd/engine.cpp
 * (evaluate_function), torch/csrc/autograd/functions/accumulate_grad.h,
 * torch/csrc/distributed/c10d/reducer.cpp (mul_out, copy_bucket_to_grad). */
#define BWD_PREFIX "autograd::engine::evaluate_function: "
#define ACCUM_NODE "torch::autograd::AccumulateGrad"
#define DDP_COPY "torch::distributed::reducer::mul_out"
#define DDP_COPY_BACK "torch.distributed.ddp.reducer::copy_bucket_to_grad"
#define DDP_FORWARD "DistributedDataParallel.forward"
/* Runtime calls that wait for streams (cuda_runtime_api.h). */
static const char *const sync_calls[] = {
    "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", NULL};
/* A runtime call blocked when it took this much longer than its median. */
#define BLOCKED_NS 20000

static const struct {
  const char *op, *kind;
} layer_ops[] = {
    {"aten::conv1d", "conv"},
    {"aten::conv2d", "conv"},
    {"aten::conv3d", "conv"},
    {"aten::conv_transpose1d", "conv"},
    {"aten::conv_transpose2d", "conv"},
    {"aten::batch_norm", "batch_norm"},
    {"aten::layer_norm", "layer_norm"},
    {"aten::group_norm", "group_norm"},
    {"aten::linear", "linear"},
    {"aten::addmm", "linear"},
    {"aten::embedding", "embedding"},
    {"aten::embedding_bag", "embedding"},
};

const char *cal_gpu_layer_kind(const char *op) {
  for (size_t i = 0; i < sizeof layer_ops / sizeof *layer_ops; i++)
    if (!strcmp(op, layer_ops[i].op))
      return layer_ops[i].kind;
  return NULL;
}

typedef struct cutter {
  const cal_gindex *g;
  const cal_ktrace *t;
  const cal_kroofs *roofs;
  cal_gstep *s;
  int cap_pieces, cap_spans, cap_beside, cap_side, cap_syncs, cap_buckets, cap_layers, cap_grads, cap_seen;
  int64_t t0, t1, first_bwd, last_bwd;
  int part; /* of the pieces being cut: 0 forward, 1 backward, 2 after */
  int cap_parts;
  const cal_gthread *main, *bwd;
  int64_t *seq_layer; /* (seq, layer) pairs of the forward ops, by seq */
  int n_seq;
} cutter;

static const cal_kevent *op_ev(const cutter *c, const cal_gthread *th, int i) { return &c->t->ev[th->ops[i]]; }
static const char *op_name(const cutter *c, const cal_gthread *th, int i) {
  return cal_ktrace_str(c->t, op_ev(c, th, i)->name);
}

static int grow(void **a, int *cap, int need, size_t item) {
  if (need <= *cap)
    return 0;
  int n = *cap ? 2 * *cap : 16;
  while (n < need)
    n *= 2;
  void *m = realloc(*a, item * (size_t)n);
  if (!m)
    return core_err_set(CORE_ENOMEM, "out of memory cutting a step into pieces");
  memset((char *)m + item * (size_t)*cap, 0, item * (size_t)(n - *cap));
  *a = m;
  *cap = n;
  return 0;
}

/* First op of th that starts at or after ts. */
static int first_op_at(const cutter *c, const cal_gthread *th, int64_t ts) {
  int lo = 0, hi = th->n_ops;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (op_ev(c, th, mid)->ts_ns < ts)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int is_annot(const cutter *c, const cal_gthread *th, int i) {
  return cal_gindex_is_annotation(c->g, op_ev(c, th, i));
}

/* An operator with only annotations above it. */
static int is_frontier(const cutter *c, const cal_gthread *th, int i) {
  if (is_annot(c, th, i) || op_ev(c, th, i)->cat != CAL_K_CPU_OP)
    return 0;
  for (int p = th->parent[i]; p >= 0; p = th->parent[p])
    if (!is_annot(c, th, p))
      return 0;
  return 1;
}

/* The innermost annotation around op i other than the step itself; -1. */
static int annotation_of(const cutter *c, const cal_gthread *th, int i) {
  for (int p = th->parent[i]; p >= 0; p = th->parent[p])
    if (is_annot(c, th, p) && strncmp(op_name(c, th, p), "ProfilerStep#", 13) != 0)
      return p;
  return -1;
}

static int stream_bit(const cutter *c, int stream) {
  if (stream == c->g->compute)
    return 0;
  return stream < c->g->compute ? stream + 1 : stream;
}

static uint64_t stream_mask(const cutter *c, uint64_t trace_streams) {
  uint64_t m = 0;
  for (int s = 0; s < c->g->n_streams && s < 64; s++)
    if (trace_streams >> s & 1) {
      int b = stream_bit(c, s);
      if (b < 64)
        m |= 1ull << b;
    }
  return m;
}

static int dtype_bytes(const char *dt) {
  if (!strcmp(dt, "Half") || !strcmp(dt, "BFloat16"))
    return 2;
  if (!strcmp(dt, "Double") || !strcmp(dt, "Long"))
    return 8;
  return 4;
}

/* Bytes of the collective launched at ts on th, from the communication op
 * around it (record_param_comms or c10d::*, args "In msg nelems"); -1. */
static double comm_bytes(const cutter *c, const cal_gthread *th, int64_t a, int64_t ts) {
  for (int i = first_op_at(c, th, a); i < th->n_ops && op_ev(c, th, i)->ts_ns <= ts; i++) {
    const cal_kevent *e = op_ev(c, th, i);
    if (e->in_nelems >= 0 && e->ts_ns + e->dur_ns > ts)
      return (double)e->in_nelems * (e->dtype >= 0 ? dtype_bytes(cal_ktrace_str(c->t, e->dtype)) : 4);
  }
  return -1;
}

static int add_side(cutter *c, core_piece *p, double at, int stream, double dur, int dep, int nccl, int held) {
  core_traced *tr = &c->s->tr;
  int rc = grow((void **)&tr->side, &c->cap_side, tr->n_side + 1, sizeof *tr->side);
  if (rc)
    return rc;
  if (!p->n_side++)
    p->first_side = tr->n_side;
  tr->side[tr->n_side++] =
      (core_side){.at = at, .stream = stream, .dur_s = dur, .dep = dep, .nccl = nccl, .held = held};
  if (stream > tr->streams)
    tr->streams = stream;
  if (dep > tr->streams)
    tr->streams = dep;
  return 0;
}

static int add_sync(cutter *c, core_piece *p, double at, uint64_t streams) {
  core_traced *tr = &c->s->tr;
  int rc = grow((void **)&tr->syncs, &c->cap_syncs, tr->n_syncs + 1, sizeof *tr->syncs);
  if (rc)
    return rc;
  if (!p->n_sync++)
    p->first_sync = tr->n_syncs;
  tr->syncs[tr->n_syncs++] = (core_sync){at, streams};
  return 0;
}

static int add_bucket(cutter *c, double bytes, double dur) {
  cal_gstep *s = c->s;
  int rc = grow((void **)&s->bucket_bytes, &c->cap_buckets, s->n_buckets + 1, sizeof *s->bucket_bytes);
  if (rc)
    return rc;
  int cap = c->cap_buckets;
  double *m = realloc(s->bucket_s, sizeof *m * (size_t)cap);
  if (!m)
    return core_err_set(CORE_ENOMEM, "out of memory cutting a step into pieces");
  s->bucket_s = m;
  s->bucket_bytes[s->n_buckets] = bytes;
  s->bucket_s[s->n_buckets++] = dur;
  return 0;
}

typedef struct launch_ctx {
  cutter *c;
  core_piece *p;
  const cal_gthread *th;
  int64_t a, b;
  int grad;      /* a grad piece of a DDP step: its AllReduce kernels are DDP's buckets */
  int arrival;   /* a grad piece without DDP: its gradient's arrival ordinal; else -1 */
  double beside; /* compute-stream time beside an allreduce */
} launch_ctx;

static int is_sync_call(const char *n) {
  for (int k = 0; sync_calls[k]; k++)
    if (!strcmp(n, sync_calls[k]))
      return 1;
  return 0;
}

/* The innermost operator on th around ts whose shapes may tell a kernel's
 * cost (calibrate/kclass.h), else the innermost; NULL. */
static const cal_kevent *launching_op(const cutter *c, const cal_gthread *th, int64_t ts) {
  int i = first_op_at(c, th, ts + 1) - 1;
  const cal_kevent *inner = NULL;
  double f, b;
  for (; i >= 0; i = th->parent[i]) {
    const cal_kevent *e = op_ev(c, th, i);
    if (e->ts_ns + e->dur_ns < ts)
      continue;
    if (!inner)
      inner = e;
    if (cal_op_cost(c->t, e, &f, &b))
      return e;
  }
  return inner;
}

/* A compute-stream activity of dur seconds (its gap included) into the
 * piece's classes. */
static void take_class(launch_ctx *x, const cal_kevent *e, const cal_kevent *r, double dur) {
  cutter *c = x->c;
  double gap = c->g->gap_s;
  if (!c->roofs)
    return;
  enum core_prec prec = CORE_PREC_FP32;
  enum cal_kclass k = CAL_KC_MEMORY; /* copies and memsets move bytes */
  if (e->cat == CAL_K_KERNEL)
    k = cal_kclass_of(c->roofs, cal_ktrace_str(c->t, e->name), dur, c->t, launching_op(c, x->th, r->ts_ns), &prec);
  else if (c->roofs->floor_s > 0 && dur <= 2 * c->roofs->floor_s)
    k = CAL_KC_LAUNCH;
  x->p->dev_class_s[k] += dur;
  x->p->dev_class_s[CORE_DEV_LAUNCH] += gap; /* the device's fixed cost between kernels */
  if (k == CAL_KC_COMPUTE)
    c->s->prec_s[prec] += dur;
}

/* What runtime call rt launched, into the piece; *dev gets its compute-stream time. */
static int take_call(launch_ctx *x, int64_t rt, double *dev) {
  cutter *c = x->c;
  const cal_kevent *r = &c->t->ev[rt];
  double at = x->b > x->a ? (double)(r->ts_ns - x->a) / (double)(x->b - x->a) : 1.0;
  int sync = is_sync_call(cal_ktrace_str(c->t, r->name)), rc = 0, n = 0;
  uint64_t waited = 0;
  for (int64_t k = c->g->by_rt[rt]; k >= 0 && rc == 0; k = c->g->next_of_rt[k], n++) {
    const cal_gact *ac = &c->g->acts[k];
    const cal_kevent *e = &c->t->ev[ac->ev];
    const char *name = cal_ktrace_str(c->t, e->name);
    double dur = (double)e->dur_ns * 1e-9;
    sync |= e->cat == CAL_K_MEMCPY && strstr(name, "DtoH") != NULL;
    waited |= 1ull << ac->stream | (ac->dep >= 0 ? 1ull << ac->dep : 0);
    if (ac->stream == c->g->compute && !ac->nccl) {
      *dev += dur + c->g->gap_s;
      take_class(x, e, r, dur);
      x->beside += dur * ac->beside;
      if (ac->dep >= 0 && ac->dep != c->g->compute)
        x->p->waits |= 1ull << stream_bit(c, ac->dep);
    } else if (x->grad && ac->nccl && strstr(name, "AllReduce")) {
      rc = add_bucket(c, comm_bytes(c, x->th, x->a, r->ts_ns), dur);
    } else {
      rc = add_side(
          c, x->p, at, stream_bit(c, ac->stream), dur, ac->dep < 0 ? -1 : stream_bit(c, ac->dep), ac->nccl, ac->held);
      if (x->arrival >= 0 && ac->nccl) {
        double bytes = comm_bytes(c, x->th, x->a, r->ts_ns);
        c->s->grad_comm_bytes[x->arrival] += bytes > 0 ? bytes : 0;
      }
    }
  }
  if (rc == 0 && sync && n == 0 && cal_gindex_blocked_ns(c->g, rt) > BLOCKED_NS)
    waited = cal_gindex_streams_ending(c->g, r->ts_ns + r->dur_ns, CAL_GPU_DEP_WINDOW_NS);
  if (rc == 0 && sync && waited)
    rc = add_sync(c, x->p, at, stream_mask(c, waited));
  return rc;
}

/* Host and device time of the runtime calls on th in [a, b), and what they
 * launched; *blocked gets their blocked time. */
static int take_calls(launch_ctx *x, double *dev, double *blocked) {
  const cal_gthread *th = x->th;
  int lo = 0, hi = th->n_rt, rc = 0;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (th->rt_ts[mid] < x->a)
      lo = mid + 1;
    else
      hi = mid;
  }
  *dev = *blocked = 0;
  for (int i = lo; i < th->n_rt && th->rt_ts[i] < x->b && rc == 0; i++) {
    int64_t bl = cal_gindex_blocked_ns(x->c->g, th->rt[i]);
    if (bl > BLOCKED_NS)
      *blocked += (double)bl * 1e-9;
    rc = take_call(x, th->rt[i], dev);
  }
  return rc;
}

/* DDP's share of a grad piece: its copies into the bucket, its launches. */
static void ddp_share(cutter *c, const cal_gthread *th, core_piece *p, int64_t a, int64_t b) {
  for (int i = first_op_at(c, th, a); i < th->n_ops && op_ev(c, th, i)->ts_ns < b; i++) {
    const cal_kevent *e = op_ev(c, th, i);
    const char *n = cal_ktrace_str(c->t, e->name);
    if (!strcmp(n, DDP_COPY)) {
      launch_ctx x = {c, &(core_piece){0}, th, e->ts_ns, e->ts_ns + e->dur_ns, 0, -1, 0};
      double dev, blocked;
      cal_gstep *s = c->s;
      int n_side = s->tr.n_side, n_sync = s->tr.n_syncs;
      if (take_calls(&x, &dev, &blocked) == 0) {
        p->copy_host_s += (double)e->dur_ns * 1e-9 - blocked;
        p->copy_dev_s += dev;
      }
      s->tr.n_side = n_side; /* counted in the piece already */
      s->tr.n_syncs = n_sync;
    } else if (!strcmp(n, "c10d::allreduce_")) {
      /* the replay charges the launch where its bucket fills */
      double d = (double)e->dur_ns * 1e-9;
      c->s->launch_host_s += d;
      p->host_s = p->host_s > d ? p->host_s - d : 0;
    }
  }
}

/* Append a piece for th's host time [a, b). */
static int add_piece(
    cutter *c, enum core_piece_kind kind, int index, const char *label, const cal_gthread *th, int64_t a, int64_t b) {
  core_traced *tr = &c->s->tr;
  int rc = grow((void **)&tr->pieces, &c->cap_pieces, tr->n_pieces + 1, sizeof *tr->pieces);
  if (rc)
    return rc;
  if ((rc = grow((void **)&c->s->span_s, &c->cap_spans, tr->n_pieces + 1, sizeof *c->s->span_s)) != 0)
    return rc;
  c->s->span_s[tr->n_pieces] = (double)(b - a) * 1e-9;
  if ((rc = grow((void **)&c->s->beside_s, &c->cap_beside, tr->n_pieces + 1, sizeof *c->s->beside_s)) != 0)
    return rc;
  if ((rc = grow((void **)&c->s->part, &c->cap_parts, tr->n_pieces + 1, sizeof *c->s->part)) != 0)
    return rc;
  c->s->part[tr->n_pieces] = c->part;
  core_piece *p = &tr->pieces[tr->n_pieces++];
  memset(p, 0, sizeof *p);
  p->kind = kind;
  p->index = index;
  snprintf(p->label, sizeof p->label, "%s", label ? label : "");
  launch_ctx x = {
      c, p, th, a, b, kind == CORE_PIECE_GRAD && c->s->ddp, kind == CORE_PIECE_GRAD && !c->s->ddp ? index : -1, 0};
  double dev, blocked;
  if ((rc = take_calls(&x, &dev, &blocked)) != 0)
    return rc;
  p->host_s = (double)(b - a) * 1e-9 - blocked;
  if (p->host_s < 0)
    p->host_s = 0;
  p->dev_s = dev;
  p->classed = c->roofs != NULL;
  c->s->beside_s[tr->n_pieces - 1] = x.beside;
  if (kind == CORE_PIECE_GRAD && c->s->ddp)
    ddp_share(c, th, p, a, b);
  return 0;
}

/* ---- forward -------------------------------------------------------------------- */

static int add_layer(cutter *c, int64_t op) {
  cal_gstep *s = c->s;
  int rc = grow((void **)&s->layer_op, &c->cap_layers, s->n_layers + 1, sizeof *s->layer_op);
  if (rc == 0)
    s->layer_op[s->n_layers++] = op;
  return rc;
}

static int by_seq(const void *a, const void *b) {
  int64_t x = ((const int64_t *)a)[0], y = ((const int64_t *)b)[0];
  return x < y ? -1 : x > y;
}

static int by_seq_layer(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Sequence number -> layer for every forward op inside a layer's piece. An
 * op that creates no autograd node records the counter's next value (as
 * nn.BatchNorm2d's num_batches_tracked.add_(1) before its batch norm), so
 * one number may show in two layers: the node is the later layer's (the
 * layers are numbered in forward order), and the table keeps that one. */
static int map_sequence(cutter *c, const int *frontier_layer, int lo, int hi) {
  const cal_gthread *th = c->main;
  c->seq_layer = malloc(sizeof *c->seq_layer * 2 * (size_t)(hi - lo + 1));
  if (!c->seq_layer)
    return core_err_set(CORE_ENOMEM, "out of memory cutting a step into pieces");
  for (int i = lo; i < hi; i++) {
    const cal_kevent *e = op_ev(c, th, i);
    if (e->seq < 0)
      continue;
    int top = i;
    while (th->parent[top] >= 0 && !is_annot(c, th, th->parent[top]))
      top = th->parent[top];
    if (top >= lo && frontier_layer[top - lo] >= 0) {
      c->seq_layer[2 * c->n_seq] = e->seq;
      c->seq_layer[2 * c->n_seq + 1] = frontier_layer[top - lo];
      c->n_seq++;
    }
  }
  qsort(c->seq_layer, (size_t)c->n_seq, 2 * sizeof *c->seq_layer, by_seq_layer);
  int w = 0;
  for (int r = 0; r < c->n_seq; r++) {
    if (w > 0 && c->seq_layer[2 * (w - 1)] == c->seq_layer[2 * r])
      w--; /* the same number: the later layer's entry replaces it */
    c->seq_layer[2 * w] = c->seq_layer[2 * r];
    c->seq_layer[2 * w + 1] = c->seq_layer[2 * r + 1];
    w++;
  }
  c->n_seq = w;
  return 0;
}

static int layer_of_seq(const cutter *c, int64_t seq) {
  int64_t key[2] = {seq, 0};
  const int64_t *hit = seq >= 0 ? bsearch(key, c->seq_layer, (size_t)c->n_seq, 2 * sizeof *key, by_seq) : NULL;
  return hit ? (int)hit[1] : -1;
}

/* Frontier ops of the forward range [lo, hi) grouped into pieces: starts[k]
 * is the first op of piece k, frontier_layer[i - lo] the layer of op i or -1. */
static int group_forward(cutter *c, int lo, int hi, int *frontier_layer, int *starts, int *n_starts) {
  const cal_gthread *th = c->main;
  int cur_annot = -2, cur_layer = -1, rc = 0;
  *n_starts = 0;
  for (int i = lo; i < hi && rc == 0; i++) {
    frontier_layer[i - lo] = -1;
    if (!is_frontier(c, th, i))
      continue;
    const char *kind = cal_gpu_layer_kind(op_name(c, th, i));
    int an = annotation_of(c, th, i);
    if (kind) {
      cur_layer = c->s->n_layers;
      rc = add_layer(c, th->ops[i]);
      starts[(*n_starts)++] = i;
    } else if (an != cur_annot || cur_layer < 0) {
      if (an != cur_annot || *n_starts == 0)
        cur_layer = -1, starts[(*n_starts)++] = i;
    }
    cur_annot = an;
    frontier_layer[i - lo] = cur_layer;
  }
  return rc;
}

static int cut_forward(cutter *c) {
  const cal_gthread *th = c->main;
  int lo = first_op_at(c, th, c->t0), hi = first_op_at(c, th, c->first_bwd), n = 0, rc;
  int *fl = malloc(sizeof *fl * (size_t)(hi - lo + 1)), *starts = malloc(sizeof *starts * (size_t)(hi - lo + 1));
  if (!fl || !starts) {
    rc = core_err_set(CORE_ENOMEM, "out of memory cutting a step into pieces");
    goto out_free;
  }
  if ((rc = group_forward(c, lo, hi, fl, starts, &n)) != 0 || (rc = map_sequence(c, fl, lo, hi)) != 0)
    goto out_free;
  int64_t a = c->t0;
  if (n == 0 || op_ev(c, th, starts[0])->ts_ns > c->t0) {
    int64_t b = n ? op_ev(c, th, starts[0])->ts_ns : c->first_bwd;
    if ((rc = add_piece(c, CORE_PIECE_OTHER, -1, "step start", th, a, b)) != 0)
      goto out_free;
    a = b;
  }
  for (int k = 0; k < n && rc == 0; k++) {
    int i = starts[k], layer = fl[i - lo];
    int64_t b = k + 1 < n ? op_ev(c, th, starts[k + 1])->ts_ns : c->first_bwd;
    int an = annotation_of(c, th, i);
    const char *label = an >= 0 ? op_name(c, th, an) : op_name(c, th, i);
    rc = layer >= 0 ? add_piece(c, CORE_PIECE_FWD, layer, NULL, th, a, b)
                    : add_piece(c, CORE_PIECE_OTHER, -1, label, th, a, b);
    a = b;
  }
out_free:
  free(fl);
  free(starts);
  return rc;
}

/* ---- backward and after ------------------------------------------------------ */

static int add_grad(cutter *c, int layer) {
  cal_gstep *s = c->s;
  int cap = c->cap_grads, rc = grow((void **)&s->grad_layer, &c->cap_grads, s->n_grads + 1, sizeof *s->grad_layer);
  if (rc)
    return rc;
  if (c->cap_grads != cap) {
    size_t n = (size_t)c->cap_grads;
    int64_t *m = realloc(s->grad_bytes, sizeof *m * n), *el = realloc(s->grad_elems, sizeof *el * n);
    double *d = realloc(s->grad_comm_bytes, sizeof *d * n);
    int *seen = realloc(s->grad_seen, sizeof *seen * n);
    if (m)
      s->grad_bytes = m;
    if (el)
      s->grad_elems = el;
    if (d)
      s->grad_comm_bytes = d;
    if (seen)
      s->grad_seen = seen;
    if (!m || !el || !d || !seen)
      return core_err_set(CORE_ENOMEM, "out of memory cutting a step into pieces");
  }
  s->grad_layer[s->n_grads] = layer;
  s->grad_comm_bytes[s->n_grads] = 0;
  s->grad_elems[s->n_grads] = -1;
  s->grad_seen[s->n_grads] = s->n_seen;
  s->grad_bytes[s->n_grads++] = -1;
  return 0;
}

/* The bytes DDP copied back into the next gradient, from the copy's memcpy. */
static void copy_back_bytes(cutter *c, const cal_kevent *e, int *next) {
  const cal_gthread *th = c->bwd;
  int lo = 0, hi = th->n_rt;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (th->rt_ts[mid] < e->ts_ns)
      lo = mid + 1;
    else
      hi = mid;
  }
  int64_t bytes = 0;
  for (int i = lo; i < th->n_rt && th->rt_ts[i] < e->ts_ns + e->dur_ns; i++)
    for (int64_t k = c->g->by_rt[th->rt[i]]; k >= 0; k = c->g->next_of_rt[k])
      if (c->t->ev[c->g->acts[k].ev].cat == CAL_K_MEMCPY && c->t->ev[c->g->acts[k].ev].bytes > 0)
        bytes += c->t->ev[c->g->acts[k].ev].bytes;
  if (*next < c->s->n_grads && bytes > 0)
    c->s->grad_bytes[(*next)++] = bytes;
}

/* The gradient's elements as the AccumulateGrad op inside span i recorded
 * its shape (record_shapes=True); -1. */
static int64_t accumulated_elems(const cutter *c, int i) {
  const cal_gthread *th = c->bwd;
  const cal_kevent *span = op_ev(c, th, i);
  for (int k = i + 1; k < th->n_ops && op_ev(c, th, k)->ts_ns < span->ts_ns + span->dur_ns; k++)
    if (!strcmp(op_name(c, th, k), ACCUM_NODE))
      return cal_ktrace_numel(c->t, op_ev(c, th, k), 0);
  return -1;
}

static int note_seen(cutter *c, int layer) {
  cal_gstep *s = c->s;
  for (int k = 0; k < s->n_seen; k++)
    if (s->seen_layers[k] == layer)
      return 0;
  int rc = grow((void **)&s->seen_layers, &c->cap_seen, s->n_seen + 1, sizeof *s->seen_layers);
  if (rc == 0)
    s->seen_layers[s->n_seen++] = layer;
  return rc;
}

/* One top-level span of the backward thread, [a, e's end). */
static int cut_span(cutter *c, int i, int64_t a, int *last_layer, int *copies) {
  const cal_gthread *th = c->bwd;
  const cal_kevent *e = op_ev(c, th, i);
  const char *n = op_name(c, th, i);
  int64_t b = e->ts_ns + e->dur_ns;
  if (!strncmp(n, BWD_PREFIX, strlen(BWD_PREFIX))) {
    const char *node = n + strlen(BWD_PREFIX);
    if (!strcmp(node, ACCUM_NODE)) {
      int rc = add_grad(c, *last_layer);
      if (rc == 0)
        c->s->grad_elems[c->s->n_grads - 1] = accumulated_elems(c, i);
      return rc ? rc : add_piece(c, CORE_PIECE_GRAD, c->s->n_grads - 1, NULL, th, a, b);
    }
    int layer = layer_of_seq(c, e->seq);
    if (layer >= 0) {
      int rc = *last_layer == layer ? 0 : note_seen(c, layer);
      *last_layer = layer;
      return rc ? rc : add_piece(c, CORE_PIECE_BWD, layer, NULL, th, a, b);
    }
    if (e->seq >= 0) /* the node of an operator outside the layers: the gradients it makes are no layer's */
      *last_layer = -1;
    char label[64];
    snprintf(label, sizeof label, "backward: %s", node);
    return add_piece(c, CORE_PIECE_OTHER, -1, label, th, a, b);
  }
  if (!strcmp(n, DDP_COPY_BACK) || (*copies > 0 && !strncmp(n, "aten::", 6))) {
    if (!strcmp(n, DDP_COPY_BACK))
      copy_back_bytes(c, e, copies);
    return add_piece(c, CORE_PIECE_FINALIZE, -1, NULL, th, a, b);
  }
  return add_piece(c, CORE_PIECE_OTHER, -1, n, th, a, b);
}

/* Adjacent pieces of one kind that are not per layer or per gradient
 * (other pieces of one label, finalize parts) merge into one. */
static void merge_runs(cutter *c) {
  core_traced *tr = &c->s->tr;
  int w = 0;
  for (int r = 0; r < tr->n_pieces; r++) {
    core_piece *p = &tr->pieces[r], *q = w ? &tr->pieces[w - 1] : NULL;
    int same = q && c->s->part[w - 1] == c->s->part[r] && q->kind == p->kind &&
               (p->kind == CORE_PIECE_FINALIZE || (p->kind == CORE_PIECE_OTHER && !strcmp(p->label, q->label)));
    if (same && (!p->n_side || !q->n_side || q->first_side + q->n_side == p->first_side) &&
        (!p->n_sync || !q->n_sync || q->first_sync + q->n_sync == p->first_sync)) {
      double hq = q->host_s, hp = p->host_s, h = hq + hp;
      for (int k = 0; k < p->n_side; k++) /* shares of the merged host time */
        tr->side[p->first_side + k].at = h > 0 ? (hq + tr->side[p->first_side + k].at * hp) / h : 1.0;
      for (int k = 0; k < q->n_side; k++)
        tr->side[q->first_side + k].at = h > 0 ? tr->side[q->first_side + k].at * hq / h : 0.0;
      for (int k = 0; k < p->n_sync; k++)
        tr->syncs[p->first_sync + k].at = h > 0 ? (hq + tr->syncs[p->first_sync + k].at * hp) / h : 1.0;
      for (int k = 0; k < q->n_sync; k++)
        tr->syncs[q->first_sync + k].at = h > 0 ? tr->syncs[q->first_sync + k].at * hq / h : 0.0;
      if (!q->n_side)
        q->first_side = p->first_side;
      if (!q->n_sync)
        q->first_sync = p->first_sync;
      q->n_side += p->n_side;
      q->n_sync += p->n_sync;
      q->host_s = h;
      q->dev_s += p->dev_s;
      for (int k = 0; k < 3; k++)
        q->dev_class_s[k] += p->dev_class_s[k];
      q->waits |= p->waits;
      c->s->span_s[w - 1] += c->s->span_s[r];
      c->s->beside_s[w - 1] += c->s->beside_s[r];
    } else {
      c->s->span_s[w] = c->s->span_s[r];
      c->s->beside_s[w] = c->s->beside_s[r];
      c->s->part[w] = c->s->part[r];
      tr->pieces[w++] = *p;
    }
  }
  tr->n_pieces = w;
}

/* An op with only annotations above it: the engine thread's spans, or on
 * the step's own thread (a backward run there) those inside its annotations. */
static int at_top(const cutter *c, const cal_gthread *th, int i) {
  for (int p = th->parent[i]; p >= 0; p = th->parent[p])
    if (!is_annot(c, th, p))
      return 0;
  return !is_annot(c, th, i);
}

static int cut_backward(cutter *c) {
  const cal_gthread *th = c->bwd;
  int last_layer = -1, copies = 0, rc = 0;
  int64_t a = c->first_bwd;
  for (int i = first_op_at(c, th, c->first_bwd); i < th->n_ops && rc == 0; i++) {
    const cal_kevent *e = op_ev(c, th, i);
    if (e->ts_ns >= c->last_bwd)
      break;
    if (!at_top(c, th, i))
      continue;
    rc = cut_span(c, i, a, &last_layer, &copies);
    a = e->ts_ns + e->dur_ns;
  }
  return rc;
}

/* After backward, back on the step's thread: one piece per annotation. */
static int cut_after(cutter *c) {
  const cal_gthread *th = c->main;
  int64_t a = c->last_bwd;
  int cur = -2, rc = 0;
  const char *label = "after backward";
  for (int i = first_op_at(c, th, c->last_bwd); i < th->n_ops && rc == 0; i++) {
    const cal_kevent *e = op_ev(c, th, i);
    if (e->ts_ns >= c->t1)
      break;
    if (!is_frontier(c, th, i))
      continue;
    int an = annotation_of(c, th, i);
    if (an == cur)
      continue;
    if (e->ts_ns > a)
      rc = add_piece(c, CORE_PIECE_OTHER, -1, label, th, a, e->ts_ns);
    a = e->ts_ns > a ? e->ts_ns : a;
    label = an >= 0 ? op_name(c, th, an) : op_name(c, th, i);
    cur = an;
  }
  return rc == 0 && c->t1 > a ? add_piece(c, CORE_PIECE_OTHER, -1, label, th, a, c->t1) : rc;
}

/* ---- the step ---------------------------------------------------------------- */

/* The thread that ran most backward nodes in [t0, t1), and where its
 * backward starts and ends. */
static int find_backward(cutter *c) {
  int best = 0;
  const char *pfx = BWD_PREFIX;
  for (int pass = 0; pass < 2 && !best; pass++) /* a thread of the engine's first, else the step's own */
    for (int k = 0; k < c->g->n_threads; k++) {
      const cal_gthread *th = &c->g->threads[k];
      if ((th == c->main) != pass)
        continue;
      int n = 0;
      for (int i = first_op_at(c, th, c->t0); i < th->n_ops && op_ev(c, th, i)->ts_ns < c->t1; i++)
        n += at_top(c, th, i) && !strncmp(op_name(c, th, i), pfx, strlen(pfx));
      if (n > best) {
        best = n;
        c->bwd = th;
      }
    }
  if (!best)
    return core_err_set(CORE_EINVAL, "%s: step %s has no backward pass (no %s spans): import a trace of training steps",
        c->t->path, cal_ktrace_str(c->t, c->t->ev[c->s->ev].name), "autograd::engine::evaluate_function");
  /* On the engine's thread backward lasts to its last span (DDP's copies back
   * after the nodes); on the step's own thread, to its last node's span. */
  const cal_gthread *th = c->bwd;
  c->first_bwd = -1;
  for (int i = first_op_at(c, th, c->t0); i < th->n_ops && op_ev(c, th, i)->ts_ns < c->t1; i++) {
    const cal_kevent *e = op_ev(c, th, i);
    int node = !strncmp(op_name(c, th, i), pfx, strlen(pfx));
    if (!at_top(c, th, i))
      continue;
    if (c->first_bwd < 0 && node)
      c->first_bwd = e->ts_ns;
    if (c->first_bwd >= 0 && (node || th != c->main) && e->ts_ns + e->dur_ns > c->last_bwd)
      c->last_bwd = e->ts_ns + e->dur_ns;
  }
  if (c->last_bwd > c->t1)
    c->last_bwd = c->t1;
  return 0;
}

static int has_ddp(const cutter *c) {
  const cal_gthread *th = c->main;
  for (int i = first_op_at(c, th, c->t0); i < th->n_ops && op_ev(c, th, i)->ts_ns < c->first_bwd; i++)
    if (!strcmp(op_name(c, th, i), DDP_FORWARD))
      return 1;
  return 0;
}

void cal_gstep_free(cal_gstep *s) {
  free(s->tr.pieces);
  free(s->tr.side);
  free(s->tr.syncs);
  free(s->span_s);
  free(s->beside_s);
  free(s->part);
  free(s->layer_op);
  free(s->grad_layer);
  free(s->grad_bytes);
  free(s->grad_comm_bytes);
  free(s->grad_elems);
  free(s->grad_seen);
  free(s->seen_layers);
  free(s->bucket_bytes);
  free(s->bucket_s);
  memset(s, 0, sizeof *s);
}

int cal_gstep_cut(const cal_gindex *g, int step, const cal_kroofs *roofs, cal_gstep *s) {
  memset(s, 0, sizeof *s);
  cutter c = {.g = g, .t = g->t, .roofs = roofs, .s = s};
  const cal_kevent *e = &g->t->ev[g->steps[step]];
  s->ev = g->steps[step];
  s->step_s = (double)e->dur_ns * 1e-9;
  c.t0 = e->ts_ns;
  c.t1 = e->ts_ns + e->dur_ns;
  c.main = cal_gindex_thread(g, e->thread);
  int rc = find_backward(&c);
  if (rc == 0) {
    s->ddp = has_ddp(&c);
    rc = cut_forward(&c);
  }
  if (rc == 0 && (c.part = 1))
    rc = cut_backward(&c);
  if (rc == 0 && (c.part = 2))
    rc = cut_after(&c);
  free(c.seq_layer);
  if (rc) {
    cal_gstep_free(s);
    return rc;
  }
  merge_runs(&c);
  s->fwd_s = (double)(c.first_bwd - c.t0) * 1e-9;
  s->bwd_s = (double)(c.last_bwd - c.first_bwd) * 1e-9;
  s->post_s = (double)(c.t1 - c.last_bwd) * 1e-9;
  return 0;
}

#include "replay.h"

#include "sim/step.h"

#include "core/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { REPEATS = 3, TID_HOST = 2, TID_SIDE0 = 3 };

typedef struct span {
  double t0, t1;
} span;

typedef struct rstate {
  const sim_replay_cfg *c;
  double comm_factor; /* 0: communication free (the compute-only replay) */
  int ddp;            /* DDP's buckets are launched (the trace ran DDP) */
  double H, G, C;     /* host, compute stream, allreduce stream */
  double *side;       /* [streams + 1] side streams' free times (index 0 unused) */
  int *left;          /* [n_buckets] gradients still to arrive */
  int next;           /* next bucket to launch */
  span *comm;         /* this step's allreduces */
  int n_comm;
  span *work; /* the compute stream's pieces, in order */
  int n_work;
  double *lag;       /* [n_buckets] the wait for the later rank (skew) */
  core_trace *trace; /* only during the last repetition */
  double t_base;     /* its start, the trace's zero */
} rstate;

static void emit(rstate *s, const char *name, const char *cat, int tid, double t0, double t1) {
  if (s->trace && t1 > t0)
    core_trace_span(s->trace, name, cat, 0, tid, (t0 - s->t_base) * 1e6, (t1 - t0) * 1e6, NULL);
}

/* Compute-stream work of w seconds from t: at rate 1/slowdown where it runs
 * beside an allreduce of this step. */
static double advance(const rstate *s, double t, double w) {
  double sd = s->c->t->overlap_slowdown;
  for (int i = 0; i < s->n_comm && w > 0 && sd > 1.0; i++) {
    span c = s->comm[i];
    if (c.t1 <= t)
      continue;
    if (c.t0 > t) {
      double free_run = c.t0 - t;
      if (w <= free_run)
        return t + w;
      w -= free_run;
      t = c.t0;
    }
    double slow = (c.t1 - t) / sd;
    if (w <= slow)
      return t + w * sd;
    w -= slow;
    t = c.t1;
  }
  return t + w;
}

static double stream_done(const rstate *s, uint64_t mask) {
  double t = (mask & 1) ? s->G : 0;
  for (int k = 1; k <= s->c->t->streams; k++)
    if (mask >> k & 1 && s->side[k] > t)
      t = s->side[k];
  return t;
}

static void launch_bucket(rstate *s, int b) {
  const sim_replay_cfg *c = s->c;
  s->H += c->t->launch_host_s;
  double d = c->bucket_comm_s[b] * s->comm_factor;
  double t0 = s->C > s->G ? s->C : s->G;
  if (s->H > t0)
    t0 = s->H;
  s->C = t0 + (d > 0 ? s->lag[b] : 0) + d;
  s->comm[s->n_comm++] = (span){t0, s->C};
  char name[48];
  snprintf(name, sizeof name, "allreduce bucket %d", b);
  emit(s, name, "comm", CORE_TRACE_TID_COMM, t0, s->C);
}

static void launch_ready(rstate *s) {
  while (s->next < s->c->bk->n_buckets && s->left[s->next] == 0)
    launch_bucket(s, s->next++);
}

/* When the compute-stream piece running at t (if any) ends: side work
 * held back by the compute stream's kernels starts then. */
static double held_until(const rstate *s, double t) {
  for (int i = s->n_work - 1; i >= 0 && s->work[i].t1 > t; i--)
    if (s->work[i].t0 <= t)
      return s->work[i].t1;
  return t;
}

/* Side work and syncs of piece p, in host order; returns the host time the
 * syncs waited. hb is the piece's host start, w its host time. */
static double piece_events(rstate *s, const core_piece *p, double hb, double w) {
  const core_traced *t = s->c->t;
  int i = 0, j = 0;
  double waited = 0;
  while (i < p->n_side || j < p->n_sync) {
    const core_side *sd = i < p->n_side ? &t->side[p->first_side + i] : NULL;
    const core_sync *sy = j < p->n_sync ? &t->syncs[p->first_sync + j] : NULL;
    if (sd && (!sy || sd->at <= sy->at)) {
      double h = hb + waited + sd->at * w, t0 = s->side[sd->stream];
      double dep = sd->dep == 0 ? s->G : sd->dep > 0 ? s->side[sd->dep] : 0;
      /* a communication kernel also waits for what the compute stream was
       * given before its launch (the process group's stream waits on it) */
      double before = s->G < h ? s->G : h;
      if (sd->nccl && before > dep)
        dep = before;
      t0 = t0 > h ? t0 : h;
      t0 = t0 > dep ? t0 : dep;
      if (sd->held)
        t0 = held_until(s, t0);
      s->side[sd->stream] = t0 + sd->dur_s;
      emit(s, sd->nccl ? "communication (measured)" : "side work (measured)", "side", TID_SIDE0 + sd->stream - 1, t0,
          s->side[sd->stream]);
      i++;
    } else {
      double h = hb + waited + sy->at * w, done = stream_done(s, sy->streams);
      if (done > h) {
        emit(s, "sync", "host", TID_HOST, h, done);
        waited += done - h;
      }
      j++;
    }
  }
  return waited;
}

static const char *piece_name(const rstate *s, const core_piece *p, char *buf, size_t n) {
  const char *const *names = s->c->layer_names;
  switch (p->kind) {
  case CORE_PIECE_FWD: snprintf(buf, n, "%s forward", names ? names[p->index] : "layer"); break;
  case CORE_PIECE_BWD: snprintf(buf, n, "%s backward", names ? names[p->index] : "layer"); break;
  case CORE_PIECE_GRAD: snprintf(buf, n, "gradient %d ready", p->index); break;
  case CORE_PIECE_FINALIZE: snprintf(buf, n, "DDP finalize"); break;
  default: snprintf(buf, n, "%s", p->label[0] ? p->label : "other"); break;
  }
  return buf;
}

/* A piece's compute-stream time at this batch and on this GPU. */
static double piece_dev(const sim_replay_cfg *c, const core_piece *p) {
  if (!p->classed)
    return p->dev_s * c->dev_scale;
  double cs = c->compute_scale > 0 ? c->compute_scale : 1, ms = c->memory_scale > 0 ? c->memory_scale : 1;
  return (p->dev_class_s[CORE_DEV_COMPUTE] * cs + p->dev_class_s[CORE_DEV_MEMORY] * ms) * c->dev_scale +
         p->dev_class_s[CORE_DEV_LAUNCH];
}

static void run_piece(rstate *s, const core_piece *p) {
  const sim_replay_cfg *c = s->c;
  if (p->kind == CORE_PIECE_FINALIZE && !c->overlap && s->ddp)
    while (s->next < c->bk->n_buckets)
      launch_bucket(s, s->next++);
  double hb = s->H, w = p->host_s;
  double start = s->G > hb ? s->G : hb, dep = stream_done(s, p->waits & ~1ull);
  if (dep > start)
    start = dep;
  if (p->kind == CORE_PIECE_FINALIZE && s->C > start)
    start = s->C;
  double end = advance(s, start, piece_dev(c, p));
  s->G = end;
  if (end > start)
    s->work[s->n_work++] = (span){start, end};
  double waited = piece_events(s, p, hb, w);
  s->H = hb + waited + w;
  char name[96];
  emit(s, piece_name(s, p, name, sizeof name), "host", TID_HOST, hb, s->H);
  emit(s, name, "compute", CORE_TRACE_TID_COMPUTE, start, end);
  if (p->kind == CORE_PIECE_GRAD && s->ddp) {
    int b = c->bk->tensor_bucket[p->index];
    if (s->left[b] > 0)
      s->left[b]--;
    if (c->overlap)
      launch_ready(s);
  }
}

/* Whether the replayed buckets are the traced ones: as many, each of the
 * bytes the trace records for it (a bucket whose bytes the trace does not
 * record is compared by count alone). */
static int traced_buckets(const sim_replay_cfg *c) {
  const core_traced *t = c->t;
  if (c->bk->n_buckets != t->n_buckets)
    return 0;
  for (int b = 0; t->bucket_bytes && b < t->n_buckets; b++)
    if (t->bucket_bytes[b] > 0 && (!c->bucket_bytes || fabs(c->bucket_bytes[b] - t->bucket_bytes[b]) >= 0.5))
      return 0;
  return 1;
}

/* The ranks' skew, as measured wait (core/traced.h): each traced bucket's
 * allreduce runs its median time beyond its fastest step's longer, waiting
 * for the later rank. Any other bucket assignment, even one of as many
 * buckets, shares the step's traced wait by its buckets' bytes, so that
 * more buckets do not wait more, nor a bucket of other tensors the wait of
 * the traced bucket in its place. */
static void skew_lags(rstate *s) {
  const core_traced *t = s->c->t;
  const core_buckets *bk = s->c->bk;
  int n = t->n_buckets, as_traced = traced_buckets(s->c);
  double w = 0, total = 0;
  if (!t->bucket_min_s || n <= 0)
    return;
  for (int b = 0; b < n; b++)
    w += t->bucket_s[b] - t->bucket_min_s[b];
  for (int b = 0; b < bk->n_buckets; b++)
    total += (double)bk->bucket_elems[b];
  for (int b = 0; b < bk->n_buckets; b++)
    s->lag[b] = as_traced ? t->bucket_s[b] - t->bucket_min_s[b]
                          : (total > 0 ? w * (double)bk->bucket_elems[b] / total : w / bk->n_buckets);
}

/* One step; returns 0 or an error when a bucket never filled. */
static int run_step(rstate *s) {
  const sim_replay_cfg *c = s->c;
  for (int b = 0; s->ddp && b < c->bk->n_buckets; b++)
    s->left[b] = c->bk->bucket_first[b + 1] - c->bk->bucket_first[b];
  s->next = 0;
  s->n_comm = 0;
  for (int i = 0; i < c->t->n_pieces; i++)
    run_piece(s, &c->t->pieces[i]);
  if (s->ddp && s->next < c->bk->n_buckets)
    return core_err_set(CORE_EINVAL,
        "the traced step fills %d of %d buckets: its grad pieces do not cover every parameter tensor", s->next,
        c->bk->n_buckets);
  return 0;
}

/* REPEATS steps back to back; *period is the last one's. */
static int replay(const sim_replay_cfg *c, double comm_factor, core_trace *trace, double *period) {
  rstate s = {.c = c, .comm_factor = comm_factor, .ddp = c->t->ddp && c->bk && c->bk->n_buckets > 0};
  int rc = 0;
  s.side = calloc((size_t)c->t->streams + 1, sizeof *s.side);
  s.left = calloc((size_t)c->bk->n_buckets + 1, sizeof *s.left);
  s.comm = calloc((size_t)c->bk->n_buckets + 1, sizeof *s.comm);
  s.lag = calloc((size_t)c->bk->n_buckets + 1, sizeof *s.lag);
  s.work = calloc((size_t)c->t->n_pieces * REPEATS + 1, sizeof *s.work);
  if (!s.side || !s.left || !s.comm || !s.lag || !s.work) {
    rc = core_err_set(CORE_ENOMEM, "out of memory replaying a traced step");
    goto out_free;
  }
  if (comm_factor > 0 && s.ddp)
    skew_lags(&s);
  double dev_end[REPEATS], host_end[REPEATS];
  for (int k = 0; k < REPEATS && rc == 0; k++) {
    if (k == REPEATS - 1) {
      s.trace = trace;
      s.t_base = s.H;
    }
    rc = run_step(&s);
    dev_end[k] = stream_done(&s, ~0ull) > s.C ? stream_done(&s, ~0ull) : s.C;
    host_end[k] = s.H;
  }
  if (rc == 0) {
    double dd = dev_end[REPEATS - 1] - dev_end[REPEATS - 2], hd = host_end[REPEATS - 1] - host_end[REPEATS - 2];
    *period = dd > hd ? dd : hd;
  }
out_free:
  free(s.side);
  free(s.left);
  free(s.comm);
  free(s.lag);
  free(s.work);
  return rc;
}

/* Overlap off holds every bucket for DDP's finalize piece; a step without one
 * (no copies back, as with gradient_as_bucket_view) has no point where the
 * trace shows DDP waiting for its allreduces. */
static int overlap_off_placeable(const sim_replay_cfg *c) {
  if (c->overlap || !c->t->ddp || c->bk->n_buckets <= 0)
    return 0;
  for (int i = 0; i < c->t->n_pieces; i++)
    if (c->t->pieces[i].kind == CORE_PIECE_FINALIZE)
      return 0;
  return core_err_set(CORE_EINVAL,
      "ddp.overlap = false: the traced step has no DDP finalize (DDP copied no gradients back, as with "
      "gradient_as_bucket_view), so it does not show where DDP waits for its allreduces; replay it with overlap on");
}

int sim_replay_run(const sim_replay_cfg *c, sim_replay_result *r, core_trace *trace) {
  memset(r, 0, sizeof *r);
  if (!c->t || c->t->n_pieces <= 0 || !c->bk)
    return core_err_set(CORE_EINVAL, "a traced replay needs the trace's pieces and the buckets");
  int rc0 = overlap_off_placeable(c);
  if (rc0)
    return rc0;
  if (trace)
    core_trace_process(trace, 0, "rank 0 (the traced step replayed)");
  int rc = replay(c, 1.0, trace, &r->step_s);
  if (rc == 0)
    rc = replay(c, 0.0, NULL, &r->compute_s);
  if (rc)
    return rc;
  for (int b = 0; c->t->ddp && b < c->bk->n_buckets; b++)
    r->comm_s += c->bucket_comm_s[b];
  for (int i = 0; i < c->t->n_pieces; i++) {
    r->host_s += c->t->pieces[i].host_s;
    r->device_s += piece_dev(c, &c->t->pieces[i]);
  }
  r->exposed_comm_s = sim_step_exposed(r->step_s, r->compute_s);
  return 0;
}

int sim_replay_check_ddp(
    const core_traced *t, const char *name, int zero_optimizer, int bucket_view, const char *where) {
  int copies = 0;
  for (int i = 0; t && i < t->n_pieces; i++)
    copies |= t->pieces[i].kind == CORE_PIECE_FINALIZE || t->pieces[i].copy_host_s > 0 || t->pieces[i].copy_dev_s > 0;
  if (t && zero_optimizer)
    return core_err_set(CORE_EINVAL,
        "%s: zero_optimizer = true shards an optimizer step that ddpsim costs, but model '%s' is a traced job "
        "whose step is replayed as measured; trace the job run with ZeroRedundancyOptimizer instead, or set "
        "zero_optimizer = false",
        where, name);
  if (copies && bucket_view)
    return core_err_set(CORE_EINVAL,
        "%s: gradient_as_bucket_view = true leaves out DDP's copies of the gradients into its buckets and back, but "
        "model '%s' is a traced job that made them, and its step replays them as measured; trace the job run with "
        "gradient_as_bucket_view=True instead, or set gradient_as_bucket_view = false",
        where, name);
  return 0;
}

int sim_replay_measured_comm(const core_traced *t) {
  int n = 0;
  for (int i = 0; t && i < t->n_side; i++)
    n += t->side[i].nccl != 0;
  return n;
}

/* Do precisions a and b move the same bytes (the same type, or fp32 and
 * tf32, whose tensors are both fp32)? */
static int same_bytes(enum core_prec a, enum core_prec b) {
  int wa = a == CORE_PREC_FP32 || a == CORE_PREC_TF32, wb = b == CORE_PREC_FP32 || b == CORE_PREC_TF32;
  return a == b || (wa && wb);
}

int sim_replay_retarget(const core_traced *t, const char *model, const core_profile *pr, const char *profile,
    enum core_prec p, double *compute_scale, double *memory_scale) {
  *compute_scale = *memory_scale = 1;
  if (!strcmp(pr->device_name, t->device) && p == t->precision)
    return 0; /* the traced GPU at the traced precision: the step as traced */
  const char *want = core_prec_name(t->precision);
  if (!strcmp(pr->device_kind, "cpu"))
    return core_err_set(CORE_EINVAL,
        "%s describes CPUs: the traced step of %s ran on a GPU ('%s') and replays on a profile of a GPU only; simulate "
        "it with --profile of one (scenarios/profiles/ has them)",
        profile, model, t->device);
  if (!same_bytes(p, t->precision))
    return core_err_set(CORE_EINVAL,
        "%s:%d: the traced step computed in %s and its kernels moved %s's bytes; simulate it at training.precision = "
        "\"%s\"%s (a traced step cannot change the width of its tensors)",
        model, t->line, want, want,
        t->precision == CORE_PREC_FP16   ? "amp_fp16"
        : t->precision == CORE_PREC_BF16 ? "amp_bf16"
                                         : want,
        t->precision == CORE_PREC_FP32   ? " or \"tf32\""
        : t->precision == CORE_PREC_TF32 ? " or \"fp32\""
                                         : "");
  if (!t->classed)
    return core_err_set(CORE_EINVAL,
        "%s:%d: the traced step records no kernel classes (its pieces lack dev_compute_us, dev_memory_us and "
        "dev_launch_us), so it replays on its own GPU ('%s') only: re-import the trace with `ddpsim import "
        "torch-trace`, or simulate with a profile of that GPU",
        model, t->line, t->device);
  if (!(t->peak_flops > 0) || !(t->peak_memory_Bps > 0))
    return core_err_set(CORE_EINVAL,
        "%s:%d: traced.peak_tflops and traced.peak_memory_GBps (the traced GPU '%s''s roofs at %s) are missing, so its "
        "step cannot be retargeted: re-import the trace with --scenario and --profile-base PROFILE, a profile of that "
        "GPU with compute[].peak_tflops and device.peak_memory_GBps",
        model, t->line, t->device, want);
  double tf = core_profile_peak_flops(pr, p), mem = pr->peak_memory_GBps * 1e9;
  enum core_prec alt = p == CORE_PREC_TF32 ? CORE_PREC_FP32 : p == CORE_PREC_FP32 ? CORE_PREC_TF32 : p;
  if (!(tf > 0) && !pr->rate[p].present && alt != p && core_profile_peak_flops(pr, alt) > 0)
    return core_err_set(CORE_EINVAL, /* a GPU without TF32 (a V100): its fp32 stands for the traced tf32 */
        "%s: this GPU has no %s rates (no %s entry in compute): simulate the traced step of %s on it at "
        "training.precision = \"%s\", which moves the same bytes",
        profile, core_prec_name(p), core_prec_name(p), model, core_prec_name(alt));
  if (!(tf > 0))
    return core_err_set(CORE_EINVAL,
        "%s: retargeting the traced step of %s onto this GPU needs its %s peak: add peak_tflops (the datasheet's dense "
        "peak) to the %s entry of compute, or simulate at a precision it has",
        profile, model, core_prec_name(p), core_prec_name(p));
  if (!(mem > 0))
    return core_err_set(CORE_EINVAL,
        "%s: retargeting the traced step of %s onto this GPU needs device.peak_memory_GBps (the datasheet's memory "
        "bandwidth); add it",
        profile, model);
  *compute_scale = t->peak_flops / tf;
  *memory_scale = t->peak_memory_Bps / mem;
  return 0;
}

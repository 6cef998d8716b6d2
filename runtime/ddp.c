#include "ddp.h"

#include "core/afile.h"
#include "core/clock.h"
#include "core/err.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rt_ddp {
  rt_mlp *net;
  rt_comm *comm;
  rt_ddp_opts o;
  core_buckets bk;
  float **bucket_buf; /* [n_buckets] flat bucket contents */
  int *pending;       /* [n_buckets] tensors not yet copied in this step */
  float *momentum;
  int has_momentum;
  rt_compressor *hook;        /* the communication hook (none = plain allreduce) */
  rt_compress_stats *hook_st; /* [n_buckets] what it did this step */

  /* Communication thread: buckets [0, n_queued) are handed over, in order;
   * it has started [0, n_started) and finished [0, n_done). */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n_queued, n_started, n_done, quit, failed, fail_rc;
  long step;
  char fail_msg[2048];
  double *coll_t0, *coll_t1; /* [n_buckets] per step */
};

__attribute__((noinline)) void rt_scale_copy(float *restrict dst, const float *restrict src, int64_t n, float scale) {
  for (int64_t i = 0; i < n; i++)
    dst[i] = src[i] * scale;
}

__attribute__((noinline)) void rt_sgd_update(
    float *restrict p, float *restrict buf, const float *restrict g, int64_t n, float lr, float keep) {
  if (!buf) {
    for (int64_t i = 0; i < n; i++)
      p[i] -= lr * g[i];
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    float b = keep * buf[i] + g[i];
    buf[i] = b;
    p[i] -= lr * b;
  }
}

static void *comm_main(void *arg) {
  rt_ddp *d = arg;
  pthread_mutex_lock(&d->mu);
  for (;;) {
    while (!d->quit && (d->n_started >= d->n_queued || d->failed))
      pthread_cond_wait(&d->cv, &d->mu);
    if (d->quit)
      break;
    int b = d->n_started++;
    long step = d->step;
    pthread_mutex_unlock(&d->mu);

    /* Fault injection: die in the middle of the step's allreduces, so the
     * peers are blocked inside a collective when this rank disappears. */
    if (d->o.fail_step >= 0 && step == d->o.fail_step && b == d->bk.n_buckets / 2) {
      fprintf(stderr, "rank %d: injected failure: SIGKILL at step %ld, bucket %d\n", d->comm->rank, step, b);
      fflush(stderr);
      core_afile mark;
      /* The moment of death, for measuring detection and recovery; written
       * like every output (never over an input), or not at all. */
      if (d->o.fail_mark && core_afile_open(&mark, d->o.fail_mark) == 0) {
        fprintf(mark.f, "%.6f %ld\n", core_wall_now(), step);
        core_afile_commit(&mark);
      }
      raise(SIGKILL);
    }
    double t0 = core_now();
    int rc = rt_compress_finish(d->hook, d->comm, b, d->bucket_buf[b], step, &d->hook_st[b]);
    double t1 = core_now();

    pthread_mutex_lock(&d->mu);
    d->coll_t0[b] = t0;
    d->coll_t1[b] = t1;
    if (rc) {
      d->failed = 1;
      d->fail_rc = rc;
      snprintf(d->fail_msg, sizeof d->fail_msg, "%s", core_err_msg());
    } else {
      d->n_done = b + 1;
    }
    pthread_cond_broadcast(&d->cv);
  }
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

void rt_ddp_opts_default(rt_ddp_opts *o) {
  *o = (rt_ddp_opts){.bucket_cap_mb = CORE_BUCKET_DEFAULT_CAP_MB,
      .first_bucket_mb = (double)CORE_BUCKET_FIRST_BYTES / 1048576.0,
      .overlap = 1,
      .algo = RT_ALGO_DEFAULT,
      .lr = RT_DDP_DEFAULT_LR,
      .momentum = RT_DDP_DEFAULT_MOMENTUM,
      .fail_step = -1};
  rt_compress_opts_default(&o->compress);
}

void rt_ddp_free(rt_ddp *d) {
  if (!d)
    return;
  if (d->thread) {
    pthread_mutex_lock(&d->mu);
    d->quit = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
  }
  pthread_mutex_destroy(&d->mu);
  pthread_cond_destroy(&d->cv);
  if (d->bucket_buf)
    for (int b = 0; b < d->bk.n_buckets; b++)
      free(d->bucket_buf[b]);
  free(d->bucket_buf);
  free(d->pending);
  free(d->coll_t0);
  free(d->coll_t1);
  free(d->momentum);
  free(d->hook_st);
  rt_compress_free(d->hook);
  core_bucket_free(&d->bk);
  rt_mlp_free(d->net);
  free(d);
}

/* d's gradient buckets as PyTorch rebuilds them after the first step, each
 * with its buffer, times and communication hook's state, and the momentum
 * buffer; what it made is freed with d. */
static int make_buckets(rt_ddp *d, const core_model *m) {
  const rt_ddp_opts *o = &d->o;
  size_t first = (size_t)(o->first_bucket_mb * 1048576.0 + 0.5);
  size_t cap = (size_t)(o->bucket_cap_mb * 1048576.0 + 0.5);
  int rc = core_bucket_assign(
      m->tensor_elems, m->n_tensors, m->ready_order, sizeof(float), first, cap ? cap : 1, CORE_BUCKET_REBUILT, &d->bk);
  if (rc)
    return rc;
  int nb = d->bk.n_buckets;
  d->bucket_buf = calloc((size_t)nb, sizeof *d->bucket_buf);
  d->pending = calloc((size_t)nb, sizeof *d->pending);
  d->coll_t0 = calloc((size_t)nb, sizeof *d->coll_t0);
  d->coll_t1 = calloc((size_t)nb, sizeof *d->coll_t1);
  d->momentum = calloc((size_t)m->n_params, sizeof *d->momentum);
  d->hook_st = calloc((size_t)nb, sizeof *d->hook_st);
  if (!d->bucket_buf || !d->pending || !d->coll_t0 || !d->coll_t1 || !d->momentum || !d->hook_st)
    goto fail_nomem;
  rt_compress_opts hook = o->compress;
  hook.algo = o->algo;
  if ((rc = rt_compress_create(&hook, m, &d->bk, &d->hook)) != 0)
    return rc;
  for (int b = 0; b < nb; b++)
    if (!(d->bucket_buf[b] = malloc(sizeof(float) * (size_t)d->bk.bucket_elems[b])))
      goto fail_nomem;
  return 0;
fail_nomem:
  return core_err_set(CORE_ENOMEM, "out of memory for %d gradient buckets", nb);
}

int rt_ddp_create(const core_model *m, rt_comm *comm, int batch, const rt_ddp_opts *o, uint64_t seed, rt_ddp **out) {
  /* Gloo's AllreduceRing sums the whole buffer in a different order on each
   * rank (rank r adds r, r-1, r-2, ...), so with more than 2 ranks the fp32
   * results differ in their last bits and the replicas would drift apart. */
  if (o->algo == RT_ALGO_RING && comm->size > 2 && strcmp(comm->ops->name, "gloo") == 0)
    return core_err_set(CORE_EUNSUPPORTED,
        "DDP with Gloo's ring allreduce on %d ranks: it sums in a different order on every rank, so the replicas' "
        "parameters would drift apart; use default, ring_chunked or halving_doubling",
        comm->size);
  rt_ddp *d = calloc(1, sizeof *d);
  if (!d)
    return core_err_set(CORE_ENOMEM, "out of memory creating the DDP engine");
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);
  d->comm = comm;
  d->o = *o;
  int rc = rt_mlp_create(m, batch, seed, &d->net);
  if (rc)
    goto fail_free;
  if ((rc = make_buckets(d, m)) != 0)
    goto fail_free;
  /* DDP's constructor broadcasts rank 0's parameters so all replicas start
   * equal (DistributedDataParallel._sync_module_states). */
  if ((rc = rt_broadcast(comm, d->net->params, (size_t)m->n_params, RT_FP32, 0)) != 0) {
    core_err_wrap(rc, "broadcasting the initial parameters from rank 0");
    goto fail_free;
  }
  if (pthread_create(&d->thread, NULL, comm_main, d) != 0) {
    d->thread = 0;
    rc = core_err_set(CORE_EIO, "cannot start the communication thread");
    goto fail_free;
  }
  *out = d;
  return 0;
fail_free:
  rt_ddp_free(d);
  return rc;
}

rt_mlp *rt_ddp_mlp(rt_ddp *d) { return d->net; }
const core_buckets *rt_ddp_buckets(const rt_ddp *d) { return &d->bk; }
void rt_ddp_bucket_comm_s(const rt_ddp *d, double *out) {
  for (int b = 0; b < d->bk.n_buckets; b++)
    out[b] = d->coll_t1[b] - d->coll_t0[b];
}
float *rt_ddp_momentum(rt_ddp *d) { return d->momentum; }
int rt_ddp_has_momentum(const rt_ddp *d) { return d->has_momentum; }
void rt_ddp_set_has_momentum(rt_ddp *d, int has) { d->has_momentum = has; }

/* One step's clock: its start, the compute timed so far, and the trace
 * (may be NULL) with the base its spans are placed at (microseconds). */
typedef struct step_clock {
  double t_start, compute, base;
  core_trace *tr;
  int rank;
} step_clock;

static void span(
    const step_clock *k, const char *name, const char *cat, int tid, double t0, double t1, const char *args) {
  if (k->tr)
    core_trace_span(k->tr, name, cat, k->rank, tid, k->base + (t0 - k->t_start) * 1e6, (t1 - t0) * 1e6, args);
}

/* Buckets [from, upto) are ready: the hook's body runs for each here, on
 * the compute thread, as PyTorch's reducer calls the hook from the autograd
 * thread (its compute, e.g. a cast or PowerSGD's P = M Q, holds up
 * backward); what follows its allreduces runs on the communication thread. */
static int prepare(rt_ddp *d, long step, int from, int upto, step_clock *k) {
  for (int b = from; b < upto; b++) {
    double t0 = core_now();
    memset(&d->hook_st[b], 0, sizeof d->hook_st[b]);
    int rc = rt_compress_prepare(d->hook, b, d->bucket_buf[b], step, &d->hook_st[b]);
    if (rc)
      return core_err_wrap(rc, "step %ld: preparing bucket %d", step, b);
    double t1 = core_now();
    k->compute += t1 - t0;
    if (d->o.compress.kind != CORE_COMPRESS_NONE) {
      char name[64];
      snprintf(name, sizeof name, "hook bucket %d", b);
      span(k, name, "hook", CORE_TRACE_TID_COMPUTE, t0, t1, NULL);
    }
  }
  return 0;
}

static void hand_over(rt_ddp *d, int upto) {
  pthread_mutex_lock(&d->mu);
  if (upto > d->n_queued) {
    d->n_queued = upto;
    pthread_cond_broadcast(&d->cv);
  }
  pthread_mutex_unlock(&d->mu);
}

/* The communication thread's counters and the buckets' pending tensors back
 * to a step's start. */
static void step_reset(rt_ddp *d, long step) {
  const core_buckets *bk = &d->bk;
  pthread_mutex_lock(&d->mu);
  d->n_queued = d->n_started = d->n_done = 0;
  d->step = step;
  pthread_mutex_unlock(&d->mu);
  for (int b = 0; b < bk->n_buckets; b++)
    d->pending[b] = bk->bucket_first[b + 1] - bk->bucket_first[b];
}

/* Forward layer by layer, then the loss. */
static double forward(rt_ddp *d, const float *x, const float *target, step_clock *k) {
  rt_mlp *n = d->net;
  const core_model *mo = n->model;
  char name[96];
  memcpy(n->act[0], x, sizeof(float) * (size_t)n->batch * (size_t)mo->layers[0].in);
  for (int l = 0; l < n->n_layers; l++) {
    double t0 = core_now();
    rt_mlp_forward_layer(n, l);
    double t1 = core_now();
    k->compute += t1 - t0;
    snprintf(name, sizeof name, "%s forward", mo->layers[l].name);
    span(k, name, "forward", CORE_TRACE_TID_COMPUTE, t0, t1, NULL);
  }
  double t0 = core_now();
  double loss = rt_mlp_loss(n, target);
  k->compute += core_now() - t0;
  return loss;
}

/* Backward, layer by layer; each layer's gradients go to their buckets,
 * averaged on the way, and ready buckets are handed over in order (all at
 * the end without overlap). */
static int backward(rt_ddp *d, long step, step_clock *k) {
  rt_mlp *n = d->net;
  const core_model *mo = n->model;
  const core_buckets *bk = &d->bk;
  int nb = bk->n_buckets, next = 0, rc;
  float inv_world = 1.0f / (float)d->comm->size;
  char name[96];
  for (int l = n->n_layers - 1; l >= 0; l--) {
    double t0 = core_now();
    rt_mlp_backward_layer(n, l);
    const core_layer *L = &mo->layers[l];
    for (int i = 0; i < L->n_tensors; i++) {
      int ti = L->first_tensor + i, b = bk->tensor_bucket[ti];
      const float *g = n->grads + n->offset[ti];
      rt_scale_copy(d->bucket_buf[b] + bk->tensor_offset[ti], g, mo->tensor_elems[ti], inv_world);
      d->pending[b]--;
    }
    double t1 = core_now();
    k->compute += t1 - t0;
    snprintf(name, sizeof name, "%s backward", L->name);
    span(k, name, "backward", CORE_TRACE_TID_COMPUTE, t0, t1, NULL);
    int ready = next;
    while (next < nb && d->pending[next] == 0)
      next++;
    if ((rc = prepare(d, step, ready, next, k)) != 0)
      return rc;
    if (d->o.overlap)
      hand_over(d, next);
  }
  hand_over(d, nb);
  return 0;
}

/* Waits for the last allreduce; then each bucket's communication time and
 * hook statistics go into m, and its span into the trace. */
static int finish_comm(rt_ddp *d, long step, rt_step_metrics *m, const step_clock *k) {
  int nb = d->bk.n_buckets;
  pthread_mutex_lock(&d->mu);
  while (d->n_done < nb && !d->failed)
    pthread_cond_wait(&d->cv, &d->mu);
  int failed = d->failed, rc = d->fail_rc;
  pthread_mutex_unlock(&d->mu);
  if (failed)
    return core_err_set(rc, "step %ld: %s", step, d->fail_msg);
  for (int b = 0; b < nb; b++) {
    m->comm_s += d->coll_t1[b] - d->coll_t0[b];
    rt_compress_stats_add(&m->compress, &d->hook_st[b]);
    if (k->tr) {
      char name[96], args[96];
      snprintf(name, sizeof name, "allreduce bucket %d", b);
      snprintf(
          args, sizeof args, "\"bytes\": %lld, \"bucket\": %d", (long long)rt_compress_stats_bytes(&d->hook_st[b]), b);
      span(k, name, "comm", CORE_TRACE_TID_COMM, d->coll_t0[b], d->coll_t1[b], args);
    }
  }
  return 0;
}

/* Copy the averaged gradients back and step SGD (torch.optim.SGD: the
 * momentum buffer starts as the first gradient, then buf = mu*buf + g).
 * Returns when it ended. */
static double optimizer_step(rt_ddp *d, step_clock *k) {
  rt_mlp *n = d->net;
  const core_model *mo = n->model;
  const core_buckets *bk = &d->bk;
  double t0 = core_now();
  for (int ti = 0; ti < mo->n_tensors; ti++) {
    int b = bk->tensor_bucket[ti];
    memcpy(n->grads + n->offset[ti], d->bucket_buf[b] + bk->tensor_offset[ti],
        sizeof(float) * (size_t)mo->tensor_elems[ti]);
  }
  float mu = (float)d->o.momentum;
  rt_sgd_update(
      n->params, mu != 0.0f ? d->momentum : NULL, n->grads, n->n_params, (float)d->o.lr, d->has_momentum ? mu : 0.0f);
  if (mu != 0.0f)
    d->has_momentum = 1;
  double t1 = core_now();
  k->compute += t1 - t0;
  span(k, "optimizer step", "optimizer", CORE_TRACE_TID_COMPUTE, t0, t1, NULL);
  return t1;
}

/* The buckets already handed over may be in flight: let the communication
 * thread finish them (or fail) before the caller tears anything down. */
static void drain(rt_ddp *d) {
  pthread_mutex_lock(&d->mu);
  while (d->n_done < d->n_queued && !d->failed)
    pthread_cond_wait(&d->cv, &d->mu);
  pthread_mutex_unlock(&d->mu);
}

int rt_ddp_step(
    rt_ddp *d, long step, const float *x, const float *target, rt_step_metrics *m, core_trace *tr, double base) {
  step_clock k = {.t_start = core_now(), .base = base, .tr = tr, .rank = d->comm->rank};
  int rc;
  memset(m, 0, sizeof *m);
  m->step = step;
  step_reset(d, step);
  m->loss = forward(d, x, target, &k);
  if ((rc = backward(d, step, &k)) != 0) {
    drain(d);
    return rc;
  }
  if ((rc = finish_comm(d, step, m, &k)) != 0)
    return rc;
  double t_end = optimizer_step(d, &k);
  m->step_s = t_end - k.t_start;
  m->compute_s = k.compute;
  m->exposed_comm_s = m->step_s - k.compute;
  return 0;
}

#include "predict.h"

#include "sim/compute.h"
#include "sim/layer_cache.h"
#include "sim/memfit.h"
#include "sim/replay.h"
#include "sim/step.h"

#include "core/bucket.h"
#include "core/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t sim_predict_seed(uint64_t seed, long index) {
  /* splitmix64 (Steele, Lea, Flood 2014) mixes the point index into the
   * scenario seed, so a point's draws do not depend on which points ran
   * before it or on how the sweep was sharded. */
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* A measured fit of op at c->ranks becomes per-link α and β by dividing
 * out the algorithm's coefficients, one pair per fitted regime (the
 * collective then uses the regime its size falls into). */
static int link_from_profile(const core_prof_coll *c, enum sim_backend b, enum core_coll op, sim_link *l) {
  enum sim_algo a;
  double ca, cb;
  if (sim_algo_parse(c->algorithm, &a) != 0)
    return core_err_set(CORE_EINVAL, "unknown algorithm '%s' in profile", c->algorithm);
  int rc = sim_coll_coeffs(b, op, a, c->ranks, &ca, &cb);
  if (rc)
    return rc;
  memset(l, 0, sizeof *l);
  l->n_regimes = c->n_fits < SIM_LINK_MAX_REGIMES ? c->n_fits : SIM_LINK_MAX_REGIMES;
  l->p_ref = c->ranks;
  for (int k = 0; k < l->n_regimes; k++) {
    /* A profile with more regimes than fit here keeps its last one last. */
    const core_prof_fit *f = &c->fits[k == l->n_regimes - 1 ? c->n_fits - 1 : k];
    l->alpha[k] = f->alpha_us * 1e-6 / ca;
    l->beta[k] = 1.0 / (f->algbw_GBps * 1e9) / cb;
    l->max_bytes[k] = f->max_bytes;
  }
  l->alpha_s = l->alpha[l->n_regimes - 1];
  l->beta_s = l->beta[l->n_regimes - 1];
  return 0;
}

/* The profile's measurement of op in scope, else its allreduce's: the link
 * it gives. */
static int measured_link(
    const core_profile *pr, const char *path, enum sim_backend b, enum core_coll op, const char *scope, sim_link *l) {
  const char *bn = sim_backend_name(b);
  const core_prof_coll *c = NULL;
  if (op != CORE_COLL_ALLREDUCE)
    for (int i = 0; i < pr->n_colls && !c; i++)
      if (!strcmp(pr->colls[i].backend, bn) && !strcmp(pr->colls[i].op, core_coll_name(op)) &&
          !strcmp(pr->colls[i].scope, scope))
        c = &pr->colls[i];
  if (c)
    return link_from_profile(c, b, op, l);
  if (!(c = core_profile_allreduce(pr, bn, scope)))
    return core_err_set(CORE_EINVAL, "profile '%s' has no %s-node allreduce for %s", path,
        !strcmp(scope, "intra") ? "intra" : "inter", bn);
  return link_from_profile(c, b, CORE_COLL_ALLREDUCE, l);
}

int sim_topo_build(const core_profile *pr, const char *profile_path, const sim_network *n, enum sim_backend b,
    enum core_coll op, int nodes, int per_node, sim_topo *t) {
  int rc;
  memset(t, 0, sizeof *t);
  t->nodes = nodes;
  t->per_node = per_node;
  int gpu = strcmp(pr->device_kind, "gpu") == 0;
  if (per_node > 1 && (rc = measured_link(pr, profile_path, b, op, "intra", &t->intra)) != 0)
    return rc;
  t->rails = 1;
  if (nodes > 1) {
    if (n->from_profile) {
      if ((rc = measured_link(pr, profile_path, b, op, "inter", &t->inter)) != 0)
        return rc;
      if (n->gbps > 0) {
        /* Rescaled line rate: every regime's bandwidth in proportion. */
        double f = pr->link_gbps / n->gbps;
        t->inter.beta_s *= f;
        for (int k = 0; k < t->inter.n_regimes; k++)
          t->inter.beta[k] *= f;
      }
      t->node_Bps = 0; /* measured: the fit already holds the node's share */
    } else {
      double flow_Bps = n->gbps * 1e9 / 8.0 * n->efficiency;
      t->inter.alpha_s = n->latency_us * 1e-6;
      t->inter.beta_s = 1.0 / flow_Bps;
      /* NCCL runs one channel per NIC (multi-rail); Gloo's ring has one
       * TCP pair per neighbour, so one NIC carries it. */
      t->rails = b == SIM_BACKEND_NCCL ? n->nics_per_node : 1;
      t->node_Bps = flow_Bps * n->nics_per_node / n->oversubscription;
      /* Gloo reduces on the host; with a measured link the fit holds it. */
      if (b == SIM_BACKEND_GLOO)
        t->gamma_s = 1.0 / (pr->reduce_GBps * 1e9);
    }
  }
  if (b == SIM_BACKEND_GLOO && gpu)
    t->stage_s = 2.0 / (pr->host_link_GBps * 1e9); /* device to host and back */
  /* A datasheet profile's fits are Simple's model alone, so NCCL's other
   * protocols are costed on its links; LL128 runs only where NVLink joins
   * the node's GPUs (tuning.cc). */
  if (b == SIM_BACKEND_NCCL && gpu && core_profile_is_datasheet(pr))
    t->nccl_hw = pr->nvlink_GBps > 0 ? SIM_NCCL_HW_NVLINK : SIM_NCCL_HW_PCI;
  return 0;
}

int sim_predict_topo(const sim_scenario *s, const sim_point *p, sim_topo *t) {
  return sim_topo_build(
      s->profile, s->profile_path, p->network, p->backend, CORE_COLL_ALLREDUCE, p->nodes, p->per_node, t);
}

double sim_predict_allreduce(const sim_point *p, const sim_topo *t, double bytes) {
  if (t->fabric)
    return sim_fabric_allreduce(t->fabric, p->backend, p->algorithm, bytes, NULL);
  if (p->algorithm >= 0)
    return sim_coll_time(p->backend, CORE_COLL_ALLREDUCE, (enum sim_algo)p->algorithm, t, bytes);
  if (p->backend == SIM_BACKEND_GLOO)
    return sim_coll_time(p->backend, CORE_COLL_ALLREDUCE, SIM_ALGO_SEGMENTED_RING, t, bytes);
  double ring = sim_coll_time(p->backend, CORE_COLL_ALLREDUCE, SIM_ALGO_RING, t, bytes);
  double tree = sim_coll_time(p->backend, CORE_COLL_ALLREDUCE, SIM_ALGO_TREE, t, bytes);
  return ring < tree ? ring : tree;
}

/* Bytes of memory traffic per parameter for one optimizer step in fp32,
 * from the update rules of torch.optim: SGD reads param and grad and writes
 * param (12); momentum adds its buffer read and write (20); Adam reads param,
 * grad, exp_avg, exp_avg_sq and writes param and both moments (28). */
static double optimizer_bytes_per_param(enum sim_optimizer o) {
  switch (o) {
  case SIM_OPT_SGD_MOMENTUM: return 20.0;
  case SIM_OPT_ADAM: return 28.0;
  default: return 12.0;
  }
}

/* Seconds per byte moved by the hooks' casts to and from k: measured
 * (profile hooks; bf16's own rate where calibrated, as it only keeps a
 * float's top half), else the device memory bandwidth. */
static double cast_s_per_byte(const core_profile *pr, enum core_compress k) {
  double r = k == CORE_COMPRESS_BF16 && pr->cast_bf16_GBps > 0 ? pr->cast_bf16_GBps : pr->cast_GBps;
  return 1.0 / ((r > 0 ? r : pr->memory_GBps) * 1e9);
}

/* Seconds of an fp32 GEMM (PowerSGD works on fp32 gradients) of `flops`
 * that must read `bytes`: the roofline, the slower of compute at the
 * profile's GEMM rate and memory traffic at its memory bandwidth. PowerSGD's
 * rank-r products are thin (r of 1 to 4 columns), so they read the whole
 * gradient for few FLOPs and memory bounds them. */
static double gemm_s(const core_profile *pr, double flops, double bytes) {
  double rate = core_profile_flops(pr, CORE_PREC_FP32, flops);
  double c = rate > 0 ? flops / rate : 0, m = bytes / (pr->memory_GBps * 1e9);
  return c > m ? c : m;
}

/* Seconds of Gloo's host sum in an allreduce of `wire` bytes of
 * half-precision elements: each rank reduces (p-1)/p of the bytes (the
 * ring's reduce-scatter) at the rate of Gloo's sum for that type. Gloo sums
 * fp16 through float conversions element by element, far slower than fp32
 * on CPUs; NCCL reduces on the device, where halves are native. Needs the
 * sum rates calibration measures (profile hooks); 0 without them. */
static double half_sum_s(const core_profile *pr, const sim_point *p, enum core_compress k, double wire) {
  double h = k == CORE_COMPRESS_FP16 ? pr->sum_fp16_GBps : pr->sum_bf16_GBps;
  int world = p->nodes * p->per_node;
  if (p->backend != SIM_BACKEND_GLOO || world < 2 || h <= 0)
    return 0;
  return wire * (world - 1) / world / (h * 1e9);
}

/* A Gloo allreduce of half-precision elements whose sum takes `sum`
 * seconds and whose bytes take `net` on the fp32 link model: the ring's
 * reduce-scatter (half of net) sums each segment while the next one
 * arrives, so it lasts as long as the slower of the two; the allgather
 * (the other half) has nothing to sum. The testbed runs that show the sum
 * hidden and exposed: docs/calibration.md, "Sums inside Gloo". */
static double half_allreduce_s(double net, double sum) { return sum > net / 2 ? net / 2 + sum : net; }

/* What a bucket's hook costs besides its time on the communication stream
 * (hook_time): the compute it adds when the bucket becomes ready, of the
 * returned time the callbacks' CPU work (on CPUs; a GPU's hooks run on
 * streams) and the waiting on idle CPUs, the bytes put on the wire, and
 * the longest single collective (for the timeout). */
typedef struct hook_cost {
  double pre, cpu, idle, wire, longest;
} hook_cost;

/* A PowerSGD bucket's elements: sent uncompressed, and in the P and Q
 * factors of its compressed tensors; the compute of the hook's body
 * (before) and of its callbacks (after), and the bytes its passes over the
 * gradient move (mem). */
typedef struct psgd_work {
  double unc, pn, qn, before, after, mem;
} psgd_work;

static void psgd_bucket(const sim_scenario *s, const sim_point *p, const core_buckets *bk, int b, psgd_work *w) {
  const core_profile *pr = s->profile;
  const core_model *m = p->model;
  double r_req = p->compression.rank;
  memset(w, 0, sizeof *w);
  for (int i = bk->bucket_first[b]; i < bk->bucket_first[b + 1]; i++) {
    int ti = bk->bucket_tensors[i];
    double n = (double)m->tensor_rows[ti], el = (double)m->tensor_elems[ti], mm = el / n;
    /* powerSGD_hook.py: the rank is capped at min(n, m) before the test. */
    double r = r_req < n ? (r_req < mm ? r_req : mm) : (n < mm ? n : mm);
    if ((n + mm) * r * s->powersgd_min_rate < n * mm) {
      w->pn += n * r;
      w->qn += mm * r;
      /* P = M Q, Q = M^T P, M ~ P Q^T: three GEMMs of 2 n m r FLOPs, each
       * reading the n x m gradient (or writing it, for the
       * reconstruction) and the thin factors; orthogonalizing the
       * warm-started Q and P, 2 m r^2 and 2 n r^2 (the runtime's QR,
       * whose rate calibration measures); error feedback adds the last
       * error and keeps the new one (a pass reading 2 and writing 1
       * element each). As powerSGD_hook.py runs them: error feedback, Q
       * and P = M Q in the hook's body; the rest in the callbacks of the
       * allreduces. */
      double gbytes = 4 * (n * mm + (n + mm) * r);
      double g = pr->psgd_gemm_GBps > 0 ? gbytes / (pr->psgd_gemm_GBps * 1e9) : gemm_s(pr, 2 * n * mm * r, gbytes);
      double oq = 2 * mm * r * r, op = 2 * n * r * r;
      w->before += g + (pr->orth_gflops > 0 ? oq / (pr->orth_gflops * 1e9) : gemm_s(pr, oq, 4 * mm * r));
      w->after += 2 * g + (pr->orth_gflops > 0 ? op / (pr->orth_gflops * 1e9) : gemm_s(pr, op, 4 * n * r));
      w->mem += 3 * el * 4;
    } else {
      w->unc += el;
      w->mem += el * 4; /* into the contiguous buffer (and out again, after) */
    }
  }
}

/* PowerSGD's hook on bucket b: up to three allreduces (the uncompressed
 * tensors, P, Q) with the hook's compute between them. */
static double powersgd_time(
    const sim_scenario *s, const sim_point *p, const sim_topo *t, const core_buckets *bk, int b, hook_cost *h) {
  const core_profile *pr = s->profile;
  int host = strcmp(pr->device_kind, "gpu") != 0;
  psgd_work w;
  psgd_bucket(s, p, bk, b, &w);
  /* Measured rates of the runtime's hook where calibration has them, else
   * the roofline from the device's GEMM rate and memory bandwidth. */
  double mem_s = 1.0 / ((pr->psgd_pass_GBps > 0 ? pr->psgd_pass_GBps : pr->memory_GBps) * 1e9);
  /* Each allreduce that comes between the hook's CPU work waits longer
   * than the sweep's back-to-back ones (thread wake-ups and the slower
   * peer on a host whose CPUs run the hook): by this model's own wait
   * where calibration measured it (core/model.h), else the profile's
   * (hooks.psgd_sync_us, the first model calibrated). It is the mean of a
   * wait that differs from step to step, which the step draws (sim/step.h,
   * random_idle). The runs behind both: docs/calibration.md, "PowerSGD's
   * wait per allreduce". */
  double sync_us = p->model->psgd_sync_us >= 0 ? p->model->psgd_sync_us : pr->psgd_sync_us;
  double sync = host ? sync_us * 1e-6 : 0;
  double a = w.unc > 0 ? sim_predict_allreduce(p, t, w.unc * 4) + sync : 0;
  double bP = w.pn > 0 ? sim_predict_allreduce(p, t, w.pn * 4) + sync : 0;
  double bQ = w.qn > 0 ? sim_predict_allreduce(p, t, w.qn * 4) + sync : 0;
  h->idle = sync * ((w.unc > 0) + (w.pn > 0) + (w.qn > 0));
  h->wire = (w.unc + w.pn + w.qn) * 4;
  h->longest = a > bP ? (a > bQ ? a : bQ) : (bP > bQ ? bP : bQ);
  h->pre = w.before + w.mem * mem_s;
  h->cpu = host ? w.after + w.mem * mem_s : 0;
  return a + bP + bQ + w.after + w.mem * mem_s;
}

/* A bucket's communication hook: its time on the communication stream
 * (collectives and the work that waits for them), and what else it costs
 * (hook_cost). Mechanics of PyTorch's hooks (default_hooks.py,
 * powerSGD_hook.py; docs/cost-models.md). A hook's kernels run on the
 * compute stream in PyTorch (the hook is called from the autograd thread,
 * its GPU work goes to the current stream, and on CPUs it takes the
 * autograd thread itself); so the hook body's compute is charged to the
 * compute path, and what its futures' callbacks run after each collective
 * (the cast back; PowerSGD's orthogonalization of P, Q = M^T P, the
 * reconstruction and the new error) to the communication stream. */
static double hook_time(
    const sim_scenario *s, const sim_point *p, const sim_topo *t, const core_buckets *bk, int b, int gb, hook_cost *h) {
  const core_profile *pr = s->profile;
  double elems = (double)bk->bucket_elems[b];
  memset(h, 0, sizeof *h);
  int host = strcmp(pr->device_kind, "gpu") != 0;
  switch (p->compression.kind) {
  case CORE_COMPRESS_FP16:
  case CORE_COMPRESS_BF16: {
    /* Cast to half (read gb, write 2 bytes an element), allreduce, cast back. */
    double cast = elems * (gb + 2) * cast_s_per_byte(pr, p->compression.kind);
    double sum = half_sum_s(pr, p, p->compression.kind, elems * 2);
    h->pre = cast;
    h->wire = elems * 2;
    h->longest = half_allreduce_s(sim_predict_allreduce(p, t, h->wire), sum);
    /* Gloo's half-precision sum is CPU work on the communication thread: it
     * contends with backward for the rank's CPUs as the cast back does. */
    h->cpu = host ? cast + (sum < h->longest ? sum : h->longest) : 0;
    return h->longest + cast;
  }
  case CORE_COMPRESS_POWERSGD: return powersgd_time(s, p, t, bk, b, h);
  default:
    h->wire = elems * gb;
    h->longest = sim_predict_allreduce(p, t, h->wire);
    return h->longest;
  }
}

/* The layer after whose backward each bucket is ready (sim/step.h). A
 * tensor's gradient is ready when its layer's backward is done, and no
 * later than that of any tensor after it in ready order: backward runs the
 * layers last to first, so that is the highest layer of the tensors from
 * it on in ready order (its own, where ready order follows the layers). */
static int ready_layers(const core_model *m, const core_buckets *bk, int **out) {
  int n = m->n_tensors;
  int *at = malloc(sizeof *at * (size_t)n);
  int *ready = malloc(sizeof *ready * (size_t)bk->n_buckets);
  if (!at || !ready) {
    free(at);
    free(ready);
    return core_err_set(CORE_ENOMEM, "out of memory placing %d buckets", bk->n_buckets);
  }
  int high = -1;
  for (int k = n - 1; k >= 0; k--) {
    int t = m->ready_order ? m->ready_order[k] : n - 1 - k;
    if (m->tensor_layer[t] > high)
      high = m->tensor_layer[t];
    at[t] = high;
  }
  for (int b = 0; b < bk->n_buckets; b++) {
    ready[b] = m->n_layers;
    for (int i = bk->bucket_first[b]; i < bk->bucket_first[b + 1]; i++)
      if (at[bk->bucket_tensors[i]] < ready[b])
        ready[b] = at[bk->bucket_tensors[i]];
  }
  free(at);
  *out = ready;
  return 0;
}

/* Each layer's forward and backward time and the optimizer's step:
 * measured times scaled to the batch, else the compute model's
 * (sim/compute.h), whose optimizer is torch.optim's on GPUs; otherwise the
 * update's bytes at update_GBps. */
static int layer_times(const sim_scenario *s, const sim_point *p, double *fwd, double *bwd, double *opt) {
  const core_model *m = p->model;
  const core_profile *pr = s->profile;
  double upd_Bps = (pr->update_GBps > 0 ? pr->update_GBps : pr->memory_GBps) * 1e9;
  *opt = (double)m->n_params * optimizer_bytes_per_param(s->optimizer) / upd_Bps;
  if (m->measured) {
    double scale = p->batch / m->measured_batch;
    for (int l = 0; l < m->n_layers; l++) {
      fwd[l] = m->layers[l].fwd_s * scale;
      bwd[l] = m->layers[l].bwd_s * scale;
    }
    return 0;
  }
  sim_layer_key k = {.model = m, .precision = p->precision, .batch = p->batch, .optimizer = s->optimizer};
  if (sim_layer_cache_get(s->layer_cache, &k, fwd, bwd, opt))
    return 0;
  sim_compute_out c = {.fwd_s = fwd, .bwd_s = bwd};
  int rc = sim_compute_layers(m, pr, p->precision, p->batch, s->optimizer, s->attention, &c);
  if (rc != 0)
    return rc;
  if (c.optimizer_s >= 0)
    *opt = c.optimizer_s;
  sim_layer_cache_put(s->layer_cache, &k, fwd, bwd, *opt);
  return 0;
}

double sim_predict_compute_s(const sim_scenario *s, const sim_point *p) {
  const core_model *m = p->model;
  if (m->traced)
    return 0;
  double *t = calloc((size_t)m->n_layers * 2 + 1, sizeof *t), sum = 0;
  if (!t)
    return 0;
  double opt = 0;
  if (layer_times(s, p, t, t + m->n_layers, &opt) != 0) {
    free(t);
    return 0;
  }
  for (int l = 0; l < 2 * m->n_layers; l++)
    sum += t[l];
  free(t);
  return sum + opt;
}

/* A traced GPU job (core/traced.h): its step replayed with this point's
 * buckets and collective times (sim/replay.h), retargeted to the profile's
 * GPU and precision. One device without DDP is the replay with free
 * communication. */
static int predict_traced(const sim_scenario *s, const sim_point *p, const core_buckets *bk, const double *comm,
    const double *bytes, const char **names, core_trace *trace, sim_point_result *r) {
  const core_model *m = p->model;
  sim_replay_cfg c = {.t = m->traced,
      .bk = bk,
      .bucket_comm_s = comm,
      .bucket_bytes = bytes,
      .dev_scale = p->batch / m->measured_batch,
      .overlap = p->overlap,
      .layer_names = names};
  sim_replay_result rr;
  int world = p->nodes * p->per_node;
  int rc = sim_replay_retarget(m->traced, m->path, s->profile, s->profile_path, sim_precision_compute(p->precision),
      &c.compute_scale, &c.memory_scale);
  if (rc == 0)
    rc = sim_replay_run(&c, &rr, trace);
  if (rc)
    return rc;
  r->step_s = rr.step_s;
  r->compute_s = rr.compute_s;
  r->comm_s = rr.comm_s;
  r->exposed_comm_s = rr.exposed_comm_s;
  r->single_step_s = rr.compute_s;
  r->samples_per_s = (double)world * p->batch / rr.step_s;
  r->scaling_eff = rr.compute_s / rr.step_s;
  return 0;
}

/* What a point's step simulation needs of its layers and buckets. */
typedef struct point_work {
  double *fwd, *bwd;    /* [n_layers + 1] each layer's forward and backward */
  double *copy;         /* [n_layers] work after each layer's backward: copies into buckets, hooks' casts */
  const char **names;   /* [n_layers] the layers' names (for the trace) */
  double opt, finalize; /* the optimizer's step; the copy out of the buckets */
  double rank_opt;      /* this rank's optimizer step: opt, or its ZeRO shard's */
  double post_comm;     /* the collective after the step (ZeRO's parameters), or 0 */
  int gb;               /* bytes of a gradient element */
  core_buckets bk;
  int *ready;                                  /* [n_buckets] the layer after whose backward each is ready */
  double *comm, *bytes, *cpu_frac, *idle_frac; /* [n_buckets] step.h's */
  double *csd, *msd;                           /* [n_buckets] interference by byte rate, or NULL */
} point_work;

static void work_free(point_work *w) {
  free(w->fwd);
  free(w->bwd);
  free(w->copy);
  free(w->names);
  free(w->ready);
  free(w->comm);
  free(w->bytes);
  free(w->cpu_frac);
  free(w->idle_frac);
  free(w->csd);
  free(w->msd);
  core_bucket_free(&w->bk);
}

/* The point's links, and on a fabric its collectives' costs (*fc, for the
 * caller to free). */
static int point_topo(const sim_scenario *s, const sim_point *p, sim_engine *e, sim_topo *topo, sim_fabric_costs **fc,
    sim_point_result *r) {
  int rc;
  *fc = NULL;
  if ((rc = sim_predict_topo(s, p, topo)) != 0)
    return rc;
  if (p->fabric) {
    if (!(*fc = malloc(sizeof **fc)))
      return core_err_set(CORE_ENOMEM, "out of memory predicting point %ld", p->index);
    if ((rc = sim_fabric_costs_for(s, p, topo, e, *fc)) != 0)
      return rc;
    topo->fabric = *fc;
    r->has_fabric = 1;
    r->fab = (*fc)->res;
  }
  r->gbps = p->network->gbps > 0 ? p->network->gbps : p->network->from_profile ? s->profile->link_gbps : 0;
  return 0;
}

/* Compute per layer, measured or costed on the profile (sim/compute.h),
 * the copies into the buckets and the one out of them. */
static int layer_work(const sim_scenario *s, const sim_point *p, point_work *w) {
  const core_model *m = p->model;
  const core_profile *pr = s->profile;
  int L = m->n_layers, rc;
  w->fwd = calloc((size_t)L + 1, sizeof *w->fwd);
  w->bwd = calloc((size_t)L + 1, sizeof *w->bwd);
  w->copy = calloc((size_t)L, sizeof *w->copy);
  w->names = calloc((size_t)L, sizeof *w->names);
  if (!w->fwd || !w->bwd || !w->copy || !w->names)
    return core_err_set(CORE_ENOMEM, "out of memory predicting point %ld", p->index);
  w->gb = sim_precision_grad_bytes(p->precision);
  double mem_Bps = pr->memory_GBps * 1e9;
  if ((rc = layer_times(s, p, w->fwd, w->bwd, &w->opt)) != 0)
    return rc;
  for (int l = 0; l < L; l++) {
    const core_layer *ly = &m->layers[l];
    w->names[l] = ly->name;
    if (!s->gradient_as_bucket_view) {
      /* The autograd hook copies each gradient into its bucket: one read and
       * one write (reducer.cpp mark_variable_ready_dense). */
      int64_t el = 0;
      for (int t = 0; t < ly->n_tensors; t++)
        el += m->tensor_elems[ly->first_tensor + t];
      w->copy[l] = 2.0 * (double)el * w->gb / mem_Bps;
    }
  }
  /* The copy out of the buckets runs at the optimizer's rate (profile
   * device.update_GBps, timed by calibrate on CPUs), not at the bucket
   * copy's, which is slower on CPUs (scenarios/profiles/README.md,
   * device.update_GBps). */
  double upd_Bps = pr->update_GBps > 0 ? pr->update_GBps * 1e9 : mem_Bps;
  double grad_bytes = (double)m->n_params * w->gb;
  w->finalize = s->gradient_as_bucket_view ? 0 : 2.0 * grad_bytes / upd_Bps;
  return 0;
}

/* The optimizer's step on this rank and what follows it. Under
 * ddp.zero_optimizer (ZeroRedundancyOptimizer) each rank steps only its
 * shard, the largest rank's share of the parameters (sim/memfit.h), then
 * every rank's updated parameters reach the others: PyTorch broadcasts
 * each rank's shard (step and _sync_params in torch/distributed/optim/
 * zero_redundancy_optimizer.py), costed here as one allgather of all the
 * weights' bytes (fp32, or 2 bytes under pure fp16 and bf16) after the
 * slowest rank's step. Its overlap_with_ddp mode is not modelled. */
static int zero_work(const sim_scenario *s, const sim_point *p, point_work *w) {
  int world = p->nodes * p->per_node, rc;
  w->rank_opt = w->opt;
  w->post_comm = 0;
  if (!s->zero_optimizer || world == 1)
    return 0;
  w->rank_opt = w->opt * sim_memfit_zero_share(p->model, world);
  sim_topo t;
  if ((rc = sim_topo_build(
           s->profile, s->profile_path, p->network, p->backend, CORE_COLL_ALLGATHER, p->nodes, p->per_node, &t)) != 0)
    return rc;
  int half = p->precision == SIM_PREC_FP16 || p->precision == SIM_PREC_BF16;
  double bytes = (double)p->model->n_params * (half ? 2.0 : 4.0);
  w->post_comm = sim_coll_time(p->backend, CORE_COLL_ALLGATHER, SIM_ALGO_RING, &t, bytes);
  return 0;
}

/* Buckets, as PyTorch assigns them in its steady state (core/bucket.h):
 * rebuilt in gradient-ready order, or with find_unused_parameters the
 * constructor's, never rebuilt; and room for their costs. */
static int assign_buckets(const sim_scenario *s, const sim_point *p, point_work *w) {
  const core_model *m = p->model;
  const core_profile *pr = s->profile;
  size_t cap = (size_t)llround(p->bucket_cap_mb * 1048576.0);
  size_t first = s->first_bucket_mb == SIM_FIRST_BUCKET_CAP ? cap : (size_t)llround(s->first_bucket_mb * 1048576.0);
  int rc;
  if (cap == 0)
    cap = 1;
  if ((rc = core_bucket_assign(m->tensor_elems, m->n_tensors, m->ready_order, (size_t)w->gb, first, cap,
           core_bucket_ddp_order(p->find_unused, 0), &w->bk)) != 0 ||
      (rc = ready_layers(m, &w->bk, &w->ready)) != 0)
    return rc;
  size_t nb = (size_t)w->bk.n_buckets;
  w->comm = malloc(sizeof *w->comm * nb);
  w->bytes = malloc(sizeof *w->bytes * nb);
  w->cpu_frac = malloc(sizeof *w->cpu_frac * nb);
  w->idle_frac = malloc(sizeof *w->idle_frac * nb);
  /* Factors that follow the byte rate where calibration recorded the rate
   * they were measured at, on CPUs (a GPU's collectives take SMs, not the
   * host's CPU, from compute). */
  if (pr->interf_busbw_GBps > 0 && strcmp(pr->device_kind, "gpu") != 0) {
    w->csd = malloc(sizeof *w->csd * nb);
    w->msd = malloc(sizeof *w->msd * nb);
    if (!w->csd || !w->msd)
      return core_err_set(CORE_ENOMEM, "out of memory predicting point %ld", p->index);
  }
  if (!w->ready || !w->comm || !w->bytes || !w->cpu_frac || !w->idle_frac)
    return core_err_set(CORE_ENOMEM, "out of memory predicting point %ld", p->index);
  return 0;
}

/* Each bucket's communication (hook_time), its shares and interference,
 * the hooks' work when the bucket is ready; the point's wire bytes, and a
 * timeout status for the slowest collective past the backend's timeout. */
static void bucket_costs(
    const sim_scenario *s, const sim_point *p, const sim_topo *topo, point_work *w, sim_point_result *r) {
  const core_profile *pr = s->profile;
  int world = p->nodes * p->per_node, worst = -1;
  double timeout = sim_scenario_timeout(s, p->backend), worst_t = 0;
  for (int b = 0; b < w->bk.n_buckets; b++) {
    w->bytes[b] = (double)w->bk.bucket_elems[b] * w->gb;
    hook_cost h;
    double comm = w->comm[b] = hook_time(s, p, topo, &w->bk, b, w->gb, &h);
    w->cpu_frac[b] = comm > 0 && h.cpu > 0 ? (h.cpu < comm ? h.cpu / comm : 1.0) : 0.0;
    w->idle_frac[b] = comm > 0 && h.idle > 0 ? fmin(h.idle / comm, 1.0 - w->cpu_frac[b]) : 0.0;
    if (w->csd) {
      /* The bucket's bus bandwidth over its time on the network, against the
       * calibration's (step.h: CPU per byte). */
      double net = comm - h.cpu - h.idle, k = 0;
      if (net > 0 && world > 1)
        k = h.wire * 2.0 * (world - 1) / world / net / (pr->interf_busbw_GBps * 1e9);
      sim_step_scale_interference(pr->compute_slowdown, pr->comm_slowdown, k, pr->interf_comm_cpus,
          pr->interf_rank_cpus, &w->csd[b], &w->msd[b]);
    }
    w->copy[w->ready[b]] += h.pre; /* the hook starts (casting) when the bucket is ready */
    r->wire_bytes += h.wire;
    if (h.longest > timeout && (worst < 0 || h.longest > worst_t)) {
      worst = b;
      worst_t = h.longest;
    }
  }
  r->n_buckets = w->bk.n_buckets;
  if (worst >= 0) {
    snprintf(r->status, sizeof r->status, "timeout");
    snprintf(r->note, sizeof r->note,
        "bucket %d (%.1f MB) allreduce takes %.3g s, past the %s timeout of %g s: set ddp.timeout_s above %.0f, "
        "lower bucket_cap_mb, or use a faster network",
        worst, w->bytes[worst] / 1e6, worst_t, sim_backend_name(p->backend), timeout, ceil(worst_t * 1.5));
  }
}

/* The step simulated (sim/step.h) on the point's work, and its results. */
static int simulate_step(const sim_scenario *s, const sim_point *p, sim_engine *e, const point_work *w,
    core_trace *trace, int trace_ranks, sim_point_result *r) {
  const core_profile *pr = s->profile;
  int L = p->model->n_layers, world = p->nodes * p->per_node, rc;
  sim_step_cfg c = {.n_layers = L,
      .fwd_s = w->fwd,
      .bwd_s = w->bwd,
      .copy_s = w->copy,
      .layer_names = w->names,
      .n_buckets = w->bk.n_buckets,
      .bucket_ready_layer = w->ready,
      .bucket_comm_s = w->comm,
      .bucket_bytes = w->bytes,
      .bucket_cpu_frac = w->cpu_frac,
      .bucket_idle_frac = w->idle_frac,
      .random_idle = 1,
      .finalize_s = w->finalize,
      .optimizer_s = w->rank_opt,
      .post_step_comm_s = w->post_comm,
      .overlap = p->overlap,
      .compute_slowdown = pr->compute_slowdown,
      .comm_slowdown = pr->comm_slowdown,
      .cpu_slowdown = pr->cpu_slowdown,
      .bucket_compute_slowdown = w->csd,
      .bucket_comm_slowdown = w->msd,
      .world = world,
      .every_rank = s->every_rank && !p->fabric_given,
      .jitter = pr->jitter,
      .steps = s->steps,
      .seed = sim_predict_seed(s->seed, p->step_crn_index),
      .trace_ranks = trace_ranks};
  c.jitter_params[0] = pr->jitter_params[0];
  c.jitter_params[1] = pr->jitter_params[1];
  sim_step_result sr;
  if ((rc = sim_step_run(&c, e, &sr, trace)) != 0)
    return rc;
  double single = w->opt;
  for (int l = 0; l < L; l++)
    single += w->fwd[l] + w->bwd[l];
  r->step_s = sr.step_s;
  r->compute_s = sr.compute_s;
  r->comm_s = sr.comm_s;
  r->exposed_comm_s = sr.exposed_comm_s;
  r->step_sd_s = sr.step_sd_s;
  r->events = sr.events;
  r->single_step_s = single;
  r->samples_per_s = (double)world * p->batch / sr.step_s;
  r->scaling_eff = r->samples_per_s / ((double)world * p->batch / single);
  r->fab.duty = sr.step_s > 0 ? fmin(sr.comm_s / sr.step_s, 1.0) : 0;
  return 0;
}

/* The point's memory per GPU; "oom" when the profile's capacity is short of
 * it (over a timeout: the job would stop before its first step). The point
 * is still simulated, as if it fit. */
static void memory_fit(const sim_scenario *s, const sim_point *p, sim_point_result *r) {
  sim_memfit f;
  sim_memfit_point(s, p, &f);
  r->mem_GB = f.total / 1e9;
  if (!sim_memfit_over(&f, s->profile))
    return;
  snprintf(r->status, sizeof r->status, "oom");
  sim_memfit_note(&f, s->profile, p, r->note, sizeof r->note);
}

int sim_predict_point(
    const sim_scenario *s, const sim_point *p, sim_engine *e, core_trace *trace, int trace_ranks, sim_point_result *r) {
  memset(r, 0, sizeof *r);
  r->pt = *p;
  snprintf(r->status, sizeof r->status, "ok");
  /* A traced job without DDP communicates only through its measured side
   * work: no buckets, no collectives of the network. */
  if (p->model->traced && !p->model->traced->ddp) {
    core_buckets none = {0};
    memory_fit(s, p, r);
    return predict_traced(s, p, &none, NULL, NULL, NULL, trace, r);
  }
  sim_topo topo;
  sim_fabric_costs *fc;
  point_work w = {0};
  int rc;
  if ((rc = point_topo(s, p, e, &topo, &fc, r)) != 0 || (rc = layer_work(s, p, &w)) != 0 ||
      (rc = zero_work(s, p, &w)) != 0 || (rc = assign_buckets(s, p, &w)) != 0)
    goto out_free;
  bucket_costs(s, p, &topo, &w, r);
  memory_fit(s, p, r);
  if (p->model->traced)
    rc = predict_traced(s, p, &w.bk, w.comm, w.bytes, w.names, trace, r);
  else
    rc = simulate_step(s, p, e, &w, trace, trace_ranks, r);
out_free:
  work_free(&w);
  free(fc);
  return rc;
}

#include "trace_scenario.h"

#include "calibrate/fit.h"
#include "calibrate/gpu_datasheet.h"
#include "calibrate/import_common.h"
#include "core/afile.h"
#include "core/bucket.h"
#include "core/cfg.h"
#include "core/err.h"
#include "core/path.h"
#include "core/model.h"
#include "core/nccl_tuning.h"
#include "core/profile.h"
#include "core/traced.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_sort_double.h>
#include <gsl/gsl_statistics_double.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Distinct bucket sizes an alpha-beta fit needs; with fewer, one rate. */
#define FIT_MIN_SIZES 3

/* The latency NCCL's tuning model (core/nccl_tuning.h, ring, Simple) gives
 * a ring allreduce of p ranks on nodes nodes, NVLink inside a node when
 * nvlink, else PCIe; in seconds: a base, and per step of the ring's
 * 2(p - 1) a hop on NVLink or PCIe, or on the network for the 2(nodes - 1)
 * steps that cross it, as the shipped profiles' collectives count them. */
static double nccl_ring_latency_s(int p, int nodes, int nvlink) {
  int steps = 2 * (p - 1), net = nodes > 1 ? 2 * (nodes - 1) : 0;
  double hop = core_nccl_hop_lat_us(nvlink ? CORE_NCCL_NVLINK : CORE_NCCL_PCI, CORE_NCCL_RING, CORE_NCCL_SIMPLE);
  double net_hop = core_nccl_hop_lat_us(CORE_NCCL_NET, CORE_NCCL_RING, CORE_NCCL_SIMPLE);
  return (core_nccl_base_lat_us(CORE_NCCL_RING, CORE_NCCL_SIMPLE) + (steps - net) * hop + net * net_hop) * 1e-6;
}

/* Bucket b's allreduce time without the ranks' skew, as far as one rank's
 * trace bounds it: its fastest step's (core/traced.h), else its median. */
static double transfer_s(const core_traced *t, int b) { return t->bucket_min_s ? t->bucket_min_s[b] : t->bucket_s[b]; }

/* The most a latency can be that the trace's own NCCL kernels allow: twice
 * the shortest (an allreduce's ring takes twice the steps of a broadcast's,
 * and any collective pays the latency); 0 when it ran none. */
static double latency_bound_s(const core_traced *t) {
  double least = 0;
  for (int i = 0; i < t->n_side; i++)
    if (t->side[i].nccl && t->side[i].dur_s > 0 && (least == 0 || t->side[i].dur_s < least))
      least = t->side[i].dur_s;
  for (int b = 0; b < t->n_buckets; b++)
    if (transfer_s(t, b) > 0 && (least == 0 || transfer_s(t, b) < least))
      least = transfer_s(t, b);
  return 2 * least;
}

/* Nodes of the traced world: one while it fits the traced host's GPUs. */
static int traced_shape(const core_traced *t, int *nodes, int *per_node) {
  int h = t->host_devices > 0 ? t->host_devices : t->world_size;
  if (t->world_size <= h) {
    *nodes = 1;
    *per_node = t->world_size;
    return 0;
  }
  if (t->world_size % h)
    return core_err_set(CORE_EINVAL,
        "the traced world of %d ranks does not fill hosts of %d GPUs: write the scenario's cluster by hand",
        t->world_size, h);
  *nodes = t->world_size / h;
  *per_node = h;
  return 0;
}

/* How well bytes explain the traced times as one rate: the relative
 * residual of t = k * bytes, k by least squares. */
static double misfit(const double *bytes, const double *t, int n) {
  double tb = 0, bb = 0, tt = 0, r = 0;
  for (int b = 0; b < n; b++)
    tb += t[b] * bytes[b], bb += bytes[b] * bytes[b], tt += t[b] * t[b];
  double k = bb > 0 ? tb / bb : 0;
  for (int b = 0; b < n; b++)
    r += (t[b] - k * bytes[b]) * (t[b] - k * bytes[b]);
  return tt > 0 ? r / tt : 1e300;
}

/* Whether DDP's assignment with these caps gives the traced buckets' bytes. */
static int caps_give(const core_model *m, const double *bytes, size_t first, size_t cap) {
  core_buckets bk;
  if (core_bucket_assign(m->tensor_elems, m->n_tensors, m->ready_order, 4, first, cap, CORE_BUCKET_REBUILT, &bk) != 0)
    return 0;
  int ok = bk.n_buckets == m->traced->n_buckets;
  for (int b = 0; ok && b < bk.n_buckets; b++)
    ok = 4.0 * (double)bk.bucket_elems[b] == bytes[b];
  core_bucket_free(&bk);
  return ok;
}

/* When the trace records its buckets' sizes: the caps that give those
 * buckets, so that the scenario replays them. DDP's defaults (0 in *cap_mb)
 * when they do; else the first cap, a traced bucket's size or a whole number
 * of MiB (1 to 1024), with the first bucket 1 MiB, the cap or the traced
 * first one, that does; else DDP's defaults, and a note. */
static void traced_caps(
    const core_model *m, const double *bytes, double *cap_mb, double *first_mb, char *notes, size_t n) {
  const core_traced *t = m->traced;
  size_t def = (size_t)(CORE_BUCKET_DEFAULT_CAP_MB * 1048576.0);
  if (!m->n_tensors || caps_give(m, bytes, CORE_BUCKET_FIRST_BYTES, def))
    return;
  for (int k = 0; k < t->n_buckets + 1024; k++) {
    size_t cap = k < t->n_buckets ? (size_t)bytes[k] : (size_t)(k - t->n_buckets + 1) << 20;
    if ((double)cap < CORE_BUCKET_MIN_CAP_MB * 1048576.0)
      continue; /* no scenario takes it */
    size_t firsts[] = {CORE_BUCKET_FIRST_BYTES, cap, (size_t)bytes[0]};
    for (int f = 0; f < 3; f++)
      if (caps_give(m, bytes, firsts[f], cap)) {
        *cap_mb = (double)cap / 1048576.0;
        *first_mb = (double)firsts[f] / 1048576.0;
        cal_note(notes, n, "the traced buckets are DDP's with bucket_cap_mb = %.6g (first bucket %.6g MiB)\n", *cap_mb,
            *first_mb);
        return;
      }
  }
  cal_note(notes, n,
      "no bucket cap gives the traced %d buckets from the traced ready order: the scenario keeps DDP's defaults, "
      "whose buckets differ\n",
      t->n_buckets);
}

/* The traced buckets' sizes: as traced; else the assignment of the bucket
 * cap (1 to 1024 MiB, the first bucket 1 MiB or the cap) that gives as many
 * buckets and explains their times best as one rate. The caps that give
 * them in *cap_mb, *first_mb (0: DDP's defaults). 0 when neither tells. */
static int bucket_sizes(const core_model *m, double *bytes, double *cap_mb, double *first_mb, char *notes, size_t n) {
  const core_traced *t = m->traced;
  int known = t->n_buckets > 0;
  *cap_mb = *first_mb = 0;
  for (int b = 0; b < t->n_buckets; b++) {
    bytes[b] = t->bucket_bytes[b];
    known &= bytes[b] > 0;
  }
  if (known)
    traced_caps(m, bytes, cap_mb, first_mb, notes, n);
  if (known || !m->n_tensors || !t->n_buckets)
    return known;
  size_t nb = (size_t)(t->n_buckets > 0 ? t->n_buckets : 1);
  double best = 1e300, *cand = malloc(sizeof *cand * nb), *times = malloc(sizeof *times * nb);
  for (int b = 0; times && b < t->n_buckets; b++)
    times[b] = transfer_s(t, b);
  for (int cap = 1; cap <= 1024 && cand && times; cap++)
    for (int f = 0; f < 2; f++) {
      core_buckets bk;
      size_t first = f ? (size_t)cap << 20 : CORE_BUCKET_FIRST_BYTES;
      if (core_bucket_assign(m->tensor_elems, m->n_tensors, m->ready_order, 4, first, (size_t)cap << 20,
              CORE_BUCKET_REBUILT, &bk) != 0)
        continue;
      if (bk.n_buckets == t->n_buckets) {
        for (int b = 0; b < t->n_buckets; b++)
          cand[b] = 4.0 * (double)bk.bucket_elems[b];
        double r = misfit(cand, times, t->n_buckets);
        if (r < best) {
          best = r;
          memcpy(bytes, cand, sizeof *cand * (size_t)t->n_buckets);
          *cap_mb = cap;
          *first_mb = f ? cap : 1;
        }
      }
      core_bucket_free(&bk);
    }
  free(cand);
  free(times);
  if (best < 1e300)
    cal_note(notes, n,
        "the trace does not say its allreduces' sizes: bucket_cap_mb = %.0f (first bucket %.0f MiB) gives its %d "
        "buckets and explains their times best\n",
        *cap_mb, *first_mb, t->n_buckets);
  return best < 1e300;
}

/* One regime when the traced buckets cannot fit a latency: NCCL's (no more
 * than half the shortest bucket's time, so every bucket's bytes still take
 * some), and the rate that keeps the buckets' total transfer time (their
 * fastest steps') as traced. */
static void fixed_latency_fit(
    const core_model *m, const double *bytes, int nodes, int nvlink, cal_fit *f, int *nf, char *notes, size_t n) {
  const core_traced *t = m->traced;
  double sb = 0, st = 0, shortest = 1e300;
  for (int b = 0; b < t->n_buckets; b++) {
    sb += bytes[b], st += transfer_s(t, b);
    if (transfer_s(t, b) < shortest)
      shortest = transfer_s(t, b);
  }
  double nccl = nccl_ring_latency_s(t->world_size, nodes, nvlink), a = nccl < shortest / 2 ? nccl : shortest / 2;
  memset(f, 0, sizeof *f * CAL_FIT_MAX_REGIMES);
  f[0].max_bytes = 1e15;
  f[0].alpha_s = f[0].alpha_lo = f[0].alpha_hi = a;
  f[0].beta_s = (st - t->n_buckets * a) / sb;
  *nf = 1;
  const char *how = a < nccl ? "half the shortest bucket's time, under NCCL's estimate" : "NCCL's estimate";
  cal_note(notes, n,
      "allreduce: the trace's %d bucket allreduces cannot fit a latency (too few sizes, a fit without one, or one "
      "its kernels contradict): "
      "%.1f us, %s (NCCL's tuning model, src/graph/tuning.cc: ring, Simple, %d ranks on %d node(s), %s inside "
      "one), and %.3f GB/s, which keeps their traced time in each one's fastest step\n",
      t->n_buckets, a * 1e6, how, t->world_size, nodes, nvlink ? "NVLink" : "PCIe", sb / (st - t->n_buckets * a) / 1e9);
}

/* The traced buckets' distinct sizes in ascending order into xs, each with
 * the median time of the buckets of that size into ys (the fit takes one
 * point per size, sizes rising); returns their count. order: n indices. */
static int size_medians(const double *bytes, const double *t, int n, double *xs, double *ys, size_t *order) {
  int m = 0;
  gsl_sort_index(order, bytes, 1, (size_t)n);
  for (int i = 0; i < n;) {
    int j = i;
    while (j < n && bytes[order[j]] == bytes[order[i]])
      j++;
    /* The group's times go to ys[m..) as scratch, then their median to ys[m]. */
    for (int k = i; k < j; k++)
      ys[m + k - i] = t[order[k]];
    gsl_sort(ys + m, 1, (size_t)(j - i));
    double med = gsl_stats_median_from_sorted_data(ys + m, 1, (size_t)(j - i));
    xs[m] = bytes[order[i]];
    ys[m++] = med;
    i = j;
  }
  return m;
}

/* The allreduce entry from the traced buckets; nvlink: the traced GPUs'
 * link inside a node. */
static int allreduce_entry(const core_model *m, int nodes, int nvlink, core_prof_coll *c, double *cap_mb,
    double *first_mb, char *notes, size_t n) {
  const core_traced *t = m->traced;
  size_t nb = (size_t)t->n_buckets + 1;
  double *bytes = calloc(nb, sizeof *bytes), *xs = calloc(nb, sizeof *xs), *ys = calloc(nb, sizeof *ys),
         *tr = calloc(nb, sizeof *tr);
  size_t *order = calloc(nb, sizeof *order);
  int rc = 0, nf = 0;
  cal_fit f[CAL_FIT_MAX_REGIMES];
  memset(c, 0, sizeof *c);
  if (!bytes || !xs || !ys || !tr || !order) {
    rc = core_err_set(CORE_ENOMEM, "out of memory fitting the traced allreduces");
    goto out_free;
  }
  if (!bucket_sizes(m, bytes, cap_mb, first_mb, notes, n)) {
    rc = core_err_set(CORE_EINVAL,
        "%s: the traced allreduces' sizes are unknown, so no profile can be fitted to them: pass --profile-base with "
        "the cluster's collectives",
        m->path);
    goto out_free;
  }
  for (int b = 0; b < t->n_buckets; b++)
    tr[b] = transfer_s(t, b);
  int distinct = size_medians(bytes, tr, t->n_buckets, xs, ys, order);
  if (distinct < FIT_MIN_SIZES || cal_fit_alpha_beta(xs, ys, NULL, distinct, f, &nf) != 0 || !(f[0].alpha_s > 0))
    fixed_latency_fit(m, bytes, nodes, nvlink, f, &nf, notes, n);
  else if (f[0].alpha_s > latency_bound_s(t) * (1 + 1e-9)) {
    cal_note(notes, n,
        "allreduce: the fit of the traced buckets' fastest steps gives a latency of %.1f us, more than twice the "
        "trace's shortest NCCL kernel (%.1f us): their times are mostly the wait for the later rank, which one "
        "rank's trace cannot tell from the transfer\n",
        f[0].alpha_s * 1e6, latency_bound_s(t) / 2 * 1e6);
    fixed_latency_fit(m, bytes, nodes, nvlink, f, &nf, notes, n);
  }
  snprintf(c->backend, sizeof c->backend, "nccl");
  snprintf(c->op, sizeof c->op, "allreduce");
  snprintf(c->algorithm, sizeof c->algorithm, "ring");
  snprintf(c->scope, sizeof c->scope, "%s", nodes > 1 ? "inter" : "intra");
  c->ranks = t->world_size;
  c->nodes = nodes;
  c->n_fits = nf;
  if (!(c->fits = calloc((size_t)nf, sizeof *c->fits))) {
    rc = core_err_set(CORE_ENOMEM, "out of memory fitting the traced allreduces");
    goto out_free;
  }
  for (int k = 0; k < nf; k++)
    cal_fit_to_profile(&f[k], &c->fits[k]);
out_free:
  free(bytes);
  free(xs);
  free(ys);
  free(tr);
  free(order);
  return rc;
}

static const cal_gpu_sheet *sheet_of(const core_traced *t) {
  return cal_gpu_sheet_find(t->device, (int64_t)(t->device_memory_GB * 1e9));
}

static int no_sheet(const core_traced *t) {
  if (!t->device[0])
    return core_err_set(CORE_EUSAGE, "the trace does not name its GPU (it has no deviceProperties): pass "
                                     "--profile-base PROFILE, a profile of the GPU it ran on");
  return core_err_set(CORE_EUSAGE,
      "no datasheet figures for the traced GPU '%s': pass --profile-base PROFILE, a profile of that GPU", t->device);
}

int cal_trace_scenario_check(const core_traced *t, double batch, int have_profile_base) {
  int nodes, per_node, rc = traced_shape(t, &nodes, &per_node);
  if (rc)
    return rc;
  if (batch > CORE_BATCH_MAX)
    return core_err_set(CORE_EINVAL,
        "a batch of %.0f per GPU is more than a scenario takes (training.batch up to %d): the traced job's scenario "
        "cannot be written; give --batch B, the batch per GPU the trace was taken at, or leave --scenario out",
        batch, CORE_BATCH_MAX);
  return have_profile_base || sheet_of(t) ? 0 : no_sheet(t);
}

/* A profile of the traced GPU from its datasheet, for what a trace cannot measure. */
static int datasheet_profile(const core_traced *t, core_profile **out) {
  const cal_gpu_sheet *s = sheet_of(t);
  if (!s)
    return no_sheet(t);
  core_profile *p = core_profile_new();
  if (!p)
    return core_err_set(CORE_ENOMEM, "out of memory building a profile");
  snprintf(
      p->provenance, sizeof p->provenance, "collectives from the trace's allreduce kernels; device: %s", s->source);
  snprintf(p->source, sizeof p->source, "imported");
  snprintf(p->device_kind, sizeof p->device_kind, "gpu");
  p->memory_GBps = p->peak_memory_GBps = s->memory_GBps;
  p->host_link_GBps = s->host_link_GBps;
  p->nvlink_GBps = s->nvlink_GBps;
  /* The capacity the trace recorded (deviceProperties' totalGlobalMem), else the datasheet's. */
  p->memory_GB = t->device_memory_GB > 0 ? t->device_memory_GB : s->memory_GB;
  p->reduce_GBps = s->host_link_GBps; /* Gloo only, which a traced NCCL job does not use */
  for (int k = 0; k < CORE_N_PREC; k++) {
    core_prof_rate *r = &p->rate[k];
    if (s->peak_tflops[k] <= 0)
      continue;
    r->gemm_flops = malloc(sizeof *r->gemm_flops);
    r->tflops = malloc(sizeof *r->tflops);
    if (!r->gemm_flops || !r->tflops) {
      core_profile_free(p);
      return core_err_set(CORE_ENOMEM, "out of memory building a profile");
    }
    r->present = 1;
    r->n = 1;
    r->gemm_flops[0] = 1e9;
    r->tflops[0] = r->peak_tflops = s->peak_tflops[k];
  }
  *out = p;
  return 0;
}

/* The profile's allreduce entry of that scope replaced by (or added as) c. */
static int put_entry(core_profile *p, core_prof_coll *c) {
  for (int i = 0; i < p->n_colls; i++) {
    core_prof_coll *d = &p->colls[i];
    if (!strcmp(d->backend, c->backend) && !strcmp(d->op, c->op) && !strcmp(d->algorithm, c->algorithm) &&
        !strcmp(d->scope, c->scope)) {
      free(d->fits), free(d->bytes), free(d->time_us);
      *d = *c;
      return 0;
    }
  }
  core_prof_coll *more = realloc(p->colls, sizeof *more * (size_t)(p->n_colls + 1));
  if (!more)
    return core_err_set(CORE_ENOMEM, "out of memory building a profile");
  p->colls = more;
  p->colls[p->n_colls++] = *c;
  return 0;
}

static int traced_profile(const core_model *m, const char *base, const char *name, int nodes, int per_node,
    core_profile **out, double *cap_mb, double *first_mb, char *notes, size_t n) {
  const core_traced *t = m->traced;
  core_profile *p = NULL;
  int rc = base ? core_profile_load(base, &p) : datasheet_profile(t, &p);
  if (rc)
    return rc;
  snprintf(p->name, sizeof p->name, "%.100s", name);
  snprintf(p->device_name, sizeof p->device_name, "%s", t->device);
  snprintf(p->host, sizeof p->host, "the traced job's (%.100s)", t->device);
  snprintf(p->backend, sizeof p->backend, "nccl");
  p->nodes = nodes;
  p->ranks_per_node = per_node;
  if (t->ddp && t->world_size > 1 && t->n_buckets > 0) {
    core_prof_coll c;
    if ((rc = allreduce_entry(m, nodes, p->nvlink_GBps > 0, &c, cap_mb, first_mb, notes, n)) != 0 ||
        (rc = put_entry(p, &c)) != 0) {
      core_profile_free(p);
      return rc;
    }
    /* Its allreduce is measured, whatever the base's source. */
    snprintf(p->source, sizeof p->source, "imported");
  }
  *out = p;
  return 0;
}

/* The scenario's file name up to its last '.'. */
static void stem_of(const char *path, char *stem, size_t sn) {
  snprintf(stem, sn, "%s", core_path_base(path));
  char *dot = strrchr(stem, '.');
  if (dot && dot != stem)
    *dot = '\0';
}

void cal_trace_scenario_profile(const char *scenario, char *out, size_t n) {
  char stem[256];
  stem_of(scenario, stem, sizeof stem);
  /* Beside the scenario, in its directory as its path names it. */
  snprintf(out, n, "%.*s%s.profile.cfg", (int)(core_path_base(scenario) - scenario), scenario, stem);
}

/* The model's path as the scenario refers to it (relative to the scenario's
 * directory): its name when both are in one directory, as the paths name
 * it, else its full path. */
static const char *model_ref(const char *model, const char *scenario, char *buf, size_t n) {
  const char *mb = core_path_base(model), *sb = core_path_base(scenario);
  if (mb - model == sb - scenario && !strncmp(model, scenario, (size_t)(sb - scenario)))
    return mb;
  char *full = realpath(model, NULL);
  snprintf(buf, n, "%s", full ? full : model);
  free(full);
  return buf;
}

/* The optimizer class the traced step ran, from its Optimizer.step#CLASS.step
 * piece (the span torch/optim/optimizer.py records around every step), into
 * cls; "" when the trace has none. */
static void traced_optimizer_class(const core_traced *t, char *cls, size_t n) {
  static const char pre[] = "Optimizer.step#";
  cls[0] = '\0';
  for (int i = 0; i < t->n_pieces && !cls[0]; i++) {
    const char *l = t->pieces[i].label;
    if (t->pieces[i].kind != CORE_PIECE_OTHER || strncmp(l, pre, sizeof pre - 1))
      continue;
    const char *c = l + sizeof pre - 1, *dot = strchr(c, '.');
    snprintf(cls, n, "%.*s", (int)(dot ? dot - c : (long)strlen(c)), c);
  }
}

/* The scenario's training.optimizer for an optimizer class, or NULL to
 * keep the default: Adam and its kin (AdamW, FusedAdam, NAdam, RAdam,
 * Adamax; LAMB) hold two states a weight, as "adam" counts them. SGD's
 * momentum its class does not tell: the default "sgd" (no state) stays. */
static const char *scenario_optimizer(const char *cls) {
  return strstr(cls, "Adam") || strstr(cls, "adam") || strstr(cls, "LAMB") || strstr(cls, "Lamb") ? "adam" : NULL;
}

/* training = {...}: the traced batch and precision, and the optimizer
 * where its class tells it (for memory and a checkpoint's size; the step
 * replays as traced whatever it says). */
static void write_training(FILE *f, const core_model *m) {
  const core_traced *t = m->traced;
  char cls[64];
  traced_optimizer_class(t, cls, sizeof cls);
  const char *opt = scenario_optimizer(cls);
  /* The traced precision; half kernels are autocast's (fp32 gradients). */
  const char *prec = t->precision == CORE_PREC_FP16   ? "amp_fp16"
                     : t->precision == CORE_PREC_BF16 ? "amp_bf16"
                                                      : core_prec_name(t->precision);
  if (opt)
    fprintf(f, "# The optimizer: the trace's %s, two states a weight.\n", cls);
  else if (strstr(cls, "SGD"))
    fprintf(f,
        "# The trace ran %s, whose momentum its name does not tell: counted as plain SGD (no state); set\n"
        "# optimizer = \"sgd_momentum\" (one state a weight) if it had momentum, for mem_GB and checkpoints.\n",
        cls);
  else if (cls[0])
    fprintf(f,
        "# The trace ran %s, which the scenario's optimizers (sgd, sgd_momentum, adam) do not name: counted\n"
        "# as plain SGD (no state); set the one that keeps as many states a weight, for mem_GB and checkpoints.\n",
        cls);
  fprintf(f, "training = { batch = %.0f; precision = \"%s\";%s%s%s };\n", m->measured_batch, prec,
      opt ? " optimizer = \"" : "", opt ? opt : "", opt ? "\";" : "");
}

static int write_scenario(const char *path, const char *stem, const char *profile, const char *model,
    const core_model *m, int nodes, int per_node, double cap_mb, double first_mb) {
  core_afile a;
  int rc = core_afile_open(&a, path);
  if (rc)
    return rc;
  const core_traced *t = m->traced;
  fprintf(a.f,
      "# The job a GPU trace measured, as `ddpsim import torch-trace --scenario` wrote it:\n"
      "# %s, %d rank(s), batch %.0f per GPU. Simulated as it stands it replays the traced\n"
      "# step; change the cluster, network or ddp settings for what-ifs.\n",
      t->device, t->world_size, m->measured_batch);
  fputs("name = ", a.f);
  core_cfg_put_str(a.f, stem);
  fprintf(a.f, ";\ndescription = \"the traced job of %s\";\nprofile = ", m->name);
  core_cfg_put_str(a.f, profile);
  fputs(";\nmodel = ", a.f);
  core_cfg_put_str(a.f, model);
  fputs(";\n", a.f);
  write_training(a.f, m);
  fprintf(a.f, "cluster = { nodes = %d; devices_per_node = %d; };\n", nodes, per_node);
  if (nodes > 1)
    fprintf(a.f, "networks = ( { name = \"traced\"; from_profile = true; } );\n");
  else
    /* Named for what it is: with more nodes its name labels their rows. */
    fprintf(a.f, "# One node: no traffic crosses a network, but a scenario needs one. For more nodes,\n"
                 "# replace this assumed 100 Gb/s Ethernet (not the traced cluster's) with yours.\n"
                 "networks = ( { name = \"100GbE\"; gbps = 100.0; latency_us = 14.0; } );\n");
  if (cap_mb > 0) {
    /* Caps are whole bytes over 2^20: %.17g writes them exactly. */
    char cap[64], first[64];
    snprintf(cap, sizeof cap, "%.17g", cap_mb);
    /* A first bucket of the cap is a job that passed bucket_cap_mb: "cap"
     * keeps it so when the cap is edited or swept. */
    if (first_mb == cap_mb)
      snprintf(first, sizeof first, "\"cap\"");
    else {
      snprintf(first, sizeof first - 2, "%.17g", first_mb);
      if (!strpbrk(first, ".e"))
        strcat(first, ".0");
    }
    fprintf(a.f,
        "# The bucket caps that give the traced allreduces' buckets (the trace does not record them).\n"
        "ddp = { backend = \"nccl\"; bucket_cap_mb = %s%s; first_bucket_mb = %s; };\n",
        cap, strpbrk(cap, ".e") ? "" : ".0", first);
  } else
    fprintf(a.f, "ddp = { backend = \"nccl\"; };\n");
  fprintf(a.f, "simulation = { steps = 1; seed = 1; };\n");
  return core_afile_commit(&a);
}

int cal_trace_scenario(
    const char *model, const char *scenario, const char *profile_base, char *notes, size_t notes_len) {
  core_model *m = NULL;
  core_profile *p = NULL;
  int nodes = 1, per_node = 1, rc;
  double cap_mb = 0, first_mb = 0;
  char stem[256], prof_name[300], prof_path[4400], ref[4096];
  const char *outs[2] = {scenario, prof_path}, *what[2] = {"--scenario", "the scenario's profile"};
  core_afile_note_input(model);
  if (profile_base)
    core_afile_note_input(profile_base);
  cal_trace_scenario_profile(scenario, prof_path, sizeof prof_path);
  if ((rc = cal_check_outputs(outs, what, 2)) != 0 || (rc = core_model_load(model, &m)) != 0)
    return rc;
  if (!m->traced) {
    rc = core_err_set(CORE_EINVAL, "%s holds no traced step: --scenario goes with a GPU trace", model);
    goto out_free;
  }
  stem_of(scenario, stem, sizeof stem);
  snprintf(prof_name, sizeof prof_name, "%s.profile.cfg", stem);
  if ((rc = traced_shape(m->traced, &nodes, &per_node)) != 0 ||
      (rc = traced_profile(m, profile_base, stem, nodes, per_node, &p, &cap_mb, &first_mb, notes, notes_len)) != 0 ||
      (rc = core_profile_write(p, prof_path)) != 0 ||
      (rc = write_scenario(scenario, stem, prof_name, model_ref(model, scenario, ref, sizeof ref), m, nodes, per_node,
           cap_mb, first_mb)) != 0)
    goto out_free;
  cal_note(notes, notes_len, "scenario: %d node(s) of %d GPU(s), batch %.0f; profile %s\n", nodes, per_node,
      m->measured_batch, prof_path);
out_free:
  core_profile_free(p);
  core_model_free(m);
  return rc;
}

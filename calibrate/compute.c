/* sched_getaffinity and CPU_COUNT: the CPUs a rank may use. */
#define _GNU_SOURCE
#include "compute.h"

#include "calibrate/sweep.h"

#include "runtime/compress.h"
#include "runtime/data.h"
#include "runtime/ddp.h"
#include "runtime/gloo_shim.h"
#include "runtime/mlp.h"

#include "core/clock.h"
#include "core/err.h"

#include "runtime/blas.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_ITERS = 64 };

int cal_gemm_sweep(const int *sizes, int n, double budget_s, double *flops, double *tflops) {
  int rc = rt_blas_load();
  if (rc)
    return rc;
  for (int k = 0; k < n; k++) {
    int s = sizes[k];
    size_t e = (size_t)s * (size_t)s;
    float *a = malloc(sizeof(float) * e), *b = malloc(sizeof(float) * e), *c = malloc(sizeof(float) * e);
    if (!a || !b || !c) {
      free(a);
      free(b);
      free(c);
      return core_err_set(CORE_ENOMEM, "out of memory for a %d x %d GEMM", s, s);
    }
    for (size_t i = 0; i < e; i++) {
      a[i] = (float)(i % 13) * 0.01f;
      b[i] = (float)(i % 7) * 0.01f;
    }
    double t[MAX_ITERS], spent = 0;
    int it = 0;
    for (int w = -1; it < MAX_ITERS && (it < 3 || spent < budget_s); w++) {
      double t0 = core_now();
      rt_blas_sgemm(RT_BLAS_N, RT_BLAS_N, s, s, s, 1.0f, a, s, b, s, 0.0f, c, s);
      double dt = core_now() - t0;
      if (w < 0)
        continue; /* warm-up: thread start, page faults */
      t[it++] = dt;
      spent += dt;
    }
    flops[k] = 2.0 * s * (double)s * s;
    tflops[k] = flops[k] / cal_median(t, it) / 1e12;
    free(a);
    free(b);
    free(c);
  }
  return 0;
}

int cal_model_gradient(const core_model *m, int batch, int rank, int world, float **grad, int64_t *n) {
  rt_mlp *net = NULL;
  rt_data *d = NULL;
  float *target = NULL;
  *grad = NULL;
  int L = m->n_layers, rc;
  if ((rc = rt_mlp_create(m, batch, RT_DATA_DEFAULT_SEED, &net)) != 0)
    return rc;
  /* The data and seed ddpsim train starts from (cli/cmd_train.c defaults),
   * this rank's shard of them. */
  if ((rc = rt_data_create(
           RT_DATA_DEFAULT_SIZE, m->layers[0].in, m->layers[L - 1].out, RT_DATA_DEFAULT_SEED, rank, world, 1, &d)) != 0)
    goto out;
  target = malloc(sizeof *target * (size_t)batch * (size_t)m->layers[L - 1].out);
  *grad = malloc(sizeof **grad * (size_t)net->n_params);
  if (!target || !*grad) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for a gradient of %s", m->name);
    goto out;
  }
  if ((rc = rt_data_next(d, batch, net->act[0], target)) != 0)
    goto out;
  for (int l = 0; l < L; l++)
    rt_mlp_forward_layer(net, l);
  rt_mlp_loss(net, target);
  for (int l = L - 1; l >= 0; l--)
    rt_mlp_backward_layer(net, l);
  memcpy(*grad, net->grads, sizeof **grad * (size_t)net->n_params);
  *n = net->n_params;
out:
  if (rc) {
    free(*grad);
    *grad = NULL;
  }
  free(target);
  rt_data_free(d);
  rt_mlp_free(net);
  return rc;
}

int cal_sum_rates(const float *vals, const float *peer, int64_t n_vals, double scale, size_t bytes, double GBps[3]) {
  static const enum rt_dtype types[3] = {RT_FP32, RT_FP16, RT_BF16};
  size_t n = bytes / 2; /* values enough for the 2-byte types */
  float *f = malloc(sizeof *f * n), *g = malloc(sizeof *g * n);
  void *a = malloc(bytes), *b = malloc(bytes), *out = malloc(bytes);
  int rc = 0;
  if (!f || !g || !a || !b || !out) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %zu-byte buffers", bytes);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    f[i] = n_vals > 0 ? (float)(vals[i % (size_t)n_vals] * scale) : 0.0f;
    g[i] = n_vals > 0 ? (float)(peer[i % (size_t)n_vals] * scale) : 0.0f;
  }
  for (int k = 0; k < 3; k++) {
    size_t ne = bytes / rt_dtype_size(types[k]);
    if (types[k] == RT_FP32) {
      memcpy(a, f, bytes);
      memcpy(b, g, bytes);
    } else if ((rc = rt_compress_to_half(types[k], f, a, (int64_t)ne)) != 0 ||
               (rc = rt_compress_to_half(types[k], g, b, (int64_t)ne)) != 0) {
      goto out;
    }
    double t[5];
    for (int it = -1; it < 5; it++) {
      int reps = 0;
      double t0 = core_now(), t1;
      do {
        /* out = a + b: the operands stay what they were, so every pass sees
         * the same values (and the same share of subnormal halves, which
         * Gloo's fp16 sum converts slowly). Two ranks' gradients, not one
         * twice: Gloo converts each half through branches on its exponent,
         * and with a + a both operands take the same ones, which runs
         * faster (scenarios/profiles/README.md, hooks' sum rates). */
        if ((rc = rt_gloo_sum(types[k], out, a, b, ne)) != 0)
          goto out;
        reps++;
      } while ((t1 = core_now()) - t0 < 0.04);
      if (it >= 0)
        t[it] = (t1 - t0) / reps;
    }
    GBps[k] = (double)(ne * rt_dtype_size(types[k])) / cal_median(t, 5) / 1e9;
  }
out:
  free(f);
  free(g);
  free(a);
  free(b);
  free(out);
  return rc;
}

int cal_memory_bandwidth(size_t bytes, double *copy_GBps, double *reduce_GBps) {
  size_t n = bytes / sizeof(float);
  float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
  if (!x || !y) {
    free(x);
    free(y);
    return core_err_set(CORE_ENOMEM, "out of memory for %zu-byte buffers", bytes);
  }
  for (size_t i = 0; i < n; i++)
    x[i] = y[i] = (float)(i & 1023);
  double tc[8], tr[8];
  /* volatile keeps the scale unknown to the compiler. */
  volatile float vscale = 0.5f;
  float scale = vscale;
  /* Each sample is as many passes as last 40 ms, for the sustained rate. */
  for (int it = -1; it < 8; it++) {
    int k = 0;
    double t0 = core_now(), t1;
    do {
      rt_scale_copy(y, x, (int64_t)n, scale); /* the DDP engine's own copy into a bucket */
      k++;
    } while ((t1 = core_now()) - t0 < 0.04);
    int k2 = 0;
    double t2;
    do {
      for (size_t i = 0; i < n; i++) /* a += b, the host reduction */
        y[i] += x[i];
      k2++;
    } while ((t2 = core_now()) - t1 < 0.04);
    if (it >= 0) {
      tc[it] = (t1 - t0) / k;
      tr[it] = (t2 - t1) / k2;
    }
  }
  *copy_GBps = 2.0 * (double)(n * sizeof(float)) / cal_median(tc, 8) / 1e9;
  *reduce_GBps = (double)(n * sizeof(float)) / cal_median(tr, 8) / 1e9;
  free(x);
  free(y);
  return 0;
}

int cal_update_bandwidth(size_t bytes, double *GBps) {
  size_t n = bytes / sizeof(float);
  float *bucket = malloc(bytes), *g = malloc(bytes), *p = malloc(bytes), *buf = malloc(bytes);
  int rc = 0;
  if (!bucket || !g || !p || !buf) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for four %zu-byte buffers", bytes);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    bucket[i] = (float)(i & 1023) * 1e-3f;
    p[i] = buf[i] = 0;
  }
  double t[8];
  /* Each sample is as many steps as last 40 ms, as in cal_memory_bandwidth. */
  for (int it = -1; it < 8; it++) {
    int k = 0;
    double t0 = core_now(), t1;
    do {
      memcpy(g, bucket, n * sizeof(float));
      rt_sgd_update(p, buf, g, (int64_t)n, 1e-6f, 0.9f);
      k++;
    } while ((t1 = core_now()) - t0 < 0.04);
    if (it >= 0)
      t[it] = (t1 - t0) / k;
  }
  *GBps = 28.0 * (double)n / cal_median(t, 8) / 1e9;
out:
  free(bucket);
  free(g);
  free(p);
  free(buf);
  return rc;
}

/* Each layer is timed where training runs it, once per pass in a whole
 * forward and backward, not in a loop of its own: a layer called over and
 * over keeps its weights and activations in cache, which a pass through
 * the whole model (50 MB of weights for the reference MLP) does not. Each
 * layer's time is its mean
 * over the passes, not the median: under a CPU quota a call shorter than
 * the quota period is throttled in some passes only, and the mean charges
 * each layer its share of the throttling, as training sees it. */
int cal_layer_times(const core_model *m, int batch, int iters, double min_s, double *fwd_s, double *bwd_s) {
  rt_mlp *net;
  int rc = rt_mlp_create(m, batch, 1, &net);
  if (rc)
    return rc;
  int L = m->n_layers, out = m->layers[L - 1].out;
  float *target = calloc((size_t)batch * (size_t)out, sizeof *target);
  if (!target) {
    rc = core_err_set(CORE_ENOMEM, "out of memory timing layers of %s", m->name);
    goto out;
  }
  for (size_t i = 0; i < (size_t)batch * (size_t)m->layers[0].in; i++)
    net->act[0][i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  for (int l = 0; l < L; l++)
    fwd_s[l] = bwd_s[l] = 0;
  int passes = 0;
  double t_start = 0;
  /* Pass -1 sets every activation and gradient buffer (and warms up). */
  for (int it = -1; it < iters || core_now() - t_start < min_s; it++) {
    if (it == 0)
      t_start = core_now();
    for (int l = 0; l < L; l++) {
      double t0 = core_now();
      rt_mlp_forward_layer(net, l);
      if (it >= 0)
        fwd_s[l] += core_now() - t0;
    }
    rt_mlp_loss(net, target);
    for (int l = L - 1; l >= 0; l--) {
      double t0 = core_now();
      rt_mlp_backward_layer(net, l);
      if (it >= 0)
        bwd_s[l] += core_now() - t0;
    }
    if (it >= 0)
      passes++;
  }
  for (int l = 0; l < L; l++) {
    fwd_s[l] /= passes;
    bwd_s[l] /= passes;
  }
out:
  free(target);
  rt_mlp_free(net);
  return rc;
}

int cal_step_samples(const core_model *m, int batch, int n, double *samples) {
  rt_mlp *net;
  int rc = rt_mlp_create(m, batch, 2, &net);
  if (rc)
    return rc;
  int L = m->n_layers;
  float *target = calloc((size_t)batch * (size_t)m->layers[L - 1].out, sizeof *target);
  if (!target) {
    rt_mlp_free(net);
    return core_err_set(CORE_ENOMEM, "out of memory for jitter samples");
  }
  for (int it = -2; it < n; it++) {
    double t0 = core_now();
    for (int l = 0; l < L; l++)
      rt_mlp_forward_layer(net, l);
    rt_mlp_loss(net, target);
    for (int l = L - 1; l >= 0; l--)
      rt_mlp_backward_layer(net, l);
    if (it >= 0)
      samples[it] = core_now() - t0;
  }
  free(target);
  rt_mlp_free(net);
  return 0;
}

typedef struct bg {
  rt_comm *comm;
  float *buf;
  size_t n;
  int count, rc;
  double *t; /* [count] duration of each allreduce */
  atomic_int done;
  char msg[1024];
} bg;

static void *bg_main(void *arg) {
  bg *g = arg;
  for (int i = 0; i < g->count && !g->rc; i++) {
    double t0 = core_now();
    if ((g->rc = rt_allreduce(g->comm, g->buf, g->n, RT_FP32, RT_ALGO_DEFAULT)) != 0)
      snprintf(g->msg, sizeof g->msg, "%s", core_err_msg());
    g->t[i] = core_now() - t0;
  }
  atomic_store(&g->done, 1);
  return NULL;
}

/* GEMMs of size s until stop says so; returns GEMMs per second. */
static double gemm_rate(int s, const float *a, const float *b, float *c, double min_s, atomic_int *stop) {
  int k = 0;
  double t0 = core_now(), dt;
  do {
    rt_blas_sgemm(RT_BLAS_N, RT_BLAS_N, s, s, s, 1.0f, a, s, b, s, 0.0f, c, s);
    k++;
    dt = core_now() - t0;
  } while (stop ? !atomic_load(stop) : dt < min_s);
  return k / dt;
}

typedef struct gemm_bg {
  const float *a, *b;
  float *c;
  atomic_int *stop;
} gemm_bg;

static void *gemm_bg_main(void *arg) {
  gemm_bg *g = arg;
  gemm_rate(256, g->a, g->b, g->c, 0, g->stop);
  return NULL;
}

int cal_cpu_interference(double secs, double *cpu_slowdown) {
  enum { S = 256 };
  *cpu_slowdown = 1.0;
  int rc = rt_blas_load();
  if (rc)
    return rc;
  float *a = malloc(sizeof(float) * S * S), *b = malloc(sizeof(float) * S * S), *c = malloc(sizeof(float) * S * S),
        *c2 = malloc(sizeof(float) * S * S);
  if (!a || !b || !c || !c2) {
    rc = core_err_set(CORE_ENOMEM, "out of memory measuring CPU interference");
    goto out;
  }
  for (int i = 0; i < S * S; i++)
    a[i] = b[i] = (float)(i % 7) * 0.1f;
  double alone = gemm_rate(S, a, b, c, secs, NULL);
  atomic_int stop = 0;
  gemm_bg g = {.a = a, .b = b, .c = c2, .stop = &stop};
  pthread_t th;
  if (pthread_create(&th, NULL, gemm_bg_main, &g) != 0) {
    rc = core_err_set(CORE_EIO, "cannot start a second compute thread");
    goto out;
  }
  double with = gemm_rate(S, a, b, c, secs, NULL);
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  *cpu_slowdown = with > 0 && alone > with ? alone / with : 1.0;
out:
  free(a);
  free(b);
  free(c);
  free(c2);
  return rc;
}

static double process_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Quota / period in CPUs from a cgroup directory; 0 = no limit there. */
static double cgroup_quota(const char *dir, int v2) {
  char f[4300], line[128];
  double q = 0, per = 0;
  if (v2) {
    snprintf(f, sizeof f, "%s/cpu.max", dir);
    FILE *fp = fopen(f, "r");
    if (!fp)
      return 0;
    if (fgets(line, sizeof line, fp) && strncmp(line, "max", 3) != 0)
      sscanf(line, "%lf %lf", &q, &per);
    fclose(fp);
  } else {
    snprintf(f, sizeof f, "%s/cpu.cfs_quota_us", dir);
    FILE *fp = fopen(f, "r");
    if (!fp)
      return 0;
    if (fscanf(fp, "%lf", &q) != 1)
      q = 0;
    fclose(fp);
    snprintf(f, sizeof f, "%s/cpu.cfs_period_us", dir);
    if ((fp = fopen(f, "r")) != NULL) {
      if (fscanf(fp, "%lf", &per) != 1)
        per = 0;
      fclose(fp);
    }
  }
  return q > 0 && per > 0 ? q / per : 0;
}

double cal_rank_cpus(int sharing) {
  cpu_set_t set;
  double cpus = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    cpus = CPU_COUNT(&set);
  if (sharing > 1)
    cpus /= sharing;
  /* cgroup v2: "0::/path"; v1: "N:...cpu...:/path". */
  FILE *fp = fopen("/proc/self/cgroup", "r");
  if (!fp)
    return cpus;
  char line[4096], dir[4200];
  while (fgets(line, sizeof line, fp)) {
    line[strcspn(line, "\n")] = 0;
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
      continue;
    int v2 = c1[1] == ':';
    if (!v2 && !strstr(c1, "cpu,") && !strstr(c1, ",cpu:") && strncmp(c1, ":cpu:", 5) != 0)
      continue;
    for (char *path = c2 + 1;;) {
      snprintf(dir, sizeof dir, v2 ? "/sys/fs/cgroup%s" : "/sys/fs/cgroup/cpu%s", path);
      double q = cgroup_quota(dir, v2);
      if (q > 0 && q < cpus)
        cpus = q;
      char *slash = strrchr(path, '/');
      if (!slash || slash == path)
        break;
      *slash = 0;
    }
  }
  fclose(fp);
  return cpus;
}

int cal_interference(rt_comm *comm, double bytes, int allreduces, double *compute_slowdown, double *comm_slowdown,
    double *alone_s, double *comm_cpus) {
  enum { S = 256 }; /* a GEMM of ~1 ms on one core: many fit in a collective */
  float *a = malloc(sizeof(float) * S * S), *b = malloc(sizeof(float) * S * S), *c = malloc(sizeof(float) * S * S);
  bg g = {.comm = comm, .n = (size_t)(bytes / sizeof(float)), .count = allreduces};
  g.buf = calloc(g.n, sizeof(float));
  g.t = calloc((size_t)allreduces, sizeof *g.t);
  double *alone_t = calloc((size_t)allreduces, sizeof *alone_t);
  int rc = 0;
  if (!a || !b || !c || !g.buf || !g.t || !alone_t) {
    rc = core_err_set(CORE_ENOMEM, "out of memory measuring interference");
    goto out;
  }
  for (int i = 0; i < S * S; i++)
    a[i] = b[i] = (float)(i % 5) * 0.1f;
  /* Each alone first: GEMMs with nothing else running, allreduces with no
   * GEMM; then both at once, GEMMs here and allreduces on a thread. */
  double alone = gemm_rate(S, a, b, c, 1.0, NULL);
  if ((rc = rt_barrier(comm)) != 0)
    goto out;
  double w0 = core_now(), c0 = process_cpu_s();
  for (int i = 0; i < allreduces; i++) {
    double t0 = core_now();
    if ((rc = rt_allreduce(comm, g.buf, g.n, RT_FP32, RT_ALGO_DEFAULT)) != 0)
      goto out;
    alone_t[i] = core_now() - t0;
  }
  double busy = (process_cpu_s() - c0) / (core_now() - w0);
  pthread_t th;
  if (pthread_create(&th, NULL, bg_main, &g) != 0) {
    rc = core_err_set(CORE_EIO, "cannot start a communication thread");
    goto out;
  }
  double with = gemm_rate(S, a, b, c, 0, &g.done);
  pthread_join(th, NULL);
  if (g.rc) {
    rc = core_err_set(g.rc, "%s", g.msg);
    goto out;
  }
  *compute_slowdown = with > 0 && alone > with ? alone / with : 1.0;
  double ca = cal_median(alone_t, allreduces), cw = cal_median(g.t, allreduces);
  *comm_slowdown = ca > 0 && cw > ca ? cw / ca : 1.0;
  *alone_s = ca;
  *comm_cpus = busy;
out:
  free(a);
  free(b);
  free(c);
  free(g.buf);
  free(g.t);
  free(alone_t);
  return rc;
}

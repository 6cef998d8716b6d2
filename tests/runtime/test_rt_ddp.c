/* The DDP engine (runtime/ddp.h) trains for real across forked ranks that
 * meet through a FileStore and allreduce over loopback TCP with Gloo:
 *
 *  - construction broadcasts rank 0's parameters: ranks start from
 *    different seeds and all hold rank 0's initial parameters afterwards;
 *  - after every step every rank holds bit-identical parameters;
 *  - the averaged gradient of step 0 is the gradient of the loss over the
 *    union of the ranks' batches (MSE over all of them): compared with a
 *    double-precision forward/backward written out in this file and with
 *    runtime/mlp on the concatenated batch, to a bound derived from fp32
 *    summation (see grad_bound);
 *  - the first SGD update is exactly p - lr * g (momentum's buffer starts
 *    as the gradient), in fp32 as the test computes it;
 *  - small bucket caps give several buckets, and overlap on and off give
 *    bit-identical parameters at every step.
 *
 * The ranks write what they hold to files in a scratch directory; the
 * parent compares. Every rank runs under rtt's deadline. */
#define _XOPEN_SOURCE 700
#include <CUnit/CUnit.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "core/model.h"
#include "runtime/blas.h"
#include "runtime/comm.h"
#include "runtime/data.h"
#include "runtime/ddp.h"
#include "runtime/mlp.h"
#include "runtime/pg.h"
#include "rtt.h"

/* The model: 24 -> 40 -> 32 -> 16, ReLU, ReLU, none (2,840 parameters). */
enum { IN = 24, H1 = 40, H2 = 32, OUT = 16, N_LAYERS = 3 };
static const int WIDTH[N_LAYERS + 1] = {IN, H1, H2, OUT};
enum { BATCH = 4, STEPS = 5, DATASET = 38 };
#define SEED0 100 /* rank r initializes from SEED0 + r; rank 0's wins */
#define DATA_SEED 7
#define LR 0.05
#define MOMENTUM 0.9
/* Buckets: a 2 KiB first bucket, 4 KiB after it (the tensors are 64 B to
 * 5 KiB), so the 11,360 bytes of gradients make several buckets. */
#define FIRST_MB (2048.0 / 1048576.0)
#define CAP_MB (4096.0 / 1048576.0)
#define DEADLINE_S 90.0

typedef struct ddp_job {
  char dir[512]; /* rendezvous directory and the ranks' output */
  char tag[32];  /* file name prefix of this run */
  char model[600];
  char prefix[128];
  int overlap;
  enum rt_algo algo;
  int report_w;
} ddp_job;

static int write_model(const char *dir, char *path, size_t n) {
  snprintf(path, n, "%s/model.cfg", dir);
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fprintf(f, "model = {\n  name = \"ddp-test\";\n  loss = \"mse\";\n  layers = (\n");
  for (int l = 0; l < N_LAYERS; l++)
    fprintf(f, "    { name = \"fc%d\"; type = \"linear\"; in = %d; out = %d; activation = \"%s\"; }%s\n", l + 1,
        WIDTH[l], WIDTH[l + 1], l + 1 < N_LAYERS ? "relu" : "none", l + 1 < N_LAYERS ? "," : "");
  fprintf(f, "  );\n};\n");
  return fclose(f);
}

static int put_floats(const ddp_job *j, const char *what, int rank, int step, const float *v, int64_t n) {
  char path[800];
  snprintf(path, sizeof path, "%s/%s-%s-r%d-s%d.bin", j->dir, j->tag, what, rank, step);
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  int ok = fwrite(v, sizeof *v, (size_t)n, f) == (size_t)n;
  return fclose(f) == 0 && ok ? 0 : -1;
}

static float *get_floats(const ddp_job *j, const char *what, int rank, int step, int64_t n) {
  char path[800];
  snprintf(path, sizeof path, "%s/%s-%s-r%d-s%d.bin", j->dir, j->tag, what, rank, step);
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  float *v = malloc(sizeof *v * (size_t)n);
  if (v && (fread(v, sizeof *v, (size_t)n, f) != (size_t)n || fgetc(f) != EOF)) {
    free(v);
    v = NULL;
  }
  fclose(f);
  return v;
}

/* ---- a rank ------------------------------------------------------------- */

static int fail(const ddp_job *j, int rank, int code, const char *what) {
  char m[700];
  snprintf(m, sizeof m, "%s: %.600s", what, core_err_msg());
  rtt_report_send(j->report_w, rank, code ? code : -1, m);
  return 1;
}

static int ddp_rank(int rank, int size, void *arg) {
  const ddp_job *j = arg;
  rt_blas_threads(1);
  core_model *m = NULL;
  rt_comm *c = NULL;
  rt_ddp *d = NULL;
  rt_data *data = NULL;
  int status = 1, rc;
  if ((rc = core_model_load(j->model, &m)) != 0)
    return fail(j, rank, rc, "loading the model");
  rt_pg_info in = rtt_pg_local(rank, size);
  if ((rc = rt_pg_connect(&in, j->dir, "127.0.0.1", 30, j->prefix, &c)) != 0) {
    fail(j, rank, rc, "connecting");
    goto out;
  }
  rt_ddp_opts o = {.bucket_cap_mb = CAP_MB,
      .first_bucket_mb = FIRST_MB,
      .overlap = j->overlap,
      .algo = j->algo,
      .lr = LR,
      .momentum = MOMENTUM,
      .fail_step = -1};
  if ((rc = rt_ddp_create(m, c, BATCH, &o, SEED0 + (uint64_t)rank, &d)) != 0) {
    fail(j, rank, rc, "creating the DDP engine");
    goto out;
  }
  char note[64];
  snprintf(note, sizeof note, "buckets %d", rt_ddp_buckets(d)->n_buckets);
  rtt_report_send(j->report_w, rank, 0, note);
  rt_mlp *net = rt_ddp_mlp(d);
  if (put_floats(j, "p", rank, -1, net->params, net->n_params) != 0) {
    rtt_report_send(j->report_w, rank, -1, "cannot write the initial parameters");
    goto out;
  }
  if ((rc = rt_data_create(DATASET, IN, OUT, DATA_SEED, rank, size, 1, &data)) != 0) {
    fail(j, rank, rc, "creating the dataset");
    goto out;
  }
  float x[BATCH * IN], t[BATCH * OUT];
  for (int s = 0; s < STEPS; s++) {
    rt_step_metrics sm;
    if ((rc = rt_data_next(data, BATCH, x, t)) != 0) {
      fail(j, rank, rc, "next batch");
      goto out;
    }
    if ((rc = rt_ddp_step(d, s, x, t, &sm, NULL, 0)) != 0) {
      fail(j, rank, rc, "step");
      goto out;
    }
    if (sm.step != s || !(sm.step_s > 0) || !(sm.compute_s > 0) || !(sm.comm_s > 0) || sm.compute_s > sm.step_s ||
        !isfinite(sm.loss)) {
      char msg[200];
      snprintf(msg, sizeof msg, "step %d metrics: step %ld step_s %g compute_s %g comm_s %g loss %g", s, sm.step,
          sm.step_s, sm.compute_s, sm.comm_s, sm.loss);
      rtt_report_send(j->report_w, rank, -1, msg);
      goto out;
    }
    /* After the step, grads hold the averaged gradient the update used. */
    if (put_floats(j, "p", rank, s, net->params, net->n_params) != 0 ||
        put_floats(j, "g", rank, s, net->grads, net->n_params) != 0) {
      rtt_report_send(j->report_w, rank, -1, "cannot write parameters");
      goto out;
    }
  }
  status = 0;
out:
  rt_data_free(data);
  rt_ddp_free(d);
  rt_comm_destroy(c);
  core_model_free(m);
  return status;
}

/* Run world ranks of job j; returns 1 when all ranks succeeded in time.
 * *n_buckets gets the count every rank reported (-1 if they differ). */
static int run_job(ddp_job *j, int world, int *n_buckets) {
  int rp[2];
  if (rtt_pipe_open(rp) != 0)
    return 0;
  j->report_w = rp[1];
  rtt_prefix(j->prefix, sizeof j->prefix, j->tag);
  rtt_group g;
  int spawned = rtt_spawn(&g, 0, world, world, ddp_rank, j) == 0;
  close(rp[1]);
  int ok = spawned && rtt_wait(&g, DEADLINE_S);
  for (int i = 0; spawned && i < world; i++) {
    char b[64];
    if (!rtt_ok(&g, i)) {
      fprintf(stderr, "\n%s: rank %d ended with %s\n", j->tag, i, rtt_describe(&g, i, b, sizeof b));
      ok = 0;
    }
  }
  *n_buckets = 0;
  rtt_report r;
  while (rtt_report_recv(rp[0], &r, 0.5)) {
    int nb;
    if (r.code == 0 && sscanf(r.msg, "buckets %d", &nb) == 1) {
      if (*n_buckets && nb != *n_buckets)
        *n_buckets = -1;
      else if (*n_buckets >= 0)
        *n_buckets = nb;
    } else {
      fprintf(stderr, "\n%s: rank %d: %s\n", j->tag, r.rank, r.msg);
      ok = 0;
    }
  }
  close(rp[0]);
  return ok;
}

/* ---- the reference ------------------------------------------------------ */

/* Gradient of the MSE loss (mean over all n * OUT elements) of the model
 * with parameters p (PyTorch layout: per layer W [out x in] then b [out])
 * over n samples, in double. mag gets, per gradient element, the same
 * computation over absolute values (|x|, |W|, |b|, |dL/dy|, with the ReLU
 * masks of the real pass): the sum of the magnitudes of every term that
 * rounding could have perturbed, the scale of its fp32 error. */
static void ref_grad(const float *p, const float *x, const float *t, int n, double *g, double *mag) {
  double *a[N_LAYERS + 1], *A[N_LAYERS + 1];
  size_t off[N_LAYERS];
  size_t o = 0;
  for (int l = 0; l < N_LAYERS; l++) {
    off[l] = o;
    o += (size_t)WIDTH[l] * WIDTH[l + 1] + WIDTH[l + 1];
  }
  for (int l = 0; l <= N_LAYERS; l++) {
    a[l] = calloc((size_t)n * WIDTH[l], sizeof(double));
    A[l] = calloc((size_t)n * WIDTH[l], sizeof(double));
  }
  for (int i = 0; i < n * IN; i++) {
    a[0][i] = x[i];
    A[0][i] = fabs(x[i]);
  }
  for (int l = 0; l < N_LAYERS; l++) {
    int fi = WIDTH[l], fo = WIDTH[l + 1];
    const float *W = p + off[l], *b = W + (size_t)fi * fo;
    for (int s = 0; s < n; s++)
      for (int k = 0; k < fo; k++) {
        double z = b[k], Z = fabs(b[k]);
        for (int q = 0; q < fi; q++) {
          z += (double)W[k * fi + q] * a[l][s * fi + q];
          Z += fabs(W[k * fi + q]) * A[l][s * fi + q];
        }
        int relu = l + 1 < N_LAYERS;
        a[l + 1][s * fo + k] = relu && !(z > 0) ? 0 : z;
        A[l + 1][s * fo + k] = relu && !(z > 0) ? 0 : Z;
      }
  }
  /* dL/dy = 2 (y - t) / (n * OUT) */
  double *d = calloc((size_t)n * OUT, sizeof(double)), *D = calloc((size_t)n * OUT, sizeof(double));
  for (int i = 0; i < n * OUT; i++) {
    d[i] = 2.0 * (a[N_LAYERS][i] - t[i]) / ((double)n * OUT);
    D[i] = 2.0 * (A[N_LAYERS][i] + fabs(t[i])) / ((double)n * OUT);
  }
  for (int l = N_LAYERS - 1; l >= 0; l--) {
    int fi = WIDTH[l], fo = WIDTH[l + 1];
    const float *W = p + off[l];
    double *gW = g + off[l], *gb = gW + (size_t)fi * fo;
    double *mW = mag + off[l], *mb = mW + (size_t)fi * fo;
    /* d is the gradient w.r.t. this layer's output after its activation;
     * the ReLU mask of the real pass applies to both. */
    if (l + 1 < N_LAYERS)
      for (int i = 0; i < n * fo; i++)
        if (!(a[l + 1][i] > 0))
          d[i] = D[i] = 0;
    for (int k = 0; k < fo; k++) {
      double sb = 0, Sb = 0;
      for (int s = 0; s < n; s++) {
        sb += d[s * fo + k];
        Sb += D[s * fo + k];
      }
      gb[k] = sb;
      mb[k] = Sb;
      for (int q = 0; q < fi; q++) {
        double sw = 0, Sw = 0;
        for (int s = 0; s < n; s++) {
          sw += d[s * fo + k] * a[l][s * fi + q];
          Sw += D[s * fo + k] * A[l][s * fi + q];
        }
        gW[k * fi + q] = sw;
        mW[k * fi + q] = Sw;
      }
    }
    if (l > 0) {
      double *dn = calloc((size_t)n * fi, sizeof(double)), *Dn = calloc((size_t)n * fi, sizeof(double));
      for (int s = 0; s < n; s++)
        for (int q = 0; q < fi; q++) {
          double v = 0, V = 0;
          for (int k = 0; k < fo; k++) {
            v += d[s * fo + k] * W[k * fi + q];
            V += D[s * fo + k] * fabs(W[k * fi + q]);
          }
          dn[s * fi + q] = v;
          Dn[s * fi + q] = V;
        }
      free(d);
      free(D);
      d = dn;
      D = Dn;
    }
  }
  free(d);
  free(D);
  for (int l = 0; l <= N_LAYERS; l++) {
    free(a[l]);
    free(A[l]);
  }
}

/* The fp32 error bound of a gradient element: every value on its path is
 * a sum computed in fp32, and a sum of k terms is off by at most
 * k * u * (sum of |terms|), u = 2^-24 (Higham, Accuracy and Stability of
 * Numerical Algorithms, 2nd ed., eq. 3.5). To first order these errors add
 * up along the path, and each is bounded by the same magnitude sums mag
 * holds, so |fp32 - exact| <= u * K * mag with K the total of the sum
 * lengths on the longest path: the forward fan-ins (IN+1, H1+1, H2+1), the
 * loss, the backward fan-outs (OUT, H2), the batch sum (world * BATCH,
 * split into world partial sums plus a world-term allreduce in DDP), and
 * the 1/world scaling. A factor 2 covers the second-order terms. Reordering
 * the sums (GEMM blocking, the split over ranks, Gloo's reduction order)
 * stays inside the same bound: it holds for any order. */
static double grad_bound(int world, double mag) {
  double K = (IN + 1) + (H1 + 1) + (H2 + 1) + 2 + OUT + H2 + world * BATCH + world + 2;
  return 2.0 * K * 0x1p-24 * mag;
}

typedef struct cmp_stat {
  double worst; /* max |a - b| / bound */
  int64_t over; /* elements over the bound */
} cmp_stat;

static cmp_stat compare(const float *got, const double *want, const double *mag, int64_t n, int world) {
  cmp_stat st = {0, 0};
  for (int64_t i = 0; i < n; i++) {
    double bound = grad_bound(world, mag[i]) + 1e-30;
    double r = fabs((double)got[i] - want[i]) / bound;
    if (r > st.worst)
      st.worst = r;
    if (!(r <= 1))
      st.over++;
  }
  return st;
}

/* ---- the test ----------------------------------------------------------- */

static void check_training(int world, enum rt_algo algo) {
  ddp_job on, off;
  memset(&on, 0, sizeof on);
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(on.dir, sizeof on.dir), 0);
  CU_ASSERT_EQUAL_FATAL(write_model(on.dir, on.model, sizeof on.model), 0);
  on.algo = algo;
  off = on;
  on.overlap = 1;
  snprintf(on.tag, sizeof on.tag, "on");
  off.overlap = 0;
  snprintf(off.tag, sizeof off.tag, "off");

  core_model *m = NULL;
  CU_ASSERT_EQUAL_FATAL(core_model_load(on.model, &m), 0);
  const int64_t np = m->n_params;
  CU_ASSERT_EQUAL(np, (int64_t)IN * H1 + H1 + H1 * H2 + H2 + H2 * OUT + OUT);

  int nb_on = 0, nb_off = 0;
  double t0 = rtt_now();
  int ok_on = run_job(&on, world, &nb_on);
  int ok_off = run_job(&off, world, &nb_off);
  fprintf(stderr, "\n  %d ranks, %s: two runs of %d steps in %.2f s, %d buckets\n", world, rt_algo_name(algo), STEPS,
      rtt_now() - t0, nb_on);
  CU_ASSERT(ok_on);
  CU_ASSERT(ok_off);
  CU_ASSERT(nb_on >= 3);
  CU_ASSERT_EQUAL(nb_on, nb_off);

  /* Initial parameters: rank 0's (seed SEED0) on every rank. */
  rt_mlp *ref0 = NULL;
  CU_ASSERT_EQUAL_FATAL(rt_mlp_create(m, 1, SEED0, &ref0), 0);
  rt_mlp *ref1 = NULL;
  CU_ASSERT_EQUAL_FATAL(rt_mlp_create(m, 1, SEED0 + 1, &ref1), 0);
  CU_ASSERT_NOT_EQUAL(memcmp(ref0->params, ref1->params, sizeof(float) * (size_t)np), 0);
  rt_mlp_free(ref1);
  for (int r = 0; r < world; r++) {
    float *p = get_floats(&on, "p", r, -1, np);
    CU_ASSERT_PTR_NOT_NULL(p);
    CU_ASSERT(p && memcmp(p, ref0->params, sizeof(float) * (size_t)np) == 0);
    free(p);
  }

  /* Every step: all ranks bit-identical, overlap on = overlap off. */
  int differ_ranks = 0, differ_overlap = 0, missing = 0;
  for (int s = 0; s < STEPS; s++) {
    float *p0 = get_floats(&on, "p", 0, s, np);
    float *q0 = get_floats(&off, "p", 0, s, np);
    missing += !p0 + !q0;
    if (p0 && q0 && memcmp(p0, q0, sizeof(float) * (size_t)np) != 0) {
      fprintf(stderr, "\n  step %d: overlap on and off differ\n", s);
      differ_overlap++;
    }
    for (int r = 1; r < world; r++) {
      float *p = get_floats(&on, "p", r, s, np), *q = get_floats(&off, "p", r, s, np);
      missing += !p + !q;
      if (p && p0 && memcmp(p, p0, sizeof(float) * (size_t)np) != 0) {
        fprintf(stderr, "\n  step %d: rank %d differs from rank 0 (overlap on)\n", s, r);
        differ_ranks++;
      }
      if (q && q0 && memcmp(q, q0, sizeof(float) * (size_t)np) != 0) {
        fprintf(stderr, "\n  step %d: rank %d differs from rank 0 (overlap off)\n", s, r);
        differ_ranks++;
      }
      free(p);
      free(q);
      /* and so did the averaged gradients they stepped with */
      float *g = get_floats(&on, "g", r, s, np), *g0 = get_floats(&on, "g", 0, s, np);
      missing += !g + !g0;
      if (g && g0 && memcmp(g, g0, sizeof(float) * (size_t)np) != 0) {
        fprintf(stderr, "\n  step %d: rank %d's averaged gradient differs from rank 0's\n", s, r);
        differ_ranks++;
      }
      free(g);
      free(g0);
    }
    free(p0);
    free(q0);
  }
  CU_ASSERT_EQUAL(missing, 0);
  CU_ASSERT_EQUAL(differ_ranks, 0);
  CU_ASSERT_EQUAL(differ_overlap, 0);
  /* Training moved the parameters at all. */
  float *last = get_floats(&on, "p", 0, STEPS - 1, np);
  CU_ASSERT(last && memcmp(last, ref0->params, sizeof(float) * (size_t)np) != 0);
  free(last);

  /* Step 0's averaged gradient vs the gradient over the union of the
   * ranks' first batches (the same data they drew, regenerated here). */
  const int n = world * BATCH;
  float *x = malloc(sizeof(float) * (size_t)n * IN), *t = malloc(sizeof(float) * (size_t)n * OUT);
  CU_ASSERT_PTR_NOT_NULL_FATAL(x);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  for (int r = 0; r < world; r++) {
    rt_data *d = NULL;
    CU_ASSERT_EQUAL_FATAL(rt_data_create(DATASET, IN, OUT, DATA_SEED, r, world, 1, &d), 0);
    CU_ASSERT_EQUAL(rt_data_next(d, BATCH, x + (size_t)r * BATCH * IN, t + (size_t)r * BATCH * OUT), 0);
    rt_data_free(d);
  }
  double *g = calloc((size_t)np, sizeof *g), *mag = calloc((size_t)np, sizeof *mag);
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  CU_ASSERT_PTR_NOT_NULL_FATAL(mag);
  ref_grad(ref0->params, x, t, n, g, mag);

  /* runtime/mlp on the concatenated batch, single process. */
  rt_mlp *u = NULL;
  CU_ASSERT_EQUAL_FATAL(rt_mlp_create(m, n, SEED0, &u), 0);
  memcpy(u->act[0], x, sizeof(float) * (size_t)n * IN);
  for (int l = 0; l < N_LAYERS; l++)
    rt_mlp_forward_layer(u, l);
  rt_mlp_loss(u, t);
  for (int l = N_LAYERS - 1; l >= 0; l--)
    rt_mlp_backward_layer(u, l);

  float *gd = get_floats(&on, "g", 0, 0, np);
  CU_ASSERT_PTR_NOT_NULL_FATAL(gd);
  cmp_stat s_mlp = compare(u->grads, g, mag, np, world);
  cmp_stat s_ddp = compare(gd, g, mag, np, world);
  /* DDP vs the single-process fp32 computation: both within the bound of
   * the exact value, so within twice the bound of each other. */
  double worst_pair = 0;
  int64_t over_pair = 0;
  for (int64_t i = 0; i < np; i++) {
    double r = fabs((double)gd[i] - u->grads[i]) / (2 * grad_bound(world, mag[i]) + 1e-30);
    worst_pair = r > worst_pair ? r : worst_pair;
    over_pair += !(r <= 1);
  }
  double gmax = 0, e2_ddp = 0, e2_mlp = 0, g2 = 0;
  for (int64_t i = 0; i < np; i++) {
    gmax = fabs(g[i]) > gmax ? fabs(g[i]) : gmax;
    e2_ddp += (gd[i] - g[i]) * (gd[i] - g[i]);
    e2_mlp += (u->grads[i] - g[i]) * (u->grads[i] - g[i]);
    g2 += g[i] * g[i];
  }
  double rel_ddp = sqrt(e2_ddp / g2), rel_mlp = sqrt(e2_mlp / g2);
  fprintf(stderr,
      "  step-0 gradient (max |g| %.3g): error / bound: mlp %.3g, ddp %.3g, ddp vs mlp %.3g; "
      "relative L2 error: mlp %.3g, ddp %.3g\n",
      gmax, s_mlp.worst, s_ddp.worst, worst_pair, rel_mlp, rel_ddp);
  CU_ASSERT(gmax > 1e-3); /* a gradient worth comparing */
  CU_ASSERT_EQUAL(s_mlp.over, 0);
  CU_ASSERT_EQUAL(s_ddp.over, 0);
  CU_ASSERT_EQUAL(over_pair, 0);
  /* The bound above is the worst case; rounding errors of independent
   * terms grow like sqrt(K) u, not K u (Higham, sec. 2.8). With K < 200,
   * sqrt(K) u < 1e-6: a relative L2 error of 1e-5 leaves a margin of 10,
   * and still catches a gradient scaled wrong by 1e-4. */
  CU_ASSERT(rel_ddp <= 1e-5);
  CU_ASSERT(rel_mlp <= 1e-5);

  /* The update: torch.optim.SGD's first step with momentum sets the buffer
   * to the gradient, so p1 = p0 - lr * g exactly as fp32 computes it. */
  float *p1 = get_floats(&on, "p", 0, 0, np);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p1);
  int64_t upd_bad = 0, upd_far = 0;
  const float lr = (float)LR;
  for (int64_t i = 0; i < np; i++) {
    float want = ref0->params[i] - lr * gd[i];
    if (memcmp(&want, &p1[i], sizeof want) != 0)
      upd_bad++;
    /* and against the exact gradient: lr * bound, plus the final rounding */
    double exact = (double)ref0->params[i] - LR * g[i];
    if (!(fabs(p1[i] - exact) <= LR * grad_bound(world, mag[i]) + 2 * 0x1p-24 * fabs(exact) + 1e-30))
      upd_far++;
  }
  CU_ASSERT_EQUAL(upd_bad, 0);
  CU_ASSERT_EQUAL(upd_far, 0);

  free(p1);
  free(gd);
  rt_mlp_free(u);
  free(g);
  free(mag);
  free(x);
  free(t);
  rt_mlp_free(ref0);
  core_model_free(m);
  rtt_rmdir(on.dir);
}

static void test_two_ranks(void) { check_training(2, RT_ALGO_DEFAULT); }
static void test_three_ranks(void) { check_training(3, RT_ALGO_DEFAULT); }
static void test_three_ranks_hd(void) { check_training(3, RT_ALGO_HALVING_DOUBLING); }
/* With 2 ranks a + b = b + a, so even the whole-buffer ring agrees. */
static void test_two_ranks_ring(void) { check_training(2, RT_ALGO_RING); }

/* Gloo's AllreduceRing adds in rank-dependent order: with 3 ranks the
 * replicas would differ in their last bits after one step, so the engine
 * refuses it, on every rank, at once. */
static int ring3_rank(int rank, int size, void *arg) {
  const ddp_job *j = arg;
  core_model *m = NULL;
  rt_comm *c = NULL;
  rt_ddp *d = NULL;
  int rc;
  if ((rc = core_model_load(j->model, &m)) != 0)
    return fail(j, rank, rc, "loading the model");
  rt_pg_info in = rtt_pg_local(rank, size);
  if ((rc = rt_pg_connect(&in, j->dir, "127.0.0.1", 30, j->prefix, &c)) != 0) {
    fail(j, rank, rc, "connecting");
  } else {
    rt_ddp_opts o = {.bucket_cap_mb = CAP_MB,
        .first_bucket_mb = FIRST_MB,
        .overlap = 1,
        .algo = RT_ALGO_RING,
        .lr = LR,
        .momentum = MOMENTUM,
        .fail_step = -1};
    rc = rt_ddp_create(m, c, BATCH, &o, SEED0, &d);
    rtt_report_send(j->report_w, rank, rc, rc ? core_err_msg() : "created");
    rt_ddp_free(d);
  }
  rt_comm_destroy(c);
  core_model_free(m);
  return 0;
}

static void test_ring_refused(void) {
  ddp_job j;
  memset(&j, 0, sizeof j);
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(j.dir, sizeof j.dir), 0);
  CU_ASSERT_EQUAL_FATAL(write_model(j.dir, j.model, sizeof j.model), 0);
  rtt_prefix(j.prefix, sizeof j.prefix, "ring3");
  int rp[2];
  CU_ASSERT_EQUAL_FATAL(rtt_pipe_open(rp), 0);
  j.report_w = rp[1];
  rtt_group g;
  int spawned = rtt_spawn(&g, 0, 3, 3, ring3_rank, &j) == 0;
  close(rp[1]);
  CU_ASSERT(spawned);
  CU_ASSERT(spawned && rtt_wait(&g, DEADLINE_S));
  for (int i = 0; spawned && i < 3; i++)
    CU_ASSERT(rtt_ok(&g, i));
  int got = 0;
  rtt_report r;
  while (rtt_report_recv(rp[0], &r, 0.5)) {
    got++;
    if (r.code != CORE_EUNSUPPORTED)
      fprintf(stderr, "\n  rank %d: %d %s\n", r.rank, r.code, r.msg);
    CU_ASSERT_EQUAL(r.code, CORE_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, "ring"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, "halving_doubling"));
  }
  CU_ASSERT_EQUAL(got, 3);
  close(rp[0]);
  rtt_rmdir(j.dir);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("DDP training", NULL, rtt_scratch_cleanup);
  CU_add_test(s, "2 ranks: identical replicas, union gradient, overlap on = off", test_two_ranks);
  CU_add_test(s, "3 ranks: identical replicas, union gradient, overlap on = off", test_three_ranks);
  CU_add_test(s, "3 ranks, halving_doubling allreduce", test_three_ranks_hd);
  CU_add_test(s, "2 ranks, ring allreduce", test_two_ranks_ring);
  CU_add_test(s, "3 ranks, ring allreduce: refused (replicas would drift)", test_ring_refused);
}

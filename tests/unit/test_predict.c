/* Collective cost models (sim/collective.h) and the step simulation
 * (sim/step.h, sim/predict.h).
 *
 * The closed-form test: with one bucket and overlap off, the simulated
 * allreduce time equals the closed-form cost of docs/cost-models.md to
 * rounding, for ring, tree and hierarchical. The formulas below are written
 * out here from the reference, not taken from sim/:
 *   ring (MPICH, Thakur et al.)   2(p-1)a + 2n(p-1)/p b + n(p-1)/p g
 *   NCCL tree (tuning.cc)         2((g-1)a_intra + ceil(lg N) a_inter) + 2n b / 0.92
 *   hierarchical                  2(g-1)a_l + 2n(g-1)/g b_l + n(g-1)/g g
 *                                 + 2(N-1)a_g + 2(n/g)(N-1)/N b_g + (n/g)(N-1)/N g
 * A network of gbps Gb/s at efficiency e carries gbps*1e9/8*e bytes/s; a
 * profile's ring allreduce fit at p ranks (T = alpha + S/algbw) gives the
 * per-link figures the way nccl-tests defines bus bandwidth: a_link =
 * alpha / (2(p-1)), b_link = 1 / (algbw * 2(p-1)/p). NCCL reduces on the GPU
 * inside its pipelined kernels (g = 0); Gloo reduces on the host at the
 * profile's host.reduce_GBps, and stages GPU tensors through host memory
 * (down and back up: 2n / host_link). "To rounding": the engine keeps time
 * in integer nanoseconds, so step_s - compute_s may differ from the formula
 * by a nanosecond or so; the scenarios are sized so that the collective takes
 * seconds and the relative error bound of 1e-9 covers that. */
#include "sim/collective.h"
#include "sim/predict.h"
#include "sim/scenario.h"
#include "sim/step.h"

#include "core/bucket.h"
#include "core/err.h"
#include "core/profile.h"

#include "simutil.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- figures of the test fixtures (tests/data/gpu-test.cfg, cpu-test.cfg,
 * big-test.cfg), written down by hand ------------------------------------- */

/* big-test.cfg: 60e6 + 40e6 parameters, fp32 gradients. */
#define BIG_PARAMS 1e8
#define BIG_BYTES (BIG_PARAMS * 4.0)
/* Forward FLOPs per sample of layers a and b; backward is twice the
 * forward, except for the first layer, whose input needs no gradient, so
 * autograd computes only its weight gradient (core/model.h). */
#define BIG_FWD_FLOPS 2e8
#define BIG_BWD_FLOPS (1e8 * 1.0 + 1e8 * 2.0)

/* gpu-test.cfg */
#define GPU_FP32_FLOPS 10e12
#define GPU_MEM_BPS 1000e9
#define GPU_HOST_LINK_BPS 20e9
#define GPU_REDUCE_BPS 8e9
#define GPU_INTRA_P 4
#define GPU_INTRA_ALPHA_FIT 30e-6
#define GPU_INTRA_ALGBW 100e9
#define GPU_GLOO_INTRA_ALPHA_FIT 300e-6
#define GPU_GLOO_INTRA_ALGBW 4e9

/* cpu-test.cfg: intra gloo segmented ring at 2 ranks; the large-message fit
 * (from 64 KiB), which the tests' big buckets fall into: 50 us, 2 GB/s. */
#define CPU_INTRA_P 2
#define CPU_INTRA_ALPHA_FIT 50e-6
#define CPU_INTRA_ALGBW 2e9
#define CPU_REDUCE_BPS 5e9

static double link_alpha(double alpha_fit, int p) { return alpha_fit / (2.0 * (p - 1)); }
static double link_beta(double algbw, int p) { return 1.0 / (algbw * 2.0 * (p - 1) / p); }
static double flow_beta(double gbps, double eff) { return 1.0 / (gbps * 1e9 / 8.0 * eff); }

static double ring_cost(int p, double a, double b, double g, double n) {
  return 2.0 * (p - 1) * a + 2.0 * n * (p - 1) / p * b + n * (p - 1) / p * g;
}

static int ceil_lg(int N) {
  int k = 0;
  while ((1 << k) < N)
    k++;
  return k;
}

static double nccl_tree_cost(int g, int N, double a_intra, double a_inter, double b, double n) {
  return 2.0 * ((g - 1) * a_intra + ceil_lg(N) * a_inter) + 2.0 * n * b / 0.92;
}

static double hier_cost(int g, int N, double al, double bl, double ag, double bg, double gam, double n) {
  double T = 0;
  if (g > 1)
    T += 2.0 * (g - 1) * al + 2.0 * n * (g - 1) / g * bl + n * (g - 1) / g * gam;
  if (N > 1) {
    double m = n / g;
    T += 2.0 * (N - 1) * ag + 2.0 * m * (N - 1) / N * bg + m * (N - 1) / N * gam;
  }
  return T;
}

static double rel_err(double got, double want) { return fabs(got - want) / (fabs(want) > 0 ? fabs(want) : 1.0); }

/* --- loading scenarios and running points --------------------------------- */

static sim_scenario *load(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static sim_scenario *load(const char *fmt, ...) {
  static char text[16384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return tu_load_string(text, TU_DATA("inline-test.cfg"));
}

/* One bucket, overlap off, a network of 1 Gb/s (0.5 for the slow cases) at
 * efficiency 1 so the bytes per second are round. */
#define ONE_BUCKET_DDP "bucket_cap_mb = 100000.0; first_bucket_mb = 100000.0; overlap = false;"

/* Check a point's communication against the closed form, to rounding. */
static void check_closed_form(const sim_point_result *r, double want, const char *what) {
  double e1 = rel_err(r->comm_s, want);
  double e2 = rel_err(r->step_s - r->compute_s, want);
  double e3 = rel_err(r->exposed_comm_s, want);
  if (!(r->n_buckets == 1 && e1 < 1e-9 && e2 < 1e-9 && e3 < 1e-9))
    fprintf(stderr, "\n%s, %d x %d: buckets %d, comm %.12g step-compute %.12g want %.12g (rel %.3g %.3g)\n", what,
        r->pt.nodes, r->pt.per_node, r->n_buckets, r->comm_s, r->step_s - r->compute_s, want, e1, e2);
  CU_ASSERT_EQUAL(r->n_buckets, 1);
  CU_ASSERT(e1 < 1e-9);
  CU_ASSERT(e2 < 1e-9);
  CU_ASSERT(e3 < 1e-9);
  CU_ASSERT_STRING_EQUAL(r->status, "ok");
  /* The check is not vacuous: the collective is seconds long. */
  CU_ASSERT(want > 1.0);
}

/* One closed-form case: a big-test.cfg scenario with one bucket, overlap
 * off and a network at efficiency 1, and the formula its points must match. */
typedef struct closed_case closed_case;
struct closed_case {
  const char *what, *profile;
  const char *training; /* more of the training group, or "" */
  const char *nodes;    /* the cluster's nodes, a number or a list */
  int per_node;
  int nics; /* nics_per_node; 0: the network's default */
  const char *ddp;
  double gbps, lat_us;
  long n_points;
  double (*want)(const closed_case *c, int nodes);
};

static double want_nccl_ring(const closed_case *c, int N) {
  return ring_cost(N, c->lat_us * 1e-6, flow_beta(c->gbps, 1.0), 0.0, BIG_BYTES);
}

static double want_nccl_tree(const closed_case *c, int N) {
  return nccl_tree_cost(1, N, 0.0, c->lat_us * 1e-6, flow_beta(c->gbps, 1.0), BIG_BYTES);
}

static double want_nccl_hier(const closed_case *c, int N) {
  double al = link_alpha(GPU_INTRA_ALPHA_FIT, GPU_INTRA_P);
  double bl = link_beta(GPU_INTRA_ALGBW, GPU_INTRA_P);
  return hier_cost(c->per_node, N, al, bl, c->lat_us * 1e-6, flow_beta(c->gbps, 1.0), 0.0, BIG_BYTES);
}

/* Gloo reduces on the host: the g term applies, g = 1 / host.reduce_GBps. */
static double want_gloo_ring_cpu(const closed_case *c, int N) {
  return ring_cost(N, c->lat_us * 1e-6, flow_beta(c->gbps, 1.0), 1.0 / CPU_REDUCE_BPS, BIG_BYTES);
}

/* Gloo on GPUs: the same ring plus staging through pinned host memory,
 * device to host and back, 2n / host_link. */
static double want_gloo_ring_gpu(const closed_case *c, int N) {
  return ring_cost(N, c->lat_us * 1e-6, flow_beta(c->gbps, 1.0), 1.0 / GPU_REDUCE_BPS, BIG_BYTES) +
         2.0 * BIG_BYTES / GPU_HOST_LINK_BPS;
}

static double want_gloo_hier(const closed_case *c, int N) {
  double al = link_alpha(CPU_INTRA_ALPHA_FIT, CPU_INTRA_P);
  double bl = link_beta(CPU_INTRA_ALGBW, CPU_INTRA_P);
  return hier_cost(c->per_node, N, al, bl, c->lat_us * 1e-6, flow_beta(c->gbps, 1.0), 1.0 / CPU_REDUCE_BPS, BIG_BYTES);
}

/* The hierarchical cases have g devices and g NICs per node: each local rank
 * has its own NIC, so the g concurrent inter-node allreduces each get a full
 * flow. */
static const closed_case closed_cases[] = {
    {"nccl ring", "gpu-test.cfg", " precision = \"fp32\";", "[2, 3, 4, 5, 8, 13]", 1, 0,
        "backend = \"nccl\"; algorithm = \"ring\";", 1.0, 50.0, 6, want_nccl_ring},
    {"nccl tree", "gpu-test.cfg", "", "[2, 3, 4, 5, 8, 9, 16]", 1, 0, "backend = \"nccl\"; algorithm = \"tree\";", 1.0,
        40.0, 7, want_nccl_tree},
    {"nccl hierarchical", "gpu-test.cfg", "", "[1, 2, 3, 4, 7]", 4, 4,
        "backend = \"nccl\"; algorithm = \"hierarchical\";", 0.5, 25.0, 5, want_nccl_hier},
    {"gloo ring (cpu)", "cpu-test.cfg", "", "[2, 3, 4, 6]", 1, 0,
        "backend = \"gloo\"; algorithm = [\"segmented_ring\", \"auto\"];", 1.0, 60.0, 8, want_gloo_ring_cpu},
    {"gloo ring (gpu)", "gpu-test.cfg", "", "[2, 5]", 1, 0, "backend = \"gloo\";", 1.0, 60.0, 2, want_gloo_ring_gpu},
    {"gloo hierarchical", "cpu-test.cfg", "", "[2, 3, 5]", 2, 2, "backend = \"gloo\"; algorithm = \"hierarchical\";",
        0.5, 80.0, 3, want_gloo_hier},
};

/* Every point of the case's scenario against its closed form. */
static void run_closed_case(const closed_case *c) {
  char nics[64] = "";
  if (c->nics)
    snprintf(nics, sizeof nics, " nics_per_node = %d;", c->nics);
  sim_scenario *s = load("profile = \"%s\"; model = \"big-test.cfg\";\n"
                         "training = { batch = 8;%s };\n"
                         "cluster = { nodes = %s; devices_per_node = %d; };\n"
                         "networks = ( { name = \"n\"; gbps = %g; latency_us = %g;%s efficiency = 1.0; } );\n"
                         "ddp = { %s " ONE_BUCKET_DDP " };\n"
                         "simulation = { steps = 2; };\n",
      c->profile, c->training, c->nodes, c->per_node, c->gbps, c->lat_us, nics, c->ddp);
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL(sim_scenario_points(s), c->n_points);
  for (long i = 0; i < sim_scenario_points(s); i++) {
    sim_point_result r;
    CU_ASSERT_FATAL(tu_run_point(s, i, &r) == 0);
    double want = c->want(c, r.pt.nodes);
    if (r.pt.nodes == 1) {
      /* Inside one node the whole thing takes milliseconds: the nanosecond
       * grid is too coarse for 1e-9, so check comm_s only. */
      CU_ASSERT(rel_err(r.comm_s, want) < 1e-12);
      CU_ASSERT(fabs((r.step_s - r.compute_s) - want) < 2e-9);
      continue;
    }
    check_closed_form(&r, want, c->what);
  }
  sim_scenario_free(s);
}

static void test_closed_form_nccl_ring(void) { run_closed_case(&closed_cases[0]); }
static void test_closed_form_nccl_tree(void) { run_closed_case(&closed_cases[1]); }
static void test_closed_form_nccl_hierarchical(void) { run_closed_case(&closed_cases[2]); }
static void test_closed_form_gloo_ring_cpu(void) { run_closed_case(&closed_cases[3]); }
static void test_closed_form_gloo_ring_gpu(void) { run_closed_case(&closed_cases[4]); }
static void test_closed_form_gloo_hierarchical(void) { run_closed_case(&closed_cases[5]); }

/* NCCL's tuner picks the algorithm with the lowest estimated time; "auto"
 * must equal the smaller of the ring and tree closed forms. */
static void test_nccl_auto_is_min(void) {
  const double gbps = 1.0;
  /* High latency makes the tree win at scale (lg N vs N hops); at 2 nodes
   * the ring's bandwidth term wins. */
  sim_scenario *s = load("profile = \"gpu-test.cfg\"; model = \"big-test.cfg\";\n"
                         "training = { batch = 8; };\n"
                         "cluster = { nodes = [2, 64, 1024]; devices_per_node = 1; };\n"
                         "networks = ( { name = \"n\"; gbps = %g; latency_us = 20000.0; efficiency = 1.0; } );\n"
                         "ddp = { backend = \"nccl\"; algorithm = \"auto\"; " ONE_BUCKET_DDP " timeout_s = 1e6; };\n"
                         "simulation = { steps = 1; };\n",
      gbps);
  CU_ASSERT_FATAL(s != NULL);
  int ring_won = 0, tree_won = 0;
  for (long i = 0; i < sim_scenario_points(s); i++) {
    sim_point_result r;
    CU_ASSERT_FATAL(tu_run_point(s, i, &r) == 0);
    int N = r.pt.nodes;
    double ring = ring_cost(N, 20000e-6, flow_beta(gbps, 1.0), 0, BIG_BYTES);
    double tree = nccl_tree_cost(1, N, 0, 20000e-6, flow_beta(gbps, 1.0), BIG_BYTES);
    double want = ring < tree ? ring : tree;
    ring_won += ring < tree;
    tree_won += tree < ring;
    CU_ASSERT(rel_err(r.comm_s, want) < 1e-12);
  }
  CU_ASSERT(ring_won > 0 && tree_won > 0);
  sim_scenario_free(s);
}

/* --- sim_coll_time on hand-built topologies --------------------------------- */

static sim_topo flat_topo(int p, double a, double b, double g) {
  sim_topo t;
  memset(&t, 0, sizeof t);
  t.nodes = p;
  t.per_node = 1;
  t.inter.alpha_s = a;
  t.inter.beta_s = b;
  t.rails = 1;
  t.node_Bps = 1.0 / b;
  t.gamma_s = g;
  return t;
}

static void test_coll_time_mpi_table(void) {
  const double a = 7e-6, b = 1.0 / 3e9, g = 1.0 / 11e9, n = 123456789.0;
  for (int p = 2; p <= 64; p *= 2) {
    sim_topo t = flat_topo(p, a, b, g);
    double f = (double)(p - 1) / p;
    int lg = ceil_lg(p);
    /* Gloo allreduce_ring: whole buffer around the ring p-1 times. */
    CU_ASSERT(rel_err(sim_coll_time(SIM_BACKEND_GLOO, CORE_COLL_ALLREDUCE, SIM_ALGO_GLOO_RING, &t, n),
                  (p - 1) * (a + n * b + n * g)) < 1e-12);
    /* allreduce_ring_chunked. */
    CU_ASSERT(rel_err(sim_coll_time(SIM_BACKEND_GLOO, CORE_COLL_ALLREDUCE, SIM_ALGO_RING_CHUNKED, &t, n),
                  4.0 * (p - 1) * a + 2.0 * n * f * b + n * f * g) < 1e-12);
    /* Rabenseifner (halving-doubling) for p = 2^k. */
    CU_ASSERT(rel_err(sim_coll_time(SIM_BACKEND_GLOO, CORE_COLL_ALLREDUCE, SIM_ALGO_HALVING_DOUBLING, &t, n),
                  2.0 * lg * a + 2.0 * n * f * b + n * f * g) < 1e-12);
    /* Segmented ring: reduce-scatter ring then allgather ring. */
    CU_ASSERT(rel_err(sim_coll_time(SIM_BACKEND_GLOO, CORE_COLL_ALLREDUCE, SIM_ALGO_SEGMENTED_RING, &t, n),
                  ring_cost(p, a, b, g, n)) < 1e-12);
    /* Allgather ring; reduce-scatter as ProcessGroupGloo runs it, an
     * allreduce of the whole input (the NCCL ring below is the true one). */
    CU_ASSERT(rel_err(sim_coll_time(SIM_BACKEND_GLOO, CORE_COLL_ALLGATHER, SIM_ALGO_SEGMENTED_RING, &t, n),
                  (p - 1) * a + n * f * b) < 1e-12);
    CU_ASSERT(rel_err(sim_coll_time(SIM_BACKEND_GLOO, CORE_COLL_REDUCESCATTER, SIM_ALGO_SEGMENTED_RING, &t, n),
                  ring_cost(p, a, b, g, n)) < 1e-12);
    CU_ASSERT(rel_err(sim_coll_time(SIM_BACKEND_NCCL, CORE_COLL_REDUCESCATTER, SIM_ALGO_RING, &t, n),
                  (p - 1) * a + n * f * (b + g)) < 1e-12);
    /* NCCL ring, allreduce and allgather (pipelined, same closed forms). */
    CU_ASSERT(rel_err(sim_coll_time(SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, SIM_ALGO_RING, &t, n),
                  ring_cost(p, a, b, g, n)) < 1e-12);
    CU_ASSERT(rel_err(sim_coll_time(SIM_BACKEND_NCCL, CORE_COLL_ALLGATHER, SIM_ALGO_RING, &t, n),
                  (p - 1) * a + n * f * b) < 1e-12);
  }
  /* One rank or nothing to send: no time. */
  sim_topo one = flat_topo(1, a, b, g);
  CU_ASSERT_EQUAL(sim_coll_time(SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, SIM_ALGO_RING, &one, 1e9), 0.0);
  sim_topo two = flat_topo(2, a, b, g);
  CU_ASSERT_EQUAL(sim_coll_time(SIM_BACKEND_GLOO, CORE_COLL_ALLREDUCE, SIM_ALGO_GLOO_RING, &two, 0), 0.0);
}

/* tuning.cc ring latency: (nsteps - nInter) intra hops + nInter inter hops,
 * nsteps = 2(p-1), nInter = 2(nNodes-1); bandwidth set by the slowest link. */
static void test_coll_time_nccl_ring_two_level(void) {
  sim_topo t;
  memset(&t, 0, sizeof t);
  t.nodes = 3;
  t.per_node = 8;
  t.intra = (sim_link){.alpha_s = 3.4e-6, .beta_s = 1.0 / 240e9};
  t.inter = (sim_link){.alpha_s = 14e-6, .beta_s = 1.0 / 24e9};
  t.rails = 8;
  t.node_Bps = 8 * 24e9;
  int p = 24;
  double n = 1e9;
  double lat = (2.0 * (p - 1) - 2.0 * (3 - 1)) * 3.4e-6 + 2.0 * (3 - 1) * 14e-6;
  double beta = fmax(1.0 / 240e9, 1.0 / (8 * 24e9));
  double want = lat + 2.0 * n * (p - 1) / p * beta;
  CU_ASSERT(rel_err(sim_coll_time(SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, SIM_ALGO_RING, &t, n), want) < 1e-12);
  /* Tree: 2((g-1) a_intra + ceil(lg N) a_inter) + 2n b / 0.92. */
  double tree = 2.0 * (7 * 3.4e-6 + 2 * 14e-6) + 2.0 * n * beta / 0.92;
  CU_ASSERT(rel_err(sim_coll_time(SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, SIM_ALGO_TREE, &t, n), tree) < 1e-12);
  CU_ASSERT_EQUAL(SIM_NCCL_TREE_BW_FACTOR, 0.92);
}

/* nccl-tests bus bandwidth factors: a fit at p ranks divides into per-link
 * figures with the same coefficients (reference table: AllReduce 2(p-1)/p,
 * ReduceScatter and AllGather (p-1)/p, Broadcast 1). */
static void test_coll_coeffs(void) {
  double ca, cb;
  for (int p = 2; p <= 1024; p = p * 3 + 1) {
    CU_ASSERT(sim_coll_coeffs(SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, SIM_ALGO_RING, p, &ca, &cb) == 0);
    CU_ASSERT(ca == 2.0 * (p - 1) && rel_err(cb, 2.0 * (p - 1) / p) < 1e-15);
    CU_ASSERT(sim_coll_coeffs(SIM_BACKEND_NCCL, CORE_COLL_ALLGATHER, SIM_ALGO_RING, p, &ca, &cb) == 0);
    CU_ASSERT(ca == p - 1 && rel_err(cb, (double)(p - 1) / p) < 1e-15);
    CU_ASSERT(sim_coll_coeffs(SIM_BACKEND_NCCL, CORE_COLL_REDUCESCATTER, SIM_ALGO_RING, p, &ca, &cb) == 0);
    CU_ASSERT(ca == p - 1 && rel_err(cb, (double)(p - 1) / p) < 1e-15);
    CU_ASSERT(sim_coll_coeffs(SIM_BACKEND_NCCL, CORE_COLL_BROADCAST, SIM_ALGO_RING, p, &ca, &cb) == 0);
    CU_ASSERT(cb == 1.0);
    /* Gloo's reduce-scatter is an allreduce of the whole input. */
    CU_ASSERT(sim_coll_coeffs(SIM_BACKEND_GLOO, CORE_COLL_REDUCESCATTER, SIM_ALGO_SEGMENTED_RING, p, &ca, &cb) == 0);
    CU_ASSERT(ca == 2.0 * (p - 1) && rel_err(cb, 2.0 * (p - 1) / p) < 1e-15);
  }
  CU_ASSERT(sim_coll_coeffs(SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, SIM_ALGO_RING, 1, &ca, &cb) == CORE_EINVAL);
  CU_ASSERT(sim_coll_coeffs(SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, SIM_ALGO_HIERARCHICAL, 8, &ca, &cb) == CORE_EINVAL);
}

static void test_algo_valid(void) {
  /* NCCL's allreduce algorithms in this model: ring, tree, hierarchical,
   * and the in-network ones (a fabric must offer them, sim/fabric.h). */
  for (int a = 0; a < SIM_N_ALGOS; a++) {
    int innet = a == SIM_ALGO_COLLNET || a == SIM_ALGO_NVLS || a == SIM_ALGO_NVLS_TREE;
    int nccl = a == SIM_ALGO_RING || a == SIM_ALGO_TREE || a == SIM_ALGO_HIERARCHICAL || innet;
    CU_ASSERT_EQUAL(sim_algo_valid(SIM_BACKEND_NCCL, (enum sim_algo)a), nccl);
    int gloo = a != SIM_ALGO_RING && a != SIM_ALGO_TREE && !innet;
    CU_ASSERT_EQUAL(sim_algo_valid(SIM_BACKEND_GLOO, (enum sim_algo)a), gloo);
    enum sim_algo back;
    CU_ASSERT(sim_algo_parse(sim_algo_name((enum sim_algo)a), &back) == 0 && back == (enum sim_algo)a);
  }
  enum sim_algo x;
  CU_ASSERT(sim_algo_parse("rings", &x) == CORE_EINVAL);
}

/* --- step-level properties --------------------------------------------------- */

/* One device: no communication, and the scaling efficiency is the documented
 * one, throughput over that of one device without DDP (predict.h:
 * single_step_s = forward + backward + optimizer). With gradient copies into
 * buckets (gradient_as_bucket_view = false) DDP adds a copy in and a copy out
 * of every gradient, 2 x (read + write) of n bytes at memory bandwidth. */
static void test_single_device(void) {
  sim_scenario *s = load("profile = \"gpu-test.cfg\"; model = \"big-test.cfg\";\n"
                         "training = { batch = 8; };\n"
                         "cluster = { nodes = 1; devices_per_node = 1; };\n"
                         "networks = ( { name = \"n\"; gbps = 1.0; latency_us = 10.0; } );\n"
                         "ddp = { backend = \"nccl\"; gradient_as_bucket_view = %s; };\n"
                         "simulation = { steps = 3; };\n",
      "false");
  CU_ASSERT_FATAL(s != NULL);
  /* Forward and backward FLOPs of 8 samples at the profile's one fp32 rate;
   * SGD reads param and grad and writes param: 12 bytes per parameter. */
  double fwd_bwd = (BIG_FWD_FLOPS + BIG_BWD_FLOPS) * 8 / GPU_FP32_FLOPS;
  double opt = BIG_PARAMS * 12.0 / GPU_MEM_BPS;
  double single = fwd_bwd + opt;
  double copies = 2.0 * (2.0 * BIG_BYTES / GPU_MEM_BPS);
  sim_point_result r;
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  CU_ASSERT_EQUAL(r.comm_s, 0.0);
  /* Nothing to expose: the step's whole-nanosecond times against its
   * unrounded compute differ by rounding alone, which reads 0. */
  CU_ASSERT_EQUAL(r.exposed_comm_s, 0.0);
  CU_ASSERT(rel_err(r.single_step_s, single) < 1e-12);
  /* A few integer-nanosecond roundings on a ~3 ms step. */
  CU_ASSERT(rel_err(r.step_s, single + copies) < 1e-6);
  CU_ASSERT(rel_err(r.scaling_eff, single / (single + copies)) < 1e-6);
  CU_ASSERT(rel_err(r.samples_per_s, 8.0 / (single + copies)) < 1e-6);
  sim_scenario_free(s);

  s = load("profile = \"gpu-test.cfg\"; model = \"big-test.cfg\";\n"
           "training = { batch = 8; };\n"
           "cluster = { nodes = 1; devices_per_node = 1; };\n"
           "networks = ( { name = \"n\"; gbps = 1.0; latency_us = 10.0; } );\n"
           "ddp = { backend = \"nccl\"; gradient_as_bucket_view = %s; };\n",
      "true");
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  CU_ASSERT_EQUAL(r.comm_s, 0.0);
  CU_ASSERT(rel_err(r.step_s, single) < 1e-6);
  CU_ASSERT_EQUAL(r.exposed_comm_s, 0.0);
  CU_ASSERT(fabs(r.scaling_eff - 1.0) < 1e-6);
  sim_scenario_free(s);

  /* The same on every point of a shipped one-GPU study, whose roundings
   * fall either way. */
  CU_ASSERT_FATAL(sim_scenario_load(TU_SRC("scenarios/h200-1gpu.cfg"), &s) == 0);
  long nonzero = 0;
  for (long i = 0; i < sim_scenario_points(s); i++) {
    CU_ASSERT_FATAL(tu_run_point(s, i, &r) == 0);
    nonzero += r.exposed_comm_s != 0.0;
  }
  CU_ASSERT_EQUAL(nonzero, 0);
  sim_scenario_free(s);
}

/* Overlap lets buckets reduce during backward: never slower, and faster when
 * compute and communication are comparable. With overlap off everything
 * communicates after backward, one collective after another, so the exposed
 * communication is all of it. */
static void test_overlap(void) {
  sim_scenario *s = load("profile = \"cpu-test.cfg\"; model = [\"../../scenarios/models/mlp.cfg\", "
                         "\"../../scenarios/models/mlp-small.cfg\"];\n"
                         "training = { batch = 32; };\n"
                         "cluster = { nodes = [1, 2, 4, 8]; devices_per_node = [1, 2]; };\n"
                         "networks = ( { name = \"1GbE\"; gbps = 1.0; latency_us = 30.0; },\n"
                         "             { name = \"100GbE\"; gbps = 100.0; latency_us = 10.0; } );\n"
                         "ddp = { bucket_cap_mb = [1.0, 5.0, 25.0]; overlap = [true, false]; };\n"
                         "simulation = { steps = 2; };\n");
  CU_ASSERT_FATAL(s != NULL);
  /* overlap is the dimension just outside devices_per_node and nodes. */
  long n = sim_scenario_points(s);
  CU_ASSERT_EQUAL(n, 2 * 2 * 3 * 2 * 2 * 4);
  int faster = 0, bad = 0;
  for (long i = 0; i < n; i++) {
    sim_point_result r;
    CU_ASSERT_FATAL(tu_run_point(s, i, &r) == 0);
    if (!r.pt.overlap)
      continue;
    sim_point_result q;
    CU_ASSERT_FATAL(tu_run_point(s, i + 8, &q) == 0); /* same point, overlap = false */
    CU_ASSERT_FATAL(q.pt.overlap == 0 && q.pt.nodes == r.pt.nodes && q.pt.per_node == r.pt.per_node &&
                    q.pt.bucket_cap_mb == r.pt.bucket_cap_mb && q.pt.model == r.pt.model);
    if (r.step_s > q.step_s + 1e-12 || r.exposed_comm_s > q.exposed_comm_s + 1e-12)
      bad++;
    if (r.step_s < q.step_s * 0.99)
      faster++;
    /* Same buckets, same collectives. */
    CU_ASSERT(r.comm_s == q.comm_s && r.n_buckets == q.n_buckets);
    /* Overlap off: the step is compute then every collective in turn. */
    CU_ASSERT(fabs(q.exposed_comm_s - q.comm_s) < 1e-9 * (1 + q.n_buckets));
    CU_ASSERT(fabs(q.step_s - (q.compute_s + q.comm_s)) < 1e-9 * (2 + q.n_buckets));
  }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT(faster >= 10);
  sim_scenario_free(s);
}

/* Profiles that differ from cpu-test.cfg in jitter or interference, written
 * with core_profile_write into a scratch directory. */
static char scratch[4096];

static int profile_variant(
    const char *name, enum core_jitter_dist d, double p0, double p1, double slowdown, char *out, size_t n) {
  core_profile *p;
  if (core_profile_load(TU_DATA("cpu-test.cfg"), &p) != 0)
    return -1;
  p->jitter = d;
  p->jitter_params[0] = p0;
  p->jitter_params[1] = p1;
  p->compute_slowdown = slowdown;
  snprintf(out, n, "%s/%s.cfg", scratch, name);
  int rc = core_profile_write(p, out);
  core_profile_free(p);
  return rc;
}

static int suite_init(void) { return tu_mkdtemp(scratch, sizeof scratch, "predict"); }
static int suite_clean(void) {
  tu_rmdir(scratch);
  return 0;
}

/* Duration (µs) of the first trace span NAME of category CAT, or -1. */
static double span_dur(const char *json, const char *name, const char *cat) {
  char key[256];
  snprintf(key, sizeof key, "\"name\":\"%s\",\"cat\":\"%s\"", name, cat);
  const char *e = strstr(json, key);
  const char *d = e ? strstr(e, "\"dur\":") : NULL;
  return d ? strtod(d + 6, NULL) : -1.0;
}

/* The generic rule (layers of kind "other"): each layer's activation
 * (act_bytes a sample) streams through memory SIM_ELEMENTWISE_FWD_PASSES
 * times in forward and SIM_ELEMENTWISE_BWD_PASSES in backward at the
 * profile's memory bandwidth, a zero-FLOP layer (a normalization)
 * included; a measured model's times already hold it. Those bytes are
 * fp32's, so at a half precision such a layer has no cost rule: the
 * scenario is refused, naming the model, the layer and the key. */
static void test_elementwise_traffic(void) {
  char model[4200], measured[4200], trace_path[4200];
  snprintf(model, sizeof model, "%s/act-test.cfg", scratch);
  snprintf(measured, sizeof measured, "%s/act-measured.cfg", scratch);
  snprintf(trace_path, sizeof trace_path, "%s/act-trace.json", scratch);
  const double A = 3e7, N = 1e7; /* bytes a sample: a GEMM layer's output, a norm's */
  char text[1024];
  snprintf(text, sizeof text,
      "model = { name = \"act-test\"; source = \"test fixture\"; layers = (\n"
      "  { name = \"a\"; params = [60000000]; fwd_flops = 1e8; act_bytes = %.17g; },\n"
      "  { name = \"norm\"; params = [1024, 1024]; fwd_flops = 0.0; act_bytes = %.17g; },\n"
      "  { name = \"b\"; params = [40000000]; fwd_flops = 1e8; } ); };\n",
      A, N);
  CU_ASSERT_FATAL(tu_write_file(model, text) == 0);
  /* The same layers with measured times at batch 8: nothing is added. */
  CU_ASSERT_FATAL(
      tu_write_file(measured,
          "model = { name = \"act-measured\"; source = \"test fixture\"; measured_batch = 8; layers = (\n"
          "  { name = \"a\"; params = [60000000]; fwd_flops = 1e8; fwd_ms = 1.0; bwd_ms = 2.0; act_bytes = 3e7; },\n"
          "  { name = \"norm\"; params = [1024, 1024]; fwd_flops = 0.0; fwd_ms = 0.5; bwd_ms = 0.25; act_bytes = 1e7; "
          "},\n"
          "  { name = \"b\"; params = [40000000]; fwd_flops = 1e8; fwd_ms = 1.0; bwd_ms = 2.0; } ); };\n") == 0);
  const double passes = SIM_ELEMENTWISE_FWD_PASSES + SIM_ELEMENTWISE_BWD_PASSES;
  const double opt = (1e8 + 2048.0) * 12.0 / GPU_MEM_BPS; /* SGD: 12 bytes a parameter */
  const char *half[] = {"bf16", "amp_bf16"};
  for (int k = 0; k < 2; k++) {
    char text2[8192];
    snprintf(text2, sizeof text2,
        "profile = \"gpu-test.cfg\"; model = \"%s\";\n"
        "training = { batch = 8; precision = \"%s\"; };\n"
        "cluster = { nodes = 1; devices_per_node = 1; };\n"
        "networks = ( { name = \"n\"; gbps = 1.0; latency_us = 10.0; } );\n",
        model, half[k]);
    sim_scenario *s = NULL;
    CU_ASSERT(sim_scenario_load_string(text2, TU_DATA("inline-test.cfg"), &s) == CORE_EINVAL);
    CU_ASSERT(strstr(core_err_msg(), "act-test.cfg") && strstr(core_err_msg(), "layer 'a'") &&
              strstr(core_err_msg(), "kind \"other\"") && strstr(core_err_msg(), half[k]));
    sim_scenario_free(s);
  }
  for (int k = 0; k < 1; k++) {
    sim_scenario *s = load("profile = \"gpu-test.cfg\"; model = [\"big-test.cfg\", \"%s\", \"%s\"];\n"
                           "training = { batch = 8; precision = \"%s\"; };\n"
                           "cluster = { nodes = 1; devices_per_node = 1; };\n"
                           "networks = ( { name = \"n\"; gbps = 1.0; latency_us = 10.0; } );\n"
                           "ddp = { backend = \"nccl\"; gradient_as_bucket_view = true; };\n",
        model, measured, k ? "bf16" : "fp32");
    CU_ASSERT_FATAL(s != NULL);
    /* Points: big-test (act_bytes 0: no elementwise term), act-test (the
     * same FLOPs, a norm layer more), act-measured. */
    sim_point_result without, with, meas;
    CU_ASSERT_FATAL(tu_run_point(s, 0, &without) == 0 && tu_run_point(s, 2, &meas) == 0);
    sim_engine *e;
    CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
    sim_point p;
    sim_scenario_point(s, 1, &p);
    core_trace t;
    CU_ASSERT_FATAL(core_trace_open(&t, trace_path) == 0);
    CU_ASSERT_FATAL(sim_predict_point(s, &p, e, &t, 1, &with) == 0);
    CU_ASSERT_FATAL(core_trace_commit(&t) == 0);
    sim_engine_free(e);

    double want = passes * (A + N) * 8 / GPU_MEM_BPS + 2048.0 * 12.0 / GPU_MEM_BPS;
    CU_ASSERT(rel_err(with.single_step_s - without.single_step_s, want) < 1e-9);
    CU_ASSERT(want > 0.2 * without.single_step_s); /* large enough to matter */
    /* Each pass on its own, from the trace: the norm has no FLOPs, so its
     * spans are its elementwise time alone (the trace rounds to 1 ns). */
    char *json = tu_read_file(trace_path, NULL);
    CU_ASSERT_FATAL(json != NULL);
    double nf = span_dur(json, "norm forward", "forward"), nb = span_dur(json, "norm backward", "backward");
    CU_ASSERT(fabs(nf - SIM_ELEMENTWISE_FWD_PASSES * N * 8 / GPU_MEM_BPS * 1e6) < 2e-3);
    CU_ASSERT(fabs(nb - SIM_ELEMENTWISE_BWD_PASSES * N * 8 / GPU_MEM_BPS * 1e6) < 2e-3);
    /* A GEMM layer's forward: its FLOPs at the precision's rate, then its
     * activation's passes. */
    double rate = k ? 100e12 : GPU_FP32_FLOPS; /* gpu-test.cfg's bf16 and fp32 */
    double af = span_dur(json, "a forward", "forward");
    CU_ASSERT(fabs(af - (1e8 * 8 / rate + SIM_ELEMENTWISE_FWD_PASSES * A * 8 / GPU_MEM_BPS) * 1e6) < 2e-3);
    free(json);
    /* Measured: the layers' times and the optimizer, nothing more. */
    CU_ASSERT(rel_err(meas.single_step_s, 6.75e-3 + opt) < 1e-9);
    sim_scenario_free(s);
  }
}

/* Bytes of bucket b in a trace's "allreduce bucket b" span, or -1. */
static double trace_bucket_bytes(const char *json, int b) {
  char key[64];
  snprintf(key, sizeof key, "\"name\":\"allreduce bucket %d\"", b);
  const char *e = strstr(json, key);
  const char *d = e ? strstr(e, "\"bytes\": ") : NULL;
  return d ? strtod(d + 9, NULL) : -1.0;
}

/* ddp.find_unused_parameters: the simulator launches the buckets DDP's
 * constructor made (parameter order, reversed), not the rebuilt ones; the
 * two differ for the small MLP (its 1 MiB first bucket holds the first
 * layer's weight, launched last). */
static void test_find_unused(void) {
  char trace_path[4200];
  snprintf(trace_path, sizeof trace_path, "%s/unused-trace.json", scratch);
  sim_scenario *s = load("profile = \"cpu-test.cfg\"; model = \"../../scenarios/models/mlp-small.cfg\";\n"
                         "training = { batch = 8; }; cluster = { nodes = 2; devices_per_node = 1; };\n"
                         "networks = ( { name = \"1GbE\"; gbps = 1.0; latency_us = 30.0; } );\n"
                         "ddp = { find_unused_parameters = [false, true]; };\n"
                         "simulation = { steps = 1; };\n");
  CU_ASSERT_FATAL(s != NULL);
  const core_model *m = s->models[0];
  double first[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    core_buckets want;
    CU_ASSERT_FATAL(core_bucket_assign(m->tensor_elems, m->n_tensors, m->ready_order, 4, 1 << 20, 25 << 20,
                        k ? CORE_BUCKET_FIND_UNUSED : CORE_BUCKET_REBUILT, &want) == 0);
    sim_engine *e;
    CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
    sim_point p;
    sim_scenario_point(s, k, &p);
    CU_ASSERT_EQUAL(p.find_unused, k);
    sim_point_result r;
    core_trace t;
    CU_ASSERT_FATAL(core_trace_open(&t, trace_path) == 0);
    CU_ASSERT_FATAL(sim_predict_point(s, &p, e, &t, 1, &r) == 0);
    CU_ASSERT_FATAL(core_trace_commit(&t) == 0);
    sim_engine_free(e);
    char *json = tu_read_file(trace_path, NULL);
    CU_ASSERT_FATAL(json != NULL);
    CU_ASSERT_EQUAL(r.n_buckets, want.n_buckets);
    for (int b = 0; b < want.n_buckets; b++)
      CU_ASSERT_EQUAL(trace_bucket_bytes(json, b), (double)want.bucket_elems[b] * 4);
    first[k] = trace_bucket_bytes(json, 0);
    free(json);
    core_bucket_free(&want);
  }
  CU_ASSERT(first[0] > 0 && first[1] > 0 && first[0] != first[1]);
  sim_scenario_free(s);
}

#define JITTER_SCENARIO                                                                                                \
  "profile = \"%s\"; model = \"../../scenarios/models/%s.cfg\";\n"                                                     \
  "training = { batch = 32; };\n"                                                                                      \
  "cluster = { nodes = %s; devices_per_node = 1; };\n"                                                                 \
  "networks = ( { name = \"10GbE\"; gbps = 10.0; latency_us = 20.0; } );\n"                                            \
  "ddp = { overlap = %s; gradient_as_bucket_view = true; bucket_cap_mb = 5.0; };\n"                                    \
  "simulation = { steps = %d; seed = %d; ranks = \"%s\"; };\n"

/* Without jitter every rank is the same, so one representative rank and
 * every rank simulated give the same steps. */
static void test_representative_equals_every_rank(void) {
  char prof[4200];
  CU_ASSERT_FATAL(profile_variant("slow2", CORE_JITTER_NONE, 0, 0, 2.0, prof, sizeof prof) == 0);
  const char *profiles[] = {TU_DATA("cpu-test.cfg"), prof};
  for (int k = 0; k < 2; k++) {
    for (int ov = 0; ov < 2; ov++) {
      sim_scenario *a =
          load(JITTER_SCENARIO, profiles[k], "mlp", "[1, 2, 3, 8]", ov ? "true" : "false", 2, 1, "representative");
      sim_scenario *b = load(JITTER_SCENARIO, profiles[k], "mlp", "[1, 2, 3, 8]", ov ? "true" : "false", 2, 1, "every");
      CU_ASSERT_FATAL(a && b);
      CU_ASSERT_FATAL(a->every_rank == 0 && b->every_rank == 1);
      for (long i = 0; i < sim_scenario_points(a); i++) {
        sim_point_result ra, rb;
        CU_ASSERT_FATAL(tu_run_point(a, i, &ra) == 0);
        CU_ASSERT_FATAL(tu_run_point(b, i, &rb) == 0);
        /* The same events at the same nanoseconds; compute_s of every rank
         * is an average over ranks, equal up to the rounding of the sum. */
        CU_ASSERT_EQUAL(ra.step_s, rb.step_s);
        CU_ASSERT_EQUAL(ra.comm_s, rb.comm_s);
        CU_ASSERT(rel_err(rb.compute_s, ra.compute_s) < 1e-13);
        CU_ASSERT(fabs(rb.exposed_comm_s - ra.exposed_comm_s) < 1e-13 * ra.step_s);
      }
      sim_scenario_free(a);
      sim_scenario_free(b);
    }
  }
}

/* Mean step time over `steps` steps, and its standard error. */
static void mean_step(const char *prof, const char *model, int world, int steps, int seed, const char *mode,
    double *mean, double *se, double *comm) {
  char nodes[32];
  snprintf(nodes, sizeof nodes, "%d", world);
  sim_scenario *s = load(JITTER_SCENARIO, prof, model, nodes, "false", steps, seed, mode);
  *mean = *se = NAN;
  CU_ASSERT_FATAL(s != NULL);
  sim_point_result r;
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  *mean = r.step_s;
  *se = r.step_sd_s / sqrt((double)steps);
  *comm = r.comm_s;
  sim_scenario_free(s);
}

/* Stragglers: with overlap off and gradients as bucket views, a rank's step
 * is (forward + backward + optimizer) x its multiplier, then the
 * collectives, and the step waits for the slowest rank:
 *   E[step] = C x E[max of W multipliers] + T,
 * C and T from the same scenario without jitter. The expected maxima are
 * those of the reference: normal mu + sigma e_W (e_8 = 1.424, e_64 = 2.344),
 * shifted exponential a + H_W / lambda. Draws are normalized to mean 1.
 * The mean of `steps` steps is within 5 standard errors of its expectation
 * with probability 1 - 6e-7; the table's 3-decimal e_W adds 5e-4 sigma. */
static void check_straggler_mean(const char *prof, int world, double e_max, int steps, const char *mode) {
  double m0, se0, T0, m, se, T;
  mean_step(TU_DATA("cpu-test.cfg"), "mlp-small", world, 2, 1, mode, &m0, &se0, &T0);
  mean_step(prof, "mlp-small", world, steps, 11, mode, &m, &se, &T);
  double C = m0 - T0;
  double want = C * e_max + T0;
  double tol = 5.0 * se + C * 1e-3 * (e_max - 1.0) + 1e-8;
  if (!(fabs(m - want) < tol) || getenv("DDPSIM_TEST_VERBOSE"))
    fprintf(stderr, "\n%s, W = %d: mean step %.9g, expected %.9g (tol %.3g; C %.6g T %.6g se %.3g)\n", mode, world, m,
        want, tol, C, T0, se);
  CU_ASSERT(fabs(m - want) < tol);
  CU_ASSERT(T == T0);
  /* Not vacuous: the straggler effect is many tolerances wide. */
  CU_ASSERT(m - m0 > 10 * tol);
}

static void test_stragglers_normal(void) {
  char prof[4200];
  CU_ASSERT_FATAL(profile_variant("normal", CORE_JITTER_NORMAL, 1.0, 0.05, 1.0, prof, sizeof prof) == 0);
  check_straggler_mean(prof, 8, 1.0 + 0.05 * 1.424, 50000, "representative");
  check_straggler_mean(prof, 64, 1.0 + 0.05 * 2.344, 50000, "representative");
  check_straggler_mean(prof, 512, 1.0 + 0.05 * 3.044, 50000, "representative");
  check_straggler_mean(prof, 8, 1.0 + 0.05 * 1.424, 20000, "every");
  check_straggler_mean(prof, 64, 1.0 + 0.05 * 2.344, 3000, "every");
}

static void test_stragglers_shifted_exponential(void) {
  char prof[4200];
  /* shift 0.8, mean excess 0.2: mean 1; E[max of W] = 0.8 + 0.2 H_W. */
  CU_ASSERT_FATAL(profile_variant("sexp", CORE_JITTER_SHIFTED_EXP, 0.8, 0.2, 1.0, prof, sizeof prof) == 0);
  double H8 = 0, H100 = 0;
  for (int i = 1; i <= 8; i++)
    H8 += 1.0 / i;
  for (int i = 1; i <= 100; i++)
    H100 += 1.0 / i;
  check_straggler_mean(prof, 8, 0.8 + 0.2 * H8, 50000, "representative");
  check_straggler_mean(prof, 100, 0.8 + 0.2 * H100, 50000, "representative");
  check_straggler_mean(prof, 8, 0.8 + 0.2 * H8, 20000, "every");
}

/* Lognormal jitter: the representative rank (max of W draws sampled as
 * F^-1(U^(1/W))) and W simulated ranks must agree in mean step time. The two
 * runs are independent, so their difference has standard error
 * sqrt(se1^2 + se2^2); 5 of them bound a false failure at 6e-7. */
static void test_representative_vs_every_lognormal(void) {
  char prof[4200];
  CU_ASSERT_FATAL(profile_variant("lognormal", CORE_JITTER_LOGNORMAL, 0.0, 0.1, 1.0, prof, sizeof prof) == 0);
  const int worlds[] = {2, 8, 32};
  for (int k = 0; k < 3; k++) {
    double m1, se1, T1, m2, se2, T2, m0, se0, T0;
    mean_step(prof, "mlp", worlds[k], 20000, 3, "representative", &m1, &se1, &T1);
    mean_step(prof, "mlp", worlds[k], 10000, 4, "every", &m2, &se2, &T2);
    mean_step(TU_DATA("cpu-test.cfg"), "mlp", worlds[k], 2, 1, "representative", &m0, &se0, &T0);
    double tol = 5.0 * sqrt(se1 * se1 + se2 * se2);
    if (!(fabs(m1 - m2) < tol))
      fprintf(stderr, "\nW = %d: representative %.9g every %.9g tol %.3g\n", worlds[k], m1, m2, tol);
    CU_ASSERT(fabs(m1 - m2) < tol);
    CU_ASSERT(se1 > 0 && se2 > 0);
    /* Both are slowed by stragglers well beyond the tolerance. */
    CU_ASSERT(m1 - m0 > 4 * tol && m2 - m0 > 4 * tol);
  }
}

/* Interference: compute that runs while a collective is in flight is slowed.
 * With overlap off no compute runs during a collective (backward is done,
 * the optimizer waits for the last one), so nothing changes. With overlap
 * on, backward that overlaps a collective slows down; it never makes the
 * step faster, and it stays at most the non-overlapped step (collectives are
 * never delayed by it: end = W + sum(T) - A/s <= W + sum(T), A the time
 * backward overlapped communication). Whether it makes the step slower
 * depends on what is critical: on a fast network the collectives are short
 * and backward is the critical path, so slowing it shows; on a slow network
 * the communication stream is busy from the first bucket to the end and
 * compute slowed under it changes nothing. */
#define SLOWDOWN_SCENARIO                                                                                              \
  "profile = \"%s\"; model = \"../../scenarios/models/mlp.cfg\";\n"                                                    \
  "training = { batch = 32; };\n"                                                                                      \
  "cluster = { nodes = [2, 4, 8]; devices_per_node = 1; };\n"                                                          \
  "networks = ( { name = \"1GbE\"; gbps = 1.0; latency_us = 30.0; },\n"                                                \
  "             { name = \"100GbE\"; gbps = 100.0; latency_us = 10.0; } );\n"                                          \
  "ddp = { overlap = [true, false]; bucket_cap_mb = 5.0; };\n"                                                         \
  "simulation = { steps = 2; };\n"

static void test_compute_slowdown(void) {
  char prof[4200];
  CU_ASSERT_FATAL(profile_variant("slow", CORE_JITTER_NONE, 0, 0, 2.0, prof, sizeof prof) == 0);
  sim_scenario *base = load(SLOWDOWN_SCENARIO, TU_DATA("cpu-test.cfg"));
  sim_scenario *slow = load(SLOWDOWN_SCENARIO, prof);
  CU_ASSERT_FATAL(base && slow);
  CU_ASSERT_EQUAL(slow->profile->compute_slowdown, 2.0);
  int slower_fast_net = 0;
  for (long i = 0; i < sim_scenario_points(base); i++) {
    sim_point_result rb, rs;
    CU_ASSERT_FATAL(tu_run_point(base, i, &rb) == 0);
    CU_ASSERT_FATAL(tu_run_point(slow, i, &rs) == 0);
    if (getenv("DDPSIM_TEST_VERBOSE"))
      fprintf(stderr, "\n%s n=%d overlap=%d: base %.9g slow %.9g", rb.pt.network->name, rb.pt.nodes, rb.pt.overlap,
          rb.step_s, rs.step_s);
    if (rb.pt.overlap) {
      sim_point_result off;
      CU_ASSERT_FATAL(tu_run_point(slow, i + 3, &off) == 0);
      CU_ASSERT(!off.pt.overlap && off.pt.nodes == rs.pt.nodes);
      CU_ASSERT(rs.step_s >= rb.step_s - 1e-9);
      CU_ASSERT(rs.step_s <= off.step_s + 1e-9);
      if (!strcmp(rb.pt.network->name, "100GbE"))
        slower_fast_net += rs.step_s > rb.step_s * 1.001;
      else /* communication-bound */
        CU_ASSERT(fabs(rs.step_s - rb.step_s) < 1e-9);
    } else {
      CU_ASSERT_EQUAL(rs.step_s, rb.step_s);
      CU_ASSERT_EQUAL(rs.compute_s, rb.compute_s);
    }
  }
  CU_ASSERT_EQUAL(slower_fast_net, 3);
  sim_scenario_free(base);
  sim_scenario_free(slow);
}

/* With device.update_GBps the copy out of the buckets and the optimizer's
 * update (8 + 20 bytes a parameter for SGD with momentum) run at that rate,
 * and nothing else changes; without it, at memory_GBps. */
static void test_update_rate(void) {
  core_profile *p;
  char prof[4200];
  CU_ASSERT_FATAL(core_profile_load(TU_DATA("cpu-test.cfg"), &p) == 0);
  CU_ASSERT_EQUAL(p->update_GBps, 0.0);
  double mem = p->memory_GBps, upd = 4.0 * mem;
  p->update_GBps = upd;
  snprintf(prof, sizeof prof, "%s/update.cfg", scratch);
  CU_ASSERT_FATAL(core_profile_write(p, prof) == 0);
  core_profile_free(p);
#define UPDATE_SCENARIO                                                                                                \
  "profile = \"%s\"; model = \"../../scenarios/models/mlp.cfg\";\n"                                                    \
  "training = { batch = 32; optimizer = \"sgd_momentum\"; };\n"                                                        \
  "cluster = { nodes = [1, 2]; devices_per_node = 1; };\n"                                                             \
  "networks = ( { name = \"1GbE\"; gbps = 1.0; latency_us = 30.0; } );\n"                                              \
  "ddp = { overlap = [true, false]; bucket_cap_mb = 5.0; };\n"                                                         \
  "simulation = { steps = 2; };\n"
  sim_scenario *base = load(UPDATE_SCENARIO, TU_DATA("cpu-test.cfg"));
  sim_scenario *fast = load(UPDATE_SCENARIO, prof);
  CU_ASSERT_FATAL(base && fast);
  CU_ASSERT_EQUAL(fast->profile->update_GBps, upd);
  for (long i = 0; i < sim_scenario_points(base); i++) {
    sim_point_result rb, rf;
    CU_ASSERT_FATAL(tu_run_point(base, i, &rb) == 0);
    CU_ASSERT_FATAL(tu_run_point(fast, i, &rf) == 0);
    /* Both run after the last allreduce: the step shortens by as much. */
    double want = (double)rb.pt.model->n_params * 28.0 * (1.0 / mem - 1.0 / upd) / 1e9;
    CU_ASSERT(fabs((rb.compute_s - rf.compute_s) - want) < 1e-8);
    CU_ASSERT(fabs((rb.step_s - rf.step_s) - want) < 1e-8);
    CU_ASSERT(fabs(rb.comm_s - rf.comm_s) < 1e-9);
  }
  sim_scenario_free(base);
  sim_scenario_free(fast);
}

/* The interference factors at k times the calibrated rate (step.h). */
static void test_scale_interference(void) {
  double sc, sm;
  /* compute_sd, comm_sd, CPUs the communication took, CPUs a rank has. */
  const double cases[][4] = {{1.77, 1.22, 0.2, 0.5}, {2.5, 1.1, 0.9, 1.0}, {1.42, 1.0, 0.1, 2.0}, {1.2, 1.3, 3.0, 2.0}};
  for (int i = 0; i < 4; i++) {
    const double *c = cases[i];
    sim_step_scale_interference(c[0], c[1], 1.0, c[2], c[3], &sc, &sm);
    CU_ASSERT(rel_err(sc, c[0]) < 1e-12);
    CU_ASSERT(rel_err(sm, c[1]) < 1e-12);
    /* Nothing recorded to scale by: the calibrated factors at any rate. */
    sim_step_scale_interference(c[0], c[1], 7.0, 0.0, c[3], &sc, &sm);
    CU_ASSERT(sc == c[0] && sm == c[1]);
    /* Never lower at a higher rate, never below 1. */
    double last_c = 1.0, last_m = 1.0;
    for (double k = 0.0; k < 50; k = k * 1.2 + 0.01) {
      sim_step_scale_interference(c[0], c[1], k, c[2], c[3], &sc, &sm);
      CU_ASSERT(sc >= last_c - 1e-12 && sm >= last_m - 1e-12 && sc >= 1.0 && sm >= 1.0);
      last_c = sc;
      last_m = sm;
    }
  }
  /* Half a CPU per rank (a quota), the communication took 0.2 of it: compute
   * kept 0.3, 1.67 x slower from CPU time alone. At twice the rate the
   * communication asks for 0.4, gets its fair 0.25, compute 0.25 (2 x): the
   * factors scale by 2 / 1.67 and 0.4 / 0.25. At half the rate it gets its
   * 0.1, compute 0.4 (1.25 x), and the collective is not short of CPU. */
  sim_step_scale_interference(1.77, 1.22, 2.0, 0.2, 0.5, &sc, &sm);
  CU_ASSERT(rel_err(sc, 1.77 * 2.0 / (0.5 / 0.3)) < 1e-12);
  CU_ASSERT(rel_err(sm, 1.22 * 0.4 / 0.25) < 1e-12);
  sim_step_scale_interference(1.77, 1.22, 0.5, 0.2, 0.5, &sc, &sm);
  CU_ASSERT(rel_err(sc, 1.77 * 1.25 / (0.5 / 0.3)) < 1e-12);
  CU_ASSERT(rel_err(sm, 1.22) < 1e-12);
  /* Two CPUs a rank, 0.1 taken: room for compute and up to a CPU of
   * communication, so the factors hold up to 10 x the rate; at 20 x the
   * communication asks for 2, compute keeps its CPU and the collective
   * gets the other: 2 x slower. */
  sim_step_scale_interference(1.42, 1.05, 9.5, 0.1, 2.0, &sc, &sm);
  CU_ASSERT(sc == 1.42 && sm == 1.05);
  sim_step_scale_interference(1.42, 1.05, 20.0, 0.1, 2.0, &sc, &sm);
  CU_ASSERT(rel_err(sc, 1.42) < 1e-12);
  CU_ASSERT(rel_err(sm, 1.05 * 2.0) < 1e-12);
}

/* base with other interference factors and, where busbw > 0, the rate,
 * CPUs taken and CPUs a rank has, where they were measured. */
static int interference_variant(const char *base, const char *name, double csd, double msd, double busbw,
    double comm_cpus, double rank_cpus, char *out, size_t n) {
  core_profile *p;
  if (core_profile_load(base, &p) != 0)
    return -1;
  p->compute_slowdown = csd;
  p->comm_slowdown = msd;
  p->interf_busbw_GBps = busbw;
  p->interf_comm_cpus = comm_cpus;
  p->interf_rank_cpus = rank_cpus;
  snprintf(out, n, "%s/%s.cfg", scratch, name);
  int rc = core_profile_write(p, out);
  core_profile_free(p);
  return rc;
}

/* Where the profile records the rate its factors were measured at, a CPU
 * profile's factors follow each bucket's CPU demand at its own rate. Half a
 * CPU per rank, 0.2 of it taken: measured at a crawl, every bucket asks for
 * more than its share and the step is at least as slow as with fixed
 * factors, slower where backward overlaps communication; measured at an
 * unreachably high rate, the buckets take no CPU and the steps lie between
 * no interference and fixed factors. With CPUs to spare (8 a rank) the
 * factors hold. A GPU profile keeps its factors at every rate. */
static void test_interference_follows_rate(void) {
  char fixed[4200], fast[4200], crawl[4200], roomy[4200];
  const char *cpu = TU_DATA("cpu-test.cfg");
  CU_ASSERT_FATAL(interference_variant(cpu, "if-fixed", 1.77, 1.22, 0, 0, 0, fixed, sizeof fixed) == 0);
  CU_ASSERT_FATAL(interference_variant(cpu, "if-fast", 1.77, 1.22, 1e6, 0.2, 0.5, fast, sizeof fast) == 0);
  CU_ASSERT_FATAL(interference_variant(cpu, "if-crawl", 1.77, 1.22, 1e-6, 0.2, 0.5, crawl, sizeof crawl) == 0);
  CU_ASSERT_FATAL(interference_variant(cpu, "if-roomy", 1.77, 1.22, 1e6, 0.2, 8.0, roomy, sizeof roomy) == 0);
  sim_scenario *none = load(SLOWDOWN_SCENARIO, cpu);
  sim_scenario *f = load(SLOWDOWN_SCENARIO, fixed), *h = load(SLOWDOWN_SCENARIO, fast),
               *c = load(SLOWDOWN_SCENARIO, crawl), *m = load(SLOWDOWN_SCENARIO, roomy);
  CU_ASSERT_FATAL(none && f && h && c && m);
  CU_ASSERT_EQUAL(h->profile->interf_busbw_GBps, 1e6);
  CU_ASSERT_EQUAL(h->profile->interf_comm_cpus, 0.2);
  CU_ASSERT_EQUAL(h->profile->interf_rank_cpus, 0.5);
  int slower = 0, faster = 0, slowed_by_fixed = 0;
  for (long i = 0; i < sim_scenario_points(f); i++) {
    sim_point_result rn, rf, rh, rc, rm;
    CU_ASSERT_FATAL(tu_run_point(none, i, &rn) == 0 && tu_run_point(f, i, &rf) == 0);
    CU_ASSERT_FATAL(tu_run_point(h, i, &rh) == 0 && tu_run_point(c, i, &rc) == 0 && tu_run_point(m, i, &rm) == 0);
    CU_ASSERT(rc.step_s >= rf.step_s - 1e-9);
    CU_ASSERT(rh.step_s <= rf.step_s + 1e-9 && rh.step_s >= rn.step_s - 1e-9);
    CU_ASSERT_EQUAL(rm.step_s, rf.step_s);
    CU_ASSERT(rc.comm_s == rf.comm_s);
    if (!rf.pt.overlap) { /* nothing runs beside anything */
      CU_ASSERT_EQUAL(rc.step_s, rn.step_s);
      CU_ASSERT_EQUAL(rh.step_s, rn.step_s);
    }
    slower += rc.step_s > rf.step_s * 1.001;
    faster += rh.step_s < rf.step_s * 0.999;
    slowed_by_fixed += rf.step_s > rn.step_s * 1.001;
  }
  CU_ASSERT(slowed_by_fixed > 0); /* else the comparisons above say nothing */
  CU_ASSERT(slower > 0);
  CU_ASSERT(faster > 0);
  sim_scenario_free(none);
  sim_scenario_free(f);
  sim_scenario_free(h);
  sim_scenario_free(c);
  sim_scenario_free(m);

  char gfixed[4200], gcrawl[4200];
  const char *gpu = TU_DATA("gpu-test.cfg");
  CU_ASSERT_FATAL(interference_variant(gpu, "if-gfixed", 1.3, 1.2, 0, 0, 0, gfixed, sizeof gfixed) == 0);
  CU_ASSERT_FATAL(interference_variant(gpu, "if-gcrawl", 1.3, 1.2, 1e-6, 0.2, 0.5, gcrawl, sizeof gcrawl) == 0);
  f = load(SLOWDOWN_SCENARIO, gfixed);
  c = load(SLOWDOWN_SCENARIO, gcrawl);
  CU_ASSERT_FATAL(f && c);
  for (long i = 0; i < sim_scenario_points(f); i++) {
    sim_point_result rf, rc;
    CU_ASSERT_FATAL(tu_run_point(f, i, &rf) == 0 && tu_run_point(c, i, &rc) == 0);
    CU_ASSERT_EQUAL(rc.step_s, rf.step_s);
  }
  sim_scenario_free(f);
  sim_scenario_free(c);
}

/* A bucket whose allreduce outlasts the timeout fails the point: status
 * "timeout" and a note naming the setting (ddp.timeout_s) and a value that
 * would avoid it. Defaults: Gloo 30 s, NCCL 10 min (reference; torch's
 * default_pg_nccl_timeout). */
#define TIMEOUT_SCENARIO                                                                                               \
  "profile = \"gpu-test.cfg\"; model = \"big-test.cfg\";\n"                                                            \
  "training = { batch = 8; };\n"                                                                                       \
  "cluster = { nodes = 2; devices_per_node = 1; };\n"                                                                  \
  "networks = ( { name = \"slow\"; gbps = 0.1; latency_us = 10.0; efficiency = 1.0; } );\n"                            \
  "ddp = { backend = \"%s\"; " ONE_BUCKET_DDP " %s };\n"                                                               \
  "simulation = { steps = 1; };\n"

static void test_timeout(void) {
  /* 400 MB over 0.1 Gb/s between 2 nodes: 2 x 4e8 x 1/2 / 12.5e6 = 32 s. */
  CU_ASSERT_EQUAL(SIM_GLOO_TIMEOUT_S, 30.0);
  CU_ASSERT_EQUAL(SIM_NCCL_TIMEOUT_S, 600.0);
  sim_point_result r;

  sim_scenario *s = load(TIMEOUT_SCENARIO, "gloo", "");
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL(sim_scenario_timeout(s, SIM_BACKEND_GLOO), 30.0);
  CU_ASSERT_EQUAL(sim_scenario_timeout(s, SIM_BACKEND_NCCL), 600.0);
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  CU_ASSERT(r.comm_s > 30.0 && r.comm_s < 600.0);
  CU_ASSERT_STRING_EQUAL(r.status, "timeout");
  CU_ASSERT(strstr(r.note, "ddp.timeout_s") != NULL);
  CU_ASSERT(strstr(r.note, "bucket_cap_mb") != NULL);
  const char *above = strstr(r.note, "above ");
  CU_ASSERT_FATAL(above != NULL);
  double suggested = atof(above + 6);
  CU_ASSERT(suggested > r.comm_s);
  sim_scenario_free(s);

  /* The suggested setting avoids it. */
  char opt[64];
  snprintf(opt, sizeof opt, "timeout_s = %.1f;", suggested);
  s = load(TIMEOUT_SCENARIO, "gloo", opt);
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  CU_ASSERT_STRING_EQUAL(r.status, "ok");
  CU_ASSERT_STRING_EQUAL(r.note, "");
  sim_scenario_free(s);

  /* NCCL's 10 minutes are enough for 32 s... */
  s = load(TIMEOUT_SCENARIO, "nccl", "");
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  CU_ASSERT_STRING_EQUAL(r.status, "ok");
  sim_scenario_free(s);
  /* ...but not for a scenario timeout of 5 s. */
  s = load(TIMEOUT_SCENARIO, "nccl", "timeout_s = 5.0;");
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  CU_ASSERT_STRING_EQUAL(r.status, "timeout");
  CU_ASSERT(strstr(r.note, "ddp.timeout_s") != NULL);
  CU_ASSERT(strstr(r.note, "nccl") != NULL);
  sim_scenario_free(s);
  /* A timeout under a second is printed as set, not rounded to 0 s. */
  s = load(TIMEOUT_SCENARIO, "nccl", "timeout_s = 0.25;");
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  CU_ASSERT(strstr(r.note, "past the nccl timeout of 0.25 s") != NULL);
  sim_scenario_free(s);
}

/* The two-layer step of the cases below: forward 1 ms and 2 ms, backward
 * 3 ms and 4 ms; bucket 0 holds layer 1's gradients, bucket 1 layer 0's;
 * collectives comm[]; optimizer 2 ms; overlap on, no slowdown, 4 ranks. */
static sim_step_cfg two_layer_step(const double comm[2], int steps) {
  static const double fwd[2] = {1e-3, 2e-3}, bwd[2] = {3e-3, 4e-3};
  static const int ready[2] = {1, 0};
  return (sim_step_cfg){.n_layers = 2,
      .fwd_s = fwd,
      .bwd_s = bwd,
      .n_buckets = 2,
      .bucket_ready_layer = ready,
      .bucket_comm_s = comm,
      .optimizer_s = 2e-3,
      .overlap = 1,
      .compute_slowdown = 1.0,
      .comm_slowdown = 1.0,
      .world = 4,
      .steps = steps,
      .seed = 1};
}

/* sim_step_run directly: a hand-made two-layer step with known times. */
static void test_step_by_hand(void) {
  /* Layers 0, 1: forward 1 ms and 2 ms, backward 3 ms and 4 ms. Bucket 0
   * holds layer 1's gradients (ready after its backward at 3 + 4 = 7 ms),
   * bucket 1 layer 0's (ready at 10 ms). Collectives 5 ms and 1 ms,
   * optimizer 2 ms.
   * Overlap on: bucket 0 reduces 7..12 during layer 0's backward (7..10);
   * bucket 1 is ready at 10, starts at 12, ends 13; optimizer 13..15.
   * Overlap off: both start after backward: 10..15, 15..16; then 16..18. */
  const double comm[2] = {5e-3, 1e-3};
  sim_step_cfg c = two_layer_step(comm, 3);
  sim_engine *e;
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  sim_step_result r;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 15e-3) < 1e-12);
  CU_ASSERT(fabs(r.compute_s - 12e-3) < 1e-12);
  CU_ASSERT(fabs(r.comm_s - 6e-3) < 1e-12);
  CU_ASSERT(fabs(r.exposed_comm_s - 3e-3) < 1e-12);
  CU_ASSERT_EQUAL(r.step_sd_s, 0.0);
  c.overlap = 0;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 18e-3) < 1e-12);
  CU_ASSERT(fabs(r.exposed_comm_s - 6e-3) < 1e-12);
  /* Interference, slowdown 2, overlap on: layer 0's backward starts at 7
   * with 3 ms of work, runs at half speed while bucket 0 reduces (7..12):
   * 2.5 ms done by 12, 0.5 ms left at full speed, done at 12.5. Bucket 1
   * runs 12.5..13.5, optimizer 13.5..15.5. */
  c.overlap = 1;
  c.compute_slowdown = 2.0;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 15.5e-3) < 1e-12);
  /* Communication slowed 2x while a rank computes: bucket 0 does 1.5 ms of
   * its 5 ms during layer 0's backward (7..10), the other 3.5 ms at full
   * speed, done at 13.5; bucket 1 13.5..14.5, optimizer 14.5..16.5. */
  c.compute_slowdown = 1.0;
  c.comm_slowdown = 2.0;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 16.5e-3) < 1e-12);
  /* Both: layer 0's 3 ms backward and bucket 0 each run at half speed from
   * 7; the backward ends at 13 with bucket 0 3 ms in, whose last 2 ms end
   * at 15; bucket 1 15..16, optimizer 16..18. */
  c.compute_slowdown = 2.0;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 18e-3) < 1e-12);
  /* Overlap off: nothing runs beside anything, so no slowdown applies. */
  c.overlap = 0;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 18e-3) < 1e-12);
  c.overlap = 1;
  /* CPU work on the communication stream: half of each bucket's time, with
   * cpu_slowdown 3 and the network factors 1, blends to 0.5 x 1 + 0.5 x 3
   * = 2 for bucket 0 and the backward beside it: the case above, 18 ms. */
  const double half[2] = {0.5, 0.5}, none[2] = {0.0, 0.0}, bad[2] = {0.5, 1.5};
  c.compute_slowdown = 1.0;
  c.comm_slowdown = 1.0;
  c.cpu_slowdown = 3.0;
  c.bucket_cpu_frac = half;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 18e-3) < 1e-12);
  /* No CPU share: no slowdown at all, the 15 ms of the first case. */
  c.bucket_cpu_frac = none;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 15e-3) < 1e-12);
  c.bucket_cpu_frac = bad;
  CU_ASSERT(sim_step_run(&c, e, &r, NULL) == CORE_EINVAL);
  c.bucket_cpu_frac = half;
  c.cpu_slowdown = 0.5;
  CU_ASSERT(sim_step_run(&c, e, &r, NULL) == CORE_EINVAL);
  c.cpu_slowdown = 1.0;
  c.bucket_cpu_frac = NULL;
  /* Bad configurations are refused. */
  c.compute_slowdown = 0.5;
  CU_ASSERT(sim_step_run(&c, e, &r, NULL) == CORE_EINVAL);
  c.compute_slowdown = 1.0;
  c.comm_slowdown = 0.9;
  CU_ASSERT(sim_step_run(&c, e, &r, NULL) == CORE_EINVAL);
  c.comm_slowdown = 1.0;
  c.steps = 0;
  CU_ASSERT(sim_step_run(&c, e, &r, NULL) == CORE_EINVAL);
  sim_engine_free(e);
}

/* Random waits (step.h, random_idle) on the two-layer step by hand. Bucket 0
 * takes 1 ms of work and a wait W of mean 1 ms, from 7 ms: it ends at 8 + W,
 * and bucket 1, ready at 10, starts at max(10, 8 + W) and takes 1 ms; the
 * optimizer 2 more. At the mean wait that is 13 ms every step. With W
 * exponential, E[max(10, 8 + W)] = 10 + E[(W - 2)+] = 10 + e^-2 ms: a long
 * wait costs what a short one does not give back. */
static void test_step_random_waits(void) {
  const double comm[2] = {2e-3, 1e-3}, idle[2] = {0.5, 0.0}, cpu[2] = {0.25, 0.0};
  sim_step_cfg c = two_layer_step(comm, 1000);
  c.bucket_idle_frac = idle;
  sim_engine *e;
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  sim_step_result r, r2;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 13e-3) < 1e-12);
  CU_ASSERT_EQUAL(r.step_sd_s, 0.0);
  c.random_idle = 1;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  /* The strata's means: the collectives' mean is the given 3 ms exactly;
   * the step's is the closed form's but for the stratum that straddles
   * W = 2. */
  CU_ASSERT(fabs(r.comm_s - 3e-3) < 1e-12);
  CU_ASSERT(fabs(r.step_s - (13e-3 + exp(-2.0) * 1e-3)) < 2e-6);
  CU_ASSERT(r.step_sd_s > 0.5e-3);
  CU_ASSERT(r.step_min_s >= 13e-3 - 1e-12);
  /* The same seed, the same bytes; another seed only orders the steps
   * differently, and without jitter the means do not change. */
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r2, NULL) == 0);
  CU_ASSERT(memcmp(&r, &r2, sizeof r) == 0);
  c.seed = 2;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r2, NULL) == 0);
  CU_ASSERT(fabs(r2.step_s - r.step_s) < 1e-12);
  /* Where nothing waits for the collective, a wait is a wait: bucket 0
   * alone on the critical path (overlap off: 10 + 1 + W, then bucket 1 and
   * the optimizer, 14 + W) averages the step of the mean wait, 15 ms. */
  c.overlap = 0;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 15e-3) < 1e-9); /* to the engine's nanosecond */
  /* The CPU work's time does not change with the wait: with a quarter of
   * the bucket's mean time CPU work at cpu_slowdown 1, the same 15 ms. */
  c.bucket_cpu_frac = cpu;
  c.cpu_slowdown = 1.0;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 15e-3) < 1e-9);
  /* One step: its one stratum is the whole distribution, the mean wait. */
  c.overlap = 1;
  c.steps = 1;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &r, NULL) == 0);
  CU_ASSERT(fabs(r.step_s - 13e-3) < 1e-12);
  sim_engine_free(e);
}

/* Jitter helpers against closed forms: means and upper quantiles. */
static void test_jitter_functions(void) {
  const double ln[2] = {0.1, 0.3};
  CU_ASSERT(rel_err(sim_jitter_mean(CORE_JITTER_LOGNORMAL, ln), exp(0.1 + 0.045)) < 1e-15);
  const double nm[2] = {2.0, 0.5};
  CU_ASSERT_EQUAL(sim_jitter_mean(CORE_JITTER_NORMAL, nm), 2.0);
  const double se[2] = {0.5, 0.25};
  CU_ASSERT_EQUAL(sim_jitter_mean(CORE_JITTER_SHIFTED_EXP, se), 0.75);
  CU_ASSERT_EQUAL(sim_jitter_mean(CORE_JITTER_NONE, se), 1.0);
  /* Upper quantiles: exponential a - m ln q; normal median at q = 1/2;
   * lognormal median exp(zeta). */
  CU_ASSERT(rel_err(sim_jitter_upper_quantile(CORE_JITTER_SHIFTED_EXP, se, 0.1), 0.5 - 0.25 * log(0.1)) < 1e-12);
  CU_ASSERT(rel_err(sim_jitter_upper_quantile(CORE_JITTER_NORMAL, nm, 0.5), 2.0) < 1e-12);
  CU_ASSERT(rel_err(sim_jitter_upper_quantile(CORE_JITTER_NORMAL, nm, 0.158655253931457), 2.5) < 1e-9);
  CU_ASSERT(rel_err(sim_jitter_upper_quantile(CORE_JITTER_LOGNORMAL, ln, 0.5), exp(0.1)) < 1e-12);
}

/* first_bucket_mb = "cap": the first bucket takes each point's cap, as a
 * PyTorch job that passes bucket_cap_mb gets it, so a sweep of the cap
 * predicts what each cap given on its own (with the first bucket set to it)
 * does. */
static void test_first_bucket_cap(void) {
  static const double caps[] = {5.0, 50.0};
  static const char fmt[] = "profile = \"gpu-test.cfg\"; model = \"../../scenarios/models/resnet50.cfg\";\n"
                            "training = { batch = 8; precision = \"fp32\"; };\n"
                            "cluster = { nodes = 2; devices_per_node = 1; };\n"
                            "networks = ( { name = \"n\"; gbps = 1.0; latency_us = 50.0; } );\n"
                            "ddp = { backend = \"nccl\"; bucket_cap_mb = %s; first_bucket_mb = %s; };\n";
  sim_scenario *swept = load(fmt, "[5.0, 50.0]", "\"cap\"");
  CU_ASSERT_FATAL(swept != NULL);
  CU_ASSERT_EQUAL(swept->first_bucket_mb, SIM_FIRST_BUCKET_CAP);
  int differ = 0;
  for (int k = 0; k < 2; k++) {
    char cap[32];
    snprintf(cap, sizeof cap, "%.1f", caps[k]);
    sim_scenario *one = load(fmt, cap, cap), *dflt = load(fmt, cap, "1.0");
    CU_ASSERT_FATAL(one != NULL && dflt != NULL);
    sim_point_result a, b, c;
    CU_ASSERT_FATAL(tu_run_point(swept, k, &a) == 0 && tu_run_point(one, 0, &b) == 0);
    CU_ASSERT_FATAL(tu_run_point(dflt, 0, &c) == 0);
    CU_ASSERT_EQUAL(a.pt.bucket_cap_mb, caps[k]);
    CU_ASSERT_EQUAL(a.n_buckets, b.n_buckets);
    CU_ASSERT_EQUAL(a.step_s, b.step_s);
    differ |= a.n_buckets != c.n_buckets; /* the first bucket matters here */
    sim_scenario_free(one);
    sim_scenario_free(dflt);
  }
  CU_ASSERT(differ);
  sim_scenario_free(swept);
}

void test_register(void) {
  CU_pSuite c = CU_add_suite("collective", NULL, NULL);
  CU_add_test(c, "closed form: nccl ring", test_closed_form_nccl_ring);
  CU_add_test(c, "closed form: nccl tree", test_closed_form_nccl_tree);
  CU_add_test(c, "closed form: nccl hierarchical", test_closed_form_nccl_hierarchical);
  CU_add_test(c, "closed form: gloo ring on cpus (gamma)", test_closed_form_gloo_ring_cpu);
  CU_add_test(c, "closed form: gloo ring on gpus (staging)", test_closed_form_gloo_ring_gpu);
  CU_add_test(c, "closed form: gloo hierarchical", test_closed_form_gloo_hierarchical);
  CU_add_test(c, "nccl auto = min(ring, tree)", test_nccl_auto_is_min);
  CU_add_test(c, "coll_time vs MPI/Gloo table", test_coll_time_mpi_table);
  CU_add_test(c, "coll_time nccl two-level ring and tree", test_coll_time_nccl_ring_two_level);
  CU_add_test(c, "coeffs = nccl-tests bus factors", test_coll_coeffs);
  CU_add_test(c, "algorithms per backend", test_algo_valid);

  CU_pSuite s = CU_add_suite("step", suite_init, suite_clean);
  CU_add_test(s, "step by hand", test_step_by_hand);
  CU_add_test(s, "random waits: the step's mean is not the mean wait's step", test_step_random_waits);
  CU_add_test(s, "jitter functions", test_jitter_functions);
  CU_add_test(s, "single device", test_single_device);
  CU_add_test(s, "elementwise traffic of the activations", test_elementwise_traffic);
  CU_add_test(s, "overlap never slower", test_overlap);
  CU_add_test(s, "representative = every rank without jitter", test_representative_equals_every_rank);
  CU_add_test(s, "stragglers: normal, E[max] from the reference", test_stragglers_normal);
  CU_add_test(s, "stragglers: shifted exponential, H_N", test_stragglers_shifted_exponential);
  CU_add_test(s, "representative vs every rank, lognormal", test_representative_vs_every_lognormal);
  CU_add_test(s, "compute slowdown", test_compute_slowdown);
  CU_add_test(s, "optimizer step at update_GBps", test_update_rate);
  CU_add_test(s, "interference factors at another rate", test_scale_interference);
  CU_add_test(s, "interference follows each bucket's rate", test_interference_follows_rate);
  CU_add_test(s, "timeout status and note", test_timeout);
  CU_add_test(s, "find_unused_parameters: the constructor's buckets", test_find_unused);
  CU_add_test(s, "first_bucket_mb = \"cap\": each point's cap", test_first_bucket_cap);
}

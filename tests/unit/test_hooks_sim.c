/* Simulated communication hooks (sim/predict.c hook_time): bytes on the
 * wire and time on the communication stream, from hand-computed shapes and
 * the ring formula of docs/cost-models.md. */
#include "sim/predict.h"
#include "sim/scenario.h"

#include "core/err.h"

#include "simutil.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>

/* mlp.cfg: fc1 1024->2048, fc2 2048->2048, fc3 2048->2048, fc4 2048->1024. */
static const double W_ROWS[4] = {2048, 2048, 2048, 1024}, W_COLS[4] = {1024, 2048, 2048, 2048};
static const double BIAS[4] = {2048, 2048, 2048, 1024};

static double n_params(void) {
  double n = 0;
  for (int i = 0; i < 4; i++)
    n += W_ROWS[i] * W_COLS[i] + BIAS[i];
  return n;
}

/* One bucket, overlap off, batch 8 (the closed forms below); or 10 MB
 * buckets with overlap on and batch 64, backward long enough to overlap. */
static sim_scenario *load_with(const char *profile, const char *compression, int overlap) {
  char text[2048];
  snprintf(text, sizeof text,
      "profile = \"%s\"; model = \"../../scenarios/models/mlp.cfg\";\n"
      "training = { batch = %d; };\n"
      "cluster = { nodes = 2; devices_per_node = 1; };\n"
      "networks = ( { name = \"n\"; gbps = 1.0; latency_us = 60.0; efficiency = 1.0; } );\n"
      "ddp = { backend = \"gloo\"; bucket_cap_mb = %s; first_bucket_mb = 0.0; overlap = %s;\n"
      "        gradient_as_bucket_view = true; compression = \"%s\"; };\n"
      "simulation = { steps = 1; };\n",
      profile, overlap ? 64 : 8, overlap ? "10.0" : "10000.0", overlap ? "true" : "false", compression);
  return tu_load_string(text, TU_DATA("inline-hooks.cfg"));
}

static sim_scenario *load_on(const char *profile, const char *compression) {
  return load_with(profile, compression, 0);
}

static sim_scenario *load(const char *compression) { return load_on("cpu-test.cfg", compression); }

static int run_on(const char *profile, const char *compression, sim_point_result *r) {
  sim_scenario *s = load_on(profile, compression);
  if (!s)
    return -1;
  int rc = tu_run_point(s, 0, r);
  sim_scenario_free(s);
  return rc;
}

static int run(const char *compression, sim_point_result *r) { return run_on("cpu-test.cfg", compression, r); }

/* Gloo segmented ring on 2 ranks with one flow at 1 Gb/s, 60 us, host
 * reduction at cpu-test.cfg's 5 GB/s: 2(p-1)a + 2n(p-1)/p b + n(p-1)/p g. */
static double ring(double n) {
  double a = 60e-6, b = 8.0 / 1e9, g = 1.0 / 5e9;
  return 2 * a + n * b + 0.5 * n * g;
}

static void test_none(void) {
  sim_point_result r;
  CU_ASSERT_FATAL(run("none", &r) == 0);
  CU_ASSERT_DOUBLE_EQUAL(r.wire_bytes, n_params() * 4, 0);
  CU_ASSERT_DOUBLE_EQUAL(r.comm_s, ring(n_params() * 4), 1e-9 * r.comm_s);
}

static void test_fp16(void) {
  /* Half the bytes; the cast back (read 2, write 4 bytes an element at the
   * profile's 10 GB/s memory bandwidth) stays on the communication stream,
   * the cast down runs when the bucket is ready. */
  sim_point_result r;
  CU_ASSERT_FATAL(run("fp16", &r) == 0);
  double n = n_params();
  CU_ASSERT_DOUBLE_EQUAL(r.wire_bytes, n * 2, 0);
  CU_ASSERT_DOUBLE_EQUAL(r.comm_s, ring(n * 2) + n * 6 / 10e9, 1e-9 * r.comm_s);
}

static void test_powersgd_bytes(void) {
  /* Rank 1: every weight is compressed ((n + m) r 2 < n m); biases are 1-D
   * and go in the uncompressed allreduce. P has n r, Q m r elements. */
  sim_point_result r;
  CU_ASSERT_FATAL(run("powersgd:1", &r) == 0);
  double u = 0, pq = 0;
  for (int i = 0; i < 4; i++) {
    u += BIAS[i];
    pq += W_ROWS[i] + W_COLS[i];
  }
  CU_ASSERT_DOUBLE_EQUAL(r.wire_bytes, (u + pq) * 4, 0);
  /* Three allreduces now, plus compute: more than their sum. */
  CU_ASSERT(r.comm_s > ring(u * 4) + ring(4 * (W_ROWS[0] + W_ROWS[1] + W_ROWS[2] + W_ROWS[3])) +
                           ring(4 * (W_COLS[0] + W_COLS[1] + W_COLS[2] + W_COLS[3])));
  /* Rank 4: P and Q four times larger. */
  CU_ASSERT_FATAL(run("powersgd:4", &r) == 0);
  CU_ASSERT_DOUBLE_EQUAL(r.wire_bytes, (u + 4 * pq) * 4, 0);
}

static void test_powersgd_rule(void) {
  /* Compressed iff (n + m) r 2 < n m. fc2 and fc3 (2048 x 2048): 4096 x 2r
   * < 4,194,304, so r <= 511; fc1 and fc4 (2048 x 1024 and 1024 x 2048):
   * 3072 x 2r < 2,097,152, so r <= 341. Rank 512: nothing is compressed, one
   * allreduce of everything, no bytes saved. */
  sim_point_result r;
  CU_ASSERT_FATAL(run("powersgd:512", &r) == 0);
  CU_ASSERT_DOUBLE_EQUAL(r.wire_bytes, n_params() * 4, 0);
  CU_ASSERT_FATAL(run("powersgd:341", &r) == 0);
  /* 341: every weight compressed, fc1 and fc4 just (3072 x 682 = 2,095,104). */
  double u = 0, pq = 0;
  for (int i = 0; i < 4; i++) {
    u += BIAS[i];
    pq += (W_ROWS[i] + W_COLS[i]) * 341;
  }
  CU_ASSERT_DOUBLE_EQUAL(r.wire_bytes, (u + pq) * 4, 0);
  CU_ASSERT_FATAL(run("powersgd:342", &r) == 0);
  /* 342: 3072 x 684 = 2,101,248 >= 2,097,152: fc1 and fc4 stay whole. */
  u = BIAS[0] + BIAS[1] + BIAS[2] + BIAS[3] + W_ROWS[0] * W_COLS[0] + W_ROWS[3] * W_COLS[3];
  pq = (W_ROWS[1] + W_COLS[1] + W_ROWS[2] + W_COLS[2]) * 342;
  CU_ASSERT_DOUBLE_EQUAL(r.wire_bytes, (u + pq) * 4, 0);
}

/* With measured hook rates (cpu-hooks-test.cfg) Gloo's half-precision sum
 * runs in a pipelined ring: each rank sums half the bytes (2 ranks) of a
 * segment while the next arrives. At the file's 0.5 GB/s for fp16 that sum
 * (25 ms) hides behind the reduce-scatter's transfer (100 ms) and the
 * allreduce takes as long as its bytes on the link; at 0.05 GB/s (250 ms)
 * it shows: the allgather's half of the transfer, then the sum. The casts
 * move at the measured 8 GB/s, bf16's at its own 16 GB/s. */
static void test_fp16_measured(void) {
  sim_point_result r;
  double n = n_params(), w = n * 2;
  CU_ASSERT_FATAL(run_on("cpu-hooks-test.cfg", "fp16", &r) == 0);
  CU_ASSERT_DOUBLE_EQUAL(r.comm_s, ring(w) + n * 6 / 8e9, 1e-9 * r.comm_s);
  sim_scenario *s = load_on("cpu-hooks-test.cfg", "fp16");
  CU_ASSERT_FATAL(s != NULL);
  s->profile->sum_fp16_GBps = 0.05;
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  sim_scenario_free(s);
  CU_ASSERT_DOUBLE_EQUAL(r.comm_s, ring(w) / 2 + w * 0.5 / 0.05e9 + n * 6 / 8e9, 1e-9 * r.comm_s);
  /* bf16's sum at 2 GB/s hides too. */
  CU_ASSERT_FATAL(run_on("cpu-hooks-test.cfg", "bf16", &r) == 0);
  CU_ASSERT_DOUBLE_EQUAL(r.comm_s, ring(w) + n * 6 / 16e9, 1e-9 * r.comm_s);
}

/* Gloo's half-precision sum is CPU work on the communication thread: with
 * overlap on, the casts made free and the CPU slowdown of compute beside
 * CPU-bound communication raised from 1 to 3, an fp16 step lengthens (the
 * sum contends with backward), while a step without compression, whose
 * collectives do no CPU work of the hook's, stays the same. */
static void test_half_sum_contends(void) {
  double step[2][2];
  const char *kinds[2] = {"none", "fp16"};
  for (int k = 0; k < 2; k++)
    for (int c = 0; c < 2; c++) {
      sim_scenario *s = load_with("cpu-hooks-test.cfg", kinds[k], 1);
      CU_ASSERT_FATAL(s != NULL);
      s->profile->cast_GBps = 1e6;
      s->profile->cpu_slowdown = c ? 3.0 : 1.0;
      sim_point_result r;
      CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
      step[k][c] = r.step_s;
      sim_scenario_free(s);
    }
  CU_ASSERT_DOUBLE_EQUAL(step[0][1], step[0][0], 1e-12 * step[0][0]);
  CU_ASSERT(step[1][1] > step[1][0] * 1.01);
}

/* PowerSGD's hook body on the compute path: with overlap off and one bucket
 * a step is compute, then the hook's communication; the step minus its
 * communication grows over no compression's by exactly what the body
 * runs: per weight the rank-1 P = M Q streaming 4 (n m + n + m) bytes at
 * the measured 2 GB/s, the orthogonalization of Q, 2 m FLOPs at 1 GFLOP/s,
 * and an error-feedback pass of 12 bytes an element at 4 GB/s; per bias its
 * copy into the uncompressed buffer, 4 bytes an element. */
static void test_powersgd_compute_path(void) {
  sim_point_result none, ps;
  CU_ASSERT_FATAL(run_on("cpu-hooks-test.cfg", "none", &none) == 0);
  CU_ASSERT_FATAL(run_on("cpu-hooks-test.cfg", "powersgd:1", &ps) == 0);
  double pre = 0;
  for (int i = 0; i < 4; i++) {
    double n = W_ROWS[i], m = W_COLS[i];
    pre += 4 * (n * m + n + m) / 2e9 + 2 * m / 1e9 + 12 * n * m / 4e9 + 4 * BIAS[i] / 4e9;
  }
  double grew = (ps.step_s - ps.comm_s) - (none.step_s - none.comm_s);
  CU_ASSERT_DOUBLE_EQUAL(grew, pre, 1e-6 * pre);
}

/* PowerSGD's allreduces between its CPU work wait longer than back to back
 * (profile hooks.psgd_sync_us): with one bucket and overlap off, each of
 * its three allreduces (the biases together, all P, all Q) takes that much
 * longer, and nothing else changes. Where the model carries its own
 * measured wait (core/model.h), that one counts, not the profile's; and a
 * measured wait of zero is a wait of zero. */
static void test_powersgd_sync(void) {
  sim_point_result r[4];
  const double prof_us[4] = {0.0, 2000.0, 2000.0, 2000.0}, model_us[4] = {-1, -1, 500.0, 0.0};
  for (int k = 0; k < 4; k++) {
    sim_scenario *s = load_on("cpu-hooks-test.cfg", "powersgd:1");
    CU_ASSERT_FATAL(s != NULL);
    CU_ASSERT_FATAL(s->n_models == 1);
    CU_ASSERT(s->models[0]->psgd_sync_us < 0); /* the shipped model measures none */
    s->profile->psgd_sync_us = prof_us[k];
    s->models[0]->psgd_sync_us = model_us[k];
    CU_ASSERT_FATAL(tu_run_point(s, 0, &r[k]) == 0);
    sim_scenario_free(s);
  }
  const double wait[4] = {0.0, 2e-3, 0.5e-3, 0.0};
  for (int k = 1; k < 4; k++) {
    CU_ASSERT_DOUBLE_EQUAL(r[k].comm_s - r[0].comm_s, 3 * wait[k], 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(r[k].step_s - r[0].step_s, 3 * wait[k], 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(r[k].compute_s, r[0].compute_s, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(r[k].wire_bytes, r[0].wire_bytes, 0);
  }
}

/* While the hook's allreduces wait on idle CPUs, backward beside them runs
 * at full speed: with overlap on, compute slowed twofold beside the
 * network's work and the hook's own work made free, a wait that dwarfs the
 * network time leaves compute as it is without any slowdown (within 1%),
 * where the same time spent on the network slows it by over a fifth (the
 * backward that overlaps the collectives, at half speed). */
static void test_powersgd_sync_idle(void) {
  double comp[3];
  const double sd[3] = {1.0, 2.0, 2.0};
  const double sync[3] = {0.5e6, 0.5e6, 0.0};
  for (int k = 0; k < 3; k++) {
    sim_scenario *s = load_with("cpu-hooks-test.cfg", "powersgd:1", 1);
    CU_ASSERT_FATAL(s != NULL);
    s->profile->psgd_gemm_GBps = s->profile->psgd_pass_GBps = s->profile->orth_gflops = 1e9;
    s->profile->compute_slowdown = sd[k];
    s->profile->psgd_sync_us = sync[k];
    /* Without waits, make the network time as long as those waits. */
    if (k == 2)
      s->networks[0].gbps = 1e-5;
    sim_point_result r;
    CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
    comp[k] = r.compute_s;
    sim_scenario_free(s);
  }
  CU_ASSERT_DOUBLE_EQUAL(comp[1], comp[0], 0.01 * comp[0]);
  CU_ASSERT(comp[2] > 1.2 * comp[0]);
}

static void test_bad_spec(void) {
  CU_ASSERT(load("zip") == NULL);
  CU_ASSERT(load("powersgd:0") == NULL);
  CU_ASSERT(load("powersgd:") == NULL);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("hooks", NULL, NULL);
  CU_add_test(s, "no compression: the plain ring", test_none);
  CU_add_test(s, "fp16: half the bytes plus the casts", test_fp16);
  CU_add_test(s, "PowerSGD: P and Q instead of the weights", test_powersgd_bytes);
  CU_add_test(s, "PowerSGD: the min_compression_rate rule at its edge", test_powersgd_rule);
  CU_add_test(s, "fp16/bf16: Gloo's measured half-precision sums", test_fp16_measured);
  CU_add_test(s, "fp16: Gloo's half sum contends with backward for CPUs", test_half_sum_contends);
  CU_add_test(s, "PowerSGD: its compute on the compute path", test_powersgd_compute_path);
  CU_add_test(s, "PowerSGD: its allreduces' wait between CPU work", test_powersgd_sync);
  CU_add_test(s, "PowerSGD: backward runs at full speed beside that wait", test_powersgd_sync_idle);
  CU_add_test(s, "bad compression specs are rejected", test_bad_spec);
}

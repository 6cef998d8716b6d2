/* sim/layer_cache: an entry comes back only for its own model, precision,
 * batch and optimizer, as a copy; and a sweep that reuses costed layers
 * predicts every point exactly as one that costs each point afresh. */
#include "testutil.h"

#include "core/err.h"
#include "sim/layer_cache.h"
#include "sim/predict.h"
#include "sim/scenario.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

static void test_keys(void) {
  core_model m = {.n_layers = 2}, other = {.n_layers = 2};
  sim_layer_cache *c = sim_layer_cache_new();
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  const double fwd[2] = {1, 2}, bwd[2] = {3, 4};
  sim_layer_key k = {.model = &m, .precision = 1, .batch = 32, .optimizer = 2};
  double f[2] = {0}, b[2] = {0}, opt = 0;
  CU_ASSERT_EQUAL(sim_layer_cache_get(c, &k, f, b, &opt), 0);
  sim_layer_cache_put(c, &k, fwd, bwd, 5.0);
  CU_ASSERT_EQUAL(sim_layer_cache_get(c, &k, f, b, &opt), 1);
  CU_ASSERT(memcmp(f, fwd, sizeof f) == 0 && memcmp(b, bwd, sizeof b) == 0 && opt == 5.0);
  /* Each part of the key tells entries apart. */
  sim_layer_key diff[4] = {k, k, k, k};
  diff[0].model = &other;
  diff[1].precision = 0;
  diff[2].batch = 16;
  diff[3].optimizer = 0;
  for (int i = 0; i < 4; i++)
    CU_ASSERT_EQUAL(sim_layer_cache_get(c, &diff[i], f, b, &opt), 0);
  /* A second put of a key keeps the first times. */
  const double zero[2] = {0};
  sim_layer_cache_put(c, &k, zero, zero, 0.0);
  CU_ASSERT_EQUAL(sim_layer_cache_get(c, &k, f, b, &opt), 1);
  CU_ASSERT(f[1] == 2 && b[1] == 4 && opt == 5.0);
  sim_layer_cache_free(c);
  /* Without a cache nothing is found and nothing breaks. */
  sim_layer_cache_put(NULL, &k, fwd, bwd, 1.0);
  CU_ASSERT_EQUAL(sim_layer_cache_get(NULL, &k, f, b, &opt), 0);
}

/* Two models on a GPU profile, swept over what the layers depend on
 * (precision, batch) and what they do not (nodes, network). */
static const char *SCENARIO =
    "profile = \"" DDPSIM_SOURCE_DIR "/scenarios/profiles/dgx-a100.cfg\";\n"
    "model = [\"" DDPSIM_SOURCE_DIR "/scenarios/models/resnet50.cfg\", \"" DDPSIM_SOURCE_DIR
    "/scenarios/models/bert-large.cfg\"];\n"
    "training = { batch = [8, 16]; precision = [\"tf32\", \"amp_bf16\"]; optimizer = \"adam\"; };\n"
    "cluster = { nodes = [1, 2, 4]; devices_per_node = 8; };\n"
    "networks = ( { name = \"IB\"; gbps = 200.0; latency_us = 5.0; nics_per_node = 8; },\n"
    "             { name = \"Eth\"; gbps = 100.0; latency_us = 10.0; } );\n"
    "ddp = { backend = \"nccl\"; };\n"
    "simulation = { steps = 3; };\n";

static int run_all(const sim_scenario *s, sim_point_result *r, long n) {
  sim_engine *e;
  if (sim_engine_new(&e))
    return -1;
  int rc = 0;
  for (long i = 0; i < n && !rc; i++) {
    sim_point p;
    sim_scenario_point(s, i, &p);
    if ((rc = sim_predict_point(s, &p, e, NULL, 0, &r[i])) != 0)
      fprintf(stderr, "\npoint %ld: %s\n", i, core_err_msg());
  }
  sim_engine_free(e);
  return rc;
}

static void test_same_predictions(void) {
  sim_scenario *s = NULL;
  CU_ASSERT_EQUAL_FATAL(sim_scenario_load_string(SCENARIO, TU_DATA("inline-cache.cfg"), &s), 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s->layer_cache);
  long n = sim_scenario_points(s);
  CU_ASSERT_EQUAL_FATAL(n, 2 * 2 * 2 * 3 * 2);
  static sim_point_result cached[64], fresh[64];
  CU_ASSERT_EQUAL_FATAL(run_all(s, cached, n), 0);
  sim_layer_cache_free(s->layer_cache);
  s->layer_cache = NULL;
  CU_ASSERT_EQUAL_FATAL(run_all(s, fresh, n), 0);
  for (long i = 0; i < n; i++) {
    CU_ASSERT(cached[i].step_s == fresh[i].step_s && cached[i].compute_s == fresh[i].compute_s);
    CU_ASSERT(cached[i].single_step_s == fresh[i].single_step_s && cached[i].comm_s == fresh[i].comm_s);
  }
  /* The points differ where their layers do: the cache is not one answer. */
  CU_ASSERT(cached[0].single_step_s != cached[n - 1].single_step_s);
  sim_scenario_free(s);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("layer_cache", NULL, NULL);
  CU_add_test(s, "entries by model, precision, batch, optimizer", test_keys);
  CU_add_test(s, "a sweep predicts the same with and without", test_same_predictions);
}

/* A study's bounds (sim/bounds.h): its points within simulation.max_points,
 * refused at the line of its widest sweep with every sweep named. */
#include "sim/scenario.h"

#include "core/err.h"

#include "testutil.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#define NAME TU_DATA("bounds.cfg")

/* 3 batches x 2 bucket caps x 4 node counts: 24 points, the node counts on
 * line 4; EXTRA goes on line 7. */
#define SWEEP(EXTRA)                                                                                                   \
  "profile = \"cpu-test.cfg\";\n"                                                                                      \
  "model = \"../../scenarios/models/mlp-small.cfg\";\n"                                                                \
  "training = { batch = [8, 16, 32]; };\n"                                                                             \
  "cluster = { nodes = [1, 2, 3, 4]; devices_per_node = 1; };\n"                                                       \
  "networks = ( { name = \"1GbE\"; gbps = 1.0; latency_us = 30.0; } );\n"                                              \
  "ddp = { backend = \"gloo\"; bucket_cap_mb = [1.0, 25.0]; };\n" EXTRA "\n"

static int load(const char *text, sim_scenario **s) {
  core_err_clear();
  return sim_scenario_load_string(text, NAME, s);
}

/* A message that starts with bounds.cfg:line and holds part. */
static int says(int line, const char *part) {
  char where[4200];
  snprintf(where, sizeof where, "%s:%d: ", NAME, line);
  const char *msg = core_err_msg();
  int ok = strncmp(msg, where, strlen(where)) == 0 && strstr(msg, part) != NULL;
  if (!ok)
    fprintf(stderr, "\n    expected %s...%s in: %s", where, part, msg);
  return ok;
}

/* At the bound the study loads; one point over it, it is refused at the
 * widest sweep, with the product, the bound's line and what to do. */
static void test_points(void) {
  sim_scenario *s = NULL;
  CU_ASSERT_FATAL(load(SWEEP(""), &s) == 0);
  CU_ASSERT_EQUAL(s->max_points, SIM_DEFAULT_MAX_POINTS);
  CU_ASSERT_EQUAL(sim_scenario_points(s), 24);
  sim_scenario_free(s);
  CU_ASSERT(load(SWEEP("simulation = { max_points = 24; };"), &s) == 0);
  sim_scenario_free(s);
  s = NULL;
  CU_ASSERT_EQUAL(load(SWEEP("simulation = { max_points = 23; };"), &s), CORE_EINVAL);
  CU_ASSERT(s == NULL);
  CU_ASSERT(says(4, "this study has 24 points (training.batch 3 x ddp.bucket_cap_mb 2 x cluster.nodes 4), over "
                    "simulation.max_points = 23 ("));
  char given[4200];
  snprintf(given, sizeof given, "(%s:7)", NAME);
  CU_ASSERT(strstr(core_err_msg(), given) != NULL);
  CU_ASSERT(strstr(core_err_msg(), "raise simulation.max_points") != NULL);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("bounds", NULL, NULL);
  CU_add_test(s, "a study's points within simulation.max_points", test_points);
}

/* A study's bounds (sim/bounds.h): its points within simulation.max_points,
 * refused at the line of its widest sweep with every sweep named; its
 * scheduled failures within the job's steps, at load time where job.samples
 * fixes them and, with job.hours, once the sweep knows the step time,
 * both at the line of failures.at_steps. */
#include "sim/scenario.h"
#include "sim/sweep.h"

#include "core/err.h"

#include "testutil.h"

#include <CUnit/CUnit.h>
#include <math.h>
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

/* Two node counts (the largest global batch: 2 x 1 x 8), failures at the
 * steps AT (line 8) of a job of LENGTH. */
#define SCHEDULED(LENGTH, AT)                                                                                          \
  "profile = \"cpu-test.cfg\";\n"                                                                                      \
  "model = \"../../scenarios/models/mlp-small.cfg\";\n"                                                                \
  "training = { batch = 8; };\n"                                                                                       \
  "cluster = { nodes = [1, 2]; devices_per_node = 1; };\n"                                                             \
  "networks = ( { name = \"1GbE\"; gbps = 1.0; latency_us = 30.0; } );\n"                                              \
  "job = { " LENGTH " };\n"                                                                                            \
  "checkpoint = { every_steps = 10.0; cost_s = 1.0; };\n"                                                              \
  "failures = { distribution = \"scheduled\"; at_steps = " AT "; restart_s = 10.0; load_s = 1.0; };\n"                 \
  "simulation = { replications = 2; };\n"

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
  /* The memory is the whole study's, whatever one shard holds. */
  CU_ASSERT(
      strstr(core_err_msg(), "the whole study's results alone (unsharded, or once merged) would take about") != NULL);
}

/* With job.samples the fewest steps are the largest global batch's:
 * 160 samples over 2 x 1 x 8 are 10 steps; a failure comes in the middle
 * of its step, so at_steps must be below 9.5. */
static void test_schedule_samples(void) {
  sim_scenario *s = NULL;
  CU_ASSERT(load(SCHEDULED("samples = 160.0;", "[2.0, 9.4]"), &s) == 0);
  sim_scenario_free(s);
  s = NULL;
  CU_ASSERT_EQUAL(load(SCHEDULED("samples = 160.0;", "[2.0, 9.5]"), &s), CORE_EINVAL);
  CU_ASSERT(s == NULL);
  CU_ASSERT(says(8, "at_steps 9.5 is past the job's end at 2 nodes x 1 devices x batch 8: job.samples = 160 is "
                    "10 steps there"));
  CU_ASSERT(strstr(core_err_msg(), "give at_steps below 9.5 (the job's steps - 0.5), or more samples") != NULL);
}

/* job.steps, whatever the cluster, fractional ones included: the limit the
 * message names is the one the check applies. */
static void test_schedule_steps(void) {
  static const struct {
    const char *steps, *at;
    int ok;
    const char *says;
  } cases[] = {
      {"steps = 10.0;", "[9.0]", 1, NULL},
      {"steps = 10.0;", "[9.4999]", 1, NULL},
      {"steps = 10.0;", "[9.5]", 0, "give at_steps below 9.5 (the job's steps - 0.5), or a longer job"},
      {"steps = 10.0;", "[10.0]", 0, "give at_steps below 9.5"},
      {"steps = 10.5;", "[9.9]", 1, NULL},
      {"steps = 10.5;", "[10.0]", 0, "give at_steps below 10 (the job's steps - 0.5)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[2048];
    sim_scenario *s = NULL;
    snprintf(text, sizeof text, SCHEDULED("%s", "%s"), cases[i].steps, cases[i].at);
    int rc = load(text, &s);
    sim_scenario_free(s);
    if (cases[i].ok) {
      CU_ASSERT_EQUAL(rc, 0);
      continue;
    }
    CU_ASSERT_EQUAL(rc, CORE_EINVAL);
    CU_ASSERT(says(8, "is past the job's end: job.steps = "));
    CU_ASSERT(says(8, cases[i].says));
  }
}

static int sweep(const char *text, sim_sweep *w, double *step_s) {
  sim_scenario *s = NULL;
  int rc = load(text, &s);
  CU_ASSERT_FATAL(rc == 0);
  sim_sweep_opts o = {.jobs = 2, .n_shards = 1, .trace_point = -1};
  rc = sim_sweep_run(s, &o, w);
  for (long i = 0; rc == 0 && step_s && i < w->n; i++)
    *step_s = fmax(*step_s, w->res[i].step_s);
  sim_scenario_free(s);
  return rc;
}

/* With job.hours the steps are known once the step level ran: a failure
 * whose step's middle falls within the job is accepted, a later one
 * refused before any Monte Carlo runs, at the point with the fewest steps
 * whichever point fails first. */
static void test_schedule_hours(void) {
  sim_sweep w;
  double step_s = 0;
  CU_ASSERT_FATAL(sweep(SCHEDULED("hours = 0.01;", "[2.0]"), &w, &step_s) == 0);
  CU_ASSERT(w.res[0].has_job && w.res[1].has_job);
  sim_sweep_free(&w);
  /* The slowest step's point has the fewest steps: point 1, two nodes. */
  double total = 0.01 * 3600.0 / step_s, last = ceil(total - 0.5) - 1;
  CU_ASSERT_FATAL(last > 2);
  char text[2048], at[64], part[512];
  snprintf(at, sizeof at, "[2.0, %.1f]", last);
  snprintf(text, sizeof text, SCHEDULED("hours = 0.01;", "%s"), at);
  CU_ASSERT(sweep(text, &w, NULL) == 0);
  sim_sweep_free(&w);
  /* Past every point's steps: point 0 fails first, point 1 is named. */
  snprintf(text, sizeof text, SCHEDULED("hours = 0.01;", "%s"), "[2.0, 1e9]");
  CU_ASSERT_EQUAL(sweep(text, &w, NULL), CORE_EINVAL);
  CU_ASSERT(says(8,
      "at_steps 1000000000 is past the job's end at point 1 (model mlp-small, 2 x 1, batch 8, network 1GbE, gloo): "
      "job.hours = 0.01 at its step time of"));
  snprintf(part, sizeof part, "give at_steps below %.10g (the job's steps - 0.5), or a longer job", total - 0.5);
  CU_ASSERT(strstr(core_err_msg(), part) != NULL);
}

/* A job shorter than half a step has room for no scheduled failure: the
 * message says so instead of naming a negative limit. */
static void test_schedule_short(void) {
  sim_sweep w;
  CU_ASSERT_EQUAL(sweep(SCHEDULED("hours = 0.000001;", "[0.0]"), &w, NULL), CORE_EINVAL);
  CU_ASSERT(says(8, "the job ends before the middle of its first step, so no scheduled failure fits in it: give a "
                    "longer job"));
  CU_ASSERT(strstr(core_err_msg(), "-1") == NULL);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("bounds", NULL, NULL);
  CU_add_test(s, "a study's points within simulation.max_points", test_points);
  CU_add_test(s, "scheduled failures within job.samples' and job.steps' steps", test_schedule_samples);
  CU_add_test(s, "scheduled failures below job.steps - 0.5, fractional steps included", test_schedule_steps);
  CU_add_test(s, "scheduled failures within job.hours' steps, once the step time is known", test_schedule_hours);
  CU_add_test(s, "a job shorter than half a step has room for no scheduled failure", test_schedule_short);
}

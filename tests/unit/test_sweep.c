/* The sweep (sim/sweep.h) of a study with a job level: its work estimated
 * and bounded by simulation.max_events before any Monte Carlo runs, with the
 * error at the key that sets the failure rate; progress on stderr that
 * changes nothing in the results. */
#include "sim/sweep.h"

#include "core/err.h"

#include "simutil.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char scratch[4096];

static int suite_init(void) { return tu_mkdtemp(scratch, sizeof scratch, "sweep"); }
static int suite_clean(void) {
  tu_rmdir(scratch);
  return 0;
}

/* Two nodes interrupted every 1.8 s (mtbf_h on line 8), each failure
 * waiting for a repair: every run goes on to the wall-time cap, about
 * 4,000 events a replication. EXTRA goes into the simulation group. */
#define STUDY(EXTRA)                                                                                                   \
  "name = \"tiny-mtbf\";\n"                                                                                            \
  "profile = \"../../scenarios/profiles/example-2core.cfg\";\n"                                                        \
  "model = \"../../scenarios/models/mlp-small.cfg\";\n"                                                                \
  "training = { batch = 32; };\n"                                                                                      \
  "cluster = { nodes = 2; devices_per_node = 1; };\n"                                                                  \
  "networks = ( { name = \"1GbE\"; gbps = 1.0; latency_us = 30.0; } );\n"                                              \
  "job = { hours = 0.005; };\n"                                                                                        \
  "failures = { mtbf_h = 0.001; };\n"                                                                                  \
  "checkpoint = { every_s = [60.0, 120.0]; };\n"                                                                       \
  "simulation = { replications = 4; " EXTRA " };\n"

static sim_scenario *load(const char *text) { return tu_load_string(text, TU_DATA("tiny-mtbf.cfg")); }

/* Within the bound the study runs; below its estimate it is refused at
 * once, naming the line of mtbf_h, the events, the bound and what to do. */
static void test_bound(void) {
  sim_scenario *s = load(STUDY(""));
  CU_ASSERT_FATAL(s != NULL);
  sim_sweep_opts o = {.jobs = 2, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
  CU_ASSERT_EQUAL(w.n, 2);
  uint64_t events = w.res[0].job.events + w.res[1].job.events;
  CU_ASSERT(events > 20000);
  CU_ASSERT_EQUAL(w.res[0].job.unfinished, 4);
  sim_sweep_free(&w);
  sim_scenario_free(s);

  s = load(STUDY("max_events = 5000;"));
  CU_ASSERT_FATAL(s != NULL);
  core_err_clear();
  CU_ASSERT_EQUAL(sim_sweep_run(s, &o, &w), CORE_EINVAL);
  const char *msg = core_err_msg();
  char where[4200];
  snprintf(where, sizeof where, "%s:8: this study would take about ", TU_DATA("tiny-mtbf.cfg"));
  CU_ASSERT(strncmp(msg, where, strlen(where)) == 0);
  CU_ASSERT(strstr(msg, "over simulation.max_events = 5000 a point") != NULL);
  CU_ASSERT(strstr(msg, "interrupted every 1.8 s") != NULL);
  CU_ASSERT(strstr(msg, "would not finish") != NULL);
  CU_ASSERT(strstr(msg, "Raise simulation.max_events") != NULL);
  if (!strstr(msg, "Raise simulation.max_events") || strncmp(msg, where, strlen(where)) != 0)
    fprintf(stderr, "\n    %s", msg);
  sim_scenario_free(s);
}

/* A sweep with progress reported from the start: lines on stderr, the same
 * results as without. */
static void test_progress(void) {
  sim_scenario *s = load(STUDY(""));
  CU_ASSERT_FATAL(s != NULL);
  char quiet[4200], loud[4200], err[4200];
  snprintf(quiet, sizeof quiet, "%s/quiet.csv", scratch);
  snprintf(loud, sizeof loud, "%s/loud.csv", scratch);
  snprintf(err, sizeof err, "%s/stderr.txt", scratch);
  sim_sweep_opts o = {.jobs = 2, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
  CU_ASSERT_FATAL(sim_sweep_write_csv(s, &w, quiet, 1, NULL) == 0);
  sim_sweep_free(&w);

  fflush(stderr);
  int saved = dup(2), fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CU_ASSERT_FATAL(saved >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
  o.progress = 1;
  o.progress_after_s = 0;
  int rc = sim_sweep_run(s, &o, &w);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  CU_ASSERT_FATAL(rc == 0);
  CU_ASSERT_FATAL(sim_sweep_write_csv(s, &w, loud, 1, NULL) == 0);
  sim_sweep_free(&w);
  sim_scenario_free(s);

  char *a = tu_read_file(quiet, NULL), *b = tu_read_file(loud, NULL), *e = tu_read_file(err, NULL);
  CU_ASSERT_FATAL(a && b && e);
  CU_ASSERT_STRING_EQUAL(a, b);
  if (strcmp(a, b))
    fprintf(stderr, "\n%s\n%s\n", a, b);
  CU_ASSERT(strncmp(e, "simulate: step level, ", 22) == 0 || strncmp(e, "simulate: failures, ", 20) == 0);
  CU_ASSERT(strstr(e, " of 2 points") != NULL);
  free(a);
  free(b);
  free(e);
}

/* Points that differ only in job-level settings share the step level of
 * the first of them, whatever the number of workers or the shard: the
 * study's CSV is the same with 1 worker, with 3, and from two shards. */
static void test_shared_step_level(void) {
  sim_scenario *s = load(STUDY(""));
  CU_ASSERT_FATAL(s != NULL);
  char path[4][4200];
  const int jobs[4] = {1, 3, 1, 1}, shard[4] = {0, 0, 0, 1}, shards[4] = {1, 1, 2, 2};
  for (int k = 0; k < 4; k++) {
    snprintf(path[k], sizeof path[k], "%s/run-%d.csv", scratch, k);
    sim_sweep_opts o = {.jobs = jobs[k], .shard = shard[k], .n_shards = shards[k], .trace_point = -1};
    sim_sweep w;
    CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
    CU_ASSERT_FATAL(sim_sweep_write_csv(s, &w, path[k], shard[k] == 0, NULL) == 0);
    sim_sweep_free(&w);
  }
  sim_scenario_free(s);
  char *one = tu_read_file(path[0], NULL), *three = tu_read_file(path[1], NULL);
  char *s0 = tu_read_file(path[2], NULL), *s1 = tu_read_file(path[3], NULL);
  CU_ASSERT_FATAL(one && three && s0 && s1);
  CU_ASSERT_STRING_EQUAL(one, three);
  size_t n0 = strlen(s0);
  CU_ASSERT(strncmp(one, s0, n0) == 0 && strcmp(one + n0, s1) == 0);
  free(one);
  free(three);
  free(s0);
  free(s1);
}

/* Points of the same world draw the same jitter (common random numbers):
 * two networks alike but for their names give the same steps, and a
 * faster network is never slower, however noisy the profile's steps. */
static void test_common_jitter(void) {
  static const char *const text = "name = \"crn\";\n"
                                  "profile = \"../../scenarios/profiles/example-2core.cfg\";\n"
                                  "model = \"../../scenarios/models/mlp-small.cfg\";\n"
                                  "training = { batch = 32; };\n"
                                  "cluster = { nodes = [2, 4]; devices_per_node = 2; };\n"
                                  "networks = ( { name = \"a\"; gbps = 1.0; latency_us = 30.0; },\n"
                                  "  { name = \"b\"; gbps = 1.0; latency_us = 30.0; },\n"
                                  "  { name = \"fast\"; gbps = 100.0; latency_us = 30.0; } );\n"
                                  "simulation = { steps = 3; };\n";
  sim_scenario *s = load(text);
  CU_ASSERT_FATAL(s != NULL);
  sim_sweep_opts o = {.jobs = 1, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
  CU_ASSERT_FATAL(w.n == 6);
  for (int k = 0; k < 2; k++) {
    const sim_point_result *a = &w.res[k], *b = &w.res[2 + k], *fast = &w.res[4 + k];
    CU_ASSERT(a->pt.nodes == b->pt.nodes && a->pt.nodes == fast->pt.nodes);
    CU_ASSERT_EQUAL(a->step_s, b->step_s);
    CU_ASSERT(fast->step_s <= a->step_s);
  }
  sim_sweep_free(&w);
  sim_scenario_free(s);
}

/* A point that cannot run (its allreduce outlasts ddp.timeout_s) has no
 * run, so its work does not count against simulation.max_events: the slow
 * network's job, of far longer steps, would be over the bound, the
 * fast one's is within it. */
static void test_bound_skips_no_run(void) {
  static const char *const text = "name = \"no-run\";\n"
                                  "profile = \"../../scenarios/profiles/example-2core.cfg\";\n"
                                  "model = \"../../scenarios/models/mlp-small.cfg\";\n"
                                  "training = { batch = 32; };\n"
                                  "cluster = { nodes = 2; devices_per_node = 1; };\n"
                                  "networks = ( { name = \"fast\"; gbps = 10.0; latency_us = 30.0; },\n"
                                  "  { name = \"slow\"; gbps = 0.01; latency_us = 30.0; } );\n"
                                  "ddp = { timeout_s = 0.5; };\n"
                                  "job = { samples = 1e5; };\n"
                                  "failures = { mtbf_h = 0.001; };\n"
                                  "checkpoint = { every_s = [60.0]; };\n"
                                  "simulation = { replications = 4; max_events = 200000; };\n";
  sim_scenario *s = load(text);
  CU_ASSERT_FATAL(s != NULL);
  sim_sweep_opts o = {.jobs = 2, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  int rc = sim_sweep_run(s, &o, &w);
  if (rc)
    fprintf(stderr, "\n    %s", core_err_msg());
  CU_ASSERT_FATAL(rc == 0);
  CU_ASSERT_FATAL(w.n == 2);
  CU_ASSERT_STRING_EQUAL(w.res[0].status, "ok");
  CU_ASSERT(w.res[0].has_job);
  CU_ASSERT_STRING_EQUAL(w.res[1].status, "timeout");
  CU_ASSERT(!w.res[1].has_job);
  sim_sweep_free(&w);
  sim_scenario_free(s);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("sweep", suite_init, suite_clean);
  CU_add_test(s, "the job level's work is bounded by simulation.max_events", test_bound);
  CU_add_test(s, "progress on stderr changes nothing in the results", test_progress);
  CU_add_test(s, "the step level is shared the same way by any workers and shards", test_shared_step_level);
  CU_add_test(s, "points of the same world draw the same jitter", test_common_jitter);
  CU_add_test(s, "points that cannot run are not bounded by simulation.max_events", test_bound_skips_no_run);
}

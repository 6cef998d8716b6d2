/* sim/tb: predictions as TensorBoard scalars. The step axis is the
 * innermost swept dimension: whole-number values become the steps, in
 * growing order whatever the sweep's order; fractional values become
 * positions; one run per combination of the other swept dimensions; values
 * equal the sweep's results (float32); the same study gives the same bytes.
 * TensorBoard's own reader checks the files in the tensorboard integration
 * test. */
#include "simutil.h"
#include "testutil.h"

#include "sim/sweep.h"
#include "sim/tb.h"

#include "core/err.h"
#include "core/tbwriter.h"

#include "tbevent.pb-c.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[4096];

static int suite_init(void) { return tu_mkdtemp(dir, sizeof dir, "sim_tb"); }
static int suite_clean(void) {
  tu_rmdir(dir);
  return 0;
}

#define SCENARIO(name, cluster, ddp)                                                                                   \
  "name = \"" name "\";\n"                                                                                             \
  "profile = \"cpu-test.cfg\";\n"                                                                                      \
  "model = \"../../scenarios/models/mlp-small.cfg\";\n"                                                                \
  "training = { batch = 32; precision = \"fp32\"; };\n"                                                                \
  "cluster = " cluster ";\n"                                                                                           \
  "networks = ( { name = \"measured\"; from_profile = true; } );\n"                                                    \
  "ddp = " ddp ";\n"

/* Each event's step and the values of two tags, from the run's file. */
typedef struct run_file {
  long step[16];
  double step_s[16], sweep[16];
  int n, damaged;
  char *bytes;
  size_t len;
} run_file;

static void read_run(const char *run_dir, const char *sweep_tag, run_file *rf) {
  char path[8192];
  memset(rf, 0, sizeof *rf);
  snprintf(path, sizeof path, "%s/" CORE_TB_PREFIX "0000000000.ddpsim-simulate", run_dir);
  rf->bytes = tu_read_file(path, &rf->len);
  rf->damaged = rf->bytes == NULL;
  size_t off = 0;
  int first = 1;
  while (rf->bytes && off < rf->len && rf->n < 16) {
    const unsigned char *data;
    size_t len, used;
    if (core_tb_record((unsigned char *)rf->bytes + off, rf->len - off, &data, &len, &used) != 0) {
      rf->damaged = 1;
      break;
    }
    off += used;
    Tb__Event *e = tb__event__unpack(NULL, len, data);
    if (!first && e && e->what_case == TB__EVENT__WHAT_SUMMARY) {
      rf->step[rf->n] = (long)e->step;
      for (size_t i = 0; i < e->summary->n_value; i++) {
        if (!strcmp(e->summary->value[i]->tag, "Predicted/StepTime"))
          rf->step_s[rf->n] = e->summary->value[i]->simple_value;
        if (!strcmp(e->summary->value[i]->tag, sweep_tag))
          rf->sweep[rf->n] = e->summary->value[i]->simple_value;
      }
      rf->n++;
    }
    CU_ASSERT(e != NULL && e->wall_time == 0.0);
    first = 0;
    tb__event__free_unpacked(e, NULL);
  }
}

static int run_study(const char *text, sim_scenario **s, sim_sweep *w) {
  if (!(*s = tu_load_string(text, TU_DATA("tb-scenario.cfg"))))
    return -1;
  sim_sweep_opts o = {.jobs = 1, .n_shards = 1, .trace_point = -1};
  return sim_sweep_run(*s, &o, w);
}

/* nodes = [4, 1, 2] innermost, overlap swept: two runs, steps 1, 2, 4. */
static void test_whole_values(void) {
  sim_scenario *s;
  sim_sweep w;
  CU_ASSERT_EQUAL_FATAL(run_study(SCENARIO("tbwhole", "{ nodes = [4, 1, 2]; devices_per_node = 1; }",
                                      "{ backend = \"gloo\"; overlap = [true, false]; }"),
                            &s, &w),
      0);
  char out[4400], run[8800];
  snprintf(out, sizeof out, "%s/whole", dir);
  CU_ASSERT_EQUAL(sim_tb_check(s, out, NULL), 0);
  CU_ASSERT_EQUAL_FATAL(sim_tb_write(s, &w, out), 0);
  static const long want_nodes[] = {1, 2, 4};
  for (int ov = 0; ov < 2; ov++) {
    snprintf(run, sizeof run, "%s/tbwhole/overlap=%d", out, 1 - ov);
    run_file rf;
    read_run(run, "Sweep/nodes", &rf);
    CU_ASSERT_FALSE(rf.damaged);
    CU_ASSERT_EQUAL_FATAL(rf.n, 3);
    for (int k = 0; k < 3; k++) {
      CU_ASSERT_EQUAL(rf.step[k], want_nodes[k]);
      CU_ASSERT_EQUAL(rf.sweep[k], (double)want_nodes[k]);
      /* Point order: overlap outer, nodes [4, 1, 2] inner. */
      long point = ov * 3 + (want_nodes[k] == 4 ? 0 : want_nodes[k] == 1 ? 1 : 2);
      CU_ASSERT_EQUAL(w.res[point].pt.nodes, (int)want_nodes[k]);
      CU_ASSERT_EQUAL(rf.step_s[k], (double)(float)w.res[point].step_s);
    }
    /* The same study, the same bytes. */
    char again[8800];
    snprintf(again, sizeof again, "%s/again", dir);
    CU_ASSERT_EQUAL(sim_tb_write(s, &w, again), 0);
    snprintf(again + strlen(again), sizeof again - strlen(again), "/tbwhole/overlap=%d", 1 - ov);
    run_file rf2;
    read_run(again, "Sweep/nodes", &rf2);
    CU_ASSERT(rf.len == rf2.len && rf.bytes && rf2.bytes && memcmp(rf.bytes, rf2.bytes, rf.len) == 0);
    free(rf.bytes);
    free(rf2.bytes);
  }
  sim_sweep_free(&w);
  sim_scenario_free(s);
}

/* bucket_cap_mb = [25.0, 0.5] innermost, nothing else swept: one run,
 * DIR/NAME, steps are the positions 0, 1. */
static void test_fractional_values(void) {
  sim_scenario *s;
  sim_sweep w;
  CU_ASSERT_EQUAL_FATAL(run_study(SCENARIO("tbfrac", "{ nodes = 2; devices_per_node = 1; }",
                                      "{ backend = \"gloo\"; bucket_cap_mb = [25.0, 0.5]; }"),
                            &s, &w),
      0);
  char out[4400], run[8800];
  snprintf(out, sizeof out, "%s/frac", dir);
  CU_ASSERT_EQUAL_FATAL(sim_tb_write(s, &w, out), 0);
  snprintf(run, sizeof run, "%s/tbfrac", out);
  run_file rf;
  read_run(run, "Sweep/bucket_cap_mb", &rf);
  CU_ASSERT_FALSE(rf.damaged);
  CU_ASSERT_EQUAL_FATAL(rf.n, 2);
  CU_ASSERT(rf.step[0] == 0 && rf.step[1] == 1);
  CU_ASSERT(rf.sweep[0] == 25.0 && rf.sweep[1] == 0.5);
  CU_ASSERT_EQUAL(rf.step_s[1], (double)(float)w.res[1].step_s);
  free(rf.bytes);
  /* A directory that cannot be made is refused before any work. */
  char bad[8800];
  snprintf(bad, sizeof bad, "%s/tbfrac/" CORE_TB_PREFIX "0000000000.ddpsim-simulate/x", out);
  CU_ASSERT_EQUAL(sim_tb_check(s, bad, NULL), CORE_EUSAGE);
  CU_ASSERT_EQUAL(sim_tb_check(s, "", NULL), CORE_EUSAGE);
  sim_sweep_free(&w);
  sim_scenario_free(s);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("sim tb", suite_init, suite_clean);
  CU_add_test(s, "whole values are the steps, in order; one run per other dimension", test_whole_values);
  CU_add_test(s, "fractional values become positions", test_fractional_values);
}

/* `ddpsim validate`'s comparison (calibrate/validate.h): a scenario point
 * simulated against a measured run's per-step CSV. The measured figures must
 * be the means over every rank's steps from --skip on; a run that did not time
 * communication (comm_s empty in every row, as bench/pytorch/ddp_mlp.py writes
 * without --time-comm) is compared on everything else; broken files name the
 * file, the line and what to do. */
#include "calibrate/validate.h"

#include "sim/scenario.h"

#include "core/err.h"

#include "testutil.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char scratch[4096];
static sim_scenario *scen;

static const char scenario_text[] = "profile = \"" TU_SRC(
    "scenarios/profiles/example-2core.cfg") "\";\n"
                                            "model = \"" TU_SRC(
                                                "scenarios/models/mlp-small.cfg") "\";\n"
                                                                                  "training = { batch = 32; precision "
                                                                                  "= \"fp32\"; optimizer = "
                                                                                  "\"sgd_momentum\"; };\n"
                                                                                  "cluster = { nodes = 1; "
                                                                                  "devices_per_node = 2; };\n"
                                                                                  "networks = ( { name = \"1GbE\"; "
                                                                                  "gbps = 1.0; latency_us = 14.0; } "
                                                                                  ");\n"
                                                                                  "ddp = { backend = \"gloo\"; "
                                                                                  "bucket_cap_mb = 25.0; overlap = "
                                                                                  "true; };\n"
                                                                                  "simulation = { steps = 20; ranks = "
                                                                                  "\"every\"; };\n";

static int suite_init(void) {
  if (tu_mkdtemp(scratch, sizeof scratch, "validate"))
    return -1;
  char path[4200];
  snprintf(path, sizeof path, "%s/point.cfg", scratch);
  if (tu_write_file(path, scenario_text))
    return -1;
  return sim_scenario_load(path, &scen) ? -1 : 0;
}

static int suite_clean(void) {
  sim_scenario_free(scen);
  tu_rmdir(scratch);
  return 0;
}

/* Write text as scratch/NAME and validate point 0 against it. */
static int validate_text(const char *name, const char *text, long skip, cal_validation *v) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", scratch, name);
  CU_ASSERT_FATAL(tu_write_file(path, text) == 0);
  core_err_clear();
  return cal_validate(scen, 0, path, skip, v);
}

#define HEADER "rank,attempt,step,step_s,compute_s,comm_s,exposed_comm_s\n"

/* Steps 0 and 1 are warm-up with outlandish values: skipping them must leave
 * the means of steps 2-4 of both ranks. */
static const char two_ranks[] = HEADER "0,0,0,9.0,9.0,9.0,9.0\n"
                                       "0,0,1,9.0,9.0,9.0,9.0\n"
                                       "0,0,2,0.10,0.04,0.08,0.06\n"
                                       "0,0,3,0.12,0.05,0.09,0.07\n"
                                       "0,0,4,0.11,0.04,0.10,0.07\n"
                                       "1,0,0,9.0,9.0,9.0,9.0\n"
                                       "1,0,1,9.0,9.0,9.0,9.0\n"
                                       "1,0,2,0.13,0.06,0.08,0.07\n"
                                       "1,0,3,0.10,0.05,0.07,0.05\n"
                                       "1,0,4,0.14,0.06,0.12,0.08\n";

static void test_means_after_skip(void) {
  cal_validation v;
  CU_ASSERT_EQUAL_FATAL(validate_text("two.csv", two_ranks, 2, &v), 0);
  /* Steps 2 to 4 of two ranks: three steps, six rows averaged. */
  CU_ASSERT_EQUAL(v.steps_used, 3);
  CU_ASSERT_EQUAL(v.rows_used, 6);
  CU_ASSERT_EQUAL(v.ranks_seen, 2);
  CU_ASSERT_DOUBLE_EQUAL(v.m[CAL_M_STEP].measured, 0.70 / 6, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(v.m[CAL_M_COMPUTE].measured, 0.30 / 6, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(v.m[CAL_M_COMM].measured, 0.54 / 6, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(v.m[CAL_M_EXPOSED].measured, 0.40 / 6, 1e-12);
  /* Throughput: 2 ranks x batch 32 per mean step. */
  CU_ASSERT_DOUBLE_EQUAL(v.m[CAL_M_THROUGHPUT].measured, 64 / (0.70 / 6), 1e-9);
  CU_ASSERT(v.m[CAL_M_STEP].predicted > 0);
  CU_ASSERT_DOUBLE_EQUAL(v.m[CAL_M_STEP].predicted, v.pred.step_s, 0);
  for (int k = 0; k < CAL_N_METRICS; k++)
    CU_ASSERT_DOUBLE_EQUAL(v.m[k].rel_err, (v.m[k].predicted - v.m[k].measured) / v.m[k].measured, 1e-12);
}

/* PyTorch's built-in allreduce, not timed: comm_s empty in every row. The
 * other metrics are compared as usual; communication is "not measured". */
static void test_comm_not_measured(void) {
  static const char text[] = HEADER "0,0,0,0.10,0.04,,0.06\n"
                                    "0,0,1,0.12,0.05,,0.07\n"
                                    "1,0,0,0.13,0.06,,0.07\n"
                                    "1,0,1,0.10,0.05,,0.05\n";
  cal_validation v;
  CU_ASSERT_EQUAL_FATAL(validate_text("nocomm.csv", text, 0, &v), 0);
  CU_ASSERT(isnan(v.m[CAL_M_COMM].measured));
  CU_ASSERT(isnan(v.m[CAL_M_COMM].rel_err));
  CU_ASSERT_DOUBLE_EQUAL(v.m[CAL_M_STEP].measured, 0.45 / 4, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(v.m[CAL_M_EXPOSED].measured, 0.25 / 4, 1e-12);
  CU_ASSERT(isfinite(v.m[CAL_M_STEP].rel_err));
}

/* A trace without --skip (skip < 0): its leading warm-up steps are left out
 * as the GPU importer finds them (the fixture's first step, of twice the
 * time), and said so; a skip given wins. A CSV's default is its first 3. */
static void test_trace_warmup(void) {
  cal_validation v;
  int rc = cal_validate(scen, 0, TU_DATA("torch-trace/gpu-ddp.json"), -1, &v);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  CU_ASSERT(v.steps_used == 3 && v.rows_used == 3 && v.skip == 1 && v.skip_found);
  CU_ASSERT(fabs(v.m[CAL_M_STEP].measured - 1.265e-3) < 1e-9);
  CU_ASSERT_EQUAL_FATAL(cal_validate(scen, 0, TU_DATA("torch-trace/gpu-ddp.json"), 0, &v), 0);
  CU_ASSERT(v.steps_used == 4 && v.skip == 0 && !v.skip_found);
  CU_ASSERT(fabs(v.m[CAL_M_STEP].measured - (2.530e-3 + 3 * 1.265e-3) / 4) < 1e-9);
  CU_ASSERT_EQUAL_FATAL(validate_text("default.csv", two_ranks, -1, &v), 0);
  CU_ASSERT(v.steps_used == 2 && v.rows_used == 4 && v.skip == CAL_VALIDATE_CSV_SKIP && !v.skip_found);
}

/* A trace holding one step twice is refused, not averaged with the step
 * counted twice. */
static void test_trace_step_twice(void) {
  static const char step2[] = "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"pid\":1,"
                              "\"tid\":1000,\"ts\":1700000003795.0,\"dur\":1265.0,\"args\":{\"External id\":117}},";
  size_t len;
  char *text = tu_read_file(TU_DATA("torch-trace/gpu-ddp.json"), &len);
  CU_ASSERT_FATAL(text != NULL);
  char *at = strstr(text, step2), *twice = malloc(len + sizeof step2);
  CU_ASSERT_FATAL(at != NULL && twice != NULL);
  size_t head = (size_t)(at - text);
  memcpy(twice, text, head);
  memcpy(twice + head, step2, sizeof step2 - 1);
  memcpy(twice + head + sizeof step2 - 1, at, len - head + 1);
  cal_validation v;
  int rc = validate_text("step-twice.json", twice, 0, &v);
  CU_ASSERT_EQUAL(rc, CORE_EINVAL);
  if (rc != CORE_EINVAL || !strstr(core_err_msg(), "step-twice.json") || !strstr(core_err_msg(), "ProfilerStep#2"))
    fprintf(stderr, "\ngot %d: %s\n", rc, core_err_msg());
  free(twice);
  free(text);
}

/* A trace of one GPU is no measurement of a point simulated on another:
 * the fixture's A100 (80 GB) steps against a V100 profile, or the 40 GB
 * A100's, are refused naming both GPUs; against the 80 GB A100's profile
 * they compare. */
static void test_trace_of_another_gpu(void) {
  static const char *const profiles[] = {"dgx1-v100.cfg", "dgx-a100-40gb.cfg", "dgx-a100.cfg"};
  static const char *const simulated[] = {"Tesla V100-SXM2-32GB", "A100-SXM4-40GB"};
  for (int k = 0; k < 3; k++) {
    char text[2048], path[4200];
    snprintf(text, sizeof text,
        "profile = \"%s/%s\";\nmodel = \"%s\";\ntraining = { batch = 32; precision = \"fp32\"; };\n"
        "cluster = { nodes = 1; devices_per_node = 2; };\n"
        "networks = ( { name = \"ib\"; gbps = 100.0; latency_us = 5.0; } );\nddp = { backend = \"nccl\"; };\n",
        TU_SRC("scenarios/profiles"), profiles[k], TU_SRC("scenarios/models/mlp-small.cfg"));
    snprintf(path, sizeof path, "%s/gpu-point-%d.cfg", scratch, k);
    CU_ASSERT_FATAL(tu_write_file(path, text) == 0);
    sim_scenario *sc = NULL;
    CU_ASSERT_FATAL(sim_scenario_load(path, &sc) == 0);
    cal_validation v;
    int rc = cal_validate(sc, 0, TU_DATA("torch-trace/gpu-ddp.json"), -1, &v);
    if (k < 2) {
      CU_ASSERT_EQUAL(rc, CORE_EINVAL);
      const char *msg = core_err_msg();
      int named = strstr(msg, "gpu-ddp.json") && strstr(msg, "NVIDIA A100-SXM4-80GB") && strstr(msg, simulated[k]) &&
                  strstr(msg, profiles[k]);
      CU_ASSERT(named);
      if (rc != CORE_EINVAL || !named)
        fprintf(stderr, "\ngot %d: %s\n", rc, msg);
    } else {
      if (rc)
        fprintf(stderr, "\n%s\n", core_err_msg());
      CU_ASSERT_EQUAL(rc, 0);
    }
    sim_scenario_free(sc);
  }
}

static void expect_error(const char *name, const char *text, long skip, const char *want1, const char *want2) {
  cal_validation v;
  CU_ASSERT_EQUAL(validate_text(name, text, skip, &v), CORE_EINVAL);
  const char *msg = core_err_msg();
  if (!strstr(msg, want1) || (want2 && !strstr(msg, want2)))
    fprintf(stderr, "\n%s: unexpected message: %s\n", name, msg);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, want1));
  if (want2)
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, want2));
}

/* A broken measured file, the --skip it is read with, and two pieces of
 * the message it must be refused with (the second may be NULL). */
typedef struct {
  const char *name, *text;
  long skip;
  const char *want1, *want2;
} broken_file;

static void test_broken_files(void) {
  const broken_file bad[] = {
      /* comm_s timed in some rows only. */
      {"mixed.csv", HEADER "0,0,0,0.10,0.04,0.08,0.06\n1,0,0,0.13,0.06,,0.07\n", 0,
          "mixed.csv:3: column 'comm_s' is empty, but line 2 has a number there",
          "in every row (not measured) or in none"},
      {"mixed2.csv", HEADER "0,0,0,0.10,0.04,,0.06\n1,0,0,0.13,0.06,0.08,0.07\n", 0,
          "mixed2.csv:2: column 'comm_s' is empty, but line 3 has a number there", NULL},
      {"word.csv", HEADER "0,0,0,0.10,0.04,0.08,0.06\n1,0,0,fast,0.06,0.08,0.07\n", 0,
          "word.csv:3: column 'step_s' holds 'fast', not a number", NULL},
      /* An empty step time is not "not measured". */
      {"empty-step.csv", HEADER "0,0,0,,0.04,0.08,0.06\n1,0,0,0.1,0.06,0.08,0.07\n", 0,
          "empty-step.csv:2: column 'step_s'", NULL},
      {"shape.csv", HEADER "0,0,0,0.1,0.04,0.08,0.06\n1,0,0,0.1,0.04,0.08,0.06\n2,0,0,0.1,0.04,0.08,0.06\n", 0,
          "holds ranks 0 to 2, but point 0 of", "compare runs of the same shape"},
      {"short.csv", two_ranks, 5, "no step at or after step 5", "lower --skip"},
      /* Times that no run measures: negative, NaN, a zero step; ranks and
       * steps that are not whole numbers >= 0. */
      {"negative.csv", HEADER "0,0,0,0.10,0.04,0.08,0.06\n1,0,0,-0.5,0.06,0.08,0.07\n", 0,
          "negative.csv:3: column 'step_s' holds -0.5, not a time in seconds > 0", NULL},
      {"nan.csv", HEADER "0,0,0,0.10,0.04,0.08,0.06\n1,0,0,0.1,nan,0.08,0.07\n", 0,
          "nan.csv:3: column 'compute_s' holds 'nan', not a number", NULL},
      {"zero-step.csv", HEADER "0,0,0,0,0.04,0.08,0.06\n", 0,
          "zero-step.csv:2: column 'step_s' holds 0, not a time in seconds > 0", NULL},
      {"neg-comm.csv", HEADER "0,0,0,0.10,0.04,-1e-3,0.06\n", 0,
          "neg-comm.csv:2: column 'comm_s' holds -1e-3, not a time in seconds >= 0", NULL},
      {"neg-exposed.csv", HEADER "0,0,0,0.10,0.04,0.08,-0.06\n", 0,
          "neg-exposed.csv:2: column 'exposed_comm_s' holds -0.06", NULL},
      {"neg-rank.csv", HEADER "-1,0,0,0.10,0.04,0.08,0.06\n", 0,
          "neg-rank.csv:2: column 'rank' holds -1, not a whole number >= 0", NULL},
      {"half-step.csv", HEADER "0,0,2.5,0.10,0.04,0.08,0.06\n", 0,
          "half-step.csv:2: column 'step' holds 2.5, not a whole number >= 0", NULL},
      /* Lines as the file has them: past blank lines and a quoted field
       * (attempt, not read) over two lines. */
      {"blank-lines.csv", HEADER "\n0,0,0,0.10,0.04,0.08,0.06\n\n\n1,0,0,fast,0.06,0.08,0.07\n", 0,
          "blank-lines.csv:6: column 'step_s' holds 'fast', not a number", NULL},
      {"quoted-lines.csv", HEADER "0,\"0\n\",0,0.10,0.04,0.08,0.06\n1,0,0,-0.5,0.06,0.08,0.07\n", 0,
          "quoted-lines.csv:4: column 'step_s' holds -0.5", NULL},
      {"mixed-blank.csv", HEADER "0,0,0,0.10,0.04,0.08,0.06\n\n1,0,0,0.13,0.06,,0.07\n", 0,
          "mixed-blank.csv:4: column 'comm_s' is empty, but line 2 has a number there", NULL},
      {"mixed-quoted.csv", HEADER "0,\"0\n\n\",0,0.10,0.04,,0.06\n1,0,0,0.13,0.06,0.08,0.07\n", 0,
          "mixed-quoted.csv:2: column 'comm_s' is empty, but line 5 has a number there", NULL},
      {"neg-rank-late.csv", HEADER "0,0,0,0.10,0.04,0.08,0.06\n\n\n-1,0,0,0.10,0.04,0.08,0.06\n", 0,
          "neg-rank-late.csv:5: column 'rank' holds -1", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    expect_error(bad[i].name, bad[i].text, bad[i].skip, bad[i].want1, bad[i].want2);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("validate", suite_init, suite_clean);
  CU_add_test(s, "means of every rank's steps after --skip", test_means_after_skip);
  CU_add_test(s, "a trace's warm-up left out by the importer's rule unless --skip", test_trace_warmup);
  CU_add_test(s, "a trace with a step twice refused", test_trace_step_twice);
  CU_add_test(s, "a trace of another GPU than the point's refused", test_trace_of_another_gpu);
  CU_add_test(s, "comm_s empty in every row: not measured", test_comm_not_measured);
  CU_add_test(s, "broken measured files: file, line, what to do", test_broken_files);
}

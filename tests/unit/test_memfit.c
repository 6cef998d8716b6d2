/* Memory per GPU (sim/memfit): the estimate's arithmetic on a model small
 * enough to count by hand, the points it flags on shipped models and
 * profiles, and the profile's device.memory_GB. */
#include "sim/memfit.h"
#include "sim/predict.h"
#include "sim/scenario.h"
#include "sim/sweep.h"

#include "core/err.h"
#include "core/model.h"
#include "core/profile.h"

#include "simutil.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <libconfig.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char scratch[4096];

static int suite_init(void) { return tu_mkdtemp(scratch, sizeof scratch, "memfit"); }
static int suite_clean(void) {
  tu_rmdir(scratch);
  return 0;
}

/* 1,100 parameters; 400 + 100 bytes of activations per sample at fp32. */
static const char *const tiny_model = "model = { name = \"tiny\"; source = \"test\"; layers = (\n"
                                      "  { name = \"a\"; params = [1000, 10]; fwd_flops = 1e6; act_bytes = 400.0; },\n"
                                      "  { name = \"b\"; params = [90]; fwd_flops = 1e5; act_bytes = 100.0; } ); };\n";

static core_model *load_tiny(void) {
  config_t cfg;
  core_model *m = NULL;
  config_init(&cfg);
  if (config_read_string(&cfg, tiny_model) == CONFIG_TRUE)
    if (core_model_from_setting(config_root_setting(&cfg), "tiny.cfg", &m) != 0)
      fprintf(stderr, "\nmodel did not load: %s\n", core_err_msg());
  config_destroy(&cfg);
  return m;
}

static void test_arithmetic(void) {
  core_model *m = load_tiny();
  CU_ASSERT_FATAL(m != NULL);
  CU_ASSERT_EQUAL_FATAL(m->n_params, 1100);
  sim_memfit f;
  /* fp32 Adam with DDP's bucket copy: 4 + 4 + 8 + 4 = 20 bytes a parameter
   * of state; 500 bytes a sample at fp32, 8 samples. */
  sim_memfit_estimate(m, SIM_PREC_FP32, 8, SIM_OPT_ADAM, 0, 1, &f);
  CU_ASSERT_DOUBLE_EQUAL(f.weights, 4400.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.grads, 4400.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.optimizer, 8800.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.buckets, 4400.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.casts, 0.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.step_temps, 4400.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.state, 22000.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.activations, 4000.0, 1e-9);
  /* Backward at b: every activation (4,000) and b's gradients (360); at a:
   * a's activations (3,200) and every gradient (4,400), the worse. The
   * step: every gradient and Adam's temporaries, worse still. */
  CU_ASSERT_DOUBLE_EQUAL(f.backward_peak, 17600.0 + 7600.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.step_peak, 17600.0 + 4400.0 + 4400.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.total, 26400.0, 1e-9);
  /* gradient_as_bucket_view: no copy; no DDP: none either. */
  sim_memfit_estimate(m, SIM_PREC_FP32, 8, SIM_OPT_ADAM, 1, 1, &f);
  CU_ASSERT_DOUBLE_EQUAL(f.total, 22000.0, 1e-9);
  sim_memfit_estimate(m, SIM_PREC_FP32, 8, SIM_OPT_ADAM, 0, 0, &f);
  CU_ASSERT_DOUBLE_EQUAL(f.total, 22000.0, 1e-9);
  /* Plain SGD updates in place: backward is the peak. */
  sim_memfit_estimate(m, SIM_PREC_FP32, 8, SIM_OPT_SGD, 0, 0, &f);
  CU_ASSERT_DOUBLE_EQUAL(f.step_temps, 0.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.step_peak, 8800.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.total, 4400.0 + 7600.0, 1e-9);
  /* gradient_as_bucket_view: the gradients are the buckets, held all of
   * backward beside every activation. */
  sim_memfit_estimate(m, SIM_PREC_FP32, 8, SIM_OPT_SGD, 1, 1, &f);
  CU_ASSERT_DOUBLE_EQUAL(f.buckets, 0.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.total, 4400.0 + 4400.0 + 4000.0, 1e-9);
  /* Autocast, plain SGD: fp32 weights, gradients and buckets, 2-byte casts
   * of the weights held through backward; half-width activations. */
  sim_memfit_estimate(m, SIM_PREC_AMP_BF16, 8, SIM_OPT_SGD, 0, 1, &f);
  CU_ASSERT_DOUBLE_EQUAL(f.optimizer, 0.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.casts, 2200.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.state, 15400.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.activations, 2000.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.step_peak, 13200.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.total, 8800.0 + 2200.0 + 1600.0 + 4400.0, 1e-9);
  /* A pure bf16 model with momentum: everything 2 bytes, one buffer. */
  sim_memfit_estimate(m, SIM_PREC_BF16, 4, SIM_OPT_SGD_MOMENTUM, 0, 1, &f);
  CU_ASSERT_DOUBLE_EQUAL(f.state, 4.0 * 2200.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.activations, 1000.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.total, 3.0 * 2200.0 + 800.0 + 2200.0, 1e-9);
  /* tf32 keeps fp32 activations. */
  sim_memfit_estimate(m, SIM_PREC_TF32, 1, SIM_OPT_SGD, 0, 1, &f);
  CU_ASSERT_DOUBLE_EQUAL(f.activations, 500.0, 1e-9);
  /* More batch, more memory. */
  sim_memfit g;
  sim_memfit_estimate(m, SIM_PREC_TF32, 2, SIM_OPT_SGD, 0, 1, &g);
  CU_ASSERT(g.total > f.total);
  core_model_free(m);
}

/* A layer marked inplace writes over its input: its act_bytes hold no
 * memory (the tiny model with a ReLU after b). */
static void test_inplace(void) {
  static const char *const text =
      "model = { name = \"tiny\"; source = \"test\"; layers = (\n"
      "  { name = \"a\"; params = [1000, 10]; fwd_flops = 1e6; act_bytes = 400.0; },\n"
      "  { name = \"b\"; params = [90]; fwd_flops = 1e5; act_bytes = 100.0; },\n"
      "  { name = \"relu\"; kind = \"activation\"; fwd_flops = 0.0; act_bytes = 100.0; inplace = %s; } ); };\n";
  char buf[1024];
  double per_sample[2];
  for (int k = 0; k < 2; k++) {
    snprintf(buf, sizeof buf, text, k ? "true" : "false");
    config_t cfg;
    core_model *m = NULL;
    config_init(&cfg);
    CU_ASSERT_FATAL(config_read_string(&cfg, buf) == CONFIG_TRUE);
    CU_ASSERT_FATAL(core_model_from_setting(config_root_setting(&cfg), "tiny.cfg", &m) == 0);
    config_destroy(&cfg);
    CU_ASSERT_EQUAL(m->layers[2].inplace, k);
    sim_memfit f;
    sim_memfit_estimate(m, SIM_PREC_FP32, 8, SIM_OPT_SGD, 0, 0, &f);
    per_sample[k] = f.act_per_sample;
    /* Backward at a: its activations and every gradient; at relu: every
     * activation and none. */
    CU_ASSERT_DOUBLE_EQUAL(f.total, 4400.0 + fmax(3200.0 + 4400.0, 8.0 * f.act_per_sample), 1e-9);
    core_model_free(m);
  }
  CU_ASSERT_DOUBLE_EQUAL(per_sample[0], 600.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(per_sample[1], 500.0, 1e-9);
}

/* One point of a shipped model on a shipped profile, one GPU. */
static sim_scenario *load_point(const char *profile, const char *model, const char *training) {
  char text[2048];
  snprintf(text, sizeof text,
      "profile = \"%s\"; model = \"%s\";\n"
      "training = { %s };\n"
      "cluster = { nodes = 1; devices_per_node = 1; };\n"
      "networks = ( { name = \"IB\"; gbps = 100.0; latency_us = 2.0; } );\n"
      "ddp = { backend = \"nccl\"; };\nsimulation = { steps = 1; seed = 1; };\n",
      profile, model, training);
  return tu_load_string(text, TU_SRC("scenarios/inline-test.cfg"));
}

/* GPT-2 XL (1.56e9 parameters) in fp32 with Adam holds 20 bytes a parameter,
 * about 31 GB, before its activations: more than a 16 GB V100. */
static void test_gpt2_xl_on_v100_16gb(void) {
  sim_scenario *s = load_point(
      "profiles/dgx1-v100.cfg", "models/gpt2-xl.cfg", "batch = 1; precision = \"fp32\"; optimizer = \"adam\";");
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_DOUBLE_EQUAL(s->profile->memory_GB, 32.0, 1e-12);
  s->profile->memory_GB = 16.0; /* the SXM2 board with 16 GB */
  sim_point_result r;
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  double state_GB = (double)s->models[0]->n_params * 20.0 / 1e9;
  CU_ASSERT(state_GB > 30.0 && state_GB < 32.0);
  CU_ASSERT(r.mem_GB > state_GB);
  CU_ASSERT_STRING_EQUAL(r.status, "oom");
  CU_ASSERT(strstr(r.note, "point 0 (model gpt2-xl") != NULL);
  CU_ASSERT(strstr(r.note, "16 GB") != NULL);
  CU_ASSERT(strstr(r.note, "model state alone") != NULL);
  CU_ASSERT(strstr(r.note, "more memory") != NULL);
  CU_ASSERT(r.step_s > 0); /* still simulated */
  /* Unknown capacity: nothing is checked. */
  s->profile->memory_GB = 0;
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  CU_ASSERT_STRING_EQUAL(r.status, "ok");
  CU_ASSERT_STRING_EQUAL(r.note, "");
  sim_scenario_free(s);
}

static void test_resnet50_on_a100(void) {
  sim_scenario *s = load_point("profiles/dgx-a100-40gb.cfg", "models/resnet50.cfg",
      "batch = 32; precision = \"fp32\"; optimizer = \"sgd_momentum\";");
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_DOUBLE_EQUAL(s->profile->memory_GB, 40.0, 1e-12);
  sim_point_result r;
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  CU_ASSERT_STRING_EQUAL(r.status, "ok");
  CU_ASSERT(r.mem_GB > 0.4 && r.mem_GB < 40.0);
  sim_scenario_free(s);
}

/* A batch too large for the activations: the note names the largest batch
 * that fits, and that batch does fit. */
static void test_largest_batch(void) {
  sim_scenario *s = load_point("profiles/dgx-a100-40gb.cfg", "models/resnet50.cfg",
      "batch = 4096; precision = \"fp32\"; optimizer = \"sgd_momentum\";");
  CU_ASSERT_FATAL(s != NULL);
  sim_point p;
  sim_scenario_point(s, 0, &p);
  sim_memfit f;
  sim_memfit_point(s, &p, &f);
  CU_ASSERT_FATAL(sim_memfit_over(&f, s->profile));
  char note[320];
  sim_memfit_note(&f, s->profile, &p, note, sizeof note);
  const char *at = strstr(note, "lower the batch to ");
  CU_ASSERT_FATAL(at != NULL);
  CU_ASSERT(strstr(note, "autocast") != NULL);
  int fit = atoi(at + strlen("lower the batch to "));
  CU_ASSERT_FATAL(fit >= 1 && fit < 4096);
  p.batch = fit;
  sim_memfit_point(s, &p, &f);
  CU_ASSERT(!sim_memfit_over(&f, s->profile));
  p.batch = fit + 1;
  sim_memfit_point(s, &p, &f);
  CU_ASSERT(sim_memfit_over(&f, s->profile));
  sim_scenario_free(s);
}

/* The CSV's mem_GB column, before status. */
static void test_csv_column(void) {
  sim_scenario *s = load_point(
      "profiles/dgx1-v100.cfg", "models/gpt2-xl.cfg", "batch = 1; precision = \"fp32\"; optimizer = \"adam\";");
  CU_ASSERT_FATAL(s != NULL);
  s->profile->memory_GB = 16.0;
  sim_sweep_opts o = {.jobs = 1, .trace_point = -1};
  sim_sweep w;
  CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
  char path[4200];
  snprintf(path, sizeof path, "%s/out.csv", scratch);
  CU_ASSERT_FATAL(sim_sweep_write_csv(s, &w, path, 1, NULL) == 0);
  char *text = tu_read_file(path, NULL);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT(strstr(text, ",step_sd_s,mem_GB,status\n") != NULL);
  char want[64];
  snprintf(want, sizeof want, ",%.9g,oom\n", w.res[0].mem_GB);
  CU_ASSERT(strstr(text, want) != NULL);
  free(text);
  sim_sweep_free(&w);
  sim_scenario_free(s);
}

/* The shipped DGX-1 profile with its memory_GB key replaced by key (""
 * for none), written to the scratch directory; *line: the key's line. */
static int parse_profile(const char *key, core_profile **out, int *line) {
  static const char old[] = "memory_GB = 32.0;";
  char path[4200];
  *out = NULL;
  char *text = tu_read_file(TU_SRC("scenarios/profiles/dgx1-v100.cfg"), NULL);
  if (!text)
    return -1;
  char *at = strstr(text, old);
  if (!at) {
    free(text);
    return -1;
  }
  *line = 1;
  for (const char *c = text; c < at; c++)
    *line += *c == '\n';
  size_t n = strlen(text) + strlen(key) + 1;
  char *edited = malloc(n);
  if (edited)
    snprintf(edited, n, "%.*s%s%s", (int)(at - text), text, key, at + strlen(old));
  snprintf(path, sizeof path, "%s/p.cfg", scratch);
  int rc = edited && tu_write_file(path, edited) == 0 ? core_profile_load(path, out) : -1;
  free(edited);
  free(text);
  return rc;
}

static void test_profile_key(void) {
  core_profile *p = NULL;
  int line = 0, rc = parse_profile("memory_GB = 16.0;", &p, &line);
  if (rc)
    fprintf(stderr, "\nprofile did not load: %s\n", core_err_msg());
  CU_ASSERT_FATAL(rc == 0);
  CU_ASSERT_DOUBLE_EQUAL(p->memory_GB, 16.0, 1e-12);
  /* Written and read back. */
  char path[4200];
  snprintf(path, sizeof path, "%s/w.cfg", scratch);
  CU_ASSERT_FATAL(core_profile_write(p, path) == 0);
  core_profile *q = NULL;
  CU_ASSERT_FATAL(core_profile_load(path, &q) == 0);
  CU_ASSERT_EQUAL(q->memory_GB, 16.0);
  core_profile_free(q);
  core_profile_free(p);
  /* Absent: 0, unknown. */
  CU_ASSERT_FATAL(parse_profile("", &p, &line) == 0);
  CU_ASSERT_EQUAL(p->memory_GB, 0.0);
  core_profile_free(p);
  /* Negative: an error at the key's line. */
  CU_ASSERT(parse_profile("memory_GB = -16.0;", &p, &line) != 0);
  CU_ASSERT(p == NULL);
  char where[64];
  snprintf(where, sizeof where, "p.cfg:%d:", line);
  CU_ASSERT(strstr(core_err_msg(), where) != NULL);
  CU_ASSERT(strstr(core_err_msg(), "memory_GB") != NULL);
}

/* The longest note (a model name of 63 characters, the largest index and
 * batch, every figure at its widest, the autocast advice and the hint to
 * shard the optimizer state) fits in a result's note, its advice whole. */
static void test_note_fits(void) {
  int64_t elems[2] = {10, 10};
  core_model m = {.n_layers = 0, .n_tensors = 2, .tensor_elems = elems};
  memset(m.name, 'x', sizeof m.name - 1);
  core_profile pr = {.memory_GB = 1.23456e5};
  sim_point p = {.index = LONG_MAX,
      .model = &m,
      .precision = SIM_PREC_FP32,
      .batch = CORE_BATCH_MAX,
      .nodes = 100000,
      .per_node = 10000};
  sim_memfit f = {.state = 1.23456e-30,
      .act_per_sample = 1.2345e10,
      .activations = 1.2345e100,
      .total = 1.2345e100,
      .prec = SIM_PREC_FP32,
      .opt = SIM_OPT_ADAM,
      .opt_share = 1.0,
      .ddp = 1};
  sim_point_result r;
  sim_memfit_note(&f, &pr, &p, r.note, sizeof r.note);
  const char *end = " GB)";
  size_t n = strlen(r.note), k = strlen(end);
  CU_ASSERT(strstr(r.note, "lower the batch to ") != NULL && strstr(r.note, "autocast") != NULL);
  CU_ASSERT(strstr(r.note, "ddp.zero_optimizer = true") != NULL);
  CU_ASSERT(n >= k && strcmp(r.note + n - k, end) == 0);
  if (n < k || strcmp(r.note + n - k, end) != 0)
    fprintf(stderr, "\n    cut short (%zu of %zu bytes): %s", n, sizeof r.note, r.note);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("memfit", suite_init, suite_clean);
  CU_add_test(s, "the estimate's arithmetic on a tiny model", test_arithmetic);
  CU_add_test(s, "an in-place layer holds no memory of its own", test_inplace);
  CU_add_test(s, "GPT-2 XL, fp32 Adam, on a 16 GB V100: does not fit", test_gpt2_xl_on_v100_16gb);
  CU_add_test(s, "ResNet-50 at batch 32 on an A100: fits", test_resnet50_on_a100);
  CU_add_test(s, "the note's largest batch fits, one more does not", test_largest_batch);
  CU_add_test(s, "the CSV's mem_GB column and oom status", test_csv_column);
  CU_add_test(s, "profile: device.memory_GB", test_profile_key);
  CU_add_test(s, "the longest note is whole", test_note_fits);
}

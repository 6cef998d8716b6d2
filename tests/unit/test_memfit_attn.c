/* Memory per GPU (sim/memfit): what an attention layer saves for backward
 * besides its output, fused and unfused, counted by hand on a small layer,
 * which kernel training.attention's "auto" picks on a CPU and a GPU, and
 * the model keys that give the score matrices' shape; and that a point's
 * compute time (sim/predict, sim/compute) follows the same answer. */
#include "sim/memfit.h"
#include "sim/predict.h"
#include "sim/scenario.h"

#include "core/err.h"
#include "core/model.h"

#include "simutil.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <libconfig.h>
#include <stdio.h>
#include <string.h>

/* 1,100 parameters; three layers of 4 tokens x 8 features (128 bytes a
 * sample at fp32), the middle one an attention of 2 heads over 4 tokens
 * (2 x 4 x 4 = 32 scores a sample) that drops weights with dropout %s. */
static const char *const attn_model =
    "model = { name = \"attn\"; source = \"test\"; seq_len = 4; layers = (\n"
    "  { name = \"a\"; params = [1000, 10]; fwd_flops = 1e6; act_bytes = 128.0; },\n"
    "  { name = \"attn\"; kind = \"attention\"; fwd_flops = 1e3; act_bytes = 128.0; heads = 2; dropout = %s; },\n"
    "  { name = \"b\"; params = [90]; fwd_flops = 1e5; act_bytes = 128.0; } ); };\n";

static core_model *load_attn(const char *dropout) {
  char text[1024];
  snprintf(text, sizeof text, attn_model, dropout);
  config_t cfg;
  core_model *m = NULL;
  config_init(&cfg);
  if (config_read_string(&cfg, text) == CONFIG_TRUE)
    if (core_model_from_setting(config_root_setting(&cfg), "attn.cfg", &m) != 0)
      fprintf(stderr, "\nmodel did not load: %s\n", core_err_msg());
  config_destroy(&cfg);
  return m;
}

/* Bytes a sample the attention saves besides its output, for kernel attn
 * on a CPU (cpu) or a GPU, at precision prec. */
static double attn_saved(const core_model *m, enum sim_precision prec, enum sim_attention attn, int cpu) {
  sim_memfit f;
  sim_memfit_estimate_shard(m, prec, 1, SIM_OPT_SGD, 0, 0, 1.0, attn, cpu, &f);
  return f.attn_per_sample;
}

static void test_model_keys(void) {
  core_model *m = load_attn("0.1");
  CU_ASSERT_FATAL(m != NULL);
  CU_ASSERT_EQUAL(m->seq_len, 4);
  CU_ASSERT_EQUAL(m->layers[1].heads, 2);
  CU_ASSERT_EQUAL(m->layers[1].seq_len, 4); /* the model's */
  CU_ASSERT_DOUBLE_EQUAL(m->layers[1].dropout, 0.1, 1e-15);
  CU_ASSERT_EQUAL(m->layers[0].heads, 0);
  core_model_free(m);
}

/* Fused: the log-sum-exp, fp32, 2 heads x 4 tokens x 4 bytes = 32. Math:
 * the fp32 softmax output (32 x 4); with dropout the dropped weights
 * (32 x 4) and the mask, a bool (32) on a GPU, fp32 (32 x 4) on a CPU. Its
 * fp32 copies of the query, key and value replace the projections'
 * outputs: nothing more at fp32, half of 3 x 128 under autocast. */
static void test_hand_count(void) {
  core_model *m = load_attn("0.1");
  CU_ASSERT_FATAL(m != NULL);
  CU_ASSERT_DOUBLE_EQUAL(attn_saved(m, SIM_PREC_FP32, SIM_ATTN_FUSED, 0), 32.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(attn_saved(m, SIM_PREC_FP32, SIM_ATTN_FUSED, 1), 32.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(attn_saved(m, SIM_PREC_FP32, SIM_ATTN_MATH, 0), 128.0 + 128.0 + 32.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(attn_saved(m, SIM_PREC_FP32, SIM_ATTN_MATH, 1), 128.0 + 128.0 + 128.0, 1e-9);
  /* Half precision: the math kernel's copies and scores are fp32. */
  CU_ASSERT_DOUBLE_EQUAL(attn_saved(m, SIM_PREC_AMP_BF16, SIM_ATTN_MATH, 0), 192.0 + 288.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(attn_saved(m, SIM_PREC_BF16, SIM_ATTN_FUSED, 0), 32.0, 1e-9);
  core_model_free(m);
  /* No dropout: the softmax output alone of the score matrices. */
  m = load_attn("0.0");
  CU_ASSERT_FATAL(m != NULL);
  CU_ASSERT_DOUBLE_EQUAL(attn_saved(m, SIM_PREC_FP32, SIM_ATTN_MATH, 1), 128.0, 1e-9);
  core_model_free(m);
}

/* Auto: fused on a GPU, with dropout or without; on a CPU fused only
 * without dropout. */
static void test_auto(void) {
  core_model *m = load_attn("0.1");
  CU_ASSERT_FATAL(m != NULL);
  CU_ASSERT_DOUBLE_EQUAL(attn_saved(m, SIM_PREC_FP32, SIM_ATTN_AUTO, 0), 32.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(attn_saved(m, SIM_PREC_FP32, SIM_ATTN_AUTO, 1), 384.0, 1e-9);
  core_model_free(m);
  m = load_attn("0.0");
  CU_ASSERT_FATAL(m != NULL);
  CU_ASSERT_DOUBLE_EQUAL(attn_saved(m, SIM_PREC_FP32, SIM_ATTN_AUTO, 1), 32.0, 1e-9);
  core_model_free(m);
}

/* The saved tensors join the activations, and backward's peak holds them
 * until the attention's backward. Plain SGD, no DDP, fp32, 64 samples:
 * 4,400 bytes of weights; backward's worst point is at b, every
 * activation and b's 360 bytes of gradients. */
static void test_peak(void) {
  core_model *m = load_attn("0.1");
  CU_ASSERT_FATAL(m != NULL);
  sim_memfit f;
  sim_memfit_estimate_shard(m, SIM_PREC_FP32, 64, SIM_OPT_SGD, 0, 0, 1.0, SIM_ATTN_FUSED, 1, &f);
  CU_ASSERT_DOUBLE_EQUAL(f.act_per_sample, 384.0 + 32.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.activations, 64.0 * 416.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.total, 4400.0 + 64.0 * 416.0 + 360.0, 1e-9);
  sim_memfit_estimate_shard(m, SIM_PREC_FP32, 64, SIM_OPT_SGD, 0, 0, 1.0, SIM_ATTN_MATH, 1, &f);
  CU_ASSERT_DOUBLE_EQUAL(f.act_per_sample, 384.0 + 384.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(f.total, 4400.0 + 64.0 * 768.0 + 360.0, 1e-9);
  core_model_free(m);
}

/* BERT-large (24 layers, 16 heads, 512 tokens, attention dropout 0.1) on
 * the shipped CPU and GPU profiles, with training.attention given as
 * attention ("" for the default). */
static sim_scenario *bert_scenario(const char *profile, const char *backend, const char *attention) {
  char text[2048], key[64] = "";
  if (*attention)
    snprintf(key, sizeof key, "attention = \"%s\";", attention);
  snprintf(text, sizeof text,
      "profile = \"profiles/%s\"; model = \"models/bert-large.cfg\";\n"
      "training = { batch = 1; precision = \"fp32\"; %s };\n"
      "cluster = { nodes = 1; devices_per_node = 1; };\n"
      "networks = ( { name = \"n\"; gbps = 100.0; latency_us = 2.0; } );\n"
      "ddp = { backend = \"%s\"; };\nsimulation = { steps = 1; seed = 1; };\n",
      profile, key, backend);
  return tu_load_string(text, TU_SRC("scenarios/inline-test.cfg"));
}

static double bert_attn(const char *profile, const char *backend, const char *attention) {
  sim_scenario *s = bert_scenario(profile, backend, attention);
  if (!s)
    return -1;
  sim_point p;
  sim_scenario_point(s, 0, &p);
  sim_memfit f;
  sim_memfit_point(s, &p, &f);
  sim_scenario_free(s);
  return f.attn_per_sample;
}

/* Per layer and sequence, fp32: fused 16 x 512 x 4 bytes; math 16 x 512^2
 * scores of 12 bytes on a CPU (softmax output, fp32 mask, dropped
 * weights), 9 on a GPU. */
static void test_bert_large(void) {
  const double scores = 16.0 * 512 * 512;
  CU_ASSERT_DOUBLE_EQUAL(bert_attn("example-2core.cfg", "gloo", ""), 24.0 * 12.0 * scores, 1e-3);
  CU_ASSERT_DOUBLE_EQUAL(bert_attn("example-2core.cfg", "gloo", "fused"), 24.0 * 16 * 512 * 4, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(bert_attn("dgx-h100.cfg", "nccl", "auto"), 24.0 * 16 * 512 * 4, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(bert_attn("dgx-h100.cfg", "nccl", "math"), 24.0 * 9.0 * scores, 1e-3);
}

/* The point's compute time on the same scenarios: on the GPU profile "math"
 * costs BERT-large's attention unfused, slower than fused (at one sequence
 * the step is the host's to issue, and the math kernel issues 20 kernels a
 * layer to fused attention's 3), "auto" resolves to fused as the memory
 * estimate does; on the CPU profile every layer keeps the generic rule,
 * whatever the key. */
static double bert_compute(const char *profile, const char *backend, const char *attention) {
  sim_scenario *s = bert_scenario(profile, backend, attention);
  if (!s)
    return -1;
  sim_point p;
  sim_scenario_point(s, 0, &p);
  double t = sim_predict_compute_s(s, &p);
  sim_scenario_free(s);
  return t;
}

static void test_bert_large_time(void) {
  double gf = bert_compute("dgx-h100.cfg", "nccl", "fused"), ga = bert_compute("dgx-h100.cfg", "nccl", "auto");
  double gm = bert_compute("dgx-h100.cfg", "nccl", "math");
  double cf = bert_compute("example-2core.cfg", "gloo", "fused"),
         cm = bert_compute("example-2core.cfg", "gloo", "math");
  CU_ASSERT(gf > 0 && cf > 0);
  CU_ASSERT(ga == gf);
  CU_ASSERT(gm > gf);
  CU_ASSERT(cm == cf);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("memfit_attn", NULL, NULL);
  CU_add_test(s, "an attention layer's heads, seq_len and dropout", test_model_keys);
  CU_add_test(s, "fused and math attention's saved bytes, by hand", test_hand_count);
  CU_add_test(s, "auto: fused on a GPU, math on a CPU with dropout", test_auto);
  CU_add_test(s, "the saved tensors in backward's peak", test_peak);
  CU_add_test(s, "BERT-large on a CPU and a GPU profile", test_bert_large);
  CU_add_test(s, "BERT-large's compute time follows the same kernel", test_bert_large_time);
}

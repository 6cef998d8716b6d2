/* sim/compute: the per-operation compute model's promises, as ratios that
 * hold whatever its fitted efficiencies: a memory-bound layer's time follows
 * its bytes (half under autocast where its inputs are half, the fp32 list
 * staying fp32, every input of a residual add read), a compute-bound one
 * its FLOPs at the sweep's best rate once as large as the sweep's smallest
 * GEMM (with device.sms, times its shape's wave quantization), backward
 * two GEMMs (one for the first layer), the optimizer torch.optim's bytes, a host slower than the device stretching the step
 * to the host's time, and CPU profiles and kind "other" keeping the
 * generic rule. */
#include "testutil.h"

#include "core/cfg.h"
#include "core/err.h"
#include "sim/compute.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REL(a, b, tol) (fabs((a) - (b)) <= (tol)*fabs(b))

static core_profile *profile(const char *host_extra, const char *kind) {
  char text[2048];
  snprintf(text, sizeof text,
      "profile = { format = 1; name = \"cmp\"; provenance = \"test\"; meta = { };\n"
      "  device = { kind = \"gpu\"; memory_GBps = 1000.0; host_link_GBps = 10.0; peak_memory_GBps = 2000.0; };\n"
      "  host = { reduce_GBps = 1.0; %s };\n"
      "  compute = ( { precision = \"fp32\"; gemm_flops = [1e9]; tflops = [10.0]; peak_tflops = 12.0; },\n"
      "    { precision = \"bf16\"; gemm_flops = [1e10, 1e12]; tflops = [50.0, 200.0]; peak_tflops = 250.0; } );\n"
      "  collectives = ( ); };\n",
      host_extra);
  if (strcmp(kind, "gpu")) {
    char *k = strstr(text, "\"gpu\"");
    memcpy(k, "\"cpu\"", 5);
  }
  core_cfg c;
  core_profile *p = NULL;
  if (core_cfg_load_string(&c, text, "cmp.cfg", "profile") == 0) {
    if (core_profile_from_setting(core_cfg_root(&c), "cmp.cfg", &p) != 0)
      fprintf(stderr, "\n%s\n", core_err_msg());
    core_cfg_free(&c);
  }
  CU_ASSERT_PTR_NOT_NULL(p);
  return p;
}

static core_model *model(const char *layers) {
  char text[4096];
  snprintf(text, sizeof text, "model = { name = \"m\"; layers = (\n%s\n); };\n", layers);
  core_cfg c;
  core_model *m = NULL;
  if (core_cfg_load_string(&c, text, "m.cfg", "model") == 0) {
    if (core_model_from_setting(core_cfg_root(&c), "m.cfg", &m) != 0)
      fprintf(stderr, "\n%s\n", core_err_msg());
    core_cfg_free(&c);
  }
  CU_ASSERT_PTR_NOT_NULL(m);
  return m;
}

typedef struct run {
  double fwd[8], bwd[8];
  sim_compute_out o;
} run;

static run costs_attn(const core_model *m, const core_profile *p, enum sim_precision prec, double batch,
    enum sim_optimizer opt, enum sim_attention attn) {
  run r;
  memset(&r, 0, sizeof r);
  r.o.fwd_s = r.fwd;
  r.o.bwd_s = r.bwd;
  CU_ASSERT_EQUAL(sim_compute_layers(m, p, prec, batch, opt, attn, &r.o), 0);
  return r;
}

static run costs(
    const core_model *m, const core_profile *p, enum sim_precision prec, double batch, enum sim_optimizer opt) {
  return costs_attn(m, p, prec, batch, opt, SIM_ATTN_AUTO);
}

/* Big enough that gaps between kernels and the shortest kernel are noise. */
#define BIG "4e9"

/* An activation after a GEMM streams half the bytes under autocast and in a
 * pure bf16 model; a residual add reads both inputs (3 passes to 2); a
 * layer norm stays fp32 under autocast, half in a pure bf16 model. */
static void test_bytes_at_width(void) {
  core_profile *p = profile("", "gpu");
  core_model *m = model(
      "{ name = \"fc\"; kind = \"linear\"; params = [64]; fwd_flops = 1.0; act_bytes = " BIG "; },\n"
      "{ name = \"relu\"; kind = \"activation\"; fwd_flops = 0.0; act_bytes = " BIG "; },\n"
      "{ name = \"add\"; kind = \"activation\"; inputs = [\"fc\", \"relu\"]; fwd_flops = 0.0; act_bytes = " BIG "; },\n"
      "{ name = \"ln\"; kind = \"layer_norm\"; params = [8, 8]; fwd_flops = 0.0; act_bytes = " BIG "; }");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  run f = costs(m, p, SIM_PREC_FP32, 1, SIM_OPT_SGD), a = costs(m, p, SIM_PREC_AMP_BF16, 1, SIM_OPT_SGD);
  run h = costs(m, p, SIM_PREC_BF16, 1, SIM_OPT_SGD);
  CU_ASSERT(REL(a.fwd[1], f.fwd[1] / 2, 1e-3) && REL(a.bwd[1], f.bwd[1] / 2, 1e-3));
  CU_ASSERT(REL(h.fwd[1], f.fwd[1] / 2, 1e-3));
  CU_ASSERT(REL(f.fwd[2], 1.5 * f.fwd[1], 1e-3)); /* reads two inputs, writes one */
  CU_ASSERT(REL(h.fwd[3], f.fwd[3] / 2, 1e-3) && REL(h.bwd[3], f.bwd[3] / 2, 1e-3));
  CU_ASSERT(a.fwd[3] >= f.fwd[3] * (1 - 1e-9)); /* fp32 under autocast, its half input cast first */
  core_model_free(m);
  core_profile_free(p);
}

/* A compute-bound GEMM runs at the sweep's best rate from the sweep's
 * smallest size on (1e10 FLOPs here), at its first rate below it (4 times
 * slower); backward is two GEMMs of the forward's FLOPs, one for the first
 * layer. (Gaps between kernels make the 1% tolerance.) */
static void test_gemm_rate(void) {
  core_profile *p = profile("", "gpu");
  core_model *m = model("{ name = \"a\"; kind = \"linear\"; params = [64]; fwd_flops = 5e9; act_bytes = 4.0; },\n"
                        "{ name = \"b\"; kind = \"linear\"; params = [64]; fwd_flops = 2e11; act_bytes = 4.0; },\n"
                        "{ name = \"c\"; kind = \"linear\"; params = [64]; fwd_flops = 2e12; act_bytes = 4.0; }");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  run r = costs(m, p, SIM_PREC_BF16, 1, SIM_OPT_SGD);
  CU_ASSERT(REL(r.fwd[2] / 2e12, r.fwd[1] / 2e11, 1e-2));
  CU_ASSERT(REL(r.fwd[0] / 5e9, 4 * r.fwd[1] / 2e11, 2e-2));
  CU_ASSERT(REL(r.bwd[2], 2 * r.fwd[2], 1e-3));
  CU_ASSERT(REL(r.bwd[0], r.fwd[0], 2e-2)); /* the first layer: the weight's gradient only */
  core_model_free(m);
  core_profile_free(p);
}

/* Wave quantization (device.sms): on 132 SMs an output of 128 x 132
 * tiles of 128 x 128 is one full wave; 64 rows more, one tile more, leaves
 * its best tiling (128 x 64: 266 tiles, 3 waves) 0.672 of the SMs' work, so
 * a FLOP of it takes 1.489 times as long. The weight's gradient (split-K)
 * does not lose it. Without the SM count both run at one rate. */
static void test_wave_quantization(void) {
  core_profile *p = profile("", "gpu");
  core_model *m = model("{ name = \"full\"; kind = \"linear\"; params = [1048576]; fwd_flops = 35433480192.0; "
                        "act_bytes = 8650752.0; },\n"
                        "{ name = \"more\"; kind = \"linear\"; params = [1048576]; fwd_flops = 35701915648.0; "
                        "act_bytes = 8716288.0; }");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  run flat = costs(m, p, SIM_PREC_FP32, 1, SIM_OPT_SGD);
  p->sms = 132;
  run waves = costs(m, p, SIM_PREC_FP32, 1, SIM_OPT_SGD);
  double F0 = 35433480192.0, F1 = 35701915648.0;
  CU_ASSERT(REL(flat.fwd[1] / F1, flat.fwd[0] / F0, 1e-3));
  CU_ASSERT(REL(waves.fwd[1] / F1, 1.489 * waves.fwd[0] / F0, 1e-3));
  /* backward: the input's gradient (M x K, both many waves deep) and the
   * weight's, split-K: within a few percent of each other per FLOP */
  CU_ASSERT(REL(waves.bwd[1] / (2 * F1), waves.bwd[0] / F0, 3e-2));
  /* Rates swept on another GPU (device.sweep_sms): its quantization of the
   * sweep's GEMM (1e9 FLOPs, a side of 794: 91 tiles of 64 x 128, one wave
   * on 108 SMs as on 132) is the reference, 132/108 of this GPU's. */
  p->sweep_sms = 108;
  run other = costs(m, p, SIM_PREC_FP32, 1, SIM_OPT_SGD);
  CU_ASSERT(REL(other.fwd[0], 132.0 / 108 * waves.fwd[0], 1e-3));
  core_model_free(m);
  core_profile_free(p);
}

/* The optimizer moves torch.optim's foreach bytes: Adam 72 a parameter,
 * SGD 12, momentum 32. */
static void test_optimizer(void) {
  core_profile *p = profile("", "gpu");
  core_model *m =
      model("{ name = \"fc\"; kind = \"linear\"; params = [1000000000]; fwd_flops = 1.0; act_bytes = 4.0; }");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  double sgd = costs(m, p, SIM_PREC_FP32, 1, SIM_OPT_SGD).o.optimizer_s;
  CU_ASSERT(REL(costs(m, p, SIM_PREC_FP32, 1, SIM_OPT_ADAM).o.optimizer_s, 6 * sgd, 1e-3));
  CU_ASSERT(REL(costs(m, p, SIM_PREC_FP32, 1, SIM_OPT_SGD_MOMENTUM).o.optimizer_s, 32.0 / 12 * sgd, 1e-3));
  core_model_free(m);
  core_profile_free(p);
}

/* A host slower than the device: the step takes the host's time to issue
 * its kernels, every layer and the optimizer stretched alike. */
static void test_host_bound(void) {
  core_profile *fast = profile("", "gpu"), *slow = profile("launch_us = 1000.0;", "gpu");
  core_model *m = model("{ name = \"fc\"; kind = \"linear\"; params = [64]; fwd_flops = 1e6; act_bytes = 4e3; },\n"
                        "{ name = \"relu\"; kind = \"activation\"; fwd_flops = 0.0; act_bytes = 4e3; }");
  CU_ASSERT_PTR_NOT_NULL_FATAL(fast && slow && m);
  run d = costs(m, fast, SIM_PREC_FP32, 1, SIM_OPT_SGD), h = costs(m, slow, SIM_PREC_FP32, 1, SIM_OPT_SGD);
  CU_ASSERT(d.o.host_s == 0 && h.o.kernels > 0 && REL(h.o.host_s, h.o.kernels * 1000e-6, 1e-12));
  double sum = h.o.optimizer_s;
  for (int l = 0; l < 2; l++) {
    sum += h.fwd[l] + h.bwd[l];
    CU_ASSERT(REL(h.fwd[l] / d.fwd[l], h.o.host_s / d.o.device_s, 1e-9));
  }
  CU_ASSERT(REL(sum, h.o.host_s, 1e-9));
  core_model_free(m);
  core_profile_free(fast);
  core_profile_free(slow);
}

/* A CPU profile, and a layer of kind "other", keep the generic rule: the
 * GEMM at the interpolated rate plus the activation's elementwise passes
 * at memory_GBps. Half precisions refuse kind "other" with activation bytes. */
static void test_generic_rule(void) {
  core_profile *cpu = profile("", "cpu"), *gpu = profile("", "gpu");
  core_model *m = model("{ name = \"fc\"; kind = \"linear\"; params = [64]; fwd_flops = 1e9; act_bytes = 1e8; },\n"
                        "{ name = \"x\"; params = [64]; fwd_flops = 1e9; act_bytes = 1e8; }");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu && gpu && m);
  double want = 1e9 / 10e12 + SIM_ELEMENTWISE_FWD_PASSES * 1e8 / 1000e9;
  run c = costs(m, cpu, SIM_PREC_FP32, 1, SIM_OPT_SGD), g = costs(m, gpu, SIM_PREC_FP32, 1, SIM_OPT_SGD);
  CU_ASSERT(REL(c.fwd[0], want, 1e-12) && REL(c.fwd[1], want, 1e-12) && REL(g.fwd[1], want, 1e-12));
  CU_ASSERT(c.o.optimizer_s < 0);        /* the caller's rule */
  CU_ASSERT(!REL(g.fwd[0], want, 1e-3)); /* a linear layer on a GPU: its own rule */
  CU_ASSERT_EQUAL(sim_compute_check(m, gpu, SIM_PREC_FP32), 0);
  CU_ASSERT_EQUAL(sim_compute_check(m, gpu, SIM_PREC_AMP_BF16), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "m.cfg:") && strstr(core_err_msg(), "layer 'x'") && strstr(core_err_msg(), "kind"));
  core_model_free(m);
  core_profile_free(cpu);
  core_profile_free(gpu);
}

/* `inputs` must name layers listed before. */
/* A BERT-large-like attention layer (16 heads of 64, seq tokens a sample:
 * 4 seq^2 x 1024 FLOPs, seq x 1024 fp32 outputs) after its projection,
 * with attention dropout drop ("0" or "0.1"), and heads given or not. */
static core_model *bert_attention(int seq, const char *drop, int heads) {
  char layers[1024];
  double s = seq;
  snprintf(layers, sizeof layers,
      "{ name = \"qkv\"; kind = \"linear\"; params = [3145728]; fwd_flops = %.1f; act_bytes = %.1f; },\n"
      "{ name = \"attn\"; kind = \"attention\"; fwd_flops = %.1f; act_bytes = %.1f; seq_len = %d; dropout = %s; %s }",
      2 * s * 3145728, 3 * s * 4096, 4 * s * s * 1024, s * 4096, seq, drop, heads ? "heads = 16;" : "");
  return model(layers);
}

/* Unfused attention (training.attention = "math") against fused for
 * BERT-large's attention at 16 sequences of 512 tokens under bf16 autocast:
 * its fp32 GEMMs and score passes take several times the fused kernels'
 * time; doubling the tokens makes its time nearly 4 times as long (every
 * score pass and GEMM grows with seq^2, only the copies and casts of the
 * query, key and value with seq); fused and auto (fused on a GPU) cost the
 * same to the bit. */
static void test_math_attention(void) {
  core_profile *p = profile("", "gpu");
  core_model *m = bert_attention(512, "0.1", 1), *m2 = bert_attention(1024, "0.1", 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m2);
  run f = costs_attn(m, p, SIM_PREC_AMP_BF16, 16, SIM_OPT_SGD, SIM_ATTN_FUSED);
  run a = costs_attn(m, p, SIM_PREC_AMP_BF16, 16, SIM_OPT_SGD, SIM_ATTN_AUTO);
  run x = costs_attn(m, p, SIM_PREC_AMP_BF16, 16, SIM_OPT_SGD, SIM_ATTN_MATH);
  run x2 = costs_attn(m2, p, SIM_PREC_AMP_BF16, 16, SIM_OPT_SGD, SIM_ATTN_MATH);
  CU_ASSERT(memcmp(f.fwd, a.fwd, sizeof f.fwd) == 0 && memcmp(f.bwd, a.bwd, sizeof f.bwd) == 0);
  CU_ASSERT(x.fwd[1] + x.bwd[1] > 3 * (f.fwd[1] + f.bwd[1]));
  CU_ASSERT(x.fwd[0] == f.fwd[0] && x.bwd[0] == f.bwd[0]); /* the projection is not attention */
  double grow = (x2.fwd[1] + x2.bwd[1]) / (x.fwd[1] + x.bwd[1]);
  CU_ASSERT(grow > 3.7 && grow < 4.0);
  core_model_free(m);
  core_model_free(m2);
  core_profile_free(p);
}

/* Attention dropout adds a pass of 9 bytes a score each way (native_dropout:
 * fp32 in and out, a 1-byte mask; its backward the same) to unfused
 * attention, at the streaming bandwidth (0.896 of the profile's 2000 GB/s;
 * 16 x 16 x 512^2 scores), and nothing to fused attention. */
static void test_math_attention_dropout(void) {
  core_profile *p = profile("", "gpu");
  core_model *d = bert_attention(512, "0.1", 1), *n = bert_attention(512, "0", 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  CU_ASSERT_PTR_NOT_NULL_FATAL(n);
  run xd = costs_attn(d, p, SIM_PREC_FP32, 16, SIM_OPT_SGD, SIM_ATTN_MATH);
  run xn = costs_attn(n, p, SIM_PREC_FP32, 16, SIM_OPT_SGD, SIM_ATTN_MATH);
  run fd = costs_attn(d, p, SIM_PREC_FP32, 16, SIM_OPT_SGD, SIM_ATTN_FUSED);
  run fn = costs_attn(n, p, SIM_PREC_FP32, 16, SIM_OPT_SGD, SIM_ATTN_FUSED);
  double pass = 16.0 * 16 * 512 * 512 * 9 / (2000e9 * 0.896);
  CU_ASSERT(REL(xd.fwd[1] - xn.fwd[1], pass, 1e-2));
  CU_ASSERT(REL(xd.bwd[1] - xn.bwd[1], pass, 1e-2));
  CU_ASSERT(fd.fwd[1] == fn.fwd[1] && fd.bwd[1] == fn.bwd[1]);
  core_model_free(d);
  core_model_free(n);
  core_profile_free(p);
}

/* Where unfused attention has no score matrices to cost (a layer without
 * heads), or the profile is a CPU's (the generic rule), "math" costs what
 * "fused" does, to the bit. */
static void test_math_attention_fallbacks(void) {
  core_profile *g = profile("", "gpu"), *c = profile("", "cpu");
  core_model *m = bert_attention(512, "0.1", 0), *h = bert_attention(512, "0.1", 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  run x = costs_attn(m, g, SIM_PREC_FP32, 16, SIM_OPT_SGD, SIM_ATTN_MATH);
  run f = costs_attn(m, g, SIM_PREC_FP32, 16, SIM_OPT_SGD, SIM_ATTN_FUSED);
  run xc = costs_attn(h, c, SIM_PREC_FP32, 16, SIM_OPT_SGD, SIM_ATTN_MATH);
  run fc = costs_attn(h, c, SIM_PREC_FP32, 16, SIM_OPT_SGD, SIM_ATTN_FUSED);
  CU_ASSERT(memcmp(x.fwd, f.fwd, sizeof x.fwd) == 0 && memcmp(x.bwd, f.bwd, sizeof x.bwd) == 0);
  CU_ASSERT(memcmp(xc.fwd, fc.fwd, sizeof xc.fwd) == 0 && memcmp(xc.bwd, fc.bwd, sizeof xc.bwd) == 0);
  core_model_free(m);
  core_model_free(h);
  core_profile_free(g);
  core_profile_free(c);
}

static void test_inputs_errors(void) {
  static const char *const bad[] = {"model = { name = \"m\"; layers = ( { name = \"a\"; kind = \"activation\"; inputs "
                                    "= [\"b\"]; fwd_flops = 0.0; },\n"
                                    "  { name = \"b\"; kind = \"activation\"; fwd_flops = 0.0; } ); };",
      "model = { name = \"m\"; layers = ( { name = \"a\"; kind = \"activation\"; fwd_flops = 0.0; inputs = [1]; } ); "
      "};"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    core_cfg c;
    core_model *m = NULL;
    CU_ASSERT_EQUAL_FATAL(core_cfg_load_string(&c, bad[i], "bad.cfg", "model"), 0);
    CU_ASSERT_EQUAL(core_model_from_setting(core_cfg_root(&c), "bad.cfg", &m), CORE_EINVAL);
    CU_ASSERT(strstr(core_err_msg(), "bad.cfg:") && strstr(core_err_msg(), "inputs[0]"));
    core_model_free(m);
    core_cfg_free(&c);
  }
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("compute", NULL, NULL);
  CU_add_test(s, "bytes at the precision's width", test_bytes_at_width);
  CU_add_test(s, "GEMM rate and backward GEMMs", test_gemm_rate);
  CU_add_test(s, "wave quantization with device.sms", test_wave_quantization);
  CU_add_test(s, "optimizer: torch.optim's bytes", test_optimizer);
  CU_add_test(s, "host-bound steps stretch", test_host_bound);
  CU_add_test(s, "the generic rule: CPUs, kind other", test_generic_rule);
  CU_add_test(s, "inputs name earlier layers", test_inputs_errors);
  CU_add_test(s, "math attention: slower, seq^2", test_math_attention);
  CU_add_test(s, "math attention: dropout's passes", test_math_attention_dropout);
  CU_add_test(s, "math attention: fused where it cannot apply", test_math_attention_fallbacks);
}

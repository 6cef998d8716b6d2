/* ddp.zero_optimizer (ZeroRedundancyOptimizer): the shard's share as
 * PyTorch partitions the parameters, the memory it takes off each GPU, the
 * allgather it adds after the optimizer's step, the oom note that suggests
 * it, and the models it is refused for. */
#include "sim/collective.h"
#include "sim/memfit.h"
#include "sim/predict.h"
#include "sim/scenario.h"

#include "core/err.h"
#include "core/model.h"

#include "simutil.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <libconfig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensors of 400, 300, 200 and 100 elements. */
static core_model *load_four(void) {
  static const char *const text =
      "model = { name = \"four\"; source = \"test\"; layers = (\n"
      "  { name = \"a\"; params = [300, 100]; fwd_flops = 1e6; act_bytes = 400.0; },\n"
      "  { name = \"b\"; params = [400, 200]; fwd_flops = 1e5; act_bytes = 100.0; } ); };\n";
  config_t cfg;
  core_model *m = NULL;
  config_init(&cfg);
  if (config_read_string(&cfg, text) == CONFIG_TRUE)
    if (core_model_from_setting(config_root_setting(&cfg), "four.cfg", &m) != 0)
      fprintf(stderr, "\nmodel did not load: %s\n", core_err_msg());
  config_destroy(&cfg);
  return m;
}

/* Largest first, each to the emptiest rank: on two ranks 400+100 and
 * 300+200, an even half; on three 400, 300, 200+100; one rank holds all. */
static void test_share(void) {
  core_model *m = load_four();
  CU_ASSERT_FATAL(m != NULL);
  CU_ASSERT_DOUBLE_EQUAL(sim_memfit_zero_share(m, 1), 1.0, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(sim_memfit_zero_share(m, 2), 0.5, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(sim_memfit_zero_share(m, 3), 0.4, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(sim_memfit_zero_share(m, 64), 0.4, 1e-15); /* more ranks than tensors */
  core_model_free(m);
}

/* The shard's optimizer state and Adam's temporaries; weights and
 * gradients whole. */
static void test_memory(void) {
  core_model *m = load_four();
  CU_ASSERT_FATAL(m != NULL);
  sim_memfit all, half;
  sim_memfit_estimate(m, SIM_PREC_FP32, 8, SIM_OPT_ADAM, 0, 1, &all);
  sim_memfit_estimate_shard(m, SIM_PREC_FP32, 8, SIM_OPT_ADAM, 0, 1, 0.5, SIM_ATTN_AUTO, 0, &half);
  CU_ASSERT_DOUBLE_EQUAL(all.optimizer, 1000.0 * 4 * 2, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(half.optimizer, 1000.0 * 4, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(half.step_temps, all.step_temps / 2, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(half.weights, all.weights, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(half.grads, all.grads, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(half.step_peak, all.step_peak - 4000.0 - 2000.0, 1e-9);
  core_model_free(m);
}

/* One point of a shipped model on the DGX A100 profile: 8 GPUs, Adam. */
static sim_scenario *load_point(const char *model, const char *training, int zero) {
  char text[2048];
  snprintf(text, sizeof text,
      "profile = \"profiles/dgx-a100-40gb.cfg\"; model = \"%s\";\n"
      "training = { %s };\n"
      "cluster = { nodes = 1; devices_per_node = 8; };\n"
      "networks = ( { name = \"IB\"; gbps = 100.0; latency_us = 2.0; } );\n"
      "ddp = { backend = \"nccl\"; zero_optimizer = %s; };\nsimulation = { steps = 1; seed = 1; };\n",
      model, training, zero ? "true" : "false");
  return tu_load_string(text, TU_SRC("scenarios/inline-test.cfg"));
}

/* ResNet-50 with Adam on 8 GPUs: each holds the state of about an eighth
 * of the parameters. */
static void test_point_memory(void) {
  const char *tr = "batch = 32; precision = \"fp32\"; optimizer = \"adam\";";
  sim_scenario *off = load_point("models/resnet50.cfg", tr, 0), *on = load_point("models/resnet50.cfg", tr, 1);
  CU_ASSERT_FATAL(off && on);
  sim_point p;
  sim_scenario_point(on, 0, &p);
  sim_memfit a, b;
  sim_memfit_point(off, &p, &a);
  sim_memfit_point(on, &p, &b);
  double share = sim_memfit_zero_share(p.model, 8);
  CU_ASSERT(share >= 1.0 / 8 && share < 1.2 / 8);
  CU_ASSERT_DOUBLE_EQUAL(b.optimizer, a.optimizer * share, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(b.weights + b.grads + b.buckets, a.weights + a.grads + a.buckets, 1e-6);
  CU_ASSERT(b.total < a.total);
  sim_point_result ra, rb;
  CU_ASSERT_FATAL(tu_run_point(off, 0, &ra) == 0 && tu_run_point(on, 0, &rb) == 0);
  CU_ASSERT_DOUBLE_EQUAL(rb.mem_GB, b.total / 1e9, 1e-12);
  sim_scenario_free(off);
  sim_scenario_free(on);
}

/* The step gains the collective model's allgather of the fp32 weights,
 * exposed after the optimizer, whose step is the shard's. */
static void test_step_allgather(void) {
  const char *tr = "batch = 32; precision = \"fp32\"; optimizer = \"adam\";";
  sim_scenario *off = load_point("models/resnet50.cfg", tr, 0), *on = load_point("models/resnet50.cfg", tr, 1);
  CU_ASSERT_FATAL(off && on);
  sim_point p;
  sim_scenario_point(on, 0, &p);
  sim_topo t;
  CU_ASSERT_FATAL(
      sim_topo_build(on->profile, on->profile_path, p.network, p.backend, CORE_COLL_ALLGATHER, 1, 8, &t) == 0);
  double ag = sim_coll_time(SIM_BACKEND_NCCL, CORE_COLL_ALLGATHER, SIM_ALGO_RING, &t, p.model->n_params * 4.0);
  CU_ASSERT_FATAL(ag > 0);
  sim_point_result ra, rb;
  CU_ASSERT_FATAL(tu_run_point(off, 0, &ra) == 0 && tu_run_point(on, 0, &rb) == 0);
  CU_ASSERT_DOUBLE_EQUAL(rb.comm_s - ra.comm_s, ag, 1e-12);
  CU_ASSERT(rb.exposed_comm_s >= ra.exposed_comm_s + ag * 0.999);
  /* Compute loses 7/8 or so of the optimizer's step; the step gains the
   * allgather and loses that. */
  double saved = ra.compute_s - rb.compute_s;
  CU_ASSERT(saved > 0);
  CU_ASSERT_DOUBLE_EQUAL(rb.step_s - ra.step_s, ag - saved, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(rb.single_step_s, ra.single_step_s, 1e-15); /* one device steps everything */
  sim_scenario_free(off);
  sim_scenario_free(on);
}

/* GPT-2 XL in fp32 with Adam on 8 GPUs of 16 GB: the note suggests
 * sharding, and with it on suggests it no more. */
static void test_note(void) {
  const char *tr = "batch = 1; precision = \"fp32\"; optimizer = \"adam\";";
  for (int zero = 0; zero < 2; zero++) {
    sim_scenario *s = load_point("models/gpt2-xl.cfg", tr, zero);
    CU_ASSERT_FATAL(s != NULL);
    s->profile->memory_GB = 16.0;
    sim_point_result r;
    CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
    CU_ASSERT_STRING_EQUAL(r.status, "oom");
    const char *hint = strstr(r.note, "ddp.zero_optimizer = true: about ");
    CU_ASSERT((hint != NULL) == !zero);
    if (hint) {
      sim_scenario *z = load_point("models/gpt2-xl.cfg", tr, 1);
      CU_ASSERT_FATAL(z != NULL);
      sim_point_result rz;
      CU_ASSERT_FATAL(tu_run_point(z, 0, &rz) == 0);
      CU_ASSERT_DOUBLE_EQUAL(atof(hint + strlen("ddp.zero_optimizer = true: about ")), rz.mem_GB, rz.mem_GB * 5e-3);
      sim_scenario_free(z);
    }
    sim_scenario_free(s);
  }
  /* SGD without momentum has no state to shard: no hint. */
  sim_scenario *s = load_point("models/gpt2-xl.cfg", "batch = 64; precision = \"fp32\"; optimizer = \"sgd\";", 0);
  CU_ASSERT_FATAL(s != NULL);
  s->profile->memory_GB = 16.0;
  sim_point_result r;
  CU_ASSERT_FATAL(tu_run_point(s, 0, &r) == 0);
  CU_ASSERT_STRING_EQUAL(r.status, "oom");
  CU_ASSERT(strstr(r.note, "zero_optimizer") == NULL);
  sim_scenario_free(s);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("zero_optimizer", NULL, NULL);
  CU_add_test(s, "the shard: PyTorch's greedy partition", test_share);
  CU_add_test(s, "the shard's optimizer state and temporaries only", test_memory);
  CU_add_test(s, "ResNet-50 on 8 GPUs: an eighth of Adam's state", test_point_memory);
  CU_add_test(s, "an allgather of the weights after the shard's step", test_step_allgather);
  CU_add_test(s, "the oom note suggests it where it is off", test_note);
}

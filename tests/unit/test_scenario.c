/* Scenario, profile and model parsing: profile round trips (write, load,
 * every field bit for bit, the shipped profiles included), sweep expansion
 * (count and order of the Cartesian product, as scenarios/README.md
 * documents it) and defaults (scenarios/README.md's key table, PyTorch's
 * DDP defaults, core/model.h). */
#include "sim/dims.h"
#include "sim/scenario.h"

#include "core/err.h"
#include "core/model.h"
#include "core/profile.h"

#include "simutil.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char scratch[4096];

static int suite_init(void) { return tu_mkdtemp(scratch, sizeof scratch, "scenario"); }
static int suite_clean(void) {
  tu_rmdir(scratch);
  return 0;
}

/* --- profile round trip ----------------------------------------------------- */

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static int same_array(const double *a, const double *b, int n) {
  for (int i = 0; i < n; i++)
    if (!same_bits(a[i], b[i]))
      return 0;
  return 1;
}

/* Every field but path (where it was loaded from). Reports the first
 * difference on stderr. */
static int profiles_equal(const core_profile *a, const core_profile *b) {
#define DIFF(what)                                                                                                     \
  do {                                                                                                                 \
    fprintf(stderr, "\nprofile field differs: %s\n", what);                                                            \
    return 0;                                                                                                          \
  } while (0)
#define STR(f)                                                                                                         \
  if (strcmp(a->f, b->f))                                                                                              \
  DIFF(#f)
#define NUM(f)                                                                                                         \
  if (!same_bits(a->f, b->f))                                                                                          \
  DIFF(#f)
#define INT(f)                                                                                                         \
  if (a->f != b->f)                                                                                                    \
  DIFF(#f)
  INT(format);
  STR(name);
  STR(provenance);
  STR(source);
  STR(host);
  STR(date);
  STR(backend);
  STR(versions);
  INT(nodes);
  INT(ranks_per_node);
  STR(device_kind);
  STR(device_name);
  NUM(memory_GBps);
  NUM(update_GBps);
  NUM(host_link_GBps);
  NUM(reduce_GBps);
  for (int i = 0; i < CORE_N_PREC; i++) {
    INT(rate[i].present);
    INT(rate[i].n);
    if (a->rate[i].present && (!same_array(a->rate[i].gemm_flops, b->rate[i].gemm_flops, a->rate[i].n) ||
                                  !same_array(a->rate[i].tflops, b->rate[i].tflops, a->rate[i].n)))
      DIFF("rate arrays");
  }
  INT(n_colls);
  for (int i = 0; i < a->n_colls; i++) {
    STR(colls[i].backend);
    STR(colls[i].op);
    STR(colls[i].algorithm);
    STR(colls[i].scope);
    INT(colls[i].ranks);
    INT(colls[i].nodes);
    INT(colls[i].n_fits);
    for (int j = 0; j < a->colls[i].n_fits; j++) {
      NUM(colls[i].fits[j].min_bytes);
      NUM(colls[i].fits[j].max_bytes);
      NUM(colls[i].fits[j].alpha_us);
      NUM(colls[i].fits[j].algbw_GBps);
      NUM(colls[i].fits[j].r2);
      INT(colls[i].fits[j].has_ci);
      NUM(colls[i].fits[j].alpha_us_lo);
      NUM(colls[i].fits[j].alpha_us_hi);
      NUM(colls[i].fits[j].algbw_GBps_lo);
      NUM(colls[i].fits[j].algbw_GBps_hi);
    }
    INT(colls[i].n_points);
    if (!same_array(a->colls[i].bytes, b->colls[i].bytes, a->colls[i].n_points) ||
        !same_array(a->colls[i].time_us, b->colls[i].time_us, a->colls[i].n_points))
      DIFF("points");
  }
  INT(jitter);
  NUM(jitter_params[0]);
  NUM(jitter_params[1]);
  INT(n_jitter_samples);
  if (!same_array(a->jitter_samples, b->jitter_samples, a->n_jitter_samples))
    DIFF("jitter samples");
  NUM(write_GBps);
  NUM(read_GBps);
  NUM(process_start_s);
  NUM(rendezvous_s);
  NUM(comm_init_s);
  NUM(compute_slowdown);
  NUM(comm_slowdown);
  NUM(cpu_slowdown);
  NUM(interf_busbw_GBps);
  NUM(interf_comm_cpus);
  NUM(interf_rank_cpus);
  NUM(cast_GBps);
  NUM(cast_bf16_GBps);
  NUM(orth_gflops);
  NUM(sum_fp32_GBps);
  NUM(sum_fp16_GBps);
  NUM(sum_bf16_GBps);
  NUM(psgd_gemm_GBps);
  NUM(psgd_pass_GBps);
  NUM(psgd_sync_us);
  NUM(price_gpu_hour_usd);
  NUM(price_node_hour_usd);
  return 1;
#undef DIFF
#undef STR
#undef NUM
#undef INT
}

/* load(path) -> write -> load: equal; and writing again gives the same
 * bytes (the written form is a fixed point). */
static void round_trip(const char *path) {
  core_profile *a = NULL, *b = NULL, *c = NULL;
  char p1[4200], p2[4200];
  snprintf(p1, sizeof p1, "%s/rt1.cfg", scratch);
  snprintf(p2, sizeof p2, "%s/rt2.cfg", scratch);
  int rc = core_profile_load(path, &a);
  if (rc)
    fprintf(stderr, "\n%s: %s\n", path, core_err_msg());
  CU_ASSERT_FATAL(rc == 0);
  CU_ASSERT_FATAL(core_profile_write(a, p1) == 0);
  rc = core_profile_load(p1, &b);
  if (rc)
    fprintf(stderr, "\nreloading the written %s: %s\n", path, core_err_msg());
  CU_ASSERT_FATAL(rc == 0);
  int eq = profiles_equal(a, b);
  if (!eq)
    fprintf(stderr, "(round trip of %s)\n", path);
  CU_ASSERT(eq);
  CU_ASSERT_FATAL(core_profile_write(b, p2) == 0);
  char *t1 = tu_read_file(p1, NULL), *t2 = tu_read_file(p2, NULL);
  CU_ASSERT(t1 && t2 && strcmp(t1, t2) == 0);
  CU_ASSERT(core_profile_load(p2, &c) == 0 && c && profiles_equal(a, c));
  free(t1);
  free(t2);
  core_profile_free(a);
  core_profile_free(b);
  core_profile_free(c);
}

static void test_round_trip_shipped(void) {
  int n = 0;
  const char *dirs[] = {TU_SRC("scenarios/profiles"), TU_SRC("tests/data")};
  for (int d = 0; d < 2; d++) {
    DIR *dir = opendir(dirs[d]);
    CU_ASSERT_FATAL(dir != NULL);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
      size_t len = strlen(de->d_name);
      if (len < 5 || strcmp(de->d_name + len - 4, ".cfg"))
        continue;
      char path[8192];
      snprintf(path, sizeof path, "%s/%s", dirs[d], de->d_name);
      /* tests/data holds scenarios and models too: profiles start with
       * their top-level key. */
      char *text = tu_read_file(path, NULL);
      int is_profile = text && strstr(text, "\nprofile = {") != NULL;
      free(text);
      if (!is_profile)
        continue;
      round_trip(path);
      n++;
    }
    closedir(dir);
  }
  /* dgx-a100, dgx-h100, cpu-test, gpu-test, cpu-jitter at least. */
  CU_ASSERT(n >= 5);
}

/* A profile using every feature of the format, with awkward values. */
static const char maximal_profile[] =
    "profile = {\n"
    "  format = 1;\n"
    "  name = \"max \\\"quoted\\\" \\\\ back\\tslash\";\n"
    "  provenance = \"line one\\nline two\";\n"
    "  meta = { host = \"h\"; date = \"2026-12-02\"; backend = \"gloo\"; versions = \"gloo 0.0 / libconfig 1.7\"; "
    "nodes = 3; ranks_per_node = 5; };\n"
    "  device = { kind = \"gpu\"; name = \"\"; memory_GBps = 0.1; update_GBps = 7e-3; host_link_GBps = "
    "3.0000000000000004; };\n"
    "  host = { reduce_GBps = 1e-3; };\n"
    "  compute = (\n"
    "    { precision = \"bf16\"; gemm_flops = [1.0, 1e3, 123456789.123, 1e30]; tflops = [1e-9, 0.1, "
    "0.30000000000000004, 1e9]; },\n"
    "    { precision = \"fp32\"; gemm_flops = [1.0000000000000002]; tflops = [4.9406564584124654e-5]; },\n"
    "    { precision = \"tf32\"; gemm_flops = [7]; tflops = [3]; }\n"
    "  );\n"
    "  collectives = (\n"
    "    { backend = \"gloo\"; op = \"allreduce\"; algorithm = \"halving_doubling\"; scope = \"inter\"; ranks = 15; "
    "nodes = 3;\n"
    "      fits = ( { min_bytes = 0.0; max_bytes = 8192.0; alpha_us = 0.0; algbw_GBps = 1e-9; r2 = -0.5;\n"
    "                 alpha_us_ci = [-1.5, 2.5]; algbw_GBps_ci = [0.1, 1e9]; },\n"
    "               { min_bytes = 8192.0; max_bytes = 1e15; alpha_us = 1e9; algbw_GBps = 0.1; } );\n"
    "      points = { bytes = [8.0, 1024.0, 1e9]; time_us = [0.0, 1.0 , 1e12]; }; },\n"
    "    { backend = \"nccl\"; op = \"broadcast\"; algorithm = \"tree\"; scope = \"intra\"; ranks = 5; nodes = 1;\n"
    "      fits = ( { min_bytes = 1.0; max_bytes = 2.0; alpha_us = 1.0; algbw_GBps = 1.0; r2 = 1.0; } );\n"
    "      points = { bytes = []; time_us = []; }; }\n"
    "  );\n"
    "  jitter = { distribution = \"shifted_exponential\"; params = [0.0, 1e-6]; samples = [0.0, 1.0, 0.1, 1e6]; };\n"
    "  storage = { write_GBps = 1e-6; read_GBps = 1e6; };\n"
    "  restart = { process_start_s = 0.0; rendezvous_s = 0.0; comm_init_s = 1e-9; };\n"
    "  interference = { compute_slowdown = 100.0; comm_slowdown = 1.5; busbw_GBps = 0.117;\n"
    "                   comm_cpus = 0.21; rank_cpus = 0.5; };\n"
    "  hooks = { cast_GBps = 0.30000000000000004; cast_bf16_GBps = 1e6; orth_gflops = 1e-6; sum_fp32_GBps = 4.0;\n"
    "            sum_fp16_GBps = 0.068757459122181147; sum_bf16_GBps = 2.0; psgd_gemm_GBps = 3.5; psgd_pass_GBps = "
    "6.0;\n"
    "            psgd_sync_us = 3101.36669921875; };\n"
    "  price = { node_hour_usd = 55.04; };\n"
    "};\n";

static void test_round_trip_maximal(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/maximal.cfg", scratch);
  CU_ASSERT_FATAL(tu_write_file(path, maximal_profile) == 0);
  core_profile *p = NULL;
  int rc = core_profile_load(path, &p);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_FATAL(rc == 0);
  /* What was read is what the file says. */
  CU_ASSERT_STRING_EQUAL(p->name, "max \"quoted\" \\ back\tslash");
  CU_ASSERT_STRING_EQUAL(p->provenance, "line one\nline two");
  CU_ASSERT_EQUAL(p->rate[CORE_PREC_BF16].n, 4);
  CU_ASSERT(p->rate[CORE_PREC_FP32].gemm_flops[0] == 1.0000000000000002);
  CU_ASSERT(p->rate[CORE_PREC_TF32].present && p->rate[CORE_PREC_TF32].tflops[0] == 3.0);
  CU_ASSERT(!p->rate[CORE_PREC_FP16].present);
  CU_ASSERT(p->colls[0].fits[0].has_ci && p->colls[0].fits[0].alpha_us_lo == -1.5);
  CU_ASSERT(isnan(p->colls[0].fits[1].r2));
  CU_ASSERT_EQUAL(p->colls[1].n_points, 0);
  CU_ASSERT_EQUAL(p->jitter, CORE_JITTER_SHIFTED_EXP);
  CU_ASSERT_EQUAL(p->n_jitter_samples, 4);
  CU_ASSERT_EQUAL(p->compute_slowdown, 100.0);
  CU_ASSERT_EQUAL(p->comm_slowdown, 1.5);
  CU_ASSERT_EQUAL(p->interf_busbw_GBps, 0.117);
  CU_ASSERT_EQUAL(p->interf_comm_cpus, 0.21);
  CU_ASSERT_EQUAL(p->interf_rank_cpus, 0.5);
  CU_ASSERT_EQUAL(p->cast_bf16_GBps, 1e6);
  CU_ASSERT_EQUAL(p->sum_fp16_GBps, 0.068757459122181147);
  CU_ASSERT_EQUAL(p->price_node_hour_usd, 55.04);
  CU_ASSERT_EQUAL(p->price_gpu_hour_usd, 0);
  core_profile_free(p);
  round_trip(path);

  /* Defaults of optional parts, and "none" jitter with samples only. */
  snprintf(path, sizeof path, "%s/minimal.cfg", scratch);
  CU_ASSERT_FATAL(
      tu_write_file(path, "profile = { format = 1; name = \"m\"; provenance = \"p\"; meta = { };\n"
                          "  device = { kind = \"cpu\"; memory_GBps = 1.0; }; host = { reduce_GBps = 1.0; };\n"
                          "  compute = ( { precision = \"fp32\"; gemm_flops = [1.0]; tflops = [1.0]; } );\n"
                          "  collectives = ( { backend = \"gloo\"; op = \"allgather\"; algorithm = \"ring\"; scope = "
                          "\"intra\"; ranks = 2; nodes = 1;\n"
                          "                    fits = ( { min_bytes = 0.0; max_bytes = 1.0; alpha_us = 1.0; algbw_GBps "
                          "= 1.0; } ); } );\n"
                          "  jitter = { distribution = \"none\"; samples = [1.0, 1.5]; };\n"
                          "};\n") == 0);
  CU_ASSERT_FATAL(core_profile_load(path, &p) == 0);
  CU_ASSERT_EQUAL(p->nodes, 1);
  CU_ASSERT_EQUAL(p->ranks_per_node, 1);
  CU_ASSERT_EQUAL(p->host_link_GBps, 0.0);
  CU_ASSERT_EQUAL(p->compute_slowdown, 1.0);  /* no interference measured: none */
  CU_ASSERT_EQUAL(p->interf_busbw_GBps, 0.0); /* and the factors hold at every rate */
  CU_ASSERT_EQUAL(p->jitter, CORE_JITTER_NONE);
  CU_ASSERT_EQUAL(p->n_jitter_samples, 2);
  CU_ASSERT_EQUAL(p->write_GBps, 0.0);
  core_profile_free(p);
  round_trip(path);
}

/* A profile of this provenance and meta group, loaded: its source ("" when
 * it does not load). */
static const char *source_of(const char *provenance, const char *meta, char *out, size_t n) {
  char path[4200], text[2048];
  core_profile *p = NULL;
  snprintf(path, sizeof path, "%s/source.cfg", scratch);
  snprintf(text, sizeof text,
      "profile = { format = 1; name = \"m\"; provenance = \"%s\"; meta = { %s };\n"
      "  device = { kind = \"cpu\"; memory_GBps = 1.0; }; host = { reduce_GBps = 1.0; };\n"
      "  compute = ( { precision = \"fp32\"; gemm_flops = [1.0]; tflops = [1.0]; } );\n"
      "  collectives = ( { backend = \"gloo\"; op = \"allgather\"; algorithm = \"ring\"; scope = \"intra\";\n"
      "    ranks = 2; nodes = 1; fits = ( { min_bytes = 0.0; max_bytes = 1.0; alpha_us = 1.0; algbw_GBps = 1.0; } ); } "
      ");\n"
      "};\n",
      provenance, meta);
  out[0] = '\0';
  if (tu_write_file(path, text) == 0 && core_profile_load(path, &p) == 0) {
    snprintf(out, n, "%s", p->source);
    CU_ASSERT_EQUAL(core_profile_is_datasheet(p), strcmp(out, "datasheet") == 0);
    core_profile_free(p);
    round_trip(path);
  }
  return out;
}

/* meta.source says where the fits come from; a profile without it takes
 * its provenance's first word, in any case. */
static void test_profile_source(void) {
  char b[32];
  CU_ASSERT_STRING_EQUAL(source_of("measured", "source = \"datasheet\";", b, sizeof b), "datasheet");
  CU_ASSERT_STRING_EQUAL(source_of("datasheet-derived", "source = \"imported\";", b, sizeof b), "imported");
  CU_ASSERT_STRING_EQUAL(source_of("x", "source = \"calibrated\";", b, sizeof b), "calibrated");
  CU_ASSERT_STRING_EQUAL(source_of("datasheet-derived, not measured", "", b, sizeof b), "datasheet");
  CU_ASSERT_STRING_EQUAL(source_of("Datasheet figures", "", b, sizeof b), "datasheet");
  CU_ASSERT_STRING_EQUAL(source_of("measured by ddpsim calibrate", "", b, sizeof b), "calibrated");
  CU_ASSERT_STRING_EQUAL(source_of("from datasheets", "", b, sizeof b), "calibrated");
  CU_ASSERT_STRING_EQUAL(source_of("x", "source = \"vendor\";", b, sizeof b), "");
  CU_ASSERT(strstr(core_err_msg(), "source") != NULL);
  core_profile *p = core_profile_new();
  CU_ASSERT_FATAL(p != NULL);
  CU_ASSERT_STRING_EQUAL(p->source, "calibrated");
  core_profile_free(p);
}

/* A write that cannot happen leaves nothing behind and says why. */
static void test_profile_write_fails_cleanly(void) {
  core_profile *p = NULL;
  CU_ASSERT_FATAL(core_profile_load(TU_DATA("cpu-test.cfg"), &p) == 0);
  char path[4200];
  snprintf(path, sizeof path, "%s/no-such-dir/p.cfg", scratch);
  CU_ASSERT(core_profile_write(p, path) != 0);
  CU_ASSERT(strstr(core_err_msg(), "no-such-dir") != NULL);
  core_profile_free(p);
}

/* --- sweep expansion ------------------------------------------------------- */

static void test_sweep_order_and_count(void) {
  const char *text = "profile = \"gpu-test.cfg\";\n"
                     "model = [\"../../scenarios/models/mlp.cfg\", \"../../scenarios/models/mlp-small.cfg\"];\n"
                     "training = { batch = [8, 16]; precision = [\"fp32\", \"amp_bf16\", \"bf16\"]; };\n"
                     "cluster = { nodes = [1, 2, 4, 8, 16]; devices_per_node = [1, 4]; };\n"
                     "networks = ( { name = \"a\"; gbps = 1.0; latency_us = 1.0; },\n"
                     "             { name = \"b\"; gbps = 2.0; latency_us = 1.0; },\n"
                     "             { name = \"c\"; gbps = 3.0; latency_us = 1.0; } );\n"
                     "ddp = { backend = [\"nccl\", \"gloo\"]; algorithm = [\"auto\", \"hierarchical\"];\n"
                     "        bucket_cap_mb = [1.0, 5.0, 25.0]; overlap = [true, false]; };\n";
  sim_scenario *s = tu_load_string(text, TU_DATA("sweep-test.cfg"));
  CU_ASSERT_FATAL(s != NULL);
  const char *models[] = {"mlp", "mlp-small"};
  const char *nets[] = {"a", "b", "c"};
  const enum sim_backend backs[] = {SIM_BACKEND_NCCL, SIM_BACKEND_GLOO};
  const int algos[] = {-1, SIM_ALGO_HIERARCHICAL};
  const enum sim_precision precs[] = {SIM_PREC_FP32, SIM_PREC_AMP_BF16, SIM_PREC_BF16};
  const int batch[] = {8, 16};
  const double caps[] = {1.0, 5.0, 25.0};
  const int ovl[] = {1, 0};
  const int pn[] = {1, 4};
  const int nodes[] = {1, 2, 4, 8, 16};
  /* Cartesian product: 2*3*2*2*3*2*3*2*2*5. */
  CU_ASSERT_EQUAL(sim_scenario_points(s), 2L * 3 * 2 * 2 * 3 * 2 * 3 * 2 * 2 * 5);
  long idx = 0;
  int bad = 0;
  /* Outermost first: model, network, backend, algorithm, precision, batch,
   * bucket_cap_mb, overlap, devices_per_node, nodes. */
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 2; c++)
        for (int d = 0; d < 2; d++)
          for (int e = 0; e < 3; e++)
            for (int f = 0; f < 2; f++)
              for (int g = 0; g < 3; g++)
                for (int h = 0; h < 2; h++)
                  for (int i = 0; i < 2; i++)
                    for (int j = 0; j < 5; j++, idx++) {
                      sim_point p;
                      memset(&p, 0xff, sizeof p);
                      sim_scenario_point(s, idx, &p);
                      if (p.index != idx || strcmp(p.model->name, models[a]) || strcmp(p.network->name, nets[b]) ||
                          p.backend != backs[c] || p.algorithm != algos[d] || p.precision != precs[e] ||
                          p.batch != batch[f] || p.bucket_cap_mb != caps[g] || p.overlap != ovl[h] ||
                          p.per_node != pn[i] || p.nodes != nodes[j])
                        bad++;
                    }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(idx, sim_scenario_points(s));
  sim_scenario_free(s);
}

/* ddp.find_unused_parameters sweeps like overlap: its dimension sits just
 * inside overlap's and outside compression's. */
static void test_sweep_find_unused(void) {
  const char *text = "profile = \"gpu-test.cfg\"; model = \"../../scenarios/models/mlp.cfg\";\n"
                     "training = { batch = 8; }; cluster = { nodes = 2; devices_per_node = 1; };\n"
                     "networks = ( { name = \"a\"; gbps = 1.0; latency_us = 1.0; } );\n"
                     "ddp = { overlap = [true, false]; find_unused_parameters = [false, true];\n"
                     "        compression = [\"none\", \"fp16\"]; };\n";
  sim_scenario *s = tu_load_string(text, TU_DATA("sweep-unused.cfg"));
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL_FATAL(sim_scenario_points(s), 8);
  for (long i = 0; i < 8; i++) {
    sim_point p;
    sim_scenario_point(s, i, &p);
    CU_ASSERT_EQUAL(p.overlap, i < 4);
    CU_ASSERT_EQUAL(p.find_unused, (int)(i / 2 % 2));
    CU_ASSERT_EQUAL(p.compression.kind, i % 2 ? CORE_COMPRESS_FP16 : CORE_COMPRESS_NONE);
  }
  sim_scenario_free(s);
}

/* A dimension's key as the scenario spells it, and the spelling it does
 * not use; a repeat is refused in either (every_steps, weibull_scale_h). */
#define SPELLED(FAILURES, CHECKPOINT)                                                                                  \
  "profile = \"gpu-test.cfg\"; model = \"../../scenarios/models/mlp.cfg\";\n"                                          \
  "training = { batch = 8; }; cluster = { nodes = 2; devices_per_node = 1; };\n"                                       \
  "networks = ( { name = \"a\"; gbps = 1.0; latency_us = 1.0; } );\n"                                                  \
  "job = { steps = 1000.0; };\n"                                                                                       \
  "failures = { " FAILURES " restart_s = 10.0; load_s = 1.0; };\n"                                                     \
  "checkpoint = { " CHECKPOINT " cost_s = 1.0; };\n"

static void test_dim_path(void) {
  sim_scenario *s = tu_load_string(SPELLED("mtbf_h = 10.0;", "every_s = 600.0;"), TU_DATA("spelled.cfg"));
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_STRING_EQUAL(sim_dim_path(s, SIM_DIM_BATCH, 0), "training.batch");
  CU_ASSERT_PTR_NULL(sim_dim_path(s, SIM_DIM_BATCH, 1));
  CU_ASSERT_STRING_EQUAL(sim_dim_path(s, SIM_DIM_FAIL_RATE, 0), "failures.mtbf_h");
  CU_ASSERT_STRING_EQUAL(sim_dim_path(s, SIM_DIM_FAIL_RATE, 1), "failures.weibull_scale_h");
  CU_ASSERT_STRING_EQUAL(sim_dim_path(s, SIM_DIM_CKPT_EVERY, 0), "checkpoint.every_s");
  CU_ASSERT_STRING_EQUAL(sim_dim_column(s, SIM_DIM_FAIL_RATE), "mtbf_h");
  sim_scenario_free(s);
  s = tu_load_string(
      SPELLED("distribution = \"weibull\"; weibull_scale_h = 10.0; weibull_shape = 0.8;", "every_steps = 100.0;"),
      TU_DATA("spelled.cfg"));
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_STRING_EQUAL(sim_dim_path(s, SIM_DIM_FAIL_RATE, 0), "failures.weibull_scale_h");
  CU_ASSERT_STRING_EQUAL(sim_dim_path(s, SIM_DIM_FAIL_RATE, 1), "failures.mtbf_h");
  CU_ASSERT_STRING_EQUAL(sim_dim_path(s, SIM_DIM_CKPT_EVERY, 0), "checkpoint.every_steps");
  CU_ASSERT_STRING_EQUAL(sim_dim_path(s, SIM_DIM_CKPT_EVERY, 1), "checkpoint.every_s");
  CU_ASSERT_STRING_EQUAL(sim_dim_column(s, SIM_DIM_FAIL_RATE), "weibull_scale_h");
  sim_scenario_free(s);
  s = NULL;
  core_err_clear();
  CU_ASSERT_EQUAL(sim_scenario_load_string(SPELLED("distribution = \"weibull\"; weibull_scale_h = [10.0, 10.0]; "
                                                   "weibull_shape = 0.8;",
                                               "every_steps = [100.0, 50.0, 100.0];"),
                      TU_DATA("spelled.cfg"), &s),
      CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "'weibull_scale_h' holds 10 twice") != NULL);
}

static void test_shipped_scenario_points(void) {
  /* gigabit-vs-ib.cfg: 2 models x 4 networks x 2 backends x 7 node counts. */
  sim_scenario *s = tu_load_file(TU_SRC("scenarios/gigabit-vs-ib.cfg"));
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL(sim_scenario_points(s), 112);
  CU_ASSERT_STRING_EQUAL(s->name, "gigabit-vs-ib");
  CU_ASSERT_STRING_EQUAL(s->csv_name, "gigabit-vs-ib.csv");
  CU_ASSERT_EQUAL(s->n_networks, 4);
  CU_ASSERT_EQUAL(s->networks[3].nics_per_node, 8);
  CU_ASSERT_EQUAL(s->networks[3].efficiency, 0.96);
  sim_scenario_free(s);
  /* Every shipped scenario loads. */
  DIR *dir = opendir(TU_SRC("scenarios"));
  CU_ASSERT_FATAL(dir != NULL);
  struct dirent *de;
  int n = 0;
  while ((de = readdir(dir)) != NULL) {
    size_t len = strlen(de->d_name);
    if (len < 5 || strcmp(de->d_name + len - 4, ".cfg"))
      continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", TU_SRC("scenarios"), de->d_name);
    s = tu_load_file(path);
    CU_ASSERT(s != NULL);
    CU_ASSERT(!s || sim_scenario_points(s) >= 1);
    sim_scenario_free(s);
    n++;
  }
  closedir(dir);
  CU_ASSERT(n >= 1);
}

/* --- defaults -------------------------------------------------------------- */

static void test_scenario_defaults(void) {
#define MINIMAL_SCENARIO                                                                                               \
  "profile = \"%s\"; model = \"../../scenarios/models/mlp.cfg\";\n"                                                    \
  "training = { batch = 4; };\n"                                                                                       \
  "cluster = { nodes = 2; devices_per_node = 1; };\n"                                                                  \
  "networks = ( { name = \"n\"; gbps = 1.0; latency_us = 5.0; } );\n"
  char text[1024];
  const char *profiles[] = {"cpu-test.cfg", "gpu-test.cfg"};
  for (int k = 0; k < 2; k++) {
    snprintf(text, sizeof text, MINIMAL_SCENARIO, profiles[k]);
    sim_scenario *s = tu_load_string(text, TU_DATA("defaults-test.cfg"));
    CU_ASSERT_FATAL(s != NULL);
    /* name: the file name without .cfg; CSV: NAME.csv. */
    CU_ASSERT_STRING_EQUAL(s->name, "defaults-test");
    CU_ASSERT_STRING_EQUAL(s->csv_name, "defaults-test.csv");
    CU_ASSERT_STRING_EQUAL(s->description, "");
    CU_ASSERT_EQUAL(sim_scenario_points(s), 1);
    /* backend: nccl on GPU profiles, else gloo. */
    CU_ASSERT_EQUAL(s->n[SIM_DIM_BACKEND], 1);
    CU_ASSERT_EQUAL(s->backends[0], k == 0 ? SIM_BACKEND_GLOO : SIM_BACKEND_NCCL);
    CU_ASSERT_EQUAL(s->algorithms[0], -1);
    CU_ASSERT_EQUAL(s->precisions[0], SIM_PREC_FP32);
    CU_ASSERT_EQUAL(s->optimizer, SIM_OPT_SGD);
    /* PyTorch DDP: bucket_cap_mb = 25, first bucket 1 MiB,
     * gradient_as_bucket_view = False; overlap is what DDP does. */
    CU_ASSERT_EQUAL(s->bucket_cap_mb[0], 25.0);
    CU_ASSERT_EQUAL(s->first_bucket_mb, 1.0);
    CU_ASSERT_EQUAL(s->overlap[0], 1);
    CU_ASSERT_EQUAL(s->gradient_as_bucket_view, 0);
    /* find_unused_parameters = False. */
    CU_ASSERT_EQUAL(s->n[SIM_DIM_FIND_UNUSED], 1);
    CU_ASSERT_EQUAL(s->find_unused[0], 0);
    /* Timeouts: NCCL 600 s (torch default_pg_nccl_timeout), Gloo 30 s. */
    CU_ASSERT_EQUAL(s->timeout_s, 0.0);
    CU_ASSERT_EQUAL(sim_scenario_timeout(s, SIM_BACKEND_NCCL), 600.0);
    CU_ASSERT_EQUAL(sim_scenario_timeout(s, SIM_BACKEND_GLOO), 30.0);
    CU_ASSERT_EQUAL(s->steps, 10);
    CU_ASSERT_EQUAL(s->seed, 1);
    CU_ASSERT_EQUAL(s->every_rank, 0);
    /* Network defaults: 1 NIC, TCP payload per frame at MTU 1500 (1448 of
     * 1538 bytes on the wire), no oversubscription. */
    CU_ASSERT_EQUAL(s->networks[0].nics_per_node, 1);
    CU_ASSERT(fabs(s->networks[0].efficiency - 1448.0 / 1538.0) < 1e-15);
    CU_ASSERT_EQUAL(s->networks[0].oversubscription, 1.0);
    CU_ASSERT_EQUAL(s->networks[0].from_profile, 0);
    sim_scenario_free(s);
  }

  /* An output group without csv keeps NAME.csv; a name without a .cfg file
   * name still gives NAME.csv. */
  const char *with_output =
      "name = \"study-1\"; profile = \"cpu-test.cfg\"; model = \"../../scenarios/models/mlp.cfg\";\n"
      "training = { batch = 4; }; cluster = { nodes = 2; devices_per_node = 1; };\n"
      "networks = ( { name = \"n\"; gbps = 1.0; latency_us = 5.0; } ); output = { };\n"
      "simulation = { seed = 9; };\n";
  sim_scenario *s = NULL;
  CU_ASSERT_FATAL(sim_scenario_load_string(with_output, TU_DATA("x.cfg"), &s) == 0);
  CU_ASSERT_STRING_EQUAL(s->name, "study-1");
  CU_ASSERT_STRING_EQUAL(s->csv_name, "study-1.csv");
  CU_ASSERT_EQUAL(s->seed, 9);
  CU_ASSERT_EQUAL(s->steps, 10);
  sim_scenario_free(s);
}

/* Integers beyond 32 bits are read as written (libconfig 1.5 alone reads
 * 4294967296 as 0): a seed, a count of steps given as an integer, an array
 * mixing small and large integers; digits in strings, names and comments are
 * text, whatever their size. */
static void test_integers_beyond_32_bits(void) {
  const char *text =
      "name = \"wide\"; description = \"4294967296 nodes, 99999999999999999999 times\";\n"
      "profile = \"../../scenarios/profiles/example-2core.cfg\"; model = \"../../scenarios/models/mlp.cfg\";\n"
      "training = { batch = 4; }; cluster = { nodes = 2; devices_per_node = 1; };\n"
      "networks = ( { name = \"n9999999999\"; gbps = 1.0; latency_us = 5.0; } );\n"
      "# 99999999999999999999 in a comment\n"
      "/* and 88888888888888888888 in another */\n"
      "simulation = { seed = 4294967296; replications = 2; };  // 77777777777777777777\n"
      "job = { steps = 5000000000; };\n"
      "checkpoint = { every_s = [60, 4294967296]; };\n";
  sim_scenario *s = tu_load_string(text, TU_DATA("wide.cfg"));
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL(s->seed, UINT64_C(4294967296));
  CU_ASSERT_EQUAL(s->job.steps, 5e9);
  CU_ASSERT_EQUAL_FATAL(s->n[SIM_DIM_CKPT_EVERY], 2);
  CU_ASSERT_EQUAL(s->job.every[0], 60.0);
  CU_ASSERT_EQUAL(s->job.every[1], 4294967296.0);
  CU_ASSERT_STRING_EQUAL(s->description, "4294967296 nodes, 99999999999999999999 times");
  CU_ASSERT_STRING_EQUAL(s->networks[0].name, "n9999999999");
  sim_scenario_free(s);
  /* At the edges of 32 bits, and in hexadecimal. */
  core_cfg c;
  CU_ASSERT_FATAL(core_cfg_load_string(&c,
                      "a = -2147483648; b = -2147483649; c = 2147483647;\n"
                      "d = 2147483648; e = 0x100000000; f = 9223372036854775807;\n",
                      "edges.cfg", "test") == 0);
  const long long want[] = {
      -2147483648LL, -2147483649LL, 2147483647LL, 2147483648LL, 4294967296LL, 9223372036854775807LL};
  const char *keys[] = {"a", "b", "c", "d", "e", "f"};
  for (int i = 0; i < 6; i++) {
    long long v = 0;
    CU_ASSERT(core_cfg_int(core_cfg_root(&c), keys[i], 1, 0, LLONG_MIN, LLONG_MAX, &v) == 0);
    CU_ASSERT_EQUAL(v, want[i]);
  }
  core_cfg_free(&c);
}

static void test_explicit_values(void) {
  const char *text = "name = \"explicit\"; description = \"d\"; profile = \"gpu-test.cfg\"; model = \"big-test.cfg\";\n"
                     "training = { batch = 3; precision = \"bf16\"; optimizer = \"adam\"; };\n"
                     "cluster = { nodes = 2; devices_per_node = 4; };\n"
                     "networks = ( { name = \"n\"; gbps = 2.5; latency_us = 0.0; nics_per_node = 3; efficiency = 0.5; "
                     "oversubscription = 2.0; },\n"
                     "             { name = \"m\"; from_profile = true; } );\n"
                     "ddp = { backend = \"nccl\"; algorithm = \"tree\"; bucket_cap_mb = 0.5; first_bucket_mb = 0.0;\n"
                     "        overlap = false; gradient_as_bucket_view = true; timeout_s = 12.5;\n"
                     "        find_unused_parameters = true; };\n"
                     "simulation = { steps = 3; seed = 0; ranks = \"every\"; };\n"
                     "output = { csv = \"out.csv\"; };\n";
  sim_scenario *s = tu_load_string(text, TU_DATA("explicit.cfg"));
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_STRING_EQUAL(s->csv_name, "out.csv");
  CU_ASSERT_EQUAL(s->precisions[0], SIM_PREC_BF16);
  CU_ASSERT_EQUAL(s->optimizer, SIM_OPT_ADAM);
  CU_ASSERT_EQUAL(s->algorithms[0], SIM_ALGO_TREE);
  CU_ASSERT_EQUAL(s->backends[0], SIM_BACKEND_NCCL);
  CU_ASSERT_EQUAL(s->first_bucket_mb, 0.0);
  CU_ASSERT_EQUAL(s->find_unused[0], 1);
  CU_ASSERT_EQUAL(s->timeout_s, 12.5);
  CU_ASSERT_EQUAL(sim_scenario_timeout(s, SIM_BACKEND_NCCL), 12.5);
  CU_ASSERT_EQUAL(s->seed, 0);
  CU_ASSERT_EQUAL(s->every_rank, 1);
  CU_ASSERT_EQUAL(s->networks[0].oversubscription, 2.0);
  CU_ASSERT_EQUAL(s->networks[1].from_profile, 1);
  /* Precisions: fp16/bf16 reduce 2-byte gradients; autocast keeps fp32. */
  CU_ASSERT_EQUAL(sim_precision_grad_bytes(SIM_PREC_BF16), 2);
  CU_ASSERT_EQUAL(sim_precision_grad_bytes(SIM_PREC_FP16), 2);
  CU_ASSERT_EQUAL(sim_precision_grad_bytes(SIM_PREC_AMP_BF16), 4);
  CU_ASSERT_EQUAL(sim_precision_grad_bytes(SIM_PREC_FP32), 4);
  CU_ASSERT_EQUAL(sim_precision_compute(SIM_PREC_AMP_BF16), CORE_PREC_BF16);
  CU_ASSERT_EQUAL(sim_precision_compute(SIM_PREC_AMP_FP16), CORE_PREC_FP16);
  sim_scenario_free(s);
}

/* --- models ---------------------------------------------------------------- */

static void test_model_defaults(void) {
  core_model *m = NULL;
  int rc = core_model_load(TU_SRC("scenarios/models/mlp.cfg"), &m);
  CU_ASSERT_FATAL(rc == 0);
  /* Linear(1024, 2048), (2048, 2048) x 2, (2048, 1024): weight out x in,
   * then bias out, in layer order (PyTorch's parameter order). */
  const int64_t want[8] = {2048 * 1024, 2048, 2048 * 2048, 2048, 2048 * 2048, 2048, 1024 * 2048, 1024};
  CU_ASSERT_EQUAL(m->n_layers, 4);
  CU_ASSERT_FATAL(m->n_tensors == 8);
  int64_t total = 0;
  for (int t = 0; t < 8; t++) {
    CU_ASSERT_EQUAL(m->tensor_elems[t], want[t]);
    CU_ASSERT_EQUAL(m->tensor_layer[t], t / 2);
    total += want[t];
  }
  CU_ASSERT_EQUAL(m->n_params, total);
  /* 2 FLOPs per multiply-add: 2 in out per sample; backward twice that,
   * except the first layer (no input gradient); activations 4 out bytes. */
  CU_ASSERT_EQUAL(m->layers[1].fwd_flops, 2.0 * 2048 * 2048);
  CU_ASSERT_EQUAL(m->layers[1].bwd_flops, 4.0 * 2048 * 2048);
  CU_ASSERT_EQUAL(m->layers[0].bwd_flops, 2.0 * 1024 * 2048);
  CU_ASSERT_EQUAL(m->layers[3].act_bytes, 4.0 * 1024);
  CU_ASSERT_EQUAL(m->layers[0].act, CORE_ACT_RELU);
  CU_ASSERT_EQUAL(m->layers[3].act, CORE_ACT_NONE);
  CU_ASSERT_STRING_EQUAL(m->loss, "mse");
  CU_ASSERT_EQUAL(m->measured, 0);
  CU_ASSERT(m->layers[0].fwd_s < 0);
  CU_ASSERT(m->psgd_sync_us < 0); /* not measured */
  CU_ASSERT(core_model_check_runnable(m) == 0);
  core_model_free(m);

  /* Generic layers, measured times and PowerSGD's wait, a layer without parameters. */
  core_cfg c;
  CU_ASSERT_FATAL(
      core_cfg_load_string(&c,
          "model = { name = \"g\"; measured_batch = 16; psgd_sync_us = 2500;\n"
          "  layers = ( { name = \"x\"; params = [10, 5]; fwd_flops = 100.0; fwd_ms = 1.5; bwd_ms = 3.0; },\n"
          "             { name = \"y\"; fwd_flops = 7.0; bwd_flops = 1.0; fwd_ms = 0.5; bwd_ms = 0.25; },\n"
          "             { name = \"z\"; params = [3]; fwd_flops = 0.0; fwd_ms = 0.0; bwd_ms = 0.0; } ); };\n",
          TU_DATA("inline-model.cfg"), "model") == 0);
  rc = core_model_from_setting(core_cfg_root(&c), TU_DATA("inline-model.cfg"), &m);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_FATAL(rc == 0);
  CU_ASSERT_EQUAL(m->n_tensors, 3);
  CU_ASSERT_EQUAL(m->layers[1].n_tensors, 0);
  CU_ASSERT_EQUAL(m->layers[2].first_tensor, 2);
  CU_ASSERT_EQUAL(m->tensor_layer[2], 2);
  CU_ASSERT_EQUAL(m->n_params, 18);
  CU_ASSERT(m->measured && m->measured_batch == 16.0);
  CU_ASSERT_EQUAL(m->psgd_sync_us, 2500.0);
  CU_ASSERT(fabs(m->layers[0].fwd_s - 1.5e-3) < 1e-18 && fabs(m->layers[0].bwd_s - 3e-3) < 1e-18);
  CU_ASSERT_EQUAL(m->layers[1].bwd_flops, 1.0);
  CU_ASSERT_EQUAL(m->fwd_flops, 107.0);
  CU_ASSERT(core_model_check_runnable(m) == CORE_EINVAL);
  core_model_free(m);
  core_cfg_free(&c);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("parsing", suite_init, suite_clean);
  CU_add_test(s, "profile round trip: shipped and test profiles", test_round_trip_shipped);
  CU_add_test(s, "profile round trip: every feature", test_round_trip_maximal);
  CU_add_test(s, "profile write to a missing directory", test_profile_write_fails_cleanly);
  CU_add_test(s, "profile meta.source, and its default from the provenance", test_profile_source);
  CU_add_test(s, "sweep: Cartesian product, documented order", test_sweep_order_and_count);
  CU_add_test(s, "sweep: find_unused_parameters inside overlap", test_sweep_find_unused);
  CU_add_test(s, "a dimension's key in the scenario's spelling and the other", test_dim_path);
  CU_add_test(s, "shipped scenarios load; gigabit-vs-ib has 112 points", test_shipped_scenario_points);
  CU_add_test(s, "scenario defaults", test_scenario_defaults);
  CU_add_test(s, "scenario explicit values", test_explicit_values);
  CU_add_test(s, "integers beyond 32 bits read as written", test_integers_beyond_32_bits);
  CU_add_test(s, "model defaults", test_model_defaults);
}

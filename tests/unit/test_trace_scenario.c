/* The traced job's scenario and profile that `ddpsim import torch-trace
 * --scenario` writes from a GPU trace (calibrate/trace_scenario.h), on
 * tests/data/torch-trace/gpu-ddp.json: the scenario replays the trace's
 * median step, on the traced GPU and retargeted to another; its allreduces
 * are fitted on the buckets' sizes, NCCL's latency where too few sizes fit
 * one, the line through their times where the sizes do not rise
 * (gpu-3buckets.json), each bucket's fastest step where the ranks were out
 * of step (gpu-skew.json); names come from paths of any characters; and
 * --profile-base must be a profile of the traced GPU. */
#include "gputrace_util.h"
#include "simutil.h"
#include "testutil.h"

#include "calibrate/import_gpu.h"
#include "calibrate/trace_scenario.h"
#include "core/err.h"
#include "core/model.h"
#include "core/profile.h"
#include "core/traced.h"
#include "sim/predict.h"
#include "sim/replay.h"
#include "sim/scenario.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[4096];

static int suite_init(void) { return tu_mkdtemp(dir, sizeof dir, "tracescen"); }
static int suite_clean(void) {
  tu_rmdir(dir);
  return 0;
}

enum { PATH_LEN = 4200 };

/* trace imported to NAME.cfg in the scratch directory and its job's
 * scenario written to NAME-job.cfg (their paths into model and scen, the
 * notes into notes); the model read back, or NULL after a failed assertion. */
static core_model *traced_job(
    const char *trace, const char *name, char model[PATH_LEN], char scen[PATH_LEN], char *notes, size_t n_notes) {
  snprintf(model, PATH_LEN, "%s/%s.cfg", dir, name);
  snprintf(scen, PATH_LEN, "%s/%s-job.cfg", dir, name);
  core_model *m = tu_import_trace(trace, model);
  if (!m)
    return NULL;
  int rc = cal_trace_scenario(model, scen, NULL, notes, n_notes);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_EQUAL(rc, 0);
  if (rc) {
    core_model_free(m);
    return NULL;
  }
  return m;
}

/* The traced job on another GPU: its scenario simulated with a DGX H100's
 * profile replays each class at its ratio (fp32: 19.5/67 for compute,
 * 2,039/3,350 for memory), and at tf32 compute at 19.5/494.7; at amp_bf16
 * (other bytes) it is refused, naming the model. The fixture's host-bound
 * step keeps its 1.265 ms; twelve times the batch makes it device-bound. */
static void test_retarget(void) {
  char model[PATH_LEN], scen[PATH_LEN], notes[4096] = "";
  core_model *m = traced_job(FIXTURE, "fxr", model, scen, notes, sizeof notes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  core_profile *h100 = NULL;
  CU_ASSERT_FATAL(core_profile_load(TU_SRC("scenarios/profiles/dgx-h100.cfg"), &h100) == 0);
  double cs, ms;
  CU_ASSERT_EQUAL(sim_replay_retarget(m->traced, model, h100, "h", CORE_PREC_FP32, &cs, &ms), 0);
  CU_ASSERT(NEAR(cs, 19.5 / 67.0) && NEAR(ms, 2039.0 / 3350.0));
  CU_ASSERT_EQUAL(sim_replay_retarget(m->traced, model, h100, "h", CORE_PREC_TF32, &cs, &ms), 0);
  CU_ASSERT(NEAR(cs, 19.5 / 494.7));
  core_profile_free(h100);
  sim_scenario *s = NULL;
  CU_ASSERT_EQUAL_FATAL(sim_scenario_load_with(scen, TU_SRC("scenarios/profiles/dgx-h100.cfg"), &s), 0);
  sim_engine *e = NULL;
  CU_ASSERT_EQUAL_FATAL(sim_engine_new(&e), 0);
  sim_point p;
  sim_point_result r;
  sim_scenario_point(s, 0, &p);
  CU_ASSERT_EQUAL_FATAL(sim_predict_point(s, &p, e, NULL, 0, &r), 0);
  CU_ASSERT(fabs(r.step_s - 1265 * US) < 0.01 * 1265 * US); /* host-bound on either GPU */
  /* Device-bound at 12 x the batch: the free-communication replay's period
   * is the compute stream's work, each class at its ratio. */
  p.batch = 12 * 32;
  CU_ASSERT_EQUAL_FATAL(sim_predict_point(s, &p, e, NULL, 0, &r), 0);
  double dev = 0;
  for (int i = 0; i < m->traced->n_pieces; i++) {
    const core_piece *q = &m->traced->pieces[i];
    dev += (q->dev_class_s[0] * 19.5 / 67.0 + q->dev_class_s[1] * 2039.0 / 3350.0) * 12 + q->dev_class_s[2];
  }
  CU_ASSERT(dev > 1265 * US && fabs(r.compute_s - dev) < 1e-3 * dev);
  sim_scenario_free(s);
  sim_engine_free(e);
  core_model_free(m);
  /* Another width: refused at load, naming the model file and its line. */
  char *text = tu_read_file(scen, NULL), *at = text ? strstr(text, "precision = \"fp32\"") : NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(at);
  memcpy(at, "precision = \"bf16\"", strlen("precision = \"bf16\""));
  CU_ASSERT_EQUAL_FATAL(tu_write_file(scen, text), 0);
  free(text);
  s = NULL;
  CU_ASSERT_EQUAL(sim_scenario_load_with(scen, TU_SRC("scenarios/profiles/dgx-h100.cfg"), &s), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "fxr.cfg:") && strstr(core_err_msg(), "computed in fp32"));
  sim_scenario_free(s);
}

static void test_scenario_replays(void) {
  char model[PATH_LEN], scen[PATH_LEN], notes[4096] = "";
  core_model *m = traced_job(FIXTURE, "fx3", model, scen, notes, sizeof notes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  core_model_free(m);
  sim_scenario *s = NULL;
  CU_ASSERT_EQUAL_FATAL(sim_scenario_load_with(scen, NULL, &s), 0);
  CU_ASSERT_EQUAL(sim_scenario_points(s), 1);
  sim_engine *e = NULL;
  CU_ASSERT_EQUAL_FATAL(sim_engine_new(&e), 0);
  sim_point p;
  sim_point_result r;
  sim_scenario_point(s, 0, &p);
  CU_ASSERT_EQUAL_FATAL(sim_predict_point(s, &p, e, NULL, 0, &r), 0);
  CU_ASSERT(fabs(r.step_s - 1265 * US) < 0.01 * 1265 * US);
  CU_ASSERT_EQUAL(r.n_buckets, 2); /* DDP's defaults give the trace's two buckets */
  /* One node: the network is an assumed one, named for what it is, as the
   * rows of more nodes will show it. */
  CU_ASSERT_STRING_EQUAL(s->networks[0].name, "100GbE");
  sim_scenario_free(s);
  sim_engine_free(e);
}

/* The profile beside the traced job's scenario, or NULL. */
static core_profile *job_profile(const char *scen) {
  char prof[4400];
  core_profile *p = NULL;
  cal_trace_scenario_profile(scen, prof, sizeof prof);
  if (core_profile_load(prof, &p) != 0)
    fprintf(stderr, "\n%s\n", core_err_msg());
  return p;
}

/* Its NCCL allreduce entry, or NULL. */
static const core_prof_coll *nccl_allreduce(const core_profile *p) {
  for (int i = 0; i < p->n_colls; i++)
    if (!strcmp(p->colls[i].op, "allreduce") && !strcmp(p->colls[i].backend, "nccl"))
      return &p->colls[i];
  return NULL;
}

/* The fixture's two buckets (of two sizes) cannot fit a latency: the
 * traced job's profile takes NCCL's for a ring of 2 ranks over NVLink
 * (tuning.cc, Simple: 8.4 + 2 x 3.4 us), not 0, with the rate that keeps
 * the buckets' traced 400 + 300 us, and the notes say so. */
static void test_allreduce_latency_fallback(void) {
  char model[PATH_LEN], scen[PATH_LEN], notes[4096] = "";
  core_model *m = traced_job(FIXTURE, "fx4", model, scen, notes, sizeof notes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  core_model_free(m);
  CU_ASSERT(strstr(notes, "cannot fit a latency") && strstr(notes, "15.2 us, NCCL's estimate"));
  core_profile *p = job_profile(scen);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const core_prof_coll *c = nccl_allreduce(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_EQUAL_FATAL(c->n_fits, 1);
  CU_ASSERT(NEAR(c->fits[0].alpha_us, 8.4 + 2 * 3.4));
  double bytes = 4.0 * (1000 + 640000) + 4.0 * (64 + 64 + 4608);
  double total_us = 2 * c->fits[0].alpha_us + bytes / (c->fits[0].algbw_GBps * 1e3);
  CU_ASSERT(fabs(total_us - 700.0) < 1e-6 * 700.0);
  if (!NEAR(c->fits[0].alpha_us, 15.2))
    fprintf(stderr, "\nalpha %g us; notes:\n%s\n", c->fits[0].alpha_us, notes);
  core_profile_free(p);
}

/* Three buckets of three sizes, in bucket order 4,000, 2,560,000, 18,944
 * bytes (not rising): the traced job's profile fits the line through their
 * times, which gen_gpu_fixture.py put at 20 us plus the bytes at 4 GB/s, not
 * NCCL's latency. */
static void test_allreduce_fit_unsorted_sizes(void) {
  static const double bytes[] = {4000, 2560000, 18944}, us[] = {21, 660, 24.736};
  char model[PATH_LEN], scen[PATH_LEN], notes[4096] = "";
  core_model *m = traced_job(TU_DATA("torch-trace/gpu-3buckets.json"), "fx3b", model, scen, notes, sizeof notes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL_FATAL(m->traced->n_buckets, 3);
  for (int b = 0; b < 3; b++)
    CU_ASSERT(NEAR(m->traced->bucket_bytes[b], bytes[b]) && NEAR(m->traced->bucket_s[b], us[b] * US));
  core_model_free(m);
  CU_ASSERT(strstr(notes, "cannot fit a latency") == NULL);
  core_profile *p = job_profile(scen);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const core_prof_coll *c = nccl_allreduce(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_EQUAL_FATAL(c->n_fits, 1);
  CU_ASSERT(NEAR(c->fits[0].alpha_us, 20.0) && NEAR(c->fits[0].algbw_GBps, 4.0));
  for (int b = 0; b < 3; b++) /* every bucket's time on the fitted line */
    CU_ASSERT(NEAR(c->fits[0].alpha_us + bytes[b] / (c->fits[0].algbw_GBps * 1e3), us[b]));
  if (!NEAR(c->fits[0].alpha_us, 20.0))
    fprintf(stderr, "\nalpha %g us, %g GB/s; notes:\n%s\n", c->fits[0].alpha_us, c->fits[0].algbw_GBps, notes);
  core_profile_free(p);
  /* DDP's default caps give two buckets; the scenario carries caps that
   * give the traced three. */
  CU_ASSERT(strstr(notes, "the traced buckets are DDP's with bucket_cap_mb") != NULL);
  sim_scenario *sc = NULL;
  CU_ASSERT_EQUAL_FATAL(sim_scenario_load_with(scen, NULL, &sc), 0);
  sim_point_result r;
  CU_ASSERT_EQUAL_FATAL(tu_run_point(sc, 0, &r), 0);
  CU_ASSERT_EQUAL(r.n_buckets, 3);
  /* Its first bucket took the cap, as in a job that passed bucket_cap_mb:
   * it follows the cap when the cap is edited. */
  CU_ASSERT_EQUAL(sc->first_bucket_mb, SIM_FIRST_BUCKET_CAP);
  sim_scenario_free(sc);
}

/* gpu-skew.json: gpu-3buckets.json's buckets, each kernel also waiting 0,
 * 400 or 900 us for the later rank, a different one each step. The model
 * keeps each bucket's median (400 us over its transfer) and its fastest step
 * (the transfer alone); the profile fits the transfers, 20 us plus the bytes at 4 GB/s, not the
 * medians (which would give a latency of 420 us). */
static void test_allreduce_fit_without_skew(void) {
  static const double bytes[] = {4000, 2560000, 18944}, us[] = {21, 660, 24.736};
  char model[PATH_LEN], scen[PATH_LEN], notes[4096] = "";
  core_model *m = traced_job(TU_DATA("torch-trace/gpu-skew.json"), "fxskew", model, scen, notes, sizeof notes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL_FATAL(m->traced->n_buckets, 3);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m->traced->bucket_min_s);
  for (int b = 0; b < 3; b++) {
    CU_ASSERT(NEAR(m->traced->bucket_bytes[b], bytes[b]));
    CU_ASSERT(NEAR(m->traced->bucket_s[b], (us[b] + 400) * US) && NEAR(m->traced->bucket_min_s[b], us[b] * US));
  }
  core_model_free(m);
  CU_ASSERT(strstr(notes, "cannot fit a latency") == NULL);
  core_profile *p = job_profile(scen);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const core_prof_coll *c = nccl_allreduce(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_EQUAL_FATAL(c->n_fits, 1);
  CU_ASSERT(NEAR(c->fits[0].alpha_us, 20.0) && NEAR(c->fits[0].algbw_GBps, 4.0));
  if (!NEAR(c->fits[0].alpha_us, 20.0))
    fprintf(stderr, "\nalpha %g us, %g GB/s; notes:\n%s\n", c->fits[0].alpha_us, c->fits[0].algbw_GBps, notes);
  core_profile_free(p);
}

/* A fit whose latency the trace's own NCCL kernels contradict: gpu-skew.json's
 * model with every bucket's fastest step its median (the wait in every step),
 * whose line has a latency of 420 us, while the trace broadcast in 10 us: the
 * profile takes NCCL's latency for 2 ranks on NVLink, 15.2 us, and says why. */
static void test_allreduce_latency_contradicted(void) {
  char model[PATH_LEN], scen[PATH_LEN], notes[4096] = "";
  core_model *m = traced_job(TU_DATA("torch-trace/gpu-skew.json"), "fxwait", model, scen, notes, sizeof notes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  core_model_free(m);
  char *text = tu_read_file(model, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  for (char *k = strstr(text, "min_us"); k; k = strstr(k, "min_us"))
    memcpy(k, "#in_us", 6); /* commented out: min_us defaults to us */
  CU_ASSERT_EQUAL_FATAL(tu_write_file(model, text), 0);
  free(text);
  notes[0] = 0;
  CU_ASSERT_EQUAL_FATAL(cal_trace_scenario(model, scen, NULL, notes, sizeof notes), 0);
  CU_ASSERT(strstr(notes, "more than twice the trace's shortest NCCL kernel (10.0 us)") != NULL);
  CU_ASSERT(strstr(notes, "15.2 us, NCCL's estimate") != NULL);
  core_profile *p = job_profile(scen);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const core_prof_coll *c = nccl_allreduce(p);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT(NEAR(c->fits[0].alpha_us, 15.2));
  if (!NEAR(c->fits[0].alpha_us, 15.2))
    fprintf(stderr, "\nalpha %g us; notes:\n%s\n", c->fits[0].alpha_us, notes);
  core_profile_free(p);
}

/* The model's name comes from -o's file name made fit for a name (a space,
 * an '@' as '-', cut to 63 characters); a --name that is not one is refused
 * before any work. A scenario path with a quote or a backslash is written
 * escaped: the scenario loads and names its model. */
static void test_names_from_paths(void) {
  char out[4200], scen[4200], notes[4096] = "";
  snprintf(out, sizeof out, "%s/my model@a100.cfg", dir);
  core_model *m = tu_import_trace(FIXTURE, out);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_STRING_EQUAL(m->name, "my-model-a100");
  core_model_free(m);
  const char *traces[] = {FIXTURE};
  char never[4200];
  snprintf(never, sizeof never, "%s/named.cfg", dir);
  cal_gpu_opts o = {.name = "my model"};
  CU_ASSERT_EQUAL(cal_import_gpu(traces, 1, &o, never, NULL, 0), CORE_EUSAGE);
  CU_ASSERT(strstr(core_err_msg(), "model name 'my model'") != NULL);
  CU_ASSERT(access(never, F_OK) != 0);
  snprintf(scen, sizeof scen, "%s/job \"q\\x.cfg", dir);
  int rc = cal_trace_scenario(out, scen, NULL, notes, sizeof notes);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  sim_scenario *sc = NULL;
  rc = sim_scenario_load_with(scen, NULL, &sc);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  CU_ASSERT(sc->n_models == 1 && !strcmp(sc->models[0]->name, "my-model-a100"));
  sim_scenario_free(sc);
}

/* text with every "Optimizer.step#SGD.step" named for class cls instead
 * (malloc'd), or NULL. */
static char *rename_optimizer(const char *text, const char *cls) {
  static const char old[] = "Optimizer.step#SGD.step";
  char name[64];
  snprintf(name, sizeof name, "Optimizer.step#%s.step", cls);
  size_t hits = 0;
  for (const char *h = strstr(text, old); h; h = strstr(h + 1, old))
    hits++;
  char *out = malloc(strlen(text) + hits * strlen(name) + 1), *w = out;
  for (const char *r = text, *h; out; r = h + sizeof old - 1) {
    if (!(h = strstr(r, old))) {
      strcpy(w, r);
      break;
    }
    memcpy(w, r, (size_t)(h - r));
    w += h - r;
    w += sprintf(w, "%s", name);
  }
  return out;
}

/* The traced job's scenario of the fixture with its optimizer's class
 * renamed to cls, loaded into *out, its text into *text (free both). */
static int scenario_with_optimizer(const char *cls, sim_scenario **out, char **text) {
  char trace[4200], model[4200], scen[4200], notes[4096] = "";
  snprintf(trace, sizeof trace, "%s/fx-%s.json", dir, cls);
  snprintf(model, sizeof model, "%s/fx-%s.cfg", dir, cls);
  snprintf(scen, sizeof scen, "%s/fx-%s-job.cfg", dir, cls);
  char *json = tu_read_file(FIXTURE, NULL), *renamed = json ? rename_optimizer(json, cls) : NULL;
  int rc = renamed ? tu_write_file(trace, renamed) : -1;
  free(json);
  free(renamed);
  core_model *m = rc ? NULL : tu_import_trace(trace, model);
  if (!m)
    return -1;
  core_model_free(m);
  if (cal_trace_scenario(model, scen, NULL, notes, sizeof notes) != 0 || sim_scenario_load_with(scen, NULL, out) != 0)
    return -1;
  *text = tu_read_file(scen, NULL);
  return *text ? 0 : -1;
}

/* The traced job's scenario holds the optimizer the trace ran where its
 * class tells it: an Adam (AdamW, FusedAdam) as "adam", for its two states
 * a weight in mem_GB and a checkpoint; SGD, whose momentum its class does
 * not tell, as the default, with a comment saying what to set. */
static void test_optimizer_from_trace(void) {
  static const char *const adams[] = {"AdamW", "FusedAdam"};
  for (size_t i = 0; i < sizeof adams / sizeof *adams; i++) {
    sim_scenario *s = NULL;
    char *text = NULL;
    CU_ASSERT_EQUAL_FATAL(scenario_with_optimizer(adams[i], &s, &text), 0);
    CU_ASSERT_EQUAL(s->optimizer, SIM_OPT_ADAM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "optimizer = \"adam\";"));
    sim_scenario_free(s);
    free(text);
  }
  sim_scenario *s = NULL;
  char *text = NULL;
  CU_ASSERT_EQUAL_FATAL(scenario_with_optimizer("SGD", &s, &text), 0);
  CU_ASSERT_EQUAL(s->optimizer, SIM_OPT_SGD);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"sgd_momentum\""));
  sim_scenario_free(s);
  free(text);
}

/* --profile-base gives the traced GPU's roofs: a profile of a CPU, of
 * another GPU or of another board of the same name (an A100 of 40 GB for
 * the fixture's of 80, whose memory is slower) is refused, nothing written;
 * one of the traced board is taken. */
static void test_profile_base_of_traced_gpu(void) {
  char out[4200];
  snprintf(out, sizeof out, "%s/pbase.cfg", dir);
  const char *traces[] = {FIXTURE};
  static const struct {
    const char *profile, *want;
  } bad[] = {
      {TU_SRC("scenarios/profiles/dgx-h100.cfg"), "is a profile of H100-SXM ('H100-SXM5-80GB', 80 GB), but the trace "
                                                  "ran on A100-SXM4-80GB ('NVIDIA A100-SXM4-80GB', 85.0 GB)"},
      {TU_DATA("cpu-test.cfg"), "is a profile of a CPU (device.kind = \"cpu\")"},
      /* One name, another board: the 40 GB A100's 1,555 GB/s would stand
       * for the traced 80 GB one's 2,039. */
      {TU_SRC("scenarios/profiles/dgx-a100-40gb.cfg"),
          "is a profile of A100-SXM4-40GB ('A100-SXM4-40GB', 40 GB), but the trace ran on A100-SXM4-80GB"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cal_gpu_opts o = {.profile = bad[i].profile, .scenario = 1};
    int rc = cal_import_gpu(traces, 1, &o, out, NULL, 0);
    if (rc != CORE_EINVAL || !strstr(core_err_msg(), bad[i].want)) {
      fprintf(stderr, "\n%s: got %d: %s\n", bad[i].profile, rc, core_err_msg());
      CU_FAIL("a profile of another device taken for the traced GPU's roofs");
    }
    CU_ASSERT(access(out, F_OK) != 0);
  }
  cal_gpu_opts o = {.profile = TU_SRC("scenarios/profiles/dgx-a100.cfg"), .scenario = 1};
  CU_ASSERT_EQUAL(cal_import_gpu(traces, 1, &o, out, NULL, 0), 0);
  /* The traced job's profile measured its allreduce: imported, though its
   * base is a datasheet's (whose collectives take NCCL's protocols). */
  char scen[4200];
  snprintf(scen, sizeof scen, "%s/pbase-job.cfg", dir);
  CU_ASSERT_EQUAL_FATAL(cal_trace_scenario(out, scen, o.profile, NULL, 0), 0);
  core_profile *p = job_profile(scen);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT_STRING_EQUAL(p->source, "imported");
  core_profile_free(p);
  unlink(out);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("traced job's scenario and profile", suite_init, suite_clean);
  CU_add_test(s, "retargeted to another GPU: each class at its ratio", test_retarget);
  CU_add_test(s, "the traced job's scenario replays its step", test_scenario_replays);
  CU_add_test(s, "buckets too few to fit a latency: NCCL's, said so", test_allreduce_latency_fallback);
  CU_add_test(s, "bucket sizes not rising: the line through their times", test_allreduce_fit_unsorted_sizes);
  CU_add_test(s, "the ranks' skew kept out of the allreduce fit", test_allreduce_fit_without_skew);
  CU_add_test(s, "a latency the trace's NCCL kernels contradict: NCCL's", test_allreduce_latency_contradicted);
  CU_add_test(s, "names from -o and --scenario paths of any characters", test_names_from_paths);
  CU_add_test(s, "the optimizer the trace ran, where its class tells it", test_optimizer_from_trace);
  CU_add_test(
      s, "--profile-base: a profile of the traced GPU, not a CPU or another GPU", test_profile_base_of_traced_gpu);
}

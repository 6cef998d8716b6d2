/* `ddpsim import torch-trace` on a GPU trace (calibrate/import_gpu.h), on
 * tests/data/torch-trace/gpu-ddp.json, whose every timing gen_gpu_fixture.py
 * states: layers from the operators with their kinds and tensors, the
 * gradients' real ready order, the warm-up step left out, each piece's host
 * and device time, DDP's copies, launches and bucket allreduces kept apart,
 * the side work and its dependency (as most steps show it, or held back by
 * the compute stream's kernel); and bad traces (no steps, no kernels,
 * copies but no kernels, no backward, correlation ids that match nothing,
 * not JSON, truncated) are errors that name the file and write nothing, as
 * are traces of different jobs read as one. The traced job's scenario and
 * profile (--scenario) are test_trace_scenario.c's. */
#include "gputrace_util.h"
#include "testutil.h"

#include "calibrate/gpu_datasheet.h"
#include "calibrate/import_gpu.h"
#include "core/err.h"
#include "core/model.h"
#include "core/profile.h"
#include "core/traced.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[4096];

static int suite_init(void) { return tu_mkdtemp(dir, sizeof dir, "importgpu"); }
static int suite_clean(void) {
  tu_rmdir(dir);
  return 0;
}

static void test_layers_and_tensors(void) {
  char out[4200];
  snprintf(out, sizeof out, "%s/fx.cfg", dir);
  core_model *m = tu_import_trace(FIXTURE, out);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL(m->n_layers, 3);
  CU_ASSERT_EQUAL(m->layers[0].op, CORE_OP_CONV);
  CU_ASSERT_EQUAL(m->layers[1].op, CORE_OP_BATCH_NORM);
  CU_ASSERT_EQUAL(m->layers[2].op, CORE_OP_LINEAR);
  static const int64_t elems[] = {4608, 64, 64, 640000, 1000};
  CU_ASSERT_EQUAL_FATAL(m->n_tensors, 5);
  for (int t = 0; t < 5; t++)
    CU_ASSERT_EQUAL(m->tensor_elems[t], elems[t]);
  /* linear's bias, its weight, batch norm's weight then bias, conv's weight */
  static const int ready[] = {4, 3, 1, 2, 0};
  for (int k = 0; k < 5; k++)
    CU_ASSERT_EQUAL(m->ready_order[k], ready[k]);
  CU_ASSERT(NEAR(m->measured_batch, 32));
  /* per-layer kernel time: forward and backward */
  CU_ASSERT(NEAR(m->layers[0].fwd_s, 150 * US) && NEAR(m->layers[0].bwd_s, 200 * US));
  CU_ASSERT(NEAR(m->layers[2].fwd_s, 60 * US) && NEAR(m->layers[2].bwd_s, 50 * US));
  core_model_free(m);
}

/* A parameter no layer owns (read by an operator outside the layers, as a
 * DLRM's per-feature weights by aten::gather): its gradient arrives after
 * that operator's backward node, following the convolution's backward, and
 * is the model's "unattributed" layer's, not the convolution's. */
static void test_unowned_parameter(void) {
  char out[4200];
  snprintf(out, sizeof out, "%s/unowned.cfg", dir);
  core_model *m = tu_import_trace(TU_DATA("torch-trace/gpu-unattributed.json"), out);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL_FATAL(m->n_layers, 4);
  CU_ASSERT_EQUAL_FATAL(m->n_tensors, 6);
  CU_ASSERT(m->layers[0].n_tensors == 1 && m->tensor_elems[m->layers[0].first_tensor] == 4608);
  CU_ASSERT(m->layers[2].n_tensors == 2 && m->tensor_elems[m->layers[2].first_tensor] == 640000);
  CU_ASSERT_STRING_EQUAL(m->layers[3].name, "unattributed");
  CU_ASSERT(m->layers[3].n_tensors == 1 && m->tensor_elems[m->layers[3].first_tensor] == 50);
  CU_ASSERT_EQUAL(m->ready_order[5], m->layers[3].first_tensor); /* it arrives last */
  if (m->layers[0].n_tensors != 1)
    fprintf(stderr, "\nconv0 has %d tensors\n", m->layers[0].n_tensors);
  core_model_free(m);
  unlink(out);
}

/* The importer's datasheet figures are those of the shipped profile each
 * entry names (peaks per precision, memory bandwidth and capacity, host link,
 * NVLink), and CUDA's device names find their entry. */
static void test_datasheets(void) {
  int n;
  const cal_gpu_sheet *t = cal_gpu_sheets(&n);
  CU_ASSERT(n >= 7);
  for (int i = 0; i < n; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/scenarios/profiles/%s", DDPSIM_SOURCE_DIR, t[i].profile);
    core_profile *p = NULL;
    CU_ASSERT_FATAL(core_profile_load(path, &p) == 0);
    for (int k = 0; k < CORE_N_PREC; k++)
      CU_ASSERT(NEAR(core_profile_peak_flops(p, (enum core_prec)k), t[i].peak_tflops[k] * 1e12));
    CU_ASSERT(NEAR(p->peak_memory_GBps, t[i].memory_GBps) && NEAR(p->host_link_GBps, t[i].host_link_GBps) &&
              NEAR(p->nvlink_GBps, t[i].nvlink_GBps) && NEAR(p->memory_GB, t[i].memory_GB));
    core_profile_free(p);
  }
  static const struct {
    const char *name;
    double gb;
    const char *model;
  } names[] = {{"Tesla V100-SXM2-32GB", 34.1, "V100-SXM2"}, {"NVIDIA A100-PG509-200", 42.3, "A100-SXM4-40GB"},
      {"NVIDIA A100-SXM4-80GB", 85.1, "A100-SXM4-80GB"}, {"NVIDIA H100 80GB HBM3", 85.0, "H100-SXM"},
      {"NVIDIA H200", 150.0, "H200-SXM"}, {"NVIDIA B200", 191.0, "B200-SXM"}, {"NVIDIA L40S", 48.0, "L40S"}};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const cal_gpu_sheet *s = cal_gpu_sheet_find(names[i].name, (int64_t)(names[i].gb * 1e9));
    CU_ASSERT(s && !strcmp(s->model, names[i].model));
  }
  CU_ASSERT_PTR_NULL(cal_gpu_sheet_find("NVIDIA GeForce RTX 4090", (int64_t)24e9));
}

static const core_piece *find(const core_traced *t, enum core_piece_kind k, int index, const char *label) {
  for (int i = 0; i < t->n_pieces; i++)
    if (t->pieces[i].kind == k && t->pieces[i].index == index && (!label || !strcmp(t->pieces[i].label, label)))
      return &t->pieces[i];
  return NULL;
}

static void test_pieces(void) {
  char out[4200];
  snprintf(out, sizeof out, "%s/fx2.cfg", dir);
  core_model *m = tu_import_trace(FIXTURE, out);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  const core_traced *t = m->traced;
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT(t->ddp && t->world_size == 2 && t->rank == 0 && t->host_devices == 8);
  CU_ASSERT_EQUAL(t->steps, 3); /* the warm-up left out */
  CU_ASSERT(NEAR(t->step_s, 1265 * US));
  const core_piece *p = find(t, CORE_PIECE_FWD, 0, NULL);
  CU_ASSERT(p && NEAR(p->host_s, 100 * US) && NEAR(p->dev_s, 150 * US));
  /* the weight's arrival launched bucket 0: its 15 us of launch are the replay's */
  p = find(t, CORE_PIECE_GRAD, 3, NULL);
  CU_ASSERT(p && NEAR(p->host_s, 10 * US) && NEAR(p->copy_host_s, 5 * US) && NEAR(p->copy_dev_s, 20 * US));
  CU_ASSERT(NEAR(t->launch_host_s, 15 * US));
  p = find(t, CORE_PIECE_FINALIZE, -1, NULL);
  CU_ASSERT(p && NEAR(p->host_s, 50 * US) && NEAR(p->dev_s, 25 * US));
  CU_ASSERT(p && (p->waits >> 1 & 1)); /* the copies back waited for the allreduce stream */
  p = find(t, CORE_PIECE_OTHER, -1, "DistributedDataParallel.forward");
  CU_ASSERT_FATAL(p && p->n_side == 1);
  const core_side *sd = &t->side[p->first_side];
  CU_ASSERT(sd->nccl && NEAR(sd->dur_s, 10 * US));
  CU_ASSERT(find(t, CORE_PIECE_OTHER, -1, "Optimizer.step#SGD.step") != NULL);
  CU_ASSERT_EQUAL_FATAL(t->n_buckets, 2);
  CU_ASSERT(NEAR(t->bucket_bytes[0], 4.0 * 641000) && NEAR(t->bucket_s[0], 400 * US));
  CU_ASSERT(NEAR(t->bucket_bytes[1], 4.0 * 4736) && NEAR(t->bucket_s[1], 300 * US));
  double host = 0;
  for (int i = 0; i < t->n_pieces; i++)
    host += t->pieces[i].host_s;
  CU_ASSERT(NEAR(host + 2 * t->launch_host_s, 1265 * US)); /* the pieces and launches are the step */
  core_model_free(m);
}

/* gpu-side.json (gen_gpu_fixture.py): the loss launches a side kernel that
 * starts at once, except in step 1 (the reference step), where it starts
 * just after the loss's compute kernel ends, as if it waited for it: the
 * steps' vote keeps no wait. The optimizer launches one while its compute
 * kernel runs, and every step it starts in that kernel's last microseconds,
 * before any activity ends: held back by the compute stream, not a wait. */
static void test_side_waits_voted(void) {
  char out[4200];
  snprintf(out, sizeof out, "%s/side.cfg", dir);
  core_model *m = tu_import_trace(TU_DATA("torch-trace/gpu-side.json"), out);
  CU_ASSERT_FATAL(m && m->traced);
  const core_traced *t = m->traced;
  const core_piece *p = find(t, CORE_PIECE_OTHER, -1, "aten::cross_entropy_loss");
  CU_ASSERT_FATAL(p && p->n_side == 1);
  const core_side *sd = &t->side[p->first_side];
  CU_ASSERT(sd->stream > 0 && sd->dep == -1 && !sd->held && NEAR(sd->dur_s, 5 * US));
  p = find(t, CORE_PIECE_OTHER, -1, "Optimizer.step#SGD.step");
  CU_ASSERT_FATAL(p && p->n_side == 1);
  sd = &t->side[p->first_side];
  CU_ASSERT(sd->stream > 0 && sd->dep == -1 && sd->held && NEAR(sd->dur_s, 20 * US));
  core_model_free(m);
}

/* The scenario of the traced job, simulated, gives the trace's step. */
/* Each piece's device time split by what bounds its kernels
 * (gen_gpu_fixture.py's header): conv and linear compute-bound by their
 * recorded shapes against the A100's roofs, the backward GEMMs by their
 * names, batch norm, the loss, the optimizer and DDP's copies back
 * memory-bound, the copies of 3 us or less launch-bound (the shortest
 * kernel is 2 us); every split adds up; the roofs are the A100 80GB
 * datasheet's at the traced precision, fp32. */
static void test_kernel_classes(void) {
  char out[4200];
  snprintf(out, sizeof out, "%s/fxk.cfg", dir);
  core_model *m = tu_import_trace(FIXTURE, out);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  const core_traced *t = m->traced;
  CU_ASSERT_FATAL(t && t->classed);
  CU_ASSERT(t->precision == CORE_PREC_FP32 && NEAR(t->peak_flops, 19.5e12) && NEAR(t->peak_memory_Bps, 2039e9));
  CU_ASSERT(strstr(t->roofs_from, "A100") != NULL);
  static const struct {
    enum core_piece_kind kind;
    int index;
    const char *label;
    double us[3]; /* compute, memory, launch */
  } want[] = {
      {CORE_PIECE_FWD, 0, NULL, {150, 0, 0}},
      {CORE_PIECE_FWD, 1, NULL, {0, 40, 0}},
      {CORE_PIECE_FWD, 2, NULL, {60, 0, 0}},
      {CORE_PIECE_BWD, 2, NULL, {50, 0, 0}},
      {CORE_PIECE_BWD, 1, NULL, {0, 70, 0}},
      {CORE_PIECE_BWD, 0, NULL, {200, 0, 0}},
      {CORE_PIECE_GRAD, 4, NULL, {0, 0, 2}},
      {CORE_PIECE_GRAD, 3, NULL, {0, 20, 0}},
      {CORE_PIECE_GRAD, 0, NULL, {0, 0, 3}},
      {CORE_PIECE_FINALIZE, -1, NULL, {0, 25, 0}},
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    const core_piece *p = find(t, want[i].kind, want[i].index, want[i].label);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int k = 0; k < 3; k++)
      if (!NEAR(p->dev_class_s[k], want[i].us[k] * US)) {
        fprintf(stderr, "\npiece %zu class %d: %g us, want %g\n", i, k, p->dev_class_s[k] / US, want[i].us[k]);
        CU_FAIL("class split");
      }
  }
  for (int i = 0; i < t->n_pieces; i++) {
    const core_piece *p = &t->pieces[i];
    CU_ASSERT(p->classed && NEAR(p->dev_class_s[0] + p->dev_class_s[1] + p->dev_class_s[2], p->dev_s));
  }
  core_model_free(m);
}

/* ---- bad traces -------------------------------------------------------------- */

/* The fixture with every `from` replaced by `to`, written to dir/name. */
static void variant(const char *name, const char *from, const char *to, char *path, size_t n) {
  size_t len;
  char *text = tu_read_file(FIXTURE, &len), *out = malloc(len * 2 + 1), *w = out;
  CU_ASSERT_FATAL(text && out);
  size_t fl = strlen(from), tl = strlen(to);
  for (const char *r = text; *r;) {
    if (fl && !strncmp(r, from, fl)) {
      memcpy(w, to, tl);
      w += tl;
      r += fl;
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';
  snprintf(path, n, "%s/%s", dir, name);
  CU_ASSERT_EQUAL_FATAL(tu_write_file(path, out), 0);
  free(text);
  free(out);
}

static void expect_refused(const char *trace, const char *want) {
  char out[4200];
  snprintf(out, sizeof out, "%s/never.cfg", dir);
  const char *traces[] = {trace};
  cal_gpu_opts o = {0};
  int rc = cal_import_gpu(traces, 1, &o, out, NULL, 0);
  CU_ASSERT(rc == CORE_EINVAL);
  if (rc != CORE_EINVAL || !strstr(core_err_msg(), want) || !strstr(core_err_msg(), trace)) {
    fprintf(stderr, "\n%s: got %d: %s\n", trace, rc, core_err_msg());
    CU_FAIL("not the error expected");
  }
  CU_ASSERT(access(out, F_OK) != 0);
}

/* --batch must be the batch the trace's shapes record (32 rows into the
 * first layer), as for a CPU trace; where the trace has no shapes it is
 * the batch. */
static void test_batch_against_shapes(void) {
  char out[4200], p[4200];
  snprintf(out, sizeof out, "%s/batch.cfg", dir);
  const char *traces[] = {FIXTURE};
  cal_gpu_opts o = {.batch = 16};
  int rc = cal_import_gpu(traces, 1, &o, out, NULL, 0);
  CU_ASSERT_EQUAL(rc, CORE_EINVAL);
  const char *msg = core_err_msg();
  if (!strstr(msg, FIXTURE ": traceEvents[") || !strstr(msg, "--batch 16, but the first layer's input has 32 rows")) {
    fprintf(stderr, "\n%s\n", msg);
    CU_FAIL("not the error expected");
  }
  CU_ASSERT(access(out, F_OK) != 0);
  core_model *m = NULL;
  o.batch = 32;
  CU_ASSERT_EQUAL_FATAL(cal_import_gpu(traces, 1, &o, out, NULL, 0), 0);
  CU_ASSERT_FATAL(core_model_load(out, &m) == 0);
  CU_ASSERT(NEAR(m->measured_batch, 32));
  core_model_free(m);
  variant("noshapes.json", "\"Input Dims\"", "\"Input Xims\"", p, sizeof p);
  traces[0] = p;
  o.batch = 16;
  if ((rc = cal_import_gpu(traces, 1, &o, out, NULL, 0)) != 0)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  CU_ASSERT_FATAL(core_model_load(out, &m) == 0);
  CU_ASSERT(NEAR(m->measured_batch, 16));
  core_model_free(m);
  unlink(out);
  /* A batch a scenario cannot take is refused with --scenario, before the
   * model is written; shapes beyond any batch are damaged, refused. */
  o = (cal_gpu_opts){.batch = 100000000, .scenario = 1};
  CU_ASSERT_EQUAL(cal_import_gpu(traces, 1, &o, out, NULL, 0), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "a batch of 100000000 per GPU is more than a scenario takes") != NULL);
  CU_ASSERT(access(out, F_OK) != 0);
  variant("hugeshape.json", "[[32,8,16,16]", "[[4000000000000000000,8,16,16]", p, sizeof p);
  o = (cal_gpu_opts){0};
  CU_ASSERT_EQUAL(cal_import_gpu(traces, 1, &o, out, NULL, 0), CORE_EINVAL);
  if (!strstr(core_err_msg(), "the first layer's input has 4000000000000000000 rows, more than a model's batch")) {
    fprintf(stderr, "\n%s\n", core_err_msg());
    CU_FAIL("damaged shapes not refused");
  }
  CU_ASSERT(access(out, F_OK) != 0);
}

static void test_bad_traces(void) {
  char p[4200];
  variant("nosteps.json", "ProfilerStep#", "SomeStep#", p, sizeof p);
  expect_refused(p, "no ProfilerStep#N spans");
  variant("nobwd.json", "autograd::engine::evaluate_function: ", "engine: ", p, sizeof p);
  expect_refused(p, "no backward pass");
  variant("nocorr.json", "\"stream\":7,\"correlation\":", "\"stream\":7,\"correlation\":9", p, sizeof p);
  expect_refused(p, "correlation id");
  /* copies but no kernels: a step of no compute, not a model of zero times */
  variant("nokernels.json", "\"cat\":\"kernel\"", "\"cat\":\"kernel_off\"", p, sizeof p);
  expect_refused(p, "GPU copies (gpu_memcpy, gpu_memset) but no GPU kernels");
  {
    char q[4200];
    variant("nogpu.json", "\"cat\":\"kernel\"", "\"cat\":\"kernel_off\"", q, sizeof q);
    /* both kernels and copies gone: runtime calls that launched nothing */
    size_t len;
    char *t = tu_read_file(q, &len);
    CU_ASSERT_FATAL(t != NULL);
    for (char *s = t; (s = strstr(s, "\"cat\":\"gpu_memcpy\"")); s++)
      memcpy(s, "\"cat\":\"gpu_memcpz\"", 18);
    CU_ASSERT_EQUAL(tu_write_file(q, t), 0);
    free(t);
    expect_refused(q, "no GPU kernels");
  }
  variant("notjson.json", "{\"schemaVersion\"", "<html>\"schemaVersion\"", p, sizeof p);
  expect_refused(p, "");
  snprintf(p, sizeof p, "%s/truncated.json", dir);
  size_t len;
  char *text = tu_read_file(FIXTURE, &len);
  CU_ASSERT_FATAL(text != NULL);
  text[len / 2] = '\0';
  CU_ASSERT_EQUAL(tu_write_file(p, text), 0);
  free(text);
  expect_refused(p, "");
}

/* Several traces are read as one job's: the fixture and a later cycle are,
 * each with its own warm-up left out; one file given twice, or a copy of
 * one, is refused; a trace of another GPU, world or model is
 * refused naming both files and what differs. */
static void test_traces_of_one_job(void) {
  char out[4200], p[4200];
  snprintf(out, sizeof out, "%s/one-job.cfg", dir);
  cal_gpu_opts o = {0};
  char copy[4200], notes[8192] = "";
  variant("later.json", "\"ts\":1700000", "\"ts\":1700001", copy, sizeof copy); /* a cycle 1 s later */
  const char *twice[] = {FIXTURE, copy};
  CU_ASSERT_EQUAL(cal_import_gpu(twice, 2, &o, out, notes, sizeof notes), 0);
  /* each trace's own warm-up step is left out, not only the first's */
  if (!strstr(notes, "steps: 6 of 8 used (2 warm-ups, 0 cut otherwise)") || !strstr(notes, "1.265-1.265 ms")) {
    fprintf(stderr, "\n%s\n", notes);
    CU_FAIL("the second trace's warm-up step was used");
  }
  unlink(out);
  /* one file given twice is one trace, not two, and so is a copy of it:
   * refused, nothing written */
  snprintf(p, sizeof p, "%s/./later.json", dir);
  const char *same[] = {copy, p};
  CU_ASSERT_EQUAL(cal_import_gpu(same, 2, &o, out, NULL, 0), CORE_EUSAGE);
  CU_ASSERT(strstr(core_err_msg(), "are the same trace") != NULL);
  CU_ASSERT(access(out, F_OK) != 0);
  variant("copy.json", "", "", p, sizeof p);
  const char *copies[] = {FIXTURE, copy, p};
  CU_ASSERT_EQUAL(cal_import_gpu(copies, 3, &o, out, NULL, 0), CORE_EINVAL);
  if (!strstr(core_err_msg(), "hold the same steps (ProfilerStep#0 of rank 0, at the same time)") ||
      !strstr(core_err_msg(), FIXTURE) || !strstr(core_err_msg(), p)) {
    fprintf(stderr, "\n%s\n", core_err_msg());
    CU_FAIL("a copy of a trace not refused as one");
  }
  CU_ASSERT(access(out, F_OK) != 0);
  static const struct {
    const char *name, *from, *to, *want;
  } other[] = {
      {"other-gpu.json", "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-32GB",
          "the GPU ('NVIDIA A100-SXM4-80GB', 'Tesla V100-SXM2-32GB') differs"},
      {"other-world.json", "\"world_size\":2", "\"world_size\":4", "the world size (2, 4) differs"},
      {"no-world.json", "\"rank\":0,\"world_size\":2,", "\"rank\":0,",
          "the world size (2, unknown (no distributedInfo)) differs"},
      {"other-model.json", "aten::batch_norm", "aten::layer_norm",
          "the model (layer 2 is aten::batch_norm in one, aten::layer_norm in the other) differs"},
      /* the same model at another batch: other kernels' times */
      {"other-batch.json", "[[32,8,16,16]", "[[64,8,16,16]", "the batch (32, 64 rows into the first layer) differs"},
  };
  for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
    variant(other[i].name, other[i].from, other[i].to, p, sizeof p);
    const char *two[] = {FIXTURE, p};
    int rc = cal_import_gpu(two, 2, &o, out, NULL, 0);
    CU_ASSERT_EQUAL(rc, CORE_EINVAL);
    const char *msg = core_err_msg();
    if (!strstr(msg, other[i].want) || !strstr(msg, FIXTURE) || !strstr(msg, p) ||
        !strstr(msg, "not traces of one job")) {
      fprintf(stderr, "\n%s: got %d: %s\n", other[i].name, rc, msg);
      CU_FAIL("not the error expected");
    }
    CU_ASSERT(access(out, F_OK) != 0);
  }
}

/* A copy need not be byte for byte, nor whole: one whose timestamps were
 * rounded (re-written through a float64 JSON library) and one that holds
 * only the later steps of a trace given beside it hold the same rank's
 * steps at the same times, which would count twice: refused, naming both,
 * nothing written. */
static void test_partial_and_rounded_copies(void) {
  char out[4200], p[4200];
  snprintf(out, sizeof out, "%s/copies.cfg", dir);
  cal_gpu_opts o = {0};
  static const struct {
    const char *name, *from, *to, *step;
  } copies[] = {
      {"rounded.json", ".0,\"dur\"", ".4,\"dur\"", "ProfilerStep#0"},
      {"later-steps.json", "\"name\":\"ProfilerStep#0\"", "\"name\":\"NotAStep#0\"", "ProfilerStep#1"},
  };
  for (size_t i = 0; i < sizeof copies / sizeof *copies; i++) {
    variant(copies[i].name, copies[i].from, copies[i].to, p, sizeof p);
    const char *two[] = {FIXTURE, p};
    int rc = cal_import_gpu(two, 2, &o, out, NULL, 0);
    CU_ASSERT_EQUAL(rc, CORE_EINVAL);
    const char *msg = core_err_msg();
    if (rc != CORE_EINVAL || !strstr(msg, "hold the same steps") || !strstr(msg, copies[i].step) ||
        !strstr(msg, FIXTURE) || !strstr(msg, p)) {
      fprintf(stderr, "\n%s: got %d: %s\n", copies[i].name, rc, msg);
      CU_FAIL("a copy of a trace's steps not refused as one");
    }
    CU_ASSERT(access(out, F_OK) != 0);
  }
}

/* A trace holding one step twice (a span written again by a merge or an
 * edit): its steps overlap, which one rank's never do; refused as damaged,
 * naming the file and the step, not counted twice. */
#define STEP2                                                                                                          \
  "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"pid\":1,\"tid\":1000,"                      \
  "\"ts\":1700000003795.0,\"dur\":1265.0,\"args\":{\"External id\":117}},"
static void test_step_twice(void) {
  char p[4200];
  variant("step-twice.json", STEP2, STEP2 STEP2, p, sizeof p);
  expect_refused(p, "ProfilerStep#2 (traceEvents[");
  CU_ASSERT(strstr(core_err_msg(), "overlap") != NULL);
}

/* The fixture with three operators under each step's convolution that
 * record the batch norm's sequence number: an operator that creates no
 * autograd node records the counter's next value, as nn.BatchNorm2d's
 * num_batches_tracked.add_(1) does between a convolution and its batch
 * norm. Written to path. */
static void with_peeking_ops(const char *name, char *path, size_t n) {
  size_t len;
  char *text = tu_read_file(FIXTURE, &len), *out = malloc(len + 4096), *w = out;
  CU_ASSERT_FATAL(text && out);
  const char *r = text, *conv;
  while ((conv = strstr(r, "\"name\":\"aten::conv2d\""))) {
    const char *end = strstr(conv, "}},");
    CU_ASSERT_FATAL(end != NULL);
    end += 3;
    memcpy(w, r, (size_t)(end - r));
    w += end - r;
    double ts = 0;
    long seq = 0;
    CU_ASSERT_FATAL(sscanf(strstr(conv, "\"ts\":"), "\"ts\":%lf", &ts) == 1);
    CU_ASSERT_FATAL(sscanf(strstr(conv, "\"Sequence number\":"), "\"Sequence number\":%ld", &seq) == 1);
    for (int k = 0; k < 3; k++)
      w += sprintf(w,
          "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add_\",\"pid\":1,\"tid\":1000,\"ts\":%.1f,\"dur\":1.0,"
          "\"args\":{\"Sequence number\":%ld}},",
          ts + 10 + 2 * k, seq + 1);
    r = end;
  }
  strcpy(w, r);
  snprintf(path, n, "%s/%s", dir, name);
  CU_ASSERT_EQUAL_FATAL(tu_write_file(path, out), 0);
  free(text);
  free(out);
}

/* A sequence number that operators of two layers record belongs to the
 * later one, which created the autograd node (the earlier ones only saw
 * the counter): the batch norm's backward, its time and its gradients are
 * the batch norm's, not the convolution's. */
static void test_shared_sequence_number(void) {
  char p[4200], out[4200];
  with_peeking_ops("peeks.json", p, sizeof p);
  snprintf(out, sizeof out, "%s/peeks.cfg", dir);
  core_model *m = tu_import_trace(p, out);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL(m->n_layers, 3);
  CU_ASSERT(m->layers[0].n_tensors == 1 && m->tensor_elems[m->layers[0].first_tensor] == 4608);
  CU_ASSERT(m->layers[1].n_tensors == 2 && m->tensor_elems[m->layers[1].first_tensor] == 64);
  CU_ASSERT(NEAR(m->layers[0].bwd_s, 200 * US) && NEAR(m->layers[1].bwd_s, 70 * US));
  if (m->layers[1].n_tensors != 2)
    fprintf(stderr, "\nconv %d tensors, batch norm %d\n", m->layers[0].n_tensors, m->layers[1].n_tensors);
  core_model_free(m);
  unlink(out);
}

/* --base is read whether or not its sizes are needed (the fixture's come
 * from DDP's copies): a missing file or a model of another number of
 * tensors is refused, nothing written; the model the trace ran is taken. */
static void test_base_checked(void) {
  char out[4200], base[4200];
  snprintf(out, sizeof out, "%s/based.cfg", dir);
  snprintf(base, sizeof base, "%s/no-such-base.cfg", dir);
  const char *traces[] = {FIXTURE};
  cal_gpu_opts o = {.base = base};
  int rc = cal_import_gpu(traces, 1, &o, out, NULL, 0);
  CU_ASSERT(rc < 0 && strstr(core_err_msg(), base) != NULL);
  CU_ASSERT(access(out, F_OK) != 0);
  o.base = TU_SRC("scenarios/models/mlp-small.cfg");
  rc = cal_import_gpu(traces, 1, &o, out, NULL, 0);
  CU_ASSERT(rc == CORE_EINVAL && strstr(core_err_msg(), "has 6 parameter tensors, the trace's steps 5 gradients"));
  CU_ASSERT(access(out, F_OK) != 0);
  snprintf(base, sizeof base, "%s/fx-base.cfg", dir);
  core_model *m = tu_import_trace(FIXTURE, base);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  core_model_free(m);
  o.base = base;
  CU_ASSERT_EQUAL(cal_import_gpu(traces, 1, &o, out, NULL, 0), 0);
  unlink(out);
}

/* trace imported (no options) to NAME in the scratch directory, its notes
 * into notes, and the model removed; the importer's return. */
static int import_notes(const char *trace, const char *name, char *notes, size_t n) {
  char out[4200];
  snprintf(out, sizeof out, "%s/%s", dir, name);
  const char *traces[] = {trace};
  cal_gpu_opts o = {0};
  int rc = cal_import_gpu(traces, 1, &o, out, notes, n);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  unlink(out);
  return rc;
}

/* A DDP trace without distributedInfo: the world taken as 1 is said, as the
 * bucket allreduces that a scenario of one GPU leaves out. */
static void test_no_distributed_info(void) {
  char p[4200], notes[8192] = "";
  variant("nodist.json",
      "\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":0,\"world_size\":2,\"nccl_version\":\"2.17.1\"},", "", p,
      sizeof p);
  CU_ASSERT_EQUAL_FATAL(import_notes(p, "nodist.cfg", notes, sizeof notes), 0);
  if (!strstr(notes, "no distributedInfo: its world size is not known and is taken as 1, though DDP allreduced 2")) {
    fprintf(stderr, "\n%s\n", notes);
    CU_FAIL("the world taken as 1 is not said");
  }
}

/* A kernel whose launching call the trace lacks, behind launched work on its
 * stream, was not queued before profiling began: the notes say the calls
 * are missing, not that it began before profiling. */
static void test_unlaunched_mid_trace(void) {
  char p[4200], notes[8192] = "";
  variant("orphan.json", "\"stream\":7,\"correlation\":106}", "\"stream\":7,\"correlation\":999106}", p, sizeof p);
  CU_ASSERT_EQUAL_FATAL(import_notes(p, "orphan.cfg", notes, sizeof notes), 0);
  if (!strstr(notes, "1 GPU activities after launched work on their stream have a correlation id no CUDA runtime") ||
      strstr(notes, "before profiling started")) {
    fprintf(stderr, "\n%s\n", notes);
    CU_FAIL("a kernel without its call mid-trace not said as it is");
  }
}

/* DDP on one rank allreduces nothing: the notes say the trace has no
 * bucket allreduces and why, not "0 bucket allreduces ... 1.00x slower". */
static void test_one_rank_ddp(void) {
  char notes[8192] = "";
  CU_ASSERT_EQUAL_FATAL(import_notes(TU_DATA("torch-trace/gpu-ddp-1rank.json"), "onerank.cfg", notes, sizeof notes), 0);
  if (!strstr(notes, "DDP: the trace has no bucket allreduces (a world of 1: one rank has nothing to reduce)") ||
      strstr(notes, "0 bucket allreduces") || strstr(notes, "x slower")) {
    fprintf(stderr, "\n%s\n", notes);
    CU_FAIL("one rank's DDP not said as it is");
  }
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("import gpu trace", suite_init, suite_clean);
  CU_add_test(s, "datasheet table: the shipped profiles' figures, names", test_datasheets);
  CU_add_test(s, "layers, tensors, ready order, kernel times", test_layers_and_tensors);
  CU_add_test(s, "pieces, DDP's share, side work, buckets", test_pieces);
  CU_add_test(s, "side work: waits as most steps show them, held back by compute", test_side_waits_voted);
  CU_add_test(s, "kernels classed: compute, memory, launch; the roofs", test_kernel_classes);
  CU_add_test(s, "bad traces: errors naming the file, nothing written", test_bad_traces);
  CU_add_test(s, "--batch checked against the shapes; alone without them", test_batch_against_shapes);
  CU_add_test(s, "several traces: one job's, another GPU, world or model refused", test_traces_of_one_job);
  CU_add_test(s, "a rounded or partial copy of a trace refused", test_partial_and_rounded_copies);
  CU_add_test(s, "a step twice in one trace refused", test_step_twice);
  CU_add_test(s, "a sequence number two layers record: the later one's", test_shared_sequence_number);
  CU_add_test(s, "--base: read and checked even where DDP's copies give the sizes", test_base_checked);
  CU_add_test(s, "a DDP trace without distributedInfo: the world taken as 1 said", test_no_distributed_info);
  CU_add_test(s, "DDP on one rank: no bucket allreduces, said so", test_one_rank_ddp);
  CU_add_test(s, "a parameter no layer owns: unattributed, not the last layer's", test_unowned_parameter);
  CU_add_test(s, "a kernel without its call mid-trace: the calls missing, said so", test_unlaunched_mid_trace);
}

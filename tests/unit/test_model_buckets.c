/* Model files' layer kinds, tensor names and gradient-ready order
 * (core/model.h), and the shipped models' DDP buckets against the ones real
 * PyTorch made of the same architectures: tests/data/buckets/ holds what
 * bench/pytorch/buckets.py recorded (torch 2.15.0, torchvision 0.29.2,
 * transformers 5.25.0) through a communication hook, one CSV per model,
 * bucket_cap_mb (left unset, 25, 1) and iteration (first; rebuilt;
 * find_unused_parameters=True), in the CSV `ddpsim model` prints. */
#include "core/bucket.h"
#include "core/cfg.h"
#include "core/csv.h"
#include "core/err.h"
#include "core/model.h"

#include "testutil.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static core_model *model_from(const char *text) {
  core_cfg c;
  core_model *m = NULL;
  if (core_cfg_load_string(&c, text, "inline-model.cfg", "model") != 0)
    return NULL;
  if (core_model_from_setting(core_cfg_root(&c), "inline-model.cfg", &m) != 0)
    fprintf(stderr, "\n%s\n", core_err_msg());
  core_cfg_free(&c);
  return m;
}

/* One layer of each kind the rule treats apart, in parameter order:
 * tensors 0-1 conv (weight, bias), 2-3 batch_norm, 4-5 linear (type
 * linear), 6 embedding, 7-8 layer_norm, 9-11 a kind-less layer of three
 * tensors, 12-13 group_norm, 14-15 a linear named by param_names; then an
 * attention layer without tensors. */
static const char kinds_model[] =
    "model = { name = \"kinds\"; layers = (\n"
    "  { name = \"c\"; kind = \"conv\"; params = [27, 3]; fwd_flops = 1.0; },\n"
    "  { name = \"bn\"; kind = \"batch_norm\"; params = [3, 3]; fwd_flops = 0.0; },\n"
    "  { name = \"fc\"; type = \"linear\"; in = 3; out = 4; },\n"
    "  { name = \"emb\"; kind = \"embedding\"; params = [40]; rows = [10]; fwd_flops = 0.0; },\n"
    "  { name = \"ln\"; kind = \"layer_norm\"; params = [4, 4]; fwd_flops = 0.0; },\n"
    "  { name = \"blk\"; params = [16, 4, 4]; fwd_flops = 1.0; },\n"
    "  { name = \"gn\"; kind = \"group_norm\"; params = [4, 4]; fwd_flops = 0.0; },\n"
    "  { name = \"proj\"; kind = \"linear\"; params = [16, 4]; param_names = [\"w\", \"b\"]; fwd_flops = 1.0; },\n"
    "  { name = \"attn\"; kind = \"attention\"; fwd_flops = 1.0; }\n"
    "); };\n";

/* The rule of core/model.h: layers last to first; conv and the norms
 * weight then bias, every other kind reversed (PyTorch 2.15.0's autograd,
 * checked by bench/pytorch/buckets.py). */
static void test_rule_ready_order(void) {
  core_model *m = model_from(kinds_model);
  CU_ASSERT_FATAL(m != NULL);
  CU_ASSERT_EQUAL(m->n_tensors, 16);
  CU_ASSERT_EQUAL(m->ready_given, 0);
  static const int want[16] = {15, 14, 12, 13, 11, 10, 9, 7, 8, 6, 5, 4, 2, 3, 0, 1};
  for (int k = 0; k < 16; k++)
    CU_ASSERT_EQUAL(m->ready_order[k], want[k]);
  /* Kinds as given; type = "linear" is kind linear; no kind is other. */
  CU_ASSERT_EQUAL(m->layers[0].op, CORE_OP_CONV);
  CU_ASSERT_EQUAL(m->layers[2].op, CORE_OP_LINEAR);
  CU_ASSERT_EQUAL(m->layers[5].op, CORE_OP_OTHER);
  CU_ASSERT_EQUAL(m->layers[8].op, CORE_OP_ATTENTION);
  CU_ASSERT_STRING_EQUAL(core_op_name(CORE_OP_BATCH_NORM), "batch_norm");
  core_model_free(m);
}

/* Names as named_parameters() gives them: weight, weight and bias, the
 * index for more, or the layer's param_names. */
static void test_tensor_names(void) {
  core_model *m = model_from(kinds_model);
  CU_ASSERT_FATAL(m != NULL);
  static const char *const want[16] = {"c.weight", "c.bias", "bn.weight", "bn.bias", "fc.weight", "fc.bias",
      "emb.weight", "ln.weight", "ln.bias", "blk.0", "blk.1", "blk.2", "gn.weight", "gn.bias", "proj.w", "proj.b"};
  char buf[128];
  for (int t = 0; t < 16; t++)
    CU_ASSERT_STRING_EQUAL(core_model_tensor_name(m, t, buf, sizeof buf), want[t]);
  core_model_free(m);
}

/* A ready_order in the file replaces the rule, and the rebuilt buckets
 * follow it. */
static void test_given_ready_order(void) {
  core_model *m = model_from("model = { name = \"given\"; layers = (\n"
                             "  { name = \"a\"; kind = \"linear\"; params = [262144, 512]; fwd_flops = 1.0; },\n"
                             "  { name = \"b\"; kind = \"linear\"; params = [262144, 512]; fwd_flops = 1.0; }\n"
                             "); ready_order = [0, 1, 2, 3]; };\n");
  CU_ASSERT_FATAL(m != NULL);
  CU_ASSERT_EQUAL(m->ready_given, 1);
  for (int k = 0; k < 4; k++)
    CU_ASSERT_EQUAL(m->ready_order[k], k);
  core_buckets b;
  CU_ASSERT_FATAL(
      core_bucket_assign(m->tensor_elems, 4, m->ready_order, 4, 1 << 20, 1 << 20, CORE_BUCKET_REBUILT, &b) == 0);
  /* 1 MiB reached by tensor 0 alone, then [1, 2], then [3]. */
  CU_ASSERT_EQUAL(b.n_buckets, 3);
  CU_ASSERT(
      b.bucket_tensors[0] == 0 && b.bucket_tensors[1] == 1 && b.bucket_tensors[2] == 2 && b.bucket_tensors[3] == 3);
  CU_ASSERT(b.bucket_first[1] == 1 && b.bucket_first[2] == 3);
  core_bucket_free(&b);
  core_model_free(m);
}

/* --- the shipped models against PyTorch's buckets ------------------------------- */

/* Compare ddpsim's assignment with one expected CSV; the message names the
 * first difference. Returns 1 when equal. */
static int same_as_torch(const char *model, const char *cap, const char *iter) {
  char mpath[512], cpath[512], name[256];
  snprintf(mpath, sizeof mpath, TU_SRC("scenarios/models/%s.cfg"), model);
  snprintf(cpath, sizeof cpath, TU_DATA("buckets/%s-%s-%s.csv"), model, cap, iter);
  core_model *m = NULL;
  core_csv_table t;
  core_buckets b;
  int ok = 0;
  if (core_model_load(mpath, &m) != 0 || core_csv_read(cpath, &t) != 0) {
    fprintf(stderr, "\n%s\n", core_err_msg());
    core_model_free(m);
    return 0;
  }
  /* bucket_cap_mb unset: 25 MiB after a 1 MiB first bucket; passed: both
   * that cap (torch 2.15.0, _BucketCapacityConfig.create). */
  size_t capb = strcmp(cap, "default") ? (size_t)atoi(cap) << 20 : (size_t)25 << 20;
  size_t first = strcmp(cap, "default") ? capb : CORE_BUCKET_FIRST_BYTES;
  enum core_bucket_order o = core_bucket_ddp_order(!strcmp(iter, "unused"), !strcmp(iter, "first"));
  if (core_bucket_assign(m->tensor_elems, m->n_tensors, m->ready_order, 4, first, capb, o, &b) != 0)
    goto out_free;
  int cb = core_csv_col(&t, "bucket"), cy = core_csv_col(&t, "bytes"), cp = core_csv_col(&t, "params");
  ok = cb >= 0 && cy >= 0 && cp >= 0 && t.nrows == b.n_buckets;
  for (int k = 0; ok && k < b.n_buckets; k++) {
    char *want = t.rows[k][cp], *tok, *save = NULL;
    ok = atoi(t.rows[k][cb]) == k && atoll(t.rows[k][cy]) == b.bucket_elems[k] * 4;
    int i = b.bucket_first[k];
    for (tok = strtok_r(want, " ", &save); ok && tok; tok = strtok_r(NULL, " ", &save), i++)
      ok = i < b.bucket_first[k + 1] && !strcmp(tok, core_model_tensor_name(m, b.bucket_tensors[i], name, sizeof name));
    ok = ok && i == b.bucket_first[k + 1];
    if (!ok)
      fprintf(stderr, "\n%s: bucket %d differs from %s\n", model, k, cpath);
  }
  if (t.nrows != b.n_buckets)
    fprintf(stderr, "\n%s: %d buckets, PyTorch %ld (%s)\n", model, b.n_buckets, t.nrows, cpath);
  core_bucket_free(&b);
out_free:
  core_csv_table_free(&t);
  core_model_free(m);
  return ok;
}

static void check_model(const char *model) {
  static const char *const caps[] = {"default", "25", "1"};
  static const char *const iters[] = {"first", "rebuilt", "unused"};
  for (int c = 0; c < 3; c++)
    for (int i = 0; i < 3; i++)
      CU_ASSERT(same_as_torch(model, caps[c], iters[i]));
}

static void test_torch_resnet50(void) { check_model("resnet50"); }
static void test_torch_vgg16(void) { check_model("vgg16"); }
static void test_torch_bert_large(void) { check_model("bert-large"); }

void test_register(void) {
  CU_pSuite s = CU_add_suite("model_buckets", NULL, NULL);
  CU_add_test(s, "ready order by layer kind", test_rule_ready_order);
  CU_add_test(s, "tensor names as named_parameters()", test_tensor_names);
  CU_add_test(s, "ready_order given in the file", test_given_ready_order);
  CU_add_test(s, "ResNet-50: PyTorch's buckets", test_torch_resnet50);
  CU_add_test(s, "VGG-16: PyTorch's buckets", test_torch_vgg16);
  CU_add_test(s, "BERT-large: PyTorch's buckets", test_torch_bert_large);
}

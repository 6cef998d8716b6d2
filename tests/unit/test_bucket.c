/* DDP bucket assignment (core/bucket.h) against what PyTorch does.
 *
 * The reference case is nn.Sequential(Linear(512,512), ReLU, Linear(512,512),
 * ReLU, Linear(512,512)) in fp32: parameters weight, bias of each linear,
 * 512*512*4 = 1048576 and 512*4 = 2048 bytes. In PyTorch,
 *   dist._compute_bucket_assignment_by_size(params, [1 MiB, 1 MiB])
 * returns [[0], [1, 2], [3, 4], [5]] (a bucket closes once its size reaches
 * the limit, so it can overshoot by one tensor); with
 * find_unused_parameters=True DDP's _ddp_init_helper computes that and
 * hands list(reversed(...)) to the Reducer, so bucket 0 is [5]. Default DDP
 * computes it with the limit sys.maxsize instead: one bucket. After the
 * first iteration Reducer::rebuild_buckets runs the same assignment over
 * the parameters in gradient-ready order (5, 4, ..., 0 for this model:
 * each linear readies its bias before its weight) with limits
 * [first_bucket_bytes, bucket_bytes_cap] and keeps that order. The shipped
 * models against real PyTorch are in test_model_buckets.c. */
#include "core/bucket.h"

#include "core/err.h"

#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

static const int64_t seq3[6] = {512 * 512, 512, 512 * 512, 512, 512 * 512, 512};

/* Compare an assignment with the expected buckets (tensor indices in the
 * order they were added), and check every derived array against them. */
static int same(const core_buckets *b, const int *const want[], const int *want_n, int nb, const int64_t *elems) {
  if (b->n_buckets != nb)
    return 0;
  int pos = 0;
  for (int k = 0; k < nb; k++) {
    if (b->bucket_first[k] != pos || b->bucket_first[k + 1] - b->bucket_first[k] != want_n[k])
      return 0;
    int64_t sum = 0;
    for (int j = 0; j < want_n[k]; j++) {
      int t = want[k][j];
      if (b->bucket_tensors[pos + j] != t || b->tensor_bucket[t] != k || b->tensor_offset[t] != sum)
        return 0;
      sum += elems[t];
    }
    if (b->bucket_elems[k] != sum)
      return 0;
    pos += want_n[k];
  }
  return pos == b->n_tensors;
}

static void test_torch_find_unused(void) {
  core_buckets b;
  CU_ASSERT_FATAL(core_bucket_assign(seq3, 6, NULL, 4, MiB, MiB, CORE_BUCKET_FIND_UNUSED, &b) == 0);
  /* reversed([[0], [1, 2], [3, 4], [5]]): PyTorch uses [cap] alone when the
   * first cap is not below it, and with 1 MiB either way it is the same. */
  static const int b0[] = {5}, b1[] = {3, 4}, b2[] = {1, 2}, b3[] = {0};
  const int *want[] = {b0, b1, b2, b3};
  const int n[] = {1, 2, 2, 1};
  CU_ASSERT(same(&b, want, n, 4, seq3));
  core_bucket_free(&b);

  /* A first cap below the cap fills the first bucket (of the first
   * parameters, launched last) to it: [[0], [1..5]] at [1 MiB, 25 MiB]. */
  CU_ASSERT_FATAL(core_bucket_assign(seq3, 6, NULL, 4, MiB, 25 * MiB, CORE_BUCKET_FIND_UNUSED, &b) == 0);
  static const int c0[] = {1, 2, 3, 4, 5}, c1[] = {0};
  const int *want2[] = {c0, c1};
  const int n2[] = {5, 1};
  CU_ASSERT(same(&b, want2, n2, 2, seq3));
  core_bucket_free(&b);

  /* A first cap above the cap is not used (torch 2.15.0,
   * _BucketCapacityConfig.compute_bucket_size_limits): at [2 MiB, 1 MiB]
   * [0] closes at 1 MiB, not [0, 1, 2] at 2 MiB. */
  CU_ASSERT_FATAL(core_bucket_assign(seq3, 6, NULL, 4, 2 * MiB, MiB, CORE_BUCKET_FIND_UNUSED, &b) == 0);
  CU_ASSERT(same(&b, want, n, 4, seq3));
  core_bucket_free(&b);
}

/* Default DDP's first iteration: every gradient in one bucket, in parameter
 * order, whatever the caps and the ready order. */
static void test_torch_first_iteration(void) {
  core_buckets b;
  static const int ready[6] = {4, 5, 2, 3, 0, 1};
  CU_ASSERT_FATAL(core_bucket_assign(seq3, 6, ready, 4, MiB, 1024, CORE_BUCKET_FIRST_ITER, &b) == 0);
  static const int b0[] = {0, 1, 2, 3, 4, 5};
  const int *want[] = {b0};
  const int n[] = {6};
  CU_ASSERT(same(&b, want, n, 1, seq3));
  core_bucket_free(&b);
}

/* Which assignment an iteration of DDP uses. */
static void test_ddp_order(void) {
  CU_ASSERT_EQUAL(core_bucket_ddp_order(0, 1), CORE_BUCKET_FIRST_ITER);
  CU_ASSERT_EQUAL(core_bucket_ddp_order(0, 0), CORE_BUCKET_REBUILT);
  CU_ASSERT_EQUAL(core_bucket_ddp_order(1, 1), CORE_BUCKET_FIND_UNUSED);
  CU_ASSERT_EQUAL(core_bucket_ddp_order(1, 0), CORE_BUCKET_FIND_UNUSED);
}

/* Rebuilt buckets follow the ready order given, not the parameter order: a
 * conv layer readies its weight before its bias. Three conv layers of a
 * 1 MiB weight and a 2 KiB bias: ready order 4, 5, 2, 3, 0, 1. */
static void test_rebuilt_ready_order(void) {
  core_buckets b;
  static const int ready[6] = {4, 5, 2, 3, 0, 1};
  CU_ASSERT_FATAL(core_bucket_assign(seq3, 6, ready, 4, MiB, MiB, CORE_BUCKET_REBUILT, &b) == 0);
  /* 4 alone reaches 1 MiB; then [5, 2], [3, 0], [1]. */
  static const int b0[] = {4}, b1[] = {5, 2}, b2[] = {3, 0}, b3[] = {1};
  const int *want[] = {b0, b1, b2, b3};
  const int n[] = {1, 2, 2, 1};
  CU_ASSERT(same(&b, want, n, 4, seq3));
  core_bucket_free(&b);
  /* NULL is reversed parameter order: the same as listing it. */
  static const int rev[6] = {5, 4, 3, 2, 1, 0};
  core_buckets a;
  CU_ASSERT_FATAL(core_bucket_assign(seq3, 6, rev, 4, MiB, MiB, CORE_BUCKET_REBUILT, &a) == 0);
  CU_ASSERT_FATAL(core_bucket_assign(seq3, 6, NULL, 4, MiB, MiB, CORE_BUCKET_REBUILT, &b) == 0);
  CU_ASSERT_EQUAL(a.n_buckets, b.n_buckets);
  CU_ASSERT(memcmp(a.bucket_tensors, b.bucket_tensors, sizeof(int) * 6) == 0);
  core_bucket_free(&a);
  core_bucket_free(&b);
}

static void test_torch_rebuilt(void) {
  core_buckets b;
  /* Gradient-ready order 5, 4, 3, 2, 1, 0 with limits [1 MiB, 1 MiB]:
   * 2048 + 1048576 >= 1 MiB closes [5, 4], and so on. */
  CU_ASSERT_FATAL(core_bucket_assign(seq3, 6, NULL, 4, MiB, MiB, CORE_BUCKET_REBUILT, &b) == 0);
  static const int b0[] = {5, 4}, b1[] = {3, 2}, b2[] = {1, 0};
  const int *want[] = {b0, b1, b2};
  const int n[] = {2, 2, 2};
  CU_ASSERT(same(&b, want, n, 3, seq3));
  core_bucket_free(&b);

  /* The default cap, 25 MiB, after the 1 MiB first bucket: the first bucket
   * is [5, 4] (it reaches 1 MiB), the remaining 2 MiB + 4 KiB stay below 25
   * MiB and form one bucket. */
  CU_ASSERT_FATAL(core_bucket_assign(seq3, 6, NULL, 4, CORE_BUCKET_FIRST_BYTES,
                      (size_t)(CORE_BUCKET_DEFAULT_CAP_MB * MiB), CORE_BUCKET_REBUILT, &b) == 0);
  static const int c0[] = {5, 4}, c1[] = {3, 2, 1, 0};
  const int *want2[] = {c0, c1};
  const int n2[] = {2, 4};
  CU_ASSERT(same(&b, want2, n2, 2, seq3));
  core_bucket_free(&b);
}

static void test_pytorch_defaults(void) {
  /* torch/nn/parallel/distributed.py: _DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
   * and bucket_cap_mb = 25. */
  CU_ASSERT_EQUAL(CORE_BUCKET_FIRST_BYTES, (size_t)1048576);
  CU_ASSERT_EQUAL(CORE_BUCKET_DEFAULT_CAP_MB, 25.0);
}

static void test_single_huge_limit(void) {
  core_buckets b;
  for (int order = 0; order < 3; order++) {
    CU_ASSERT_FATAL(
        core_bucket_assign(seq3, 6, NULL, 4, (size_t)1 << 40, (size_t)1 << 40, (enum core_bucket_order)order, &b) == 0);
    CU_ASSERT_EQUAL(b.n_buckets, 1);
    CU_ASSERT_EQUAL(b.bucket_first[0], 0);
    CU_ASSERT_EQUAL(b.bucket_first[1], 6);
    CU_ASSERT_EQUAL(b.bucket_elems[0], 3 * (512 * 512 + 512));
    for (int t = 0; t < 6; t++)
      CU_ASSERT_EQUAL(b.tensor_bucket[t], 0);
    core_bucket_free(&b);
  }
  /* first_cap 0: no separate first bucket, every bucket uses cap. */
  CU_ASSERT_FATAL(core_bucket_assign(seq3, 6, NULL, 4, 0, (size_t)1 << 40, CORE_BUCKET_REBUILT, &b) == 0);
  CU_ASSERT_EQUAL(b.n_buckets, 1);
  core_bucket_free(&b);
}

/* Rebuilt order fills from the last parameter backwards: the first bucket
 * stops at the first tensor that brings it to >= 1 MiB, later ones at cap. */
static void test_rebuilt_caps(void) {
  /* 10 tensors of 300 KiB (fp32: 76800 elements). Backwards from 9: the
   * first bucket needs 4 tensors (1200 KiB >= 1024 KiB, overshoot by one);
   * cap 700 KiB: 3 tensors (900 KiB) per bucket; 3 are left for the last. */
  int64_t e[10];
  for (int i = 0; i < 10; i++)
    e[i] = 76800;
  core_buckets b;
  CU_ASSERT_FATAL(core_bucket_assign(e, 10, NULL, 4, MiB, 700 * 1024, CORE_BUCKET_REBUILT, &b) == 0);
  static const int b0[] = {9, 8, 7, 6}, b1[] = {5, 4, 3}, b2[] = {2, 1, 0};
  const int *want[] = {b0, b1, b2};
  const int n[] = {4, 3, 3};
  CU_ASSERT(same(&b, want, n, 3, e));
  core_bucket_free(&b);

  /* Exactly at the limit closes the bucket (>=, not >): 256 KiB tensors,
   * 4 reach 1 MiB exactly; cap 512 KiB takes 2. */
  for (int i = 0; i < 10; i++)
    e[i] = 65536;
  CU_ASSERT_FATAL(core_bucket_assign(e, 10, NULL, 4, MiB, 512 * 1024, CORE_BUCKET_REBUILT, &b) == 0);
  static const int d0[] = {9, 8, 7, 6}, d1[] = {5, 4}, d2[] = {3, 2}, d3[] = {1, 0};
  const int *want2[] = {d0, d1, d2, d3};
  const int n2[] = {4, 2, 2, 2};
  CU_ASSERT(same(&b, want2, n2, 4, e));
  core_bucket_free(&b);

  /* Element size matters: the same tensors in fp16 are half the bytes. */
  CU_ASSERT_FATAL(core_bucket_assign(e, 10, NULL, 2, MiB, 512 * 1024, CORE_BUCKET_REBUILT, &b) == 0);
  static const int f0[] = {9, 8, 7, 6, 5, 4, 3, 2}, f1[] = {1, 0};
  const int *want3[] = {f0, f1};
  const int n3[] = {8, 2};
  CU_ASSERT(same(&b, want3, n3, 2, e));
  core_bucket_free(&b);
}

/* A tensor larger than the cap gets a bucket of its own (overshoot by one
 * tensor, never split), and the one after it starts a new bucket. */
static void test_overshoot(void) {
  const int64_t e[5] = {100, 10 * 1048576, 100, 100, 3 * 1048576};
  core_buckets b;
  /* find_unused_parameters, parameter order, cap 1 MiB everywhere:
   * [0, 1] closes at tensor 1 (40 MiB + 400 B), [2, 3, 4] at tensor 4. */
  CU_ASSERT_FATAL(core_bucket_assign(e, 5, NULL, 4, MiB, MiB, CORE_BUCKET_FIND_UNUSED, &b) == 0);
  static const int b0[] = {2, 3, 4}, b1[] = {0, 1};
  const int *want[] = {b0, b1};
  const int n[] = {3, 2};
  CU_ASSERT(same(&b, want, n, 2, e));
  core_bucket_free(&b);
  /* Rebuilt: 4 alone (12 MiB >= 1 MiB), then [3, 2, 1] (reaches 1 MiB at 1),
   * then [0] left over. */
  CU_ASSERT_FATAL(core_bucket_assign(e, 5, NULL, 4, MiB, MiB, CORE_BUCKET_REBUILT, &b) == 0);
  static const int c0[] = {4}, c1[] = {3, 2, 1}, c2[] = {0};
  const int *want2[] = {c0, c1, c2};
  const int n2[] = {1, 3, 1};
  CU_ASSERT(same(&b, want2, n2, 3, e));
  core_bucket_free(&b);
}

/* Offsets and sizes are consistent on a larger random model, rebuilt and
 * with find_unused_parameters:
 * every tensor is in exactly one bucket, offsets are the running sums of the
 * sizes before it in its bucket, bucket sizes add up to the model, and only
 * the last-filled bucket may be below its limit. */
static void test_consistency_random(void) {
  enum { N = 3000 };
  int64_t *e = malloc(sizeof *e * N);
  CU_ASSERT_FATAL(e != NULL);
  uint64_t x = 12345;
  int64_t total = 0;
  for (int i = 0; i < N; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    e[i] = 1 + (int64_t)((x >> 33) % 2000000);
    total += e[i];
  }
  static const enum core_bucket_order orders[] = {CORE_BUCKET_REBUILT, CORE_BUCKET_FIND_UNUSED};
  for (int oi = 0; oi < 2; oi++) {
    enum core_bucket_order order = orders[oi];
    core_buckets b;
    size_t first = MiB, cap = 25 * MiB;
    CU_ASSERT_FATAL(core_bucket_assign(e, N, NULL, 4, first, cap, order, &b) == 0);
    int *seen = calloc(N, sizeof *seen);
    int64_t sum_all = 0;
    int bad = 0;
    for (int k = 0; k < b.n_buckets; k++) {
      int64_t off = 0;
      if (b.bucket_first[k + 1] <= b.bucket_first[k])
        bad++;
      for (int i = b.bucket_first[k]; i < b.bucket_first[k + 1]; i++) {
        int t = b.bucket_tensors[i];
        seen[t]++;
        if (b.tensor_bucket[t] != k || b.tensor_offset[t] != off)
          bad++;
        off += e[t];
        /* Within a bucket tensors were added in visiting order. */
        if (i > b.bucket_first[k]) {
          int prev = b.bucket_tensors[i - 1];
          if (order == CORE_BUCKET_REBUILT ? prev != t + 1 : prev != t - 1)
            bad++;
        }
      }
      if (off != b.bucket_elems[k])
        bad++;
      sum_all += off;
    }
    for (int t = 0; t < N; t++)
      if (seen[t] != 1)
        bad++;
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(sum_all, total);
    CU_ASSERT_EQUAL(b.bucket_first[b.n_buckets], N);
    /* Fill order: rebuilt buckets are filled 0, 1, ...; find_unused
     * buckets were filled last to first, then reversed. Every bucket but the
     * last filled reached its limit, and dropping its last tensor would put
     * it under the limit (overshoot by at most one tensor). */
    for (int j = 0; j < b.n_buckets; j++) {
      int k = order == CORE_BUCKET_REBUILT ? j : b.n_buckets - 1 - j;
      size_t limit = j == 0 ? first : cap;
      size_t bytes = (size_t)b.bucket_elems[k] * 4;
      int last_t = b.bucket_tensors[b.bucket_first[k + 1] - 1];
      if (j < b.n_buckets - 1)
        CU_ASSERT(bytes >= limit);
      CU_ASSERT(bytes - (size_t)e[last_t] * 4 < limit);
    }
    free(seen);
    core_bucket_free(&b);
  }
  free(e);
}

static void test_rejects(void) {
  core_buckets b;
  const int64_t zero[3] = {10, 0, 10};
  const int64_t neg[2] = {10, -4};
  CU_ASSERT_EQUAL(core_bucket_assign(zero, 3, NULL, 4, MiB, MiB, CORE_BUCKET_REBUILT, &b), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "tensor 1") != NULL);
  CU_ASSERT(b.tensor_bucket == NULL && b.n_buckets == 0);
  CU_ASSERT_EQUAL(core_bucket_assign(zero, 3, NULL, 4, MiB, MiB, CORE_BUCKET_FIRST_ITER, &b), CORE_EINVAL);
  CU_ASSERT_EQUAL(core_bucket_assign(zero, 3, NULL, 4, MiB, MiB, CORE_BUCKET_FIND_UNUSED, &b), CORE_EINVAL);
  /* A ready order that is no permutation. */
  static const int twice[6] = {5, 4, 3, 3, 1, 0}, out_of_range[6] = {5, 4, 3, 6, 1, 0};
  CU_ASSERT_EQUAL(core_bucket_assign(seq3, 6, twice, 4, MiB, MiB, CORE_BUCKET_REBUILT, &b), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "entry 3 (3) is repeated") != NULL);
  CU_ASSERT(b.tensor_bucket == NULL && b.n_buckets == 0);
  CU_ASSERT_EQUAL(core_bucket_assign(seq3, 6, out_of_range, 4, MiB, MiB, CORE_BUCKET_REBUILT, &b), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "out of range") != NULL);
  CU_ASSERT_EQUAL(core_bucket_assign(neg, 2, NULL, 4, MiB, MiB, CORE_BUCKET_REBUILT, &b), CORE_EINVAL);
  CU_ASSERT_EQUAL(core_bucket_assign(seq3, 0, NULL, 4, MiB, MiB, CORE_BUCKET_REBUILT, &b), CORE_EINVAL);
  CU_ASSERT_EQUAL(core_bucket_assign(seq3, 6, NULL, 0, MiB, MiB, CORE_BUCKET_REBUILT, &b), CORE_EINVAL);
  CU_ASSERT_EQUAL(core_bucket_assign(seq3, 6, NULL, 4, MiB, 0, CORE_BUCKET_REBUILT, &b), CORE_EINVAL);
  /* Freeing a failed (zeroed) assignment is harmless. */
  core_bucket_free(&b);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("bucket", NULL, NULL);
  CU_add_test(s, "torch: find_unused_parameters = reversed [[0],[1,2],[3,4],[5]]", test_torch_find_unused);
  CU_add_test(s, "torch: first iteration = one bucket", test_torch_first_iteration);
  CU_add_test(s, "torch: rebuilt order", test_torch_rebuilt);
  CU_add_test(s, "rebuilt in the given ready order", test_rebuilt_ready_order);
  CU_add_test(s, "DDP's assignment per iteration", test_ddp_order);
  CU_add_test(s, "PyTorch default sizes", test_pytorch_defaults);
  CU_add_test(s, "single huge limit: one bucket", test_single_huge_limit);
  CU_add_test(s, "rebuilt: first bucket 1 MiB then cap", test_rebuilt_caps);
  CU_add_test(s, "overshoot by one tensor", test_overshoot);
  CU_add_test(s, "offsets and sizes consistent", test_consistency_random);
  CU_add_test(s, "zero-element tensors and bad arguments rejected", test_rejects);
}

/* The synthetic dataset's sampler shards like torch.utils.data.
 * DistributedSampler (drop_last=False):
 *
 *   indices = randperm(n, generator seeded with seed + epoch) if shuffle
 *             else range(n)
 *   indices += (indices * ceil(padding / n))[:padding]   # repeat the head
 *   indices  = indices[rank : total : world]
 *
 * The expected lists below are written out from that definition (for
 * shuffle off the permutation is the identity, so they are exact), and for
 * shuffle on the structure is checked: the ranks' lists interleave back into
 * one padded list whose first n entries are a permutation of 0..n-1 and
 * whose tail repeats its head. Batches: sample i depends on (seed, i) only,
 * whole batches (drop_last on the DataLoader side), and a seek to a saved
 * sampler position replays the same batches bit for bit. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "runtime/data.h"

static int64_t *indices(rt_data *d, int64_t epoch, int rank) {
  int64_t *v = calloc((size_t)d->num_samples, sizeof *v);
  if (v && rt_data_epoch_indices(d, epoch, rank, v) != 0) {
    free(v);
    v = NULL;
  }
  return v;
}

/* ---- shuffle off: the exact lists ------------------------------------- */

static void check_exact(int64_t n, int world, const int64_t *expect /* [world][per] */, int64_t per) {
  for (int r = 0; r < world; r++) {
    rt_data *d = NULL;
    CU_ASSERT_EQUAL_FATAL(rt_data_create(n, 3, 2, 7, r, world, 0, &d), 0);
    CU_ASSERT_EQUAL(d->num_samples, per);
    int64_t *v = indices(d, 0, r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    for (int64_t j = 0; j < per; j++) {
      if (v[j] != expect[r * per + j])
        fprintf(stderr, "\nn=%lld world=%d rank %d: index %lld is %lld, expected %lld\n", (long long)n, world, r,
            (long long)j, (long long)v[j], (long long)expect[r * per + j]);
      CU_ASSERT_EQUAL(v[j], expect[r * per + j]);
    }
    /* Not shuffled: every epoch is the same list. */
    int64_t *v5 = indices(d, 5, r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v5);
    CU_ASSERT_EQUAL(memcmp(v, v5, sizeof *v * (size_t)per), 0);
    /* The sampler's own shard is this rank's list. */
    CU_ASSERT_EQUAL(memcmp(v, d->shard, sizeof *v * (size_t)per), 0);
    free(v);
    free(v5);
    rt_data_free(d);
  }
}

static void test_unshuffled_lists(void) {
  /* n = 10, world = 3: total 12, padded [0..9, 0, 1]. */
  static const int64_t e10_3[] = {0, 3, 6, 9, /**/ 1, 4, 7, 0, /**/ 2, 5, 8, 1};
  check_exact(10, 3, e10_3, 4);
  /* n = 8, world = 4: no padding. */
  static const int64_t e8_4[] = {0, 4, 1, 5, 2, 6, 3, 7};
  check_exact(8, 4, e8_4, 2);
  /* n = 2, world = 5: padding 3 > n, the list repeats: [0, 1, 0, 1, 0]. */
  static const int64_t e2_5[] = {0, 1, 0, 1, 0};
  check_exact(2, 5, e2_5, 1);
  /* n = 7, world = 1: everything, in order. */
  static const int64_t e7_1[] = {0, 1, 2, 3, 4, 5, 6};
  check_exact(7, 1, e7_1, 7);
}

/* ---- shuffle on: the structure ---------------------------------------- */

/* Interleave the ranks' lists back into the padded list of the epoch. */
static int64_t *padded_list(int64_t n, int world, uint64_t seed, int64_t epoch, int64_t *total) {
  rt_data *d0 = NULL;
  if (rt_data_create(n, 2, 1, seed, 0, world, 1, &d0) != 0)
    return NULL;
  int64_t per = d0->num_samples;
  *total = per * world;
  int64_t *all = calloc((size_t)*total, sizeof *all);
  for (int r = 0; all && r < world; r++) {
    rt_data *d = NULL;
    if (rt_data_create(n, 2, 1, seed, r, world, 1, &d) != 0) {
      free(all);
      all = NULL;
      break;
    }
    int64_t *v = indices(d, epoch, r);
    if (!v) {
      free(all);
      all = NULL;
      rt_data_free(d);
      break;
    }
    for (int64_t j = 0; j < per; j++)
      all[r + j * world] = v[j];
    /* Any instance lists any rank's indices the same way. */
    int64_t *w = indices(d0, epoch, r);
    if (!w || memcmp(v, w, sizeof *v * (size_t)per) != 0) {
      CU_FAIL("two instances list a rank's indices differently");
    }
    free(w);
    free(v);
    rt_data_free(d);
  }
  rt_data_free(d0);
  return all;
}

static void check_structure(int64_t n, int world) {
  for (int64_t epoch = 0; epoch < 3; epoch++) {
    int64_t total = 0;
    int64_t *all = padded_list(n, world, 1234, epoch, &total);
    CU_ASSERT_PTR_NOT_NULL_FATAL(all);
    CU_ASSERT_EQUAL(total, ((n + world - 1) / world) * world);
    /* The first n are a permutation of 0..n-1: none missing, none twice. */
    char *seen = calloc((size_t)n, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
      if (all[i] < 0 || all[i] >= n || seen[all[i]])
        bad++;
      else
        seen[all[i]] = 1;
    }
    CU_ASSERT_EQUAL(bad, 0);
    int64_t missing = 0;
    for (int64_t i = 0; i < n; i++)
      missing += !seen[i];
    CU_ASSERT_EQUAL(missing, 0);
    /* The padding repeats the head of the permutation. */
    for (int64_t i = n; i < total; i++)
      CU_ASSERT_EQUAL(all[i], all[(i - n) % n]);
    free(seen);
    free(all);
  }
}

static void test_shuffled_structure(void) {
  check_structure(100, 3); /* padding 2 */
  check_structure(101, 4); /* padding 3 */
  check_structure(64, 2);  /* none */
  check_structure(3, 7);   /* padding longer than the dataset */
}

static void test_shuffle_seed_epoch(void) {
  int64_t t1, t2;
  int64_t *a = padded_list(200, 2, 99, 4, &t1);
  int64_t *b = padded_list(200, 2, 99, 4, &t2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(a);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  /* Deterministic per (seed, epoch). */
  CU_ASSERT_EQUAL(memcmp(a, b, sizeof *a * (size_t)t1), 0);
  free(b);
  /* Another epoch, another seed: another order (200! orders; a collision
   * of two seeded shuffles is not a thing that happens). */
  b = padded_list(200, 2, 99, 5, &t2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof *a * (size_t)t1), 0);
  free(b);
  b = padded_list(200, 2, 100, 4, &t2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof *a * (size_t)t1), 0);
  free(b);
  /* And it is shuffled at all. */
  int64_t in_place = 0;
  for (int64_t i = 0; i < 200; i++)
    in_place += a[i] == i;
  CU_ASSERT(in_place < 20);
  free(a);
}

/* ---- batches ------------------------------------------------------------ */

/* Sample i depends on (seed, i) alone, whatever the rank and world: the
 * rows a rank gets equal the rows a single process gets for those indices,
 * and targets are teacher * x. */
static void test_samples_by_index(void) {
  enum { IN = 5, OUT = 3, N = 12 };
  rt_data *one = NULL, *r1 = NULL;
  CU_ASSERT_EQUAL_FATAL(rt_data_create(N, IN, OUT, 42, 0, 1, 0, &one), 0);
  CU_ASSERT_EQUAL_FATAL(rt_data_create(N, IN, OUT, 42, 1, 3, 1, &r1), 0);
  float xall[N][IN], tall[N][OUT];
  CU_ASSERT_EQUAL(rt_data_next(one, N, &xall[0][0], &tall[0][0]), 0);
  /* The teacher is the same for every rank (same seed). */
  CU_ASSERT_EQUAL(memcmp(one->teacher, r1->teacher, sizeof(float) * IN * OUT), 0);
  /* Targets: teacher [OUT x IN] times x, recomputed here in double. */
  for (int i = 0; i < N; i++)
    for (int o = 0; o < OUT; o++) {
      double s = 0, mag = 0;
      for (int j = 0; j < IN; j++) {
        s += (double)one->teacher[o * IN + j] * xall[i][j];
        mag += fabs((double)one->teacher[o * IN + j] * xall[i][j]);
      }
      /* fp32 dot product of IN terms: error <= IN * 2^-24 * sum |terms|. */
      CU_ASSERT(fabs(tall[i][o] - s) <= IN * 0x1p-24 * mag + 1e-30);
    }
  int64_t idx[4];
  CU_ASSERT_EQUAL_FATAL(rt_data_epoch_indices(r1, 0, 1, idx), 0);
  float x[2][IN], t[2][OUT];
  for (int b = 0; b < 2; b++) {
    CU_ASSERT_EQUAL_FATAL(rt_data_next(r1, 2, &x[0][0], &t[0][0]), 0);
    for (int k = 0; k < 2; k++) {
      int64_t i = idx[b * 2 + k];
      CU_ASSERT_EQUAL(memcmp(x[k], xall[i], sizeof x[k]), 0);
      CU_ASSERT_EQUAL(memcmp(t[k], tall[i], sizeof t[k]), 0);
    }
  }
  /* Another seed: other samples. */
  rt_data *other = NULL;
  CU_ASSERT_EQUAL_FATAL(rt_data_create(N, IN, OUT, 43, 0, 1, 0, &other), 0);
  float xo[N][IN], to[N][OUT];
  CU_ASSERT_EQUAL(rt_data_next(other, N, &xo[0][0], &to[0][0]), 0);
  CU_ASSERT_NOT_EQUAL(memcmp(xo, xall, sizeof xo), 0);
  rt_data_free(other);
  rt_data_free(one);
  rt_data_free(r1);
}

/* Whole batches: with 10 samples per rank and batch 4, an epoch gives two
 * batches and the next one starts epoch 1 at its beginning. */
static void test_drop_last(void) {
  enum { IN = 2, OUT = 1 };
  rt_data *d = NULL, *ref = NULL;
  CU_ASSERT_EQUAL_FATAL(rt_data_create(20, IN, OUT, 5, 1, 2, 1, &d), 0);
  CU_ASSERT_EQUAL_FATAL(rt_data_create(20, IN, OUT, 5, 0, 1, 0, &ref), 0);
  CU_ASSERT_EQUAL(d->num_samples, 10);
  float xall[20][IN], tall[20][OUT];
  CU_ASSERT_EQUAL_FATAL(rt_data_next(ref, 20, &xall[0][0], &tall[0][0]), 0);
  int64_t e0[10], e1[10];
  CU_ASSERT_EQUAL_FATAL(rt_data_epoch_indices(d, 0, 1, e0), 0);
  CU_ASSERT_EQUAL_FATAL(rt_data_epoch_indices(d, 1, 1, e1), 0);
  float x[4][IN], t[4][OUT];
  const int64_t *expect_src[3] = {e0, e0 + 4, e1};
  for (int b = 0; b < 3; b++) {
    CU_ASSERT_EQUAL_FATAL(rt_data_next(d, 4, &x[0][0], &t[0][0]), 0);
    for (int k = 0; k < 4; k++)
      CU_ASSERT_EQUAL(memcmp(x[k], xall[expect_src[b][k]], sizeof x[k]), 0);
  }
  CU_ASSERT_EQUAL(d->epoch, 1);
  CU_ASSERT_EQUAL(d->pos, 4);
  /* A batch bigger than a rank's epoch is refused with advice. */
  float big[11 * IN], bigt[11 * OUT];
  CU_ASSERT_EQUAL(rt_data_next(d, 11, big, bigt), CORE_EINVAL);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "--batch"));
  rt_data_free(d);
  rt_data_free(ref);
}

/* A run that saves (epoch, pos) and a fresh sampler that seeks there see
 * the same batches afterwards, across several epoch boundaries. */
static void test_seek_replays(void) {
  enum { IN = 4, OUT = 2, B = 3, AFTER = 17 };
  for (int saved_after = 0; saved_after < 9; saved_after++) {
    rt_data *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL_FATAL(rt_data_create(23, IN, OUT, 77, 2, 3, 1, &a), 0);
    CU_ASSERT_EQUAL_FATAL(rt_data_create(23, IN, OUT, 77, 2, 3, 1, &b), 0);
    float xa[B * IN], ta[B * OUT], xb[B * IN], tb[B * OUT];
    for (int i = 0; i < saved_after; i++)
      CU_ASSERT_EQUAL_FATAL(rt_data_next(a, B, xa, ta), 0);
    int64_t epoch = a->epoch, pos = a->pos;
    /* b wanders off first, so the seek has something to undo. */
    for (int i = 0; i < 5; i++)
      CU_ASSERT_EQUAL_FATAL(rt_data_next(b, B, xb, tb), 0);
    CU_ASSERT_EQUAL_FATAL(rt_data_seek(b, epoch, pos), 0);
    int same = 1;
    for (int i = 0; i < AFTER; i++) {
      CU_ASSERT_EQUAL_FATAL(rt_data_next(a, B, xa, ta), 0);
      CU_ASSERT_EQUAL_FATAL(rt_data_next(b, B, xb, tb), 0);
      same &= memcmp(xa, xb, sizeof xa) == 0 && memcmp(ta, tb, sizeof ta) == 0;
      same &= a->epoch == b->epoch && a->pos == b->pos;
    }
    CU_ASSERT(same);
    CU_ASSERT(a->epoch >= 4); /* 8 per rank per epoch, 2 batches of 3 each */
    rt_data_free(a);
    rt_data_free(b);
  }
}

static void test_bad_args(void) {
  rt_data *d = NULL;
  CU_ASSERT_EQUAL(rt_data_create(10, 2, 2, 1, 2, 2, 1, &d), CORE_EINVAL); /* rank >= world */
  CU_ASSERT_EQUAL(rt_data_create(10, 2, 2, 1, -1, 2, 1, &d), CORE_EINVAL);
  CU_ASSERT_EQUAL(rt_data_create(0, 2, 2, 1, 0, 2, 1, &d), CORE_EINVAL);
  CU_ASSERT_EQUAL(rt_data_create(10, 0, 2, 1, 0, 2, 1, &d), CORE_EINVAL);
  CU_ASSERT_EQUAL(rt_data_create(10, 2, 2, 1, 0, 0, 1, &d), CORE_EINVAL);
  CU_ASSERT_PTR_NULL(d);
  CU_ASSERT_EQUAL_FATAL(rt_data_create(10, 2, 2, 1, 0, 2, 1, &d), 0);
  /* A position from a checkpoint that cannot be this dataset's. */
  CU_ASSERT_EQUAL(rt_data_seek(d, 0, 6), CORE_ECORRUPT); /* 5 per rank */
  CU_ASSERT_EQUAL(rt_data_seek(d, -1, 0), CORE_ECORRUPT);
  CU_ASSERT_EQUAL(rt_data_seek(d, 0, -1), CORE_ECORRUPT);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "out of range"));
  /* The position at the very end of an epoch is legal (the next batch
   * starts the following epoch). */
  CU_ASSERT_EQUAL(rt_data_seek(d, 3, 5), 0);
  float x[2 * 2], t[2 * 2];
  CU_ASSERT_EQUAL(rt_data_next(d, 2, x, t), 0);
  CU_ASSERT_EQUAL(d->epoch, 4);
  CU_ASSERT_EQUAL(d->pos, 2);
  rt_data_free(d);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("DistributedSampler sharding", NULL, NULL);
  CU_add_test(s, "unshuffled lists, with and without padding", test_unshuffled_lists);
  CU_add_test(s, "shuffled: a permutation padded by its head", test_shuffled_structure);
  CU_add_test(s, "shuffled: deterministic per seed and epoch", test_shuffle_seed_epoch);
  s = CU_add_suite("batches", NULL, NULL);
  CU_add_test(s, "sample i depends on (seed, i) only", test_samples_by_index);
  CU_add_test(s, "whole batches, then the next epoch", test_drop_last);
  CU_add_test(s, "seek replays the same batches", test_seek_replays);
  CU_add_test(s, "bad sizes and positions", test_bad_args);
}

#include "bucket.h"

#include "err.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void core_bucket_free(core_buckets *b) {
  free(b->tensor_bucket);
  free(b->tensor_offset);
  free(b->bucket_first);
  free(b->bucket_tensors);
  free(b->bucket_elems);
  memset(b, 0, sizeof *b);
}

enum core_bucket_order core_bucket_ddp_order(int find_unused, int first_iteration) {
  if (find_unused)
    return CORE_BUCKET_FIND_UNUSED;
  return first_iteration ? CORE_BUCKET_FIRST_ITER : CORE_BUCKET_REBUILT;
}

/* The order tensors are added to buckets in: ready order (reversed
 * parameter order without one) for the rebuilt buckets, parameter order for
 * the constructor's. */
static int visit_order(int n, const int *ready, enum core_bucket_order order, int *visit) {
  if (order != CORE_BUCKET_REBUILT) {
    for (int k = 0; k < n; k++)
      visit[k] = k;
    return 0;
  }
  if (!ready) {
    for (int k = 0; k < n; k++)
      visit[k] = n - 1 - k;
    return 0;
  }
  /* visit[] doubles as the seen-flags until it is filled. */
  memset(visit, 0, sizeof *visit * (size_t)n);
  for (int k = 0; k < n; k++) {
    if (ready[k] < 0 || ready[k] >= n || visit[ready[k]])
      return core_err_set(CORE_EINVAL,
          "gradient-ready order: entry %d (%d) is %s; it must list every tensor index 0..%d once", k, ready[k],
          ready[k] < 0 || ready[k] >= n ? "out of range" : "repeated", n - 1);
    visit[ready[k]] = 1;
  }
  memcpy(visit, ready, sizeof *visit * (size_t)n);
  return 0;
}

/* Fill buckets visiting tensors in visit[]; limits[0] for the first, then
 * limits[1]. Buckets are numbered in fill order. */
static int fill(
    const int64_t *elems, int n, const int *visit, size_t elem_bytes, const size_t limits[2], core_buckets *out) {
  int nb = 0;
  size_t bytes = 0, limit = limits[0];
  out->bucket_first[0] = 0;
  out->bucket_elems[0] = 0;
  for (int k = 0; k < n; k++) {
    int t = visit[k];
    if (elems[t] <= 0)
      return core_err_set(CORE_EINVAL, "parameter tensor %d has %lld elements; every tensor needs at least one", t,
          (long long)elems[t]);
    out->bucket_tensors[k] = t;
    out->tensor_bucket[t] = nb;
    out->tensor_offset[t] = out->bucket_elems[nb];
    out->bucket_elems[nb] += elems[t];
    bytes += (size_t)elems[t] * elem_bytes;
    if (bytes >= limit) {
      out->bucket_first[++nb] = k + 1;
      if (k + 1 < n)
        out->bucket_elems[nb] = 0;
      bytes = 0;
      limit = limits[1];
    }
  }
  if (bytes > 0)
    out->bucket_first[++nb] = n;
  out->n_buckets = nb;
  return 0;
}

/* DDP's constructor hands its buckets to the reducer reversed, so that the
 * buckets holding the last layers, whose gradients are ready first, are
 * launched first. */
static int reverse(core_buckets *b) {
  int n = b->n_tensors, nb = b->n_buckets, pos = 0;
  int *bt = malloc(sizeof *bt * (size_t)n);
  int *bf = malloc(sizeof *bf * (size_t)(nb + 1));
  int64_t *be = malloc(sizeof *be * (size_t)nb);
  if (!bt || !bf || !be) {
    free(bt);
    free(bf);
    free(be);
    return core_err_set(CORE_ENOMEM, "out of memory reversing %d buckets", nb);
  }
  bf[0] = 0;
  for (int k = 0; k < nb; k++) {
    int src = nb - 1 - k;
    for (int i = b->bucket_first[src]; i < b->bucket_first[src + 1]; i++) {
      bt[pos++] = b->bucket_tensors[i];
      b->tensor_bucket[b->bucket_tensors[i]] = k;
    }
    bf[k + 1] = pos;
    be[k] = b->bucket_elems[src];
  }
  free(b->bucket_tensors);
  free(b->bucket_first);
  free(b->bucket_elems);
  b->bucket_tensors = bt;
  b->bucket_first = bf;
  b->bucket_elems = be;
  return 0;
}

int core_bucket_assign(const int64_t *elems, int n, const int *ready, size_t elem_bytes, size_t first_cap_bytes,
    size_t cap_bytes, enum core_bucket_order order, core_buckets *out) {
  memset(out, 0, sizeof *out);
  if (n <= 0 || elem_bytes == 0 || cap_bytes == 0)
    return core_err_set(CORE_EINVAL, "bucket assignment needs at least one tensor and a positive cap");
  int rc;
  int *visit = malloc(sizeof *visit * (size_t)n);
  out->n_tensors = n;
  out->tensor_bucket = malloc(sizeof(int) * (size_t)n);
  out->tensor_offset = malloc(sizeof(int64_t) * (size_t)n);
  out->bucket_first = malloc(sizeof(int) * (size_t)(n + 1));
  out->bucket_tensors = malloc(sizeof(int) * (size_t)n);
  out->bucket_elems = malloc(sizeof(int64_t) * (size_t)n);
  if (!visit || !out->tensor_bucket || !out->tensor_offset || !out->bucket_first || !out->bucket_tensors ||
      !out->bucket_elems) {
    rc = core_err_set(CORE_ENOMEM, "out of memory assigning %d tensors to buckets", n);
    goto fail_free;
  }
  if ((rc = visit_order(n, ready, order, visit)) != 0)
    goto fail_free;
  size_t limits[2] = {first_cap_bytes ? first_cap_bytes : cap_bytes, cap_bytes};
  if (order == CORE_BUCKET_FIRST_ITER)
    limits[0] = limits[1] = SIZE_MAX;
  else if (order == CORE_BUCKET_FIND_UNUSED && !(first_cap_bytes && first_cap_bytes < cap_bytes))
    limits[0] = cap_bytes; /* _BucketCapacityConfig.compute_bucket_size_limits: [cap] */
  if ((rc = fill(elems, n, visit, elem_bytes, limits, out)) != 0)
    goto fail_free;
  if (order != CORE_BUCKET_REBUILT && (rc = reverse(out)) != 0)
    goto fail_free;
  free(visit);
  return 0;
fail_free:
  free(visit);
  core_bucket_free(out);
  return rc;
}

#include "bucket.h"

#include "err.h"

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

int core_bucket_assign(const int64_t *elems, int n, size_t elem_bytes, size_t first_cap_bytes,
                       size_t cap_bytes, enum core_bucket_order order, core_buckets *out) {
  memset(out, 0, sizeof *out);
  if (n <= 0 || elem_bytes == 0 || cap_bytes == 0)
    return core_err_set(CORE_EINVAL, "bucket assignment needs at least one tensor and a positive cap");
  out->n_tensors = n;
  out->tensor_bucket = malloc(sizeof(int) * (size_t)n);
  out->tensor_offset = malloc(sizeof(int64_t) * (size_t)n);
  out->bucket_first = malloc(sizeof(int) * (size_t)(n + 1));
  out->bucket_tensors = malloc(sizeof(int) * (size_t)n);
  out->bucket_elems = malloc(sizeof(int64_t) * (size_t)n);
  if (!out->tensor_bucket || !out->tensor_offset || !out->bucket_first || !out->bucket_tensors ||
      !out->bucket_elems) {
    core_bucket_free(out);
    return core_err_set(CORE_ENOMEM, "out of memory assigning %d tensors to buckets", n);
  }

  /* Visit tensors in the order the buckets are filled: reversed parameter
   * order for the rebuilt buckets, parameter order for the first iteration. */
  int nb = 0;
  size_t fill = 0;
  size_t limit = first_cap_bytes ? first_cap_bytes : cap_bytes;
  out->bucket_first[0] = 0;
  out->bucket_elems[0] = 0;
  for (int k = 0; k < n; k++) {
    int t = order == CORE_BUCKET_REBUILT ? n - 1 - k : k;
    if (elems[t] <= 0) {
      core_bucket_free(out);
      return core_err_set(CORE_EINVAL, "parameter tensor %d has %lld elements; every tensor needs at least one",
                          t, (long long)elems[t]);
    }
    out->bucket_tensors[k] = t;
    out->tensor_bucket[t] = nb;
    out->tensor_offset[t] = out->bucket_elems[nb];
    out->bucket_elems[nb] += elems[t];
    fill += (size_t)elems[t] * elem_bytes;
    if (fill >= limit) {
      /* Closed: the next bucket uses the regular cap. */
      out->bucket_first[++nb] = k + 1;
      if (k + 1 < n)
        out->bucket_elems[nb] = 0;
      fill = 0;
      limit = cap_bytes;
    }
  }
  if (fill > 0)
    out->bucket_first[++nb] = n;
  out->n_buckets = nb;

  if (order == CORE_BUCKET_FIRST_ITER) {
    /* DDP reverses the list so that the buckets holding the last layers,
     * whose gradients are ready first, are launched first. */
    int *bt = malloc(sizeof(int) * (size_t)n);
    int *bf = malloc(sizeof(int) * (size_t)(nb + 1));
    int64_t *be = malloc(sizeof(int64_t) * (size_t)nb);
    if (!bt || !bf || !be) {
      free(bt);
      free(bf);
      free(be);
      core_bucket_free(out);
      return core_err_set(CORE_ENOMEM, "out of memory reversing buckets");
    }
    int pos = 0;
    bf[0] = 0;
    for (int b = 0; b < nb; b++) {
      int src = nb - 1 - b;
      for (int i = out->bucket_first[src]; i < out->bucket_first[src + 1]; i++) {
        bt[pos++] = out->bucket_tensors[i];
        out->tensor_bucket[out->bucket_tensors[i]] = b;
      }
      bf[b + 1] = pos;
      be[b] = out->bucket_elems[src];
    }
    free(out->bucket_tensors);
    free(out->bucket_first);
    free(out->bucket_elems);
    out->bucket_tensors = bt;
    out->bucket_first = bf;
    out->bucket_elems = be;
  }
  return 0;
}

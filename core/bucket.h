/*
 * bucket — how PyTorch DDP packs gradients into buckets, the one function
 * both the simulator and the runtime use.
 *
 * Reference: torch/csrc/distributed/c10d/reducer.cpp
 * (compute_bucket_assignment_by_size, Reducer::rebuild_buckets) and
 * torch/nn/parallel/distributed.py (_DEFAULT_FIRST_BUCKET_BYTES = 1 MiB,
 * bucket_cap_mb = 25). Tensors are visited in order and added to the open
 * bucket; the bucket closes as soon as its size reaches the current limit, so
 * it can overshoot by one tensor. The first bucket's limit is first_cap, every
 * later one cap. PyTorch's first cap is 1 MiB only while bucket_cap_mb is left
 * at its default; passing bucket_cap_mb gives the first bucket that cap too
 * (torch 2.15, torch/nn/parallel/distributed.py, BucketCapacityConfig).
 *
 * Two orders exist in PyTorch. In the first iteration DDP builds buckets in
 * parameter order and hands them over reversed (CORE_BUCKET_FIRST_ITER). After
 * it, the reducer rebuilds them once in the order gradients arrived, which for
 * a model run layer after layer is reversed parameter order, and the small
 * first bucket then holds the last layers (CORE_BUCKET_REBUILT). Steady-state
 * steps use the rebuilt assignment, so it is the default everywhere.
 * All tensors are assumed to share one dtype and device, as in ddpsim's models.
 */
#ifndef CORE_BUCKET_H
#define CORE_BUCKET_H

#include <stddef.h>
#include <stdint.h>

enum core_bucket_order { CORE_BUCKET_REBUILT = 0, CORE_BUCKET_FIRST_ITER = 1 };

/* PyTorch's defaults (torch/nn/parallel/distributed.py). */
#define CORE_BUCKET_FIRST_BYTES ((size_t)1 << 20)
#define CORE_BUCKET_DEFAULT_CAP_MB 25.0

typedef struct core_buckets {
  int n_buckets;
  int n_tensors;
  int *tensor_bucket;   /* [n_tensors] bucket index of each parameter tensor */
  int64_t *tensor_offset; /* [n_tensors] element offset of the tensor inside its bucket */
  int *bucket_first;    /* [n_buckets + 1] CSR rows into bucket_tensors */
  int *bucket_tensors;  /* tensor indices per bucket, in the order they were added */
  int64_t *bucket_elems;/* [n_buckets] elements in each bucket */
} core_buckets;

/* elems[i] is the element count of parameter tensor i (parameter order);
 * elem_bytes the size of one gradient element. Bucket 0 is the first one
 * DDP launches. first_cap_bytes = 0 means "no separate first bucket". */
int core_bucket_assign(const int64_t *elems, int n, size_t elem_bytes, size_t first_cap_bytes,
                       size_t cap_bytes, enum core_bucket_order order, core_buckets *out);
void core_bucket_free(core_buckets *b);

#endif

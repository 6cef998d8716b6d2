/*
 * bucket — how PyTorch DDP packs gradients into buckets, the one function
 * both the simulator and the runtime use.
 *
 * Reference, torch 2.15.0: torch/nn/parallel/distributed.py
 * (_BucketCapacityConfig, _ddp_init_helper; _DEFAULT_BUCKET_CAP_MB = 25,
 * dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB) and
 * torch/csrc/distributed/c10d/reducer.{hpp,cpp}
 * (compute_bucket_assignment_by_size, Reducer::rebuild_buckets,
 * should_rebuild_buckets). Tensors are visited in an order and added to the
 * open bucket; the bucket closes as soon as its size reaches the current
 * limit, so it can overshoot by one tensor. The first bucket's limit is
 * first_cap, every later one cap. PyTorch's first cap is 1 MiB only while
 * bucket_cap_mb is left at its default; passing bucket_cap_mb gives the
 * first bucket that cap too.
 *
 * Which assignment a DDP iteration uses (core_bucket_ddp_order):
 *  - default DDP (find_unused_parameters=False), first iteration: one
 *    bucket holding every gradient in parameter order
 *    (CORE_BUCKET_FIRST_ITER; the constructor's limit is sys.maxsize);
 *  - after it the reducer rebuilds the buckets once, visiting the tensors in
 *    the order their gradients became ready in backward, with limits
 *    [first_cap, cap], and launches them in that order (CORE_BUCKET_REBUILT,
 *    every later iteration);
 *  - find_unused_parameters=True: the constructor's buckets, filled in
 *    parameter order with limits [first_cap, cap] (only [cap] unless
 *    first_cap < cap) and launched last-filled first, so the small bucket
 *    holds the first parameters and goes last; never rebuilt
 *    (CORE_BUCKET_FIND_UNUSED).
 * static_graph=True buckets as the default does, but keeps the one bucket
 * for two iterations and rebuilds after the second.
 * All tensors are assumed to share one dtype and device, as in ddpsim's models.
 */
#ifndef CORE_BUCKET_H
#define CORE_BUCKET_H

#include <stddef.h>
#include <stdint.h>

enum core_bucket_order { CORE_BUCKET_REBUILT = 0, CORE_BUCKET_FIRST_ITER = 1, CORE_BUCKET_FIND_UNUSED = 2 };

/* PyTorch's defaults (torch/nn/parallel/distributed.py). */
#define CORE_BUCKET_FIRST_BYTES ((size_t)1 << 20)
#define CORE_BUCKET_DEFAULT_CAP_MB 25.0
/* The least bucket cap a scenario takes (about 1 KB): below it every
 * gradient is a bucket of its own anyway. */
#define CORE_BUCKET_MIN_CAP_MB 1e-3

typedef struct core_buckets {
  int n_buckets;
  int n_tensors;
  int *tensor_bucket;     /* [n_tensors] bucket index of each parameter tensor */
  int64_t *tensor_offset; /* [n_tensors] element offset of the tensor inside its bucket */
  int *bucket_first;      /* [n_buckets + 1] CSR rows into bucket_tensors */
  int *bucket_tensors;    /* tensor indices per bucket, in the order they were added */
  int64_t *bucket_elems;  /* [n_buckets] elements in each bucket */
} core_buckets;

/* elems[i] is the element count of parameter tensor i (parameter order);
 * elem_bytes the size of one gradient element. ready lists the tensor
 * indices in the order their gradients become ready (core_model's
 * ready_order); NULL means reversed parameter order. Only
 * CORE_BUCKET_REBUILT visits tensors in that order, and fails with
 * CORE_EINVAL when it is not a permutation of 0..n-1. Bucket 0 is the first
 * one DDP launches. first_cap_bytes = 0 means "no separate first bucket". */
int core_bucket_assign(const int64_t *elems, int n, const int *ready, size_t elem_bytes, size_t first_cap_bytes,
    size_t cap_bytes, enum core_bucket_order order, core_buckets *out);
void core_bucket_free(core_buckets *b);

/* The assignment DDP uses with find_unused_parameters set or not, in its
 * first iteration or any later one. */
enum core_bucket_order core_bucket_ddp_order(int find_unused, int first_iteration);

#endif

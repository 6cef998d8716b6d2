/*
 * data — a synthetic, seeded dataset sharded across ranks exactly as
 * torch.utils.data.DistributedSampler shards a real one: every epoch a
 * permutation of all sample indices from seed + epoch (when shuffling), padded
 * by repeating its head to a multiple of the world size, and rank r takes
 * every world-th index starting at r. Sample i is generated from (seed, i)
 * alone, so any rank can produce any sample and a resumed run sees the same
 * data as an uninterrupted one. Targets come from a fixed random linear
 * "teacher", so the loss actually falls as the network learns.
 *
 * Batches are whole: when fewer than a batch of this epoch's indices remain,
 * the sampler moves to the next epoch (DataLoader's drop_last = True).
 */
#ifndef RUNTIME_DATA_H
#define RUNTIME_DATA_H

#include <stdint.h>

typedef struct rt_data {
  int64_t size; /* samples in the dataset */
  int in, out;
  uint64_t seed;
  int rank, world, shuffle;
  int64_t num_samples; /* per rank per epoch: ceil(size / world) */
  int64_t epoch, pos;  /* sampler position: next index is shard[pos] of epoch */
  int64_t *shard;      /* this rank's indices for the current epoch */
  float *teacher;      /* [out x in] */
} rt_data;

/* ddpsim train's dataset, and the seed of its data and initial parameters,
 * unless told otherwise (--dataset, --seed): calibration computes its
 * gradients from the same samples and parameters. */
#define RT_DATA_DEFAULT_SIZE 65536
#define RT_DATA_DEFAULT_SEED 1

int rt_data_create(int64_t size, int in, int out, uint64_t seed, int rank, int world, int shuffle, rt_data **res);
void rt_data_free(rt_data *d);

/* Fill x [batch x in] and target [batch x out] with the next batch. */
int rt_data_next(rt_data *d, int batch, float *x, float *target);
/* Jump to a sampler position (from a checkpoint). */
int rt_data_seek(rt_data *d, int64_t epoch, int64_t pos);

/* The indices of one epoch for a rank (num_samples of them), as
 * DistributedSampler would list them; for tests and for resuming. */
int rt_data_epoch_indices(const rt_data *d, int64_t epoch, int rank, int64_t *out);

#endif

#include "data.h"

#include "runtime/blas.h"
#include "runtime/mlp.h"

#include "core/err.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Seeds derived from (seed, stream, i) by splitmix64 (Steele, Lea, Flood
 * 2014), so independent streams (teacher, sample i, epoch e) do not overlap. */
static unsigned long mix(uint64_t seed, uint64_t stream, uint64_t i) {
  uint64_t z = seed ^ (stream * 0xd1b54a32d192ed03ULL) ^ (i * 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (unsigned long)(z ^ (z >> 31));
}

void rt_data_free(rt_data *d) {
  if (!d)
    return;
  free(d->shard);
  free(d->teacher);
  free(d);
}

int rt_data_epoch_indices(const rt_data *d, int64_t epoch, int rank, int64_t *out) {
  int64_t total = d->num_samples * d->world;
  int64_t *perm = malloc(sizeof *perm * (size_t)(d->size > total ? d->size : total));
  if (!perm)
    return core_err_set(CORE_ENOMEM, "out of memory shuffling %lld samples", (long long)d->size);
  for (int64_t i = 0; i < d->size; i++)
    perm[i] = i;
  if (d->shuffle) {
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r) {
      free(perm);
      return core_err_set(CORE_ENOMEM, "out of memory shuffling");
    }
    gsl_rng_set(r, mix(d->seed, 2, (uint64_t)epoch)); /* DistributedSampler: seed + epoch */
    gsl_ran_shuffle(r, perm, (size_t)d->size, sizeof *perm);
    gsl_rng_free(r);
  }
  /* Pad by repeating the head, then take every world-th from rank. */
  for (int64_t i = d->size; i < total; i++)
    perm[i] = perm[(i - d->size) % d->size];
  for (int64_t j = 0; j < d->num_samples; j++)
    out[j] = perm[rank + j * d->world];
  free(perm);
  return 0;
}

int rt_data_seek(rt_data *d, int64_t epoch, int64_t pos) {
  if (epoch < 0 || pos < 0 || pos > d->num_samples)
    return core_err_set(CORE_ECORRUPT, "sampler position epoch %lld, index %lld is out of range (%lld per epoch)",
        (long long)epoch, (long long)pos, (long long)d->num_samples);
  int rc = rt_data_epoch_indices(d, epoch, d->rank, d->shard);
  if (rc)
    return rc;
  d->epoch = epoch;
  d->pos = pos;
  return 0;
}

int rt_data_create(int64_t size, int in, int out, uint64_t seed, int rank, int world, int shuffle, rt_data **res) {
  if (size < 1 || world < 1 || rank < 0 || rank >= world || in < 1 || out < 1)
    return core_err_set(
        CORE_EINVAL, "dataset of %lld samples for rank %d of %d: sizes must be positive", (long long)size, rank, world);
  int rc = rt_blas_load(); /* the teacher's targets are a GEMM */
  if (rc)
    return rc;
  rt_data *d = calloc(1, sizeof *d);
  if (!d)
    return core_err_set(CORE_ENOMEM, "out of memory creating the dataset");
  d->size = size;
  d->in = in;
  d->out = out;
  d->seed = seed;
  d->rank = rank;
  d->world = world;
  d->shuffle = shuffle;
  d->num_samples = (size + world - 1) / world;
  d->shard = malloc(sizeof *d->shard * (size_t)d->num_samples);
  d->teacher = malloc(sizeof *d->teacher * (size_t)in * (size_t)out);
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  if (!d->shard || !d->teacher || !r) {
    rc = core_err_set(CORE_ENOMEM, "out of memory creating the dataset");
    goto fail_free;
  }
  gsl_rng_set(r, mix(seed, 1, 0));
  double scale = 1.0 / sqrt((double)in); /* keeps targets at unit scale */
  for (size_t i = 0; i < (size_t)in * (size_t)out; i++)
    d->teacher[i] = (float)(gsl_ran_gaussian_ziggurat(r, 1.0) * scale);
  gsl_rng_free(r);
  r = NULL;
  if ((rc = rt_data_seek(d, 0, 0)) != 0)
    goto fail_free;
  *res = d;
  return 0;
fail_free:
  gsl_rng_free(r);
  rt_data_free(d);
  return rc;
}

int rt_data_next(rt_data *d, int batch, float *x, float *target) {
  if (batch > d->num_samples)
    return core_err_set(CORE_EINVAL,
        "batch %d is larger than this rank's %lld samples per epoch; use a bigger --dataset or a smaller --batch",
        batch, (long long)d->num_samples);
  if (d->pos + batch > d->num_samples) {
    int rc = rt_data_seek(d, d->epoch + 1, 0);
    if (rc)
      return rc;
  }
  gsl_rng *r = gsl_rng_alloc(gsl_rng_taus2);
  if (!r)
    return core_err_set(CORE_ENOMEM, "out of memory generating a batch");
  for (int b = 0; b < batch; b++) {
    gsl_rng_set(r, mix(d->seed, 3, (uint64_t)d->shard[d->pos + b]));
    for (int j = 0; j < d->in; j++)
      x[(size_t)b * d->in + j] = (float)gsl_ran_gaussian_ziggurat(r, 1.0);
  }
  gsl_rng_free(r);
  rt_matmul_nt(x, d->teacher, target, batch, d->in, d->out);
  d->pos += batch;
  return 0;
}

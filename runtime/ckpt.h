/*
 * ckpt — training checkpoints: parameters, SGD momentum, step and sampler
 * position, written atomically (core/afile: temp file, fsync, rename, fsync
 * of the directory) so a crash or a full disk leaves the previous checkpoint
 * whole. A file is accepted only if its magic, version, lengths, model shape
 * and zlib CRC-32s all check out; the loader falls back to the newest file
 * that does, and says why it skipped the others. Never half-loaded: state is
 * read into scratch memory and copied out only when everything is verified.
 *
 * Newest means by what a file records (step, then write time), not by its
 * name: a stray copy of an older checkpoint under a newer name is reported
 * and ordered by the step it holds, and never causes newer ones to be
 * pruned. Files in the directory that are not regular files are skipped with
 * a message and never opened blocking; temp files of a writer that died are
 * removed at the next write or load.
 *
 * Layout (little-endian): a 96-byte header — magic "DDPSIMCK", u32 version,
 * u32 header bytes, u64 payload bytes, i64 step, i64 epoch, i64 sampler
 * position, i64 parameter count, u64 model-shape hash, u32 has-momentum,
 * u32 payload CRC-32, u64 write time (ns since the Unix epoch), u32 header
 * CRC-32 (of the bytes before it), zero padding — then the payload:
 * parameters, then momentum buffers, as fp32. Version 1 files (no write
 * time: header CRC at byte 72) are still read; their time is the file's.
 */
#ifndef RUNTIME_CKPT_H
#define RUNTIME_CKPT_H

#include "core/model.h"

#include <stdint.h>

#define RT_CKPT_VERSION 2
#define RT_CKPT_HEADER_BYTES 96

typedef struct rt_ckpt {
  int64_t step;       /* steps completed */
  int64_t epoch, pos; /* sampler position for the next batch */
  int64_t n_params;
  int has_momentum;
  float *params;      /* n_params */
  float *momentum;    /* n_params */
  int64_t written_ns; /* read: when it was written (ns since the Unix epoch); ignored by write */
} rt_ckpt;

/* Hash of the model's tensor shapes: a checkpoint only loads into the model
 * it was written from. */
uint64_t rt_ckpt_model_hash(const core_model *m);

/* Write dir/ckpt-STEP.ddpc atomically and remove all but the newest `keep`
 * checkpoints. */
int rt_ckpt_write(const char *dir, const core_model *m, const rt_ckpt *c, int keep);
/* Read and verify one file into c (c->params/momentum must hold n_params). */
int rt_ckpt_read(const char *path, const core_model *m, rt_ckpt *c);
/* Load the newest valid checkpoint of dir into c (path_used gets the file
 * name). None at all: CORE_EINVAL; checkpoint files that were all rejected
 * (damaged, or of another model): CORE_ECORRUPT, so that a caller does not
 * start afresh and overwrite them. Rejected files, strays and non-regular
 * files are reported on stderr with the reason. */
int rt_ckpt_load_latest(const char *dir, const core_model *m, rt_ckpt *c, char *path_used, size_t n);

/* Hold dir for this run's checkpoints (an flock on it, released when the
 * process ends or *fd is closed): a second run writing there would prune
 * the first's. CORE_EUSAGE when another process holds it; where the file
 * system has no flock, nothing is held. */
int rt_ckpt_claim(const char *dir, int *fd);

/* Remove the temp files that writers killed mid-write left in dir; each is
 * reported on stderr. Done by rt_ckpt_write and rt_ckpt_load_latest too. */
int rt_ckpt_sweep(const char *dir);

#endif

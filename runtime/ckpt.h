/*
 * ckpt — training checkpoints: parameters, SGD momentum, step and sampler
 * position, written atomically (core/afile: temp file, fsync, rename, fsync
 * of the directory) so a crash or a full disk leaves the previous checkpoint
 * whole. A file is accepted only if its magic, version, lengths, model shape
 * and zlib CRC-32s all check out; the loader falls back to the newest file
 * that does, and says why it skipped the others. Never half-loaded: state is
 * read into scratch memory and copied out only when everything is verified.
 *
 * Layout (little-endian): a 96-byte header — magic "DDPSIMCK", u32 version,
 * u32 header bytes, u64 payload bytes, i64 step, i64 epoch, i64 sampler
 * position, i64 parameter count, u64 model-shape hash, u32 has-momentum,
 * u32 payload CRC-32, u32 header CRC-32 (of the bytes before it), padding —
 * then the payload: parameters, then momentum buffers, as fp32.
 */
#ifndef RUNTIME_CKPT_H
#define RUNTIME_CKPT_H

#include "core/model.h"

#include <stdint.h>

#define RT_CKPT_VERSION 1
#define RT_CKPT_HEADER_BYTES 96

typedef struct rt_ckpt {
  int64_t step;        /* steps completed */
  int64_t epoch, pos;  /* sampler position for the next batch */
  int64_t n_params;
  int has_momentum;
  float *params;       /* n_params */
  float *momentum;     /* n_params */
} rt_ckpt;

/* Hash of the model's tensor shapes: a checkpoint only loads into the model
 * it was written from. */
uint64_t rt_ckpt_model_hash(const core_model *m);

/* Write dir/ckpt-STEP.ddpc atomically and remove all but the newest `keep`
 * checkpoints. */
int rt_ckpt_write(const char *dir, const core_model *m, const rt_ckpt *c, int keep);
/* Read and verify one file into c (c->params/momentum must hold n_params). */
int rt_ckpt_read(const char *path, const core_model *m, rt_ckpt *c);
/* Load the newest valid checkpoint of dir into c; CORE_EINVAL with a message
 * if there is none (path_used gets the file name). Rejected files are
 * reported on stderr with the reason. */
int rt_ckpt_load_latest(const char *dir, const core_model *m, rt_ckpt *c, char *path_used,
                        size_t n);

#endif

/*
 * vocab — the names both halves of ddpsim use for the same things, spelled
 * once: math precisions (what a GEMM computes in; the profile's compute
 * rates, the runtime's GEMM timings, a traced step's precision) and DDP's
 * gradient compression hooks (what `train --compress` runs and a scenario's
 * ddp.compression simulates). Each comes
 * as an enum, its name and its parse, and a NULL-terminated list of the
 * names for core_cfg_string's choices. And the collectives both halves
 * time and model (core_coll), with nccl-tests' bus bandwidth. (A layer's
 * operator kind is core/model.h's core_op.)
 */
#ifndef CORE_VOCAB_H
#define CORE_VOCAB_H

/* GEMM precisions: fp32 in and out (plain fp32 math, or TF32 tensor cores),
 * fp16 or bf16 (with fp32 accumulation, as PyTorch autocast). */
enum core_prec { CORE_PREC_FP32 = 0, CORE_PREC_TF32, CORE_PREC_FP16, CORE_PREC_BF16, CORE_N_PREC };
extern const char *const core_prec_names[]; /* CORE_N_PREC names, then NULL */
const char *core_prec_name(enum core_prec p);
/* CORE_EINVAL for a name not in core_prec_names. */
int core_prec_parse(const char *s, enum core_prec *out);

/* DDP communication hooks: PyTorch's default_hooks.py fp16_compress_hook
 * and bf16_compress_hook, powerSGD_hook.py powerSGD_hook. */
enum core_compress {
  CORE_COMPRESS_NONE = 0,
  CORE_COMPRESS_FP16,
  CORE_COMPRESS_BF16,
  CORE_COMPRESS_POWERSGD,
  CORE_N_COMPRESS
};
#define CORE_POWERSGD_MAX_RANK 1024

typedef struct core_compression {
  enum core_compress kind;
  int rank; /* PowerSGD's matrix_approximation_rank; 0 for the others */
} core_compression;

/* "none", "fp16", "bf16", "powersgd" (rank 1, PyTorch's default) or
 * "powersgd:R" with R a whole number in [1, CORE_POWERSGD_MAX_RANK]. Else
 * CORE_EINVAL with a message listing the forms, and *out untouched. */
int core_compression_parse(const char *s, core_compression *out);
/* The same text back ("powersgd:R" for PowerSGD), into buf. */
const char *core_compression_name(const core_compression *c, char *buf, int n);
const char *core_compress_kind_name(enum core_compress k);

/* The collectives DDP and calibration use. */
enum core_coll {
  CORE_COLL_ALLREDUCE = 0,
  CORE_COLL_ALLGATHER,
  CORE_COLL_REDUCESCATTER,
  CORE_COLL_BROADCAST,
  CORE_N_COLLS
};
extern const char *const core_coll_names[]; /* CORE_N_COLLS names, then NULL */
const char *core_coll_name(enum core_coll c);
/* CORE_EINVAL for a name not in core_coll_names. */
int core_coll_parse(const char *s, enum core_coll *out);
/* Bus bandwidth over algorithm bandwidth of c on p ranks, as nccl-tests
 * reports it (doc/PERFORMANCE.md of NVIDIA/nccl-tests): 2(p-1)/p for an
 * allreduce, (p-1)/p for an allgather or reduce-scatter, 1 for a broadcast. */
double core_coll_busbw_factor(enum core_coll c, int p);

#endif

/*
 * vocab — the names both halves of ddpsim use for the same things, spelled
 * once: math precisions (what a GEMM computes in; the profile's compute
 * rates, the runtime's GEMM timings, a traced step's precision). Each comes
 * as an enum, its name and its parse, and a NULL-terminated list of the
 * names for core_cfg_string's choices.
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

#endif

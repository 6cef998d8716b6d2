/*
 * kclass — what bounds a GPU kernel of a profiler trace: its FLOPs
 * (compute-bound), its bytes (memory-bound) or its fixed cost
 * (launch-bound), and the precision it computes in. The trace importer
 * records each piece's device time split by class (core/traced.h) so that
 * the simulator can retarget the traced step to another GPU: compute-bound
 * time by the ratio of peak FLOP rates at that precision, memory-bound by
 * the ratio of memory bandwidths, launch-bound unchanged.
 *
 * The rule, in order: a kernel no longer than twice the shortest kernel of
 * the trace's compute stream is launch-bound (at least half its time is
 * that fixed cost); a kernel launched by an operator whose recorded shapes
 * (record_shapes=True) give its FLOPs and bytes (matrix products,
 * convolutions; any other operator moves bytes only) is bound by the roof
 * it reaches later at the source GPU's peak rate and bandwidth; otherwise
 * its name decides, as NVIDIA's libraries name their kernels (cuBLAS and
 * CUTLASS GEMMs "*gemm*", cuDNN convolutions "*scudnn*", "*implicit_gemm*",
 * "dgrad"/"wgrad" engines, ImplicitGemmConvolution; fused attention
 * "fmha"/"flash"/"attention"): those are compute-bound, everything else
 * (elementwise, reductions, normalization, copies) memory-bound. The
 * precision comes from the name too (CUTLASS's element codes, its
 * media/docs/cpp/functionality.md: "bf16", "f16"/"h" GEMMs are half, "tf32"
 * and tensor-op "s1688"/"s16816" single-precision GEMMs TF32, the rest fp32).
 */
#ifndef CALIBRATE_KCLASS_H
#define CALIBRATE_KCLASS_H

#include "calibrate/kineto.h"
#include "core/profile.h"

#include <stddef.h>
#include <stdint.h>

enum cal_kclass { CAL_KC_COMPUTE = 0, CAL_KC_MEMORY, CAL_KC_LAUNCH, CAL_KC_N };

typedef struct cal_kroofs {
  double flops[CORE_N_PREC]; /* the source GPU's peak FLOP/s per precision; 0 unknown */
  double mem_Bps;            /* its memory bandwidth; 0 unknown */
  double floor_s;            /* the trace's shortest compute-stream kernel */
  int has_tf32;              /* the GPU computes in TF32 (compute capability 8 or later) */
} cal_kroofs;

/* Class of a kernel named name that ran dur seconds, launched by op (NULL
 * when unknown) of trace t; its precision into *prec. */
enum cal_kclass cal_kclass_of(
    const cal_kroofs *r, const char *name, double dur, const cal_ktrace *t, const cal_kevent *op, enum core_prec *prec);

/* The roofs of a traced GPU named device_name with memory_bytes of memory:
 * the peaks of the profile at path `profile` (compute[].peak_tflops,
 * device.peak_memory_GBps) when not NULL, else its datasheet's
 * (calibrate/gpu_datasheet.h); where they come from into from ("" when
 * neither knows the GPU: r's rates stay 0). The floor and has_tf32 are
 * the caller's. */
int cal_kroofs_find(
    const char *device_name, int64_t memory_bytes, const char *profile, cal_kroofs *r, char *from, size_t n);

/* FLOPs and bytes of op from its recorded shapes: 1 when they tell, 0 when
 * the op records none. */
int cal_op_cost(const cal_ktrace *t, const cal_kevent *op, double *flops, double *bytes);

#endif

/*
 * compute — each layer's forward and backward time, and the optimizer's, on
 * a profile at a precision and batch: the compute side of a step the
 * simulator then runs (sim/step.h).
 *
 * On GPU profiles every layer whose kind has a rule (conv, linear,
 * attention, embedding, batch_norm, layer_norm, group_norm, activation,
 * pooling, loss) is costed per operation: each kernel it runs takes the
 * slower of its FLOPs at the rate for its precision and its bytes at the
 * device's streaming bandwidth, plus the device's gap between kernels, and
 * never less than the shortest kernel. Where the profile gives its SM count
 * (device.sms), a conv or linear GEMM's rate also carries its shape's tile
 * and wave quantization relative to the sweep's GEMMs. An attention layer
 * with heads whose training.attention resolves to math
 * (sim_memfit_attention_math) runs unfused: fp32 batched GEMMs and passes
 * over its seq^2 scores; otherwise fused. Bytes are counted at the precision's
 * width: under autocast (amp_*) GEMM inputs and outputs are half, the fp32
 * list (layer and group norm, the loss) and embeddings stay fp32, the rest
 * follow their inputs, and autocast's casts are kernels of their own; pure
 * fp16/bf16 models are half throughout. The layers' `inputs` (core/model.h)
 * say what each reads. Where the profile gives the host's time per kernel
 * (host.launch_us) and a step's kernels take the host longer to issue than
 * the device to run, the step is host-bound and every layer stretches.
 * docs/compute-model.md gives every rule, its constants and their sources.
 *
 * Layers of kind "other", and every layer on a CPU profile, keep the
 * generic rule: a GEMM of the layer's FLOPs at the profile's rate for that
 * size (backward, two of half the size) plus SIM_ELEMENTWISE_*_PASSES of
 * its activation at memory_GBps. That rule counts fp32 bytes; at a half
 * precision it has no cost for the activation, so sim_compute_check refuses
 * such a layer there.
 */
#ifndef SIM_COMPUTE_H
#define SIM_COMPUTE_H

#include "sim/scenario.h"

#include "core/model.h"
#include "core/profile.h"

/* Passes through memory of each layer's output activation (its fp32 size,
 * the model's act_bytes) that the generic rule charges for the elementwise
 * work beside its FLOP-counted GEMM: normalization, activation functions,
 * dropout, residual adds, the loss, and their backwards. Measured with
 * PyTorch on one H200 (bench/data/h200-gpu-ops.csv; every aten op but
 * convolutions, matmuls, attention and the optimizer, at the 3,522 GB/s
 * calibrate measured): in fp32, 7.3 passes of ResNet-50's and BERT-large's
 * activations; forward's share 34-51% and 30-42%; 2.8 is 38%. */
#define SIM_ELEMENTWISE_FWD_PASSES 2.8
#define SIM_ELEMENTWISE_BWD_PASSES 4.5

typedef struct sim_compute_out {
  double *fwd_s, *bwd_s; /* [n_layers], the caller's */
  double optimizer_s;    /* the optimizer's step (GPU profiles with per-operation layers); < 0: not costed
                            * here, the caller's rule applies */
  double device_s;       /* the step's compute on the device, before any host-bound stretch */
  double host_s;         /* the host's time to issue its kernels; 0 without host.launch_us */
  int kernels;           /* kernels of a step (per-operation layers and optimizer) */
} sim_compute_out;

/* Per-layer times of model m on profile pr at precision p, batch b and
 * optimizer o, its attention layers run by the kernel attn resolves to
 * (sim_memfit_attention_math), into out (fwd_s and bwd_s allocated by the
 * caller). */
int sim_compute_layers(const core_model *m, const core_profile *pr, enum sim_precision p, double batch,
    enum sim_optimizer o, enum sim_attention attn, sim_compute_out *out);

/* Can every layer of m be costed at precision p on pr? CORE_EINVAL with a
 * message naming the model file, the layer and the key to add when not. */
int sim_compute_check(const core_model *m, const core_profile *pr, enum sim_precision p);

#endif

/*
 * memfit — whether a scenario point fits in its GPU's memory: an estimate
 * of the bytes each GPU holds at the peak of a DDP training step, against
 * the profile's device.memory_GB.
 *
 * Model state, per parameter: the weights, their gradients and the
 * optimizer's state (torch.optim: SGD none, momentum one buffer, Adam
 * exp_avg and exp_avg_sq, each in the weights' type), DDP's flat gradient
 * buckets (PyTorch's Reducer copies each gradient into them unless
 * gradient_as_bucket_view), and under autocast the half-width copies of the
 * weights its cast cache keeps through forward. Mixed-precision Adam so
 * holds 4 + 4 + 8 = 16 bytes a parameter (fp32 weights, gradients and
 * moments) before DDP's and autocast's copies: the total of Rajbhandari et
 * al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
 * Models", SC 2020 (arXiv:1910.02054), section 3.1, whose 2 + 2 + 12 are
 * fp16 weights and gradients and fp32 master weights and moments.
 * Activations: each layer's output (the model's act_bytes per
 * sample, counted at fp32; none for a layer marked inplace) times the
 * per-GPU batch, at half width under fp16, bf16 and autocast, and what an
 * attention layer with heads saves besides: a fused kernel (flash,
 * memory-efficient) only the softmax's log-sum-exp (fp32, heads x seq_len
 * a sample), the unfused math kernel the softmax's output, heads x
 * seq_len^2, and with dropout the dropped weights and the dropout's mask
 * (fp32 whatever the precision; the mask 1 byte on a GPU, 4 on a CPU),
 * and its fp32 copies of the query, key and value where the projections'
 * outputs they replace are half width. training.attention says
 * which kernel runs; "auto" is PyTorch's choice: fused on a GPU, on a CPU
 * fused only where the layer has no dropout.
 *
 * Not all of it is held at once. The peak is the larger of two moments:
 * backward, where the weights, optimizer state, buckets and casts are held
 * with the activations of the layers backward has not reached yet and the
 * gradients of those it has (autograd frees a layer's saved tensors after
 * its backward; zero_grad() leaves no gradient between steps, PyTorch 2's
 * default; under gradient_as_bucket_view the gradients are views of DDP's
 * buckets, held all step), and optimizer.step(), where every gradient is
 * held with the state and the foreach implementation's temporaries (Adam's
 * one more weight-sized tensor a parameter).
 *
 * With ddp.zero_optimizer (torch.distributed.optim.ZeroRedundancyOptimizer,
 * ZeRO stage 1) each rank keeps the optimizer state, and steps, only the
 * parameters of its shard: the state and the step's temporaries are those
 * of the largest rank's share (sim_memfit_zero_share); weights, gradients
 * and buckets stay whole.
 *
 * What it leaves out: the CUDA context and the libraries' workspaces
 * (cuBLAS, cuDNN, NCCL's buffers), the caching allocator's fragmentation,
 * temporaries a layer saves besides its output (dropout masks other than
 * attention's, normalization statistics), the attention's transient score
 * matrices in forward and their gradients in backward,
 * backward's gradients of activations, the batch's input data, and a
 * communication hook's state (PowerSGD's P and Q and its error-feedback
 * copy of each bucket: error_dict in PyTorch's
 * torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py).
 */
#ifndef SIM_MEMFIT_H
#define SIM_MEMFIT_H

#include "sim/scenario.h"

#include <stddef.h>

typedef struct sim_memfit {
  /* Bytes per GPU. */
  double weights, grads, optimizer, buckets, casts; /* model state */
  double step_temps;                                /* optimizer.step()'s temporaries */
  double act_per_sample;                            /* activations of one sample at the point's width */
  double attn_per_sample;                           /* of which attention's saved tensors besides outputs */
  double activations;                               /* of the per-GPU batch */
  double state;                                     /* the model state: weights to casts */
  double backward_peak;                             /* held at backward's worst point */
  double step_peak;                                 /* held during optimizer.step() */
  double total;                                     /* the peak: the larger of the two */
  /* What it was estimated for (sim_memfit_estimate's arguments). */
  enum sim_precision prec;
  enum sim_optimizer opt;
  int bucket_view, ddp;
  double opt_share; /* of the parameters whose optimizer state it holds: 1, or its ZeRO shard */
  enum sim_attention attention;
  int cpu; /* the device is a CPU */
} sim_memfit;

/* The estimate for model m trained at precision prec, batch samples per
 * GPU, with optimizer opt; bucket_view: gradient_as_bucket_view (no bucket
 * copy); ddp: the job runs DDP (its buckets exist); attention as PyTorch
 * picks its kernel on a GPU. */
void sim_memfit_estimate(const core_model *m, enum sim_precision prec, int batch, enum sim_optimizer opt,
    int bucket_view, int ddp, sim_memfit *out);

/* The same with the optimizer state and the step's temporaries of only
 * opt_share of the parameters (ZeroRedundancyOptimizer's shard; 1: all),
 * the attention kernel attn, on a CPU where cpu is nonzero. */
void sim_memfit_estimate_shard(const core_model *m, enum sim_precision prec, int batch, enum sim_optimizer opt,
    int bucket_view, int ddp, double opt_share, enum sim_attention attn, int cpu, sim_memfit *out);

/* The share of m's parameters (by elements) of the largest of world ranks'
 * shards as ZeroRedundancyOptimizer partitions them: tensors largest
 * first, each to the rank with the fewest elements so far, the lowest
 * such rank on a tie (_partition_parameters and _get_min_index in
 * torch/distributed/optim/zero_redundancy_optimizer.py). 1 for one rank. */
double sim_memfit_zero_share(const core_model *m, int world);

/* Whether attention layer L runs PyTorch's unfused math kernel under
 * training.attention attn, on a CPU where cpu is nonzero: "math" always,
 * "fused" never, "auto" on a CPU for a layer with dropout only. The
 * compute model (sim/compute.h) times layers by the same answer. */
int sim_memfit_attention_math(const core_layer *L, enum sim_attention attn, int cpu);

/* The estimate for point p of scenario s. */
void sim_memfit_point(const sim_scenario *s, const sim_point *p, sim_memfit *out);

/* Whether the estimate exceeds the profile's memory capacity (never when
 * the profile does not give it). */
int sim_memfit_over(const sim_memfit *f, const core_profile *pr);

/* The note for a point that does not fit: the point, its estimate and the
 * capacity, and what to change (the largest batch that fits, autocast,
 * GPUs with more memory, and, for an optimizer with state on several ranks
 * without it, ddp.zero_optimizer). */
void sim_memfit_note(const sim_memfit *f, const core_profile *pr, const sim_point *p, char *buf, size_t n);

#endif

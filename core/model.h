/*
 * model — the workload description both halves read: a network as a list of
 * layers, each with its parameter tensors, forward FLOPs per sample and
 * activation size; or measured per-layer times imported from a profiler trace.
 *
 * File format (libconfig, scenarios/models/NAME.cfg):
 *
 *   model = {
 *     name = "mlp";  source = "where the numbers come from";
 *     loss = "mse";                      # what the runtime trains (optional)
 *     sample = "one 1024-float vector";  # what one sample is (optional)
 *     layers = (
 *       { name = "fc1"; type = "linear"; in = 1024; out = 1024; activation = "relu"; },
 *       { name = "conv1"; params = [9408]; rows = [64]; fwd_flops = 2.36e8; act_bytes = 3.2e6; },
 *       { name = "blk0"; params = [...]; fwd_flops = 1e9; fwd_ms = 1.2; bwd_ms = 2.5; }
 *     );
 *     measured_batch = 32;               # the batch fwd_ms/bwd_ms were taken at
 *     psgd_sync_us = 2400.0;             # optional, measured (see below)
 *   };
 *
 * A "linear" layer derives its tensors (weight out*in, bias out) and FLOPs
 * (2*in*out per sample) so the runtime can build it; any other layer lists
 * them, with `rows`, each tensor's first dimension (shape[0]; default: the
 * tensor is 1-D), which PowerSGD needs to view a gradient as a matrix.
 * Parameter order is layer order, then the order of params in a layer, as
 * PyTorch registers them (weight before bias).
 *
 * psgd_sync_us, which `ddpsim calibrate` writes into the models it measures,
 * is how much longer than back to back each allreduce of PowerSGD's hook
 * waits in this model's training steps (the profile's hooks.psgd_sync_us is
 * the first model's): the wait follows the hook's CPU work before each
 * allreduce, so it is the model's as much as the host's.
 */
#ifndef CORE_MODEL_H
#define CORE_MODEL_H

#include <stdint.h>

#include <libconfig.h>

enum core_layer_kind { CORE_LAYER_GENERIC = 0, CORE_LAYER_LINEAR = 1 };
enum core_act { CORE_ACT_NONE = 0, CORE_ACT_RELU = 1 };

typedef struct core_layer {
  char name[64];
  enum core_layer_kind kind;
  int in, out;             /* linear only */
  enum core_act act;       /* linear only */
  int first_tensor;        /* index into core_model.tensor_elems */
  int n_tensors;
  double fwd_flops;        /* per sample */
  double bwd_flops;        /* per sample; default 2 x forward (1 x for the first layer) */
  double act_bytes;        /* output activation bytes per sample at fp32's 4 bytes an element;
                              the simulator charges the elementwise work on it (sim/predict.h) */
  double fwd_s, bwd_s;     /* measured at model.measured_batch; < 0 when not measured */
} core_layer;

typedef struct core_model {
  char name[64];
  char source[512];
  char path[4096];
  char loss[16];
  int n_layers;
  core_layer *layers;
  int n_tensors;
  int64_t *tensor_elems;   /* [n_tensors] in parameter order */
  int64_t *tensor_rows;    /* [n_tensors] shape[0]: a gradient viewed as rows x elems/rows (PowerSGD) */
  int *tensor_layer;       /* [n_tensors] */
  int64_t n_params;
  double fwd_flops;        /* per sample, all layers */
  double bwd_flops;
  int measured;            /* every layer has fwd_s and bwd_s */
  double measured_batch;
  double psgd_sync_us;     /* PowerSGD's wait per allreduce, measured for this model; < 0 when not */
} core_model;

int core_model_load(const char *path, core_model **out);
/* Parse from a libconfig root already loaded (the fuzz target uses this). */
int core_model_from_setting(const config_setting_t *root, const char *path, core_model **out);
void core_model_free(core_model *m);

/* Is this model runnable by the CPU runtime (a stack of linear layers)? On
 * failure the error names the first layer that is not. */
int core_model_check_runnable(const core_model *m);

#endif

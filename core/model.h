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
 *       { name = "conv1"; kind = "conv"; params = [9408]; rows = [64]; fwd_flops = 2.36e8; act_bytes = 3.2e6; },
 *       { name = "blk0"; params = [...]; fwd_flops = 1e9; fwd_ms = 1.2; bwd_ms = 2.5; },
 *       { name = "add"; kind = "activation"; inputs = ["conv1", "blk0"]; fwd_flops = 0.0; act_bytes = 3.2e6; }
 *     );
 *     measured_batch = 32;               # the batch fwd_ms/bwd_ms were taken at
 *     psgd_sync_us = 2400.0;             # optional, measured (see below)
 *     ready_order = [5, 4, 3, 2, 1, 0];  # optional (see below)
 *     traced = { ... };                  # optional: the step a GPU trace measured (core/traced.h)
 *   };
 *
 * A "linear" layer derives its tensors (weight out*in, bias out) and FLOPs
 * (2*in*out per sample) so the runtime can build it; any other layer lists
 * them, with `rows`, each tensor's first dimension (shape[0]; default: the
 * tensor is 1-D), which PowerSGD needs to view a gradient as a matrix.
 * Parameter order is layer order, then the order of params in a layer, as
 * PyTorch registers them (model.named_parameters()).
 *
 * `kind` says what a layer computes: "conv", "batch_norm", "layer_norm",
 * "group_norm", "linear" (nn.Linear, or HF's Conv1D), "embedding",
 * "attention" (scores and context, or nn.MultiheadAttention), "activation",
 * "pooling", "loss" or "other" (the default; "linear" for type = "linear").
 * Tensors are named "<layer>.<param>" as PyTorch names them: param is
 * "weight" for one tensor, "weight" and "bias" for two, else the tensor's
 * index, unless the layer lists `param_names` (e.g. ["bias"]; letters,
 * digits, _ and ., one per tensor).
 *
 * ready_order lists the tensor indices (parameter order) in the order their
 * gradients became ready in backward (AccumulateGrad), a permutation of all
 * of them; DDP's rebuilt buckets follow it (core/bucket.h). Without it the
 * order is PyTorch 2.x autograd's for layers run one after another: layers
 * last to first; inside a layer conv, batch_norm, layer_norm and group_norm
 * ready their weight before their bias, every other kind its tensors in
 * reversed order (nn.Linear's bias before its weight). Checked with
 * bench/pytorch/buckets.py; a model whose layers do not run in parameter
 * order (BERT's masked-LM bias, registered on cls.predictions but applied
 * last) needs ready_order.
 *
 * Dataflow, for the simulator's per-operation compute model on GPUs
 * (sim/compute.h): `inputs` names the layers whose outputs a layer reads,
 * all listed before it (default: the layer before it; [] reads the batch's
 * data, whose size per sample at fp32 is `in_bytes`, default 4 * in for a
 * type = "linear" layer, else 0). A residual add is an "activation" with
 * two inputs; attention reads its query, key and value projections. The
 * inputs' sizes are the bytes a layer reads, and under autocast their types
 * say which inputs are cast; scripts/gen-models.py writes them for the
 * shipped models.
 *
 * An "attention" layer may give the shape of its score matrices, which an
 * attention that is not fused keeps for backward (sim/memfit.h): `heads`,
 * its number of heads, and `seq_len`, the tokens a sample attends over
 * (queries and keys alike; default the model's seq_len, which a layer with
 * heads needs when it gives none), and `dropout`, the probability with
 * which it drops attention weights (default 0; PyTorch's CPU kernel fuses
 * only without it). Without heads the estimate counts no score matrices.
 *
 * `inplace = true;` marks a layer that writes its output over its input
 * (nn.ReLU(inplace=True), torchvision's residual `out += identity`): its
 * act_bytes still count as traffic, but hold no memory of their own
 * (sim/memfit.h).
 *
 * psgd_sync_us, which `ddpsim calibrate` writes into the models it measures,
 * is how much longer than back to back each allreduce of PowerSGD's hook
 * waits in this model's training steps (the profile's hooks.psgd_sync_us is
 * the first model's): the wait follows the hook's CPU work before each
 * allreduce, so it is the model's as much as the host's.
 */
#ifndef CORE_MODEL_H
#define CORE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <libconfig.h>

/* The file's `type`: whether the layer's tensors derive from in and out. */
enum core_layer_kind { CORE_LAYER_GENERIC = 0, CORE_LAYER_LINEAR = 1 };
/* The file's `kind`: what the layer computes. */
enum core_op {
  CORE_OP_OTHER = 0,
  CORE_OP_CONV,
  CORE_OP_BATCH_NORM,
  CORE_OP_LAYER_NORM,
  CORE_OP_GROUP_NORM,
  CORE_OP_LINEAR,
  CORE_OP_EMBEDDING,
  CORE_OP_ATTENTION,
  CORE_OP_ACTIVATION,
  CORE_OP_POOLING,
  CORE_OP_LOSS,
  CORE_N_OPS
};
/* The name the file uses ("batch_norm"). */
const char *core_op_name(enum core_op op);
enum core_act { CORE_ACT_NONE = 0, CORE_ACT_RELU = 1 };

#define CORE_PNAME_MAX 32        /* a param_names entry, with its NUL */
#define CORE_MODEL_BATCH_MAX 1e9 /* the largest measured_batch a model file holds */
#define CORE_BATCH_MAX (1 << 24) /* the largest batch per GPU a scenario takes (training.batch) */

typedef struct core_layer {
  char name[64];
  int line;                  /* where the file defines it; 0 unknown */
  enum core_layer_kind kind; /* the file's `type` */
  enum core_op op;           /* the file's `kind` */
  int in, out;               /* linear only */
  enum core_act act;         /* linear only */
  int first_tensor;          /* index into core_model.tensor_elems */
  int n_tensors;
  double fwd_flops;          /* per sample */
  double bwd_flops;          /* per sample; default 2 x forward (1 x for the first layer) */
  double act_bytes;          /* output activation bytes per sample at fp32's 4 bytes an element;
                              the simulator charges the elementwise work on it (sim/predict.h) */
  double fwd_s, bwd_s;       /* measured at model.measured_batch; < 0 when not measured */
  int first_input, n_inputs; /* into core_model.inputs: the earlier layers it reads */
  double in_bytes;           /* data it reads per sample at fp32 when n_inputs == 0 */
  int inplace;               /* writes its output over its input: no memory of its own */
  int heads;                 /* attention: heads of its score matrices; 0 not given */
  int seq_len;               /* attention with heads: tokens a sample attends over */
  double dropout;            /* attention: probability of dropping an attention weight */
} core_layer;

typedef struct core_model {
  char name[64];
  char source[512];
  char path[4096];
  char loss[16];
  int seq_len; /* tokens a sample (the file's seq_len); 0 not given */
  int n_layers;
  core_layer *layers;
  int n_tensors;
  int64_t *tensor_elems;                /* [n_tensors] in parameter order */
  int64_t *tensor_rows;                 /* [n_tensors] shape[0]: a gradient viewed as rows x elems/rows (PowerSGD) */
  int *tensor_layer;                    /* [n_tensors] */
  char (*tensor_pname)[CORE_PNAME_MAX]; /* [n_tensors] param_names; NULL when no layer gives them */
  int *ready_order;                     /* [n_tensors] tensor indices in gradient-ready order */
  int *inputs;                          /* the layers' inputs, layer indices (core_layer.first_input) */
  int ready_given;                      /* ready_order came from the file */
  int64_t n_params;
  double fwd_flops; /* per sample, all layers */
  double bwd_flops;
  int measured; /* every layer has fwd_s and bwd_s */
  double measured_batch;
  double psgd_sync_us;        /* PowerSGD's wait per allreduce, measured for this model; < 0 when not */
  struct core_traced *traced; /* the step a GPU trace measured (core/traced.h); NULL when none */
} core_model;

int core_model_load(const char *path, core_model **out);
/* Parse from a libconfig root already loaded (the fuzz target uses this). */
int core_model_from_setting(const config_setting_t *root, const char *path, core_model **out);
void core_model_free(core_model *m);

/* "<layer>.<param>" of tensor t, as PyTorch's named_parameters() names it
 * (see the format above), into buf; returns buf. */
const char *core_model_tensor_name(const core_model *m, int t, char *buf, size_t n);

/* Is this model runnable by the CPU runtime (a stack of linear layers)? On
 * failure the error names the first layer that is not. */
int core_model_check_runnable(const core_model *m);

#endif

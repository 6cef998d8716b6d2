/* What a scenario asks of a traced model that the replay does not predict,
 * said on stderr before `simulate` or `advise` runs it (cli.h). */
#include "cli.h"

#include "sim/replay.h"
#include "sim/scenario.h"

#include "core/model.h"
#include "core/traced.h"

#include <stdio.h>

/* A traced model's own communication (all-to-alls, allreduces by hand)
 * replays as measured: at a world other than the trace's its time is the
 * traced world's, not a prediction. Said once per model. */
static void warn_measured_comm(const char *cmd, const sim_scenario *s) {
  for (int m = 0; m < s->n_models; m++) {
    const core_traced *t = s->models[m]->traced;
    int k = sim_replay_measured_comm(t), other = 0;
    for (int a = 0; k > 0 && t->world_size > 0 && a < s->n[SIM_DIM_NODES]; a++)
      for (int b = 0; b < s->n[SIM_DIM_PER_NODE]; b++)
        if (s->nodes[a] * s->per_node[b] != t->world_size && !other)
          other = (int)(s->nodes[a] * s->per_node[b]);
    if (other)
      fprintf(stderr,
          "ddpsim %s: warning: model \"%s\" ran communication of its own (%d kernels a step, not DDP's "
          "buckets) at a world of %d; it replays as measured there, so at %d GPUs (and any world but %d) its time "
          "is the traced world's, not a prediction\n",
          cmd, s->models[m]->name, k, t->world_size, other, t->world_size);
  }
}

/* A traced model's side work (kernels on side streams: a sparse model's
 * all-to-alls, its data distribution) replays as measured: at a batch other
 * than the trace's, whose data it moved, its time is the traced batch's,
 * while the compute stream's scales. Said once per model. */
static void warn_measured_side(const char *cmd, const sim_scenario *s) {
  for (int m = 0; m < s->n_models; m++) {
    const core_model *md = s->models[m];
    const core_traced *t = md->traced;
    long long other = 0;
    for (int b = 0; t && t->n_side > 0 && b < s->n[SIM_DIM_BATCH] && !other; b++)
      if ((double)s->batch[b] != md->measured_batch)
        other = s->batch[b];
    if (other)
      fprintf(stderr,
          "ddpsim %s: warning: model \"%s\" ran work of its own on side streams (%d kernels a step, %d of them "
          "communication) at batch %.0f; it replays as measured there, so at batch %lld (and any batch but %.0f) its "
          "time is the traced batch's, not a prediction\n",
          cmd, md->name, t->n_side, sim_replay_measured_comm(t), md->measured_batch, other, md->measured_batch);
  }
}

/* A traced model's layers record no activation sizes (a profiler trace
 * holds no output shapes): its memory estimate is the model state's alone,
 * which the traced batch fit in; at a larger batch an out-of-memory point
 * would pass as ok. Said once per model. */
static void warn_unsized_activations(const char *cmd, const sim_scenario *s) {
  for (int m = 0; m < s->n_models; m++) {
    const core_model *md = s->models[m];
    int sized = 0;
    long long over = 0;
    for (int l = 0; l < md->n_layers; l++)
      sized |= md->layers[l].act_bytes > 0;
    for (int b = 0; md->traced && !sized && b < s->n[SIM_DIM_BATCH]; b++)
      if ((double)s->batch[b] > md->measured_batch && s->batch[b] > over)
        over = s->batch[b];
    if (over)
      fprintf(stderr,
          "ddpsim %s: warning: model \"%s\" records no activation sizes (a traced step's layers have none), "
          "so at batch %lld, above the traced %.0f, mem_GB is the model state's alone and a point that does not fit "
          "in its GPUs' memory is not marked oom\n",
          cmd, md->name, over, md->measured_batch);
  }
}

/* PowerSGD compresses only gradients it can view as matrices: a model that
 * records no tensor's rows (a traced one records sizes only) sends every
 * gradient uncompressed, its powersgd points the same as without. Said once
 * per model. */
static void warn_powersgd_vectors(const char *cmd, const sim_scenario *s) {
  int psgd = 0;
  for (int c = 0; c < s->n[SIM_DIM_COMPRESSION]; c++)
    psgd |= s->compression[c].kind == CORE_COMPRESS_POWERSGD;
  for (int m = 0; psgd && m < s->n_models; m++) {
    const core_model *md = s->models[m];
    int matrix = 0;
    for (int t = 0; t < md->n_tensors; t++)
      matrix |= md->tensor_rows[t] > 1 && md->tensor_rows[t] < md->tensor_elems[t]; /* 1-D: rows = elements */
    if (!matrix && md->n_tensors > 0)
      fprintf(stderr,
          "ddpsim %s: warning: model \"%s\" records no tensor's shape (rows), so PowerSGD, which compresses only "
          "gradients it can view as matrices, sends all of its gradients uncompressed%s: its powersgd points save "
          "nothing\n",
          cmd, md->name, md->traced ? " (a trace records their sizes, not their shapes)" : "");
  }
}

void cli_warn_traced(const char *cmd, const struct sim_scenario *s) {
  warn_measured_comm(cmd, s);
  warn_measured_side(cmd, s);
  warn_unsized_activations(cmd, s);
  warn_powersgd_vectors(cmd, s);
}

/* Writing the measured model from a trace's layer times: with a base model
 * its layers get the times, without one the layers come from the trace's
 * shapes (calibrate/import_trace.h). */
#include "import_trace.h"

#include "calibrate/import_common.h"

#include "core/afile.h"
#include "core/cfg.h"
#include "core/err.h"
#include "core/path.h"
#include "core/model.h"

#include <libconfig.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Steps whose layer spans differ by more than this factor were not taken on
 * a steady machine (a throttled or shared CPU); said in the notes. */
#define UNSTEADY_RATIO 1.25

static config_setting_t *set_member(config_setting_t *g, const char *key, int type) {
  if (config_setting_get_member(g, key))
    config_setting_remove(g, key);
  return config_setting_add(g, key, type);
}

static int set_str(config_setting_t *g, const char *key, const char *v) {
  config_setting_t *s = set_member(g, key, CONFIG_TYPE_STRING);
  return s && config_setting_set_string(s, v) == CONFIG_TRUE ? 0 : -1;
}

static int set_int(config_setting_t *g, const char *key, int v) {
  config_setting_t *s = set_member(g, key, CONFIG_TYPE_INT);
  return s && config_setting_set_int(s, v) == CONFIG_TRUE ? 0 : -1;
}

/* Milliseconds, rounded to the nanosecond the trace resolves. */
static int set_ms(config_setting_t *g, const char *key, double us) {
  config_setting_t *s = set_member(g, key, CONFIG_TYPE_FLOAT);
  return s && config_setting_set_float(s, round(us * 1e3) / 1e6) == CONFIG_TRUE ? 0 : -1;
}

/* One import: the traces read, and the model being built from them. */
typedef struct import {
  const cal_trace_opts *o;
  const char *out;
  char *notes;
  size_t notes_len;
  cal_trace t;
  const char *trace; /* the first trace: errors about the layers name it */
  char more[48];     /* " and N more traces", or "" */
  int batch;
  core_model *base; /* with o->base */
  core_cfg bc;      /* the base's text, which gets the times */
  int have_bc;
  config_t fresh; /* without a base: a model built from the trace */
  int have_fresh;
  config_t *cfg; /* &bc.cfg or &fresh */
  config_setting_t *g, *layers;
  char src[512], name[CAL_MODEL_NAME_LEN];
} import;

/* Where the model's figures came from, cut to the field's size where a path
 * or the base's own source is long. */
static void set_source(import *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_source(import *im, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(im->src, sizeof im->src, fmt, ap);
  va_end(ap);
}

/* The batch: --batch, checked against the trace's shapes, or from them. */
static int batch_of(import *im) {
  const cal_trace *t = &im->t;
  int batch = im->o->batch;
  if (batch > 0 && t->batch > 0 && batch != t->batch)
    return core_err_set(CORE_EINVAL,
        "%s: traceEvents[%ld]: --batch %d, but the first linear layer's input has %d rows; give the batch the trace "
        "was taken at",
        im->trace, t->layers[0].fwd_event, batch, t->batch);
  if (batch <= 0)
    batch = t->batch;
  if (batch <= 0)
    return core_err_set(CORE_EUSAGE,
        "%s: the trace has no shapes (record_shapes=True), so the batch is unknown; pass --batch B", im->trace);
  im->batch = batch;
  return 0;
}

/* What was read, and what the user should know about it. */
static void note_trace(const import *im) {
  const cal_trace *t = &im->t;
  char *notes = im->notes;
  size_t n = im->notes_len;
  cal_note(notes, n, "%s%s: %d linear layer(s), %d step(s)%s, batch %d; %slayers span %.3f ms", im->trace, im->more,
      t->n_layers, t->n_steps, t->n_steps > 1 ? " (per-layer medians)" : "", im->batch,
      t->n_steps > 1 ? "in the first step the " : "", t->span_us / 1e3);
  if (t->step_us > 0)
    cal_note(notes, n, " of the %.3f ms step (the rest: zero_grad, optimizer)", t->step_us / 1e3);
  cal_note(notes, n, "\n");
  if (t->bucket_copy_us > 0)
    cal_note(notes, n,
        "DDP's copy of the gradients into its buckets (%.3f ms a step) is taken out of the layers' backward times: the "
        "simulator adds it from the profile's memory bandwidth\n",
        t->bucket_copy_us / 1e3);
  if (t->n_steps > 1 && t->layers_max_us > UNSTEADY_RATIO * t->layers_min_us)
    cal_note(notes, n,
        "warning: the layers took %.3f to %.3f ms from step to step (median %.3f): the machine was not steady while "
        "profiled (a throttled, shared or frequency-scaling CPU); the medians are written, but profile again on a "
        "quiet machine for times to predict from\n",
        t->layers_min_us / 1e3, t->layers_max_us / 1e3, t->layers_median_us / 1e3);
  if (t->gpu)
    cal_note(notes, n,
        "%s holds GPU kernels: the layer times are host-side op times, launch times for asynchronous GPU work unless "
        "it ran with CUDA_LAUNCH_BLOCKING=1\n",
        im->trace);
}

/* Does the base model have the trace's layers (count, linear shapes)? */
static int check_base(const import *im) {
  const cal_trace *t = &im->t;
  const core_model *bm = im->base;
  if (bm->n_layers != t->n_layers)
    return core_err_set(CORE_EINVAL,
        "%s: %d linear layers (the first forward op is traceEvents[%ld]) but the base %s has %d layers; import against "
        "the model the trace was taken of, or without --base",
        im->trace, t->n_layers, t->layers[0].fwd_event, im->o->base, bm->n_layers);
  for (int i = 0; i < t->n_layers; i++) {
    const core_layer *L = &bm->layers[i];
    const cal_trace_layer *y = &t->layers[i];
    if (L->kind == CORE_LAYER_LINEAR && y->in > 0 && (L->in != y->in || L->out != y->out))
      return core_err_set(CORE_EINVAL,
          "%s: traceEvents[%ld]: linear layer %d takes %d inputs to %d outputs, but layer '%s' of %s is in = %d, out = "
          "%d; import against the model the trace was taken of",
          im->trace, y->fwd_event, i + 1, y->in, y->out, L->name, im->o->base, L->in, L->out);
  }
  return 0;
}

/* With a base: its text, whose layers get the times. */
static int from_base(import *im) {
  const cal_trace_opts *o = im->o;
  int rc;
  if ((rc = core_model_load(o->base, &im->base)) != 0)
    return core_err_wrap(rc, "loading the base model");
  if ((rc = check_base(im)) != 0 || (rc = core_cfg_load(&im->bc, o->base, "model")) != 0)
    return rc;
  im->have_bc = 1;
  im->cfg = &im->bc.cfg;
  im->g = config_setting_get_member(config_root_setting(im->cfg), "model");
  im->layers = im->g ? config_setting_get_member(im->g, "layers") : NULL;
  if (!im->layers)
    return core_err_set(CORE_EINTERNAL, "%s: no model.layers after a successful load", o->base);
  set_source(im, "%.280s; per-layer times from the PyTorch profiler trace %.150s%s at batch %d",
      im->base->source[0] ? im->base->source : o->base, im->trace, im->more, im->batch);
  snprintf(im->name, sizeof im->name, "%s", o->name ? o->name : im->base->name);
  if (o->name && set_str(im->g, "name", o->name) != 0)
    return core_err_set(CORE_ENOMEM, "out of memory building the model");
  return 0;
}

/* Layer i of a model built from the trace: fc<i+1>, linear, its shape. */
static int add_layer(import *im, int i) {
  const cal_trace_layer *y = &im->t.layers[i];
  char ln[32];
  if (y->other_act[0])
    cal_note(im->notes, im->notes_len,
        "layer fc%d is followed by %s, which a model file cannot name: written as activation \"none\" (its time is in "
        "the layer's)\n",
        i + 1, y->other_act);
  snprintf(ln, sizeof ln, "fc%d", i + 1);
  config_setting_t *l = config_setting_add(im->layers, NULL, CONFIG_TYPE_GROUP);
  if (!l || set_str(l, "name", ln) != 0 || set_str(l, "type", "linear") != 0 || set_int(l, "in", y->in) != 0 ||
      set_int(l, "out", y->out) != 0 || set_str(l, "activation", y->relu ? "relu" : "none") != 0)
    return core_err_set(CORE_ENOMEM, "out of memory building the model");
  return 0;
}

/* Without a base: the layers from the trace's shapes. */
static int from_trace(import *im) {
  const cal_trace *t = &im->t;
  int rc;
  for (int i = 0; i < t->n_layers; i++)
    if (t->layers[i].in <= 0)
      return core_err_set(CORE_EINVAL,
          "%s: traceEvents[%ld]: the linear op has no shapes (record the trace with record_shapes=True), so the layer "
          "cannot be described; pass --base MODEL with the model's layers",
          im->trace, t->layers[i].fwd_event);
  config_init(&im->fresh);
  im->have_fresh = 1;
  im->cfg = &im->fresh;
  im->g = config_setting_add(config_root_setting(im->cfg), "model", CONFIG_TYPE_GROUP);
  if (im->o->name)
    snprintf(im->name, sizeof im->name, "%s", im->o->name);
  else
    cal_model_name_from(im->out, ".cfg", im->name, sizeof im->name);
  if (!im->g || set_str(im->g, "name", im->name) != 0 || set_str(im->g, "loss", t->loss_mse ? "mse" : "none") != 0 ||
      !(im->layers = config_setting_add(im->g, "layers", CONFIG_TYPE_LIST)))
    return core_err_set(CORE_ENOMEM, "out of memory building the model");
  for (int i = 0; i < t->n_layers; i++)
    if ((rc = add_layer(im, i)) != 0)
      return rc;
  set_source(im, "layers and per-layer times from the PyTorch profiler trace %.380s%s at batch %d", im->trace, im->more,
      im->batch);
  return 0;
}

/* The measured times and where they came from. */
static int set_times(import *im) {
  for (int i = 0; i < im->t.n_layers; i++) {
    config_setting_t *l = config_setting_get_elem(im->layers, (unsigned)i);
    if (!l || set_ms(l, "fwd_ms", im->t.layers[i].fwd_us) != 0 || set_ms(l, "bwd_ms", im->t.layers[i].bwd_us) != 0)
      return core_err_set(CORE_ENOMEM, "out of memory building the model");
  }
  if (set_str(im->g, "source", im->src) != 0 || set_int(im->g, "measured_batch", im->batch) != 0)
    return core_err_set(CORE_ENOMEM, "out of memory building the model");
  return 0;
}

static void import_free(import *im) {
  core_model_free(im->base);
  if (im->have_bc)
    core_cfg_free(&im->bc);
  if (im->have_fresh)
    config_destroy(&im->fresh);
  cal_trace_free(&im->t);
}

int cal_import_trace(const char *trace, const cal_trace_opts *o, const char *out, char *notes, size_t notes_len) {
  return cal_import_traces(&trace, 1, o, out, notes, notes_len);
}

int cal_import_traces(
    const char *const *traces, int n_traces, const cal_trace_opts *o, const char *out, char *notes, size_t notes_len) {
import im = {.o = o, .out = out, .notes = notes, .notes_len = notes_len };
  int rc;
  if (notes && notes_len)
    notes[0] = '\0';
  if ((rc = cal_check_model_name(o->name)) != 0 ||
      (rc = cal_trace_check_io(traces, n_traces, o->base, NULL, out, NULL)) != 0 ||
      (rc = cal_trace_read_many(traces, n_traces, &im.t)) != 0)
    return rc;
  im.trace = traces[0];
  if (n_traces > 1)
    snprintf(im.more, sizeof im.more, " and %d more trace%s", n_traces - 1, n_traces > 2 ? "s" : "");
  if ((rc = batch_of(&im)) == 0) {
    note_trace(&im);
    rc = o->base ? from_base(&im) : from_trace(&im);
  }
  if (rc == 0 && (rc = set_times(&im)) == 0)
    rc = cal_write_model(im.cfg, im.out,
        "# %s: per-layer times imported by `ddpsim import torch-trace` from %s%s (batch %d).\n", im.name, im.trace,
        im.more, im.batch);
  import_free(&im);
  return rc;
}

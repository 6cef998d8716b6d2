/*
 * phase_jitter — a calibration's step-time jitter: samples on every rank at
 * once, as ranks compute at once in training (steps of the first model's
 * compute on CPUs, bursts of the probe GEMM on GPUs), pooled over ranks and
 * fitted on rank 0 (calibrate/jitter.h; docs/calibration.md, "Jitter").
 */
#include "calibrate/calibrate_int.h"

#include "calibrate/compute.h"
#include "calibrate/compute_gpu.h"
#include "calibrate/jitter.h"

#include "core/err.h"
#include "core/model.h"

#include <stdlib.h>

/* ns samples of this rank, gathered into samples (world x ns) on every rank. */
static int gather_samples(cal_ctx *r, int ns, double *samples) {
  const cal_opts *o = r->o;
  double *mine = malloc(sizeof *mine * (size_t)ns);
  if (!mine)
    return core_err_set(CORE_ENOMEM, "out of memory for jitter samples");
  int rc;
  if (r->nccl) {
    cal_say(r, "jitter: %d bursts of %d fp32 GEMMs of %d on every rank", ns, CAL_GPU_BURST, CAL_GPU_PROBE_N);
    rc = cal_gpu_step_samples(r->device, ns, mine);
  } else {
    core_model *jm;
    const char *jpath = o->n_models ? o->models[0] : NULL;
    if (!jpath) {
      free(mine);
      return core_err_set(CORE_EUSAGE, "calibrate needs a model to time (--model)");
    }
    if ((rc = core_model_load(jpath, &jm)) != 0) {
      free(mine);
      return rc;
    }
    cal_say(r, "jitter: %d compute steps of %s on every rank", ns, jm->name);
    rc = cal_step_samples(jm, o->batch, ns, mine);
    core_model_free(jm);
  }
  if (!rc)
    rc = cal_allgather_host(r->world, r->bufs, mine, samples, sizeof *mine * (size_t)ns);
  free(mine);
  return rc;
}

int cal_phase_jitter(cal_ctx *r) {
  int ns = r->o->quick ? 10 : 30, n = ns * r->pg.world_size, rc;
  double *samples = malloc(sizeof *samples * (size_t)n), *rel = malloc(sizeof *rel * (size_t)n);
  if (!samples || !rel) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for jitter samples");
    goto out_free;
  }
  if ((rc = gather_samples(r, ns, samples)) != 0 || r->pg.rank != 0)
    goto out_free;
  cal_jitter j;
  if ((rc = cal_jitter_fit(samples, n, rel, &j)) != 0)
    goto out_free;
  r->prof->jitter = j.best;
  r->prof->jitter_params[0] = j.params[0];
  r->prof->jitter_params[1] = j.params[1];
  r->prof->jitter_samples = rel; /* the profile's now */
  r->prof->n_jitter_samples = n;
  rel = NULL;
  cal_say(r, "  cv %.4f; best fit %s (log-likelihood normal %.1f, lognormal %.1f, shifted exponential %.1f)", j.cv,
      core_jitter_name(j.best), j.loglik[0], j.loglik[1], j.loglik[2]);
out_free:
  free(samples);
  free(rel);
  return rc;
}

/*
 * phase_psgd_sync — PowerSGD's wait per allreduce in training steps: what
 * its small allreduces take between the hook's CPU work beyond the same
 * allreduce back to back (docs/calibration.md, "Communication hooks").
 */
#include "calibrate/calibrate_int.h"

#include "calibrate/sweep.h"

#include "runtime/compress.h"
#include "runtime/data.h"
#include "runtime/ddp.h"

#include "core/err.h"
#include "core/model.h"

#include <stdlib.h>

/* PowerSGD's allreduces as training meets them: real DDP steps of m
 * (runtime/ddp.h: the hook's body beside the backward pass, its allreduces
 * and callbacks on the communication thread) from ddpsim train's defaults
 * (data and seed 1, 25 MB buckets, SGD with momentum), with the hook at
 * ranks 1, 2 and 4, `steps` timed steps each after an untimed first one.
 * Adds up the allreduces' count, bytes and seconds on this rank. */
static int psgd_train_allreduces(cal_ctx *r, const core_model *m, int steps, double *n, double *bytes, double *secs) {
  int L = m->n_layers, in = m->layers[0].in, out = m->layers[L - 1].out, rc = 0;
  float *x = malloc(sizeof *x * (size_t)r->o->batch * (size_t)in);
  float *target = malloc(sizeof *target * (size_t)r->o->batch * (size_t)out);
  if (!x || !target) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for PowerSGD's training steps");
    goto out_free;
  }
  for (int rank = 1; rank <= 4 && !rc; rank *= 2) {
    rt_ddp_opts dop;
    rt_ddp_opts_default(&dop);
    dop.compress.kind = CORE_COMPRESS_POWERSGD;
    dop.compress.rank = rank;
    dop.compress.start_iter = 0;
    rt_ddp *d = NULL;
    rt_data *data = NULL;
    if ((rc = rt_ddp_create(m, r->world, r->o->batch, &dop, RT_DATA_DEFAULT_SEED, &d)) != 0 ||
        (rc = rt_data_create(
             RT_DATA_DEFAULT_SIZE, in, out, RT_DATA_DEFAULT_SEED, r->pg.rank, r->pg.world_size, 1, &data)) != 0)
      goto out_step;
    for (int step = 0; step <= steps; step++) {
      rt_step_metrics sm;
      if ((rc = rt_data_next(data, r->o->batch, x, target)) != 0 ||
          (rc = rt_ddp_step(d, step, x, target, &sm, NULL, 0)) != 0)
        goto out_step;
      if (!step)
        continue;
      for (int ph = 0; ph < RT_COMPRESS_N_PHASES; ph++) {
        *n += (double)sm.compress.allreduces[ph];
        *bytes += (double)sm.compress.bytes[ph];
      }
      *secs += sm.compress.comm_s;
    }
  out_step:
    rt_data_free(data);
    rt_ddp_free(d);
  }
out_free:
  free(x);
  free(target);
  return rc;
}

/* Timed in eight training steps a rank, since alone or in fewer steps
 * they came out short or scattered (docs/calibration.md). */
int cal_psgd_sync(cal_ctx *r, const core_model *m, double *sync_us) {
  double n = 0, bytes = 0, t[2] = {0, 0}; /* seconds in training steps; one back to back */
  int rc = psgd_train_allreduces(r, m, r->o->quick ? 2 : 8, &n, &bytes, &t[0]);
  if (rc)
    return rc;
  /* The same size back to back, after the hook's steps: the fastest of 31
   * (a median sat in stalls now and then: docs/calibration.md). */
  if (n > 0) {
    cal_point bb;
    if ((rc = cal_sweep_one(r->world, CORE_COLL_ALLREDUCE, RT_ALGO_DEFAULT, bytes / n, 2, 31, &bb)) != 0)
      return rc;
    t[1] = bb.t_min_s;
  }
  /* Averaged over ranks, as the step sees both. */
  if ((rc = cal_mean_over_ranks(r->world, r->bufs, t, 2)) != 0)
    return rc;
  *sync_us = 0;
  if (n > 0) {
    double us = (t[0] / n - t[1]) * 1e6;
    *sync_us = us > 0 ? us : 0;
    cal_say(r,
        "  PowerSGD's allreduces on %s: %.0f us each in training steps, %.0f us back to back (fastest; %.0f bytes)",
        m->name, t[0] / n * 1e6, t[1] * 1e6, bytes / n);
  }
  return 0;
}

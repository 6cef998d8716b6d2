/* libFuzzer target: arbitrary bytes as a profile file and as a model file
 * (one libconfig parse, both readers on its root, as core_profile_load and
 * core_model_load do), named as if they were in tests/data.
 *
 * Oracles beyond "no crash, no leak, no undefined behaviour": a rejected
 * file fails with an input error whose message starts with its file:line;
 * an accepted profile answers the simulator's queries (rates, fits) with
 * finite numbers; an accepted model has parameters and can be bucketed. */
#include "core/bucket.h"
#include "core/cfg.h"
#include "core/err.h"
#include "core/model.h"
#include "core/profile.h"

#include "fuzz_input.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME DDPSIM_SOURCE_DIR "/tests/data/fuzz-profile.cfg"

static void fail(const char *what, const char *msg) {
  fprintf(stderr, "fuzz_profile: %s: %s\n", what, msg);
  abort();
}

static void check_error(int rc) {
  const char *msg = core_err_msg();
  if (rc == CORE_EINVAL) {
    if (!fuzz_names_file(msg, FUZZ_NAME))
      fail("error message does not start with the file:line", msg);
  } else if (rc != CORE_ENOMEM) {
    fail("unexpected error code", msg);
  }
}

static void exercise_profile(const core_profile *p) {
  for (int prec = 0; prec < CORE_N_PREC; prec++) {
    const core_prof_rate *r = &p->rate[prec];
    /* Fixed sizes, and the geometric midpoint of every interval between
     * measured sizes, where the interpolation runs. */
    double sizes[6 + 64];
    int n = 0;
    const double fixed[] = {0.0, 1.0, 1e6, 1e9, 1e12, 1e30};
    for (int i = 0; i < 6; i++)
      sizes[n++] = fixed[i];
    for (int i = 1; r->present && i < r->n && n < 70; i++)
      sizes[n++] = sqrt(r->gemm_flops[i - 1]) * sqrt(r->gemm_flops[i]);
    for (int i = 0; i < n; i++) {
      double f = core_profile_flops(p, (enum core_prec)prec, sizes[i]);
      if (!(f >= 0 && isfinite(f)))
        fail("core_profile_flops is not a finite non-negative rate", "");
      if (r->present && !(f > 0))
        fail("a present rate gives zero FLOP/s", "");
    }
  }
  for (int i = 0; i < p->n_colls; i++) {
    const core_prof_coll *c = &p->colls[i];
    if (c->n_fits < 1)
      fail("accepted collective without fits", "");
    const double sizes[] = {0.0, 1.0, 1e6, 1e15, 1e20};
    for (int k = 0; k < 5; k++)
      if (!core_prof_coll_fit(c, sizes[k]))
        fail("no fit for a size", "");
    if (core_profile_coll(p, c->backend, c->op, c->algorithm, c->scope) == NULL)
      fail("an entry is not found by its own key", "");
  }
  (void)core_profile_allreduce(p, "nccl", "intra");
  (void)core_profile_allreduce(p, "gloo", "inter");
}

static void exercise_model(const core_model *m) {
  if (m->n_tensors < 1 || m->n_params < 1)
    fail("accepted model without parameters", "");
  core_buckets b;
  int rc = core_bucket_assign(m->tensor_elems, m->n_tensors, m->ready_order, 4, CORE_BUCKET_FIRST_BYTES,
      (size_t)25 << 20, CORE_BUCKET_REBUILT, &b);
  if (rc && rc != CORE_ENOMEM)
    fail("an accepted model cannot be bucketed", core_err_msg());
  if (rc == 0) {
    int64_t sum = 0;
    for (int k = 0; k < b.n_buckets; k++)
      sum += b.bucket_elems[k];
    if (sum != m->n_params)
      fail("buckets do not hold every parameter", "");
    core_bucket_free(&b);
  }
  (void)core_model_check_runnable(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  core_cfg c;
  core_err_clear();
  int rc = core_cfg_load_string(&c, text, FUZZ_NAME, "profile");
  if (rc) {
    check_error(rc);
  } else {
    core_profile *p = NULL;
    rc = core_profile_from_setting(core_cfg_root(&c), FUZZ_NAME, &p);
    if (rc) {
      if (p)
        fail("failed profile load left a profile", "");
      check_error(rc);
    } else {
      exercise_profile(p);
      core_profile_free(p);
    }
    core_model *m = NULL;
    rc = core_model_from_setting(core_cfg_root(&c), FUZZ_NAME, &m);
    if (rc) {
      if (m)
        fail("failed model load left a model", "");
      check_error(rc);
    } else {
      exercise_model(m);
      core_model_free(m);
    }
  }
  core_cfg_free(&c);
  free(text);
  return 0;
}

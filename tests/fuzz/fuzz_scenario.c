/* libFuzzer target: arbitrary bytes as a scenario file. The text is parsed
 * as if it were tests/data/fuzz-input.cfg, so relative references to the
 * test profiles and models (and, via ../../scenarios/, the shipped ones)
 * resolve.
 *
 * Oracles beyond "no crash, no leak, no undefined behaviour":
 * - a rejected scenario fails with an input error whose message starts with
 *   the scenario's file:line (every error names where it is);
 * - an accepted scenario can be predicted: its first and last points run
 *   (one step, a representative rank when the world is large), because
 *   validation promises that what loads also runs. */
#include "sim/predict.h"
#include "sim/scenario.h"

#include "core/err.h"

#include "fuzz_input.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME DDPSIM_SOURCE_DIR "/tests/data/fuzz-input.cfg"

static void fail(const char *what, const char *msg) {
  fprintf(stderr, "fuzz_scenario: %s: %s\n", what, msg);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  sim_scenario *s = NULL;
  core_err_clear();
  int rc = sim_scenario_load_string(text, FUZZ_NAME, &s);
  if (rc) {
    if (s)
      fail("failed load left a scenario", core_err_msg());
    const char *msg = core_err_msg();
    if (rc == CORE_EINVAL || rc == CORE_EIO) {
      if (!fuzz_names_file(msg, FUZZ_NAME))
        fail("error message does not start with the scenario's file:line", msg);
    } else if (rc != CORE_ENOMEM) {
      fail("unexpected error code", msg);
    }
  } else {
    long n = sim_scenario_points(s);
    if (n < 1)
      fail("accepted scenario has no points", "");
    sim_engine *e = NULL;
    if (sim_engine_new(&e) == 0) {
      s->steps = 1;
      long idx[2] = {0, n - 1};
      for (int k = 0; k < 2; k++) {
        sim_point p;
        sim_point_result r;
        sim_scenario_point(s, idx[k], &p);
        if ((long)p.nodes * p.per_node > 256)
          s->every_rank = 0;
        rc = sim_predict_point(s, &p, e, NULL, 0, &r);
        if (rc && rc != CORE_ENOMEM)
          fail("a valid scenario's point does not predict", core_err_msg());
        if (rc == 0 && !(r.step_s > 0 && r.step_s < 1e300))
          fail("step time is not a positive finite number", "");
      }
      sim_engine_free(e);
    }
  }
  sim_scenario_free(s);
  free(text);
  return 0;
}

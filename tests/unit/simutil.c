#include "simutil.h"

#include "core/err.h"
#include "sim/engine.h"

#include <stdio.h>

sim_scenario *tu_load_string(const char *text, const char *as) {
  sim_scenario *s = NULL;
  if (sim_scenario_load_string(text, as, &s) != 0) {
    fprintf(stderr, "\nscenario did not load: %s\n%s\n", core_err_msg(), text);
    return NULL;
  }
  return s;
}

sim_scenario *tu_load_file(const char *path) {
  sim_scenario *s = NULL;
  if (sim_scenario_load(path, &s) != 0) {
    fprintf(stderr, "\nscenario did not load: %s\n", core_err_msg());
    return NULL;
  }
  return s;
}

int tu_run_point(const sim_scenario *s, long idx, sim_point_result *r) {
  sim_engine *e;
  int rc = sim_engine_new(&e);
  if (rc)
    return rc;
  sim_point p;
  sim_scenario_point(s, idx, &p);
  if ((rc = sim_predict_point(s, &p, e, NULL, 0, r)) != 0)
    fprintf(stderr, "\npoint %ld failed: %s\n", idx, core_err_msg());
  sim_engine_free(e);
  return rc;
}

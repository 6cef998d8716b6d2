/* Helpers shared by the GPU trace importer's unit suites (gputrace_util.h). */
#include "gputrace_util.h"

#include "calibrate/import_gpu.h"
#include "core/err.h"

#include <CUnit/CUnit.h>
#include <stdio.h>

core_model *tu_import_trace(const char *trace, const char *out) {
  const char *traces[] = {trace};
  cal_gpu_opts o = {0};
  char notes[8192];
  int rc = cal_import_gpu(traces, 1, &o, out, notes, sizeof notes);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_EQUAL(rc, 0);
  core_model *m = NULL;
  if (rc == 0 && core_model_load(out, &m) != 0)
    fprintf(stderr, "\n%s\n", core_err_msg());
  return m;
}

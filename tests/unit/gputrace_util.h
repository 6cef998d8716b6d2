/* Helpers shared by the GPU trace importer's unit suites (linked with
 * ddpsim_import): the fixture, its tolerance, and one trace imported. */
#ifndef TESTS_UNIT_GPUTRACE_UTIL_H
#define TESTS_UNIT_GPUTRACE_UTIL_H

#include "testutil.h"

#include "core/model.h"

#include <math.h>

/* The trace whose every timing gen_gpu_fixture.py states. */
#define FIXTURE TU_DATA("torch-trace/gpu-ddp.json")
#define US 1e-6
#define NEAR(a, b) (fabs((double)(a) - (double)(b)) < 1e-9 + 1e-6 * fabs((double)(b)))

/* trace imported to out, and the model read back; NULL on failure (a
 * failed CUnit assertion, the message on stderr). */
core_model *tu_import_trace(const char *trace, const char *out);

#endif

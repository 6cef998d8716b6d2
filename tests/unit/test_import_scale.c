/* `ddpsim import nccl-tests` is linear in the length of its table: a
 * generated all_reduce_perf output of 20,000 sizes (a linear step, as a fine
 * sweep prints them) is parsed and fitted whole, within the ctest TIMEOUT of
 * this test (tests/unit/CMakeLists.txt). A linear importer takes well under
 * a second (bench/bench_import measures it); a cubic one takes hours, so the
 * test fails by timing out without being a timed test. */
#include "testutil.h"

#include "bench/synth_nccl.h"
#include "calibrate/import_nccl.h"
#include "core/err.h"
#include "core/profile.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { ROWS = 20000 };

static char dir[4096];

static int suite_init(void) { return tu_mkdtemp(dir, sizeof dir, "importscale"); }
static int suite_clean(void) {
  tu_rmdir(dir);
  return 0;
}

/* Every row is read and fitted: the entry holds them all, its fits cover
 * the sizes, and the largest sizes' regime has the bandwidth they ran at. */
static void test_twenty_thousand_rows(void) {
  char log[4200];
  snprintf(log, sizeof log, "%s/all_reduce_perf.txt", dir);
  CU_ASSERT_EQUAL_FATAL(synth_nccl_write(log, ROWS), 0);
  const char *paths[] = {log};
  cal_nccl_opts o = {.base = TU_SRC("scenarios/profiles/dgx-h100.cfg")};
  core_profile *p = NULL;
  int rc = cal_import_nccl(paths, 1, &o, &p, NULL, 0);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  const core_prof_coll *c = NULL;
  for (int i = 0; i < p->n_colls; i++)
    if (!strcmp(p->colls[i].backend, "nccl") && !strcmp(p->colls[i].op, "allreduce") && p->colls[i].ranks == 8 &&
        p->colls[i].n_points == ROWS)
      c = &p->colls[i];
  CU_ASSERT_FATAL(c != NULL);
  CU_ASSERT(c->n_fits >= 1);
  CU_ASSERT(c->fits[0].min_bytes <= SYNTH_NCCL_STEP);
  CU_ASSERT(c->fits[c->n_fits - 1].max_bytes >= (double)ROWS * SYNTH_NCCL_STEP);
  CU_ASSERT(fabs(c->fits[c->n_fits - 1].algbw_GBps / SYNTH_NCCL_TOP_GBPS - 1.0) < 0.03);
  core_profile_free(p);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("import nccl-tests at scale", suite_init, suite_clean);
  CU_add_test(s, "20,000 rows: all read and fitted, within the test's timeout", test_twenty_thousand_rows);
}

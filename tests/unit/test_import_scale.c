/* `ddpsim import nccl-tests` is linear in the length of its table: a
 * generated all_reduce_perf output of 20,000 sizes (a linear step, as a fine
 * sweep prints them) is parsed and fitted whole, within the ctest TIMEOUT of
 * this test (tests/unit/CMakeLists.txt). A linear importer takes well under
 * a second (bench/bench_import measures it); a cubic one takes hours, so the
 * test fails by timing out without being a timed test. */
#include "testutil.h"

#include "calibrate/import_nccl.h"
#include "core/err.h"
#include "core/profile.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { ROWS = 20000, STEP = 65536 };

static char dir[4096];

static int suite_init(void) { return tu_mkdtemp(dir, sizeof dir, "importscale"); }
static int suite_clean(void) {
  tu_rmdir(dir);
  return 0;
}

/* Synthetic times of an 8-GPU allreduce, as bench/bench_import.c writes them:
 * the fastest of three protocols, each a latency plus size over bandwidth,
 * with a deterministic +-1% noise. Not a measurement. */
static const double lat_us[3] = {6.0, 9.0, 18.0}, gbps[3] = {40.0, 150.0, 230.0};

static double model_us(double bytes, unsigned *seed) {
  double best = 1e300;
  for (int k = 0; k < 3; k++)
    best = fmin(best, lat_us[k] + bytes / (gbps[k] * 1e3));
  *seed = *seed * 1103515245u + 12345u;
  return best * (1.0 + 0.02 * ((double)(*seed >> 8 & 0xffff) / 65535.0 - 0.5));
}

/* An all_reduce_perf output of ROWS sizes in the nccl-tests 2.17 layout. */
static int write_log(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fprintf(f,
      "# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703\n"
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 8 minBytes %d maxBytes %lld step: %d(bytes) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n",
      STEP, (long long)ROWS * STEP, STEP);
  for (int r = 0; r < 8; r++)
    fprintf(f, "#  Rank %2d Group  0 Pid  4100%d on test-node device %2d [0000:%02x:00] NVIDIA H100 80GB HBM3\n", r, r,
        r, 0x18 + r);
  fprintf(f, "#\n#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
             "algbw   busbw  #wrong\n");
  unsigned seed = 1;
  for (int i = 0; i < ROWS; i++) {
    long long size = (long long)(i + 1) * STEP;
    double t0 = model_us((double)size, &seed), t1 = model_us((double)size, &seed);
    double a0 = (double)size / t0 / 1e3, a1 = (double)size / t1 / 1e3;
    fprintf(f, "%12lld  %12lld  %8s  %6s  %6s  %7.2f  %6.2f  %6.2f  %6d  %7.2f  %6.2f  %6.2f  %6d\n", size, size / 4,
        "float", "sum", "-1", t0, a0, a0 * 1.75, 0, t1, a1, a1 * 1.75, 0);
  }
  fprintf(f, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 100.0\n");
  return fclose(f);
}

/* Every row is read and fitted: the entry holds them all, its fits cover
 * the sizes, and the largest sizes' regime has the bandwidth they ran at. */
static void test_twenty_thousand_rows(void) {
  char log[4200];
  snprintf(log, sizeof log, "%s/all_reduce_perf.txt", dir);
  CU_ASSERT_EQUAL_FATAL(write_log(log), 0);
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
  CU_ASSERT(c->fits[0].min_bytes <= STEP);
  CU_ASSERT(c->fits[c->n_fits - 1].max_bytes >= (double)ROWS * STEP);
  CU_ASSERT(fabs(c->fits[c->n_fits - 1].algbw_GBps / gbps[2] - 1.0) < 0.03);
  core_profile_free(p);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("import nccl-tests at scale", suite_init, suite_clean);
  CU_add_test(s, "20,000 rows: all read and fitted, within the test's timeout", test_twenty_thousand_rows);
}

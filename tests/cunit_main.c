/* Shared main for CUnit test executables: each file defines
 * test_register(), which adds its suites; exit status 1 when a test failed,
 * 77 (TEST_SKIP_STATUS) when none failed and one was skipped, 0 otherwise.
 *
 *   test_x              every suite
 *   test_x SUITE        only that suite
 *   test_x -x S1 -x S2  every suite but those (they run as ctest entries of
 *                       their own, see ddpsim_add_cunit's SEPARATE) */
#include "cunit_skip.h"

#include <CUnit/Basic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void test_register(void);

static unsigned n_skipped;

/* CUnit's verbose mode has just printed the test's name. */
void test_skip(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "\n  SKIPPED: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  n_skipped++;
}

/* Select the suites to run; 0, or 1 after printing what was wrong. */
static int select_suites(int argc, char **argv, CU_pSuite *only) {
  *only = NULL;
  for (int i = 1; i < argc; i++) {
    int exclude = strcmp(argv[i], "-x") == 0;
    const char *name = exclude ? (i + 1 < argc ? argv[++i] : NULL) : argv[i];
    CU_pSuite s = name ? CU_get_suite(name) : NULL;
    if (!s) {
      fprintf(stderr, "no suite '%s'\n", name ? name : "(missing after -x)");
      return 1;
    }
    if (exclude)
      CU_set_suite_active(s, CU_FALSE);
    else
      *only = s;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  test_register();
  if (CU_get_error() != CUE_SUCCESS) {
    fprintf(stderr, "registering tests failed: %s\n", CU_get_error_msg());
    CU_cleanup_registry();
    return 1;
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_set_fail_on_inactive(CU_FALSE);
  CU_pSuite only;
  if (select_suites(argc, argv, &only) != 0) {
    CU_cleanup_registry();
    return 1;
  }
  if (only)
    CU_basic_run_suite(only);
  else
    CU_basic_run_tests();
  unsigned fails = CU_get_number_of_failures() + CU_get_number_of_tests_failed() + CU_get_number_of_suites_failed();
  unsigned ran = CU_get_number_of_tests_run();
  CU_cleanup_registry();
  if (ran == 0) {
    fprintf(stderr, "no tests ran\n");
    return 1;
  }
  if (fails)
    return 1;
  if (n_skipped) {
    fprintf(stderr, "%u of %u tests skipped (see SKIPPED above)\n", n_skipped, ran);
    return TEST_SKIP_STATUS;
  }
  return 0;
}

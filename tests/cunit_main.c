/* Shared main for CUnit test executables: each file defines
 * test_register(), which adds its suites; exit status is the number of
 * failures so ctest sees them. An argument runs only the suite of that name. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

void test_register(void);

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
  if (argc > 1) {
    CU_pSuite s = CU_get_suite(argv[1]);
    if (!s) {
      fprintf(stderr, "no suite '%s'\n", argv[1]);
      CU_cleanup_registry();
      return 1;
    }
    CU_basic_run_suite(s);
  } else {
    CU_basic_run_tests();
  }
  unsigned fails = CU_get_number_of_failures() + CU_get_number_of_tests_failed() +
                   CU_get_number_of_suites_failed();
  unsigned ran = CU_get_number_of_tests_run();
  CU_cleanup_registry();
  if (ran == 0) {
    fprintf(stderr, "no tests ran\n");
    return 1;
  }
  return fails ? 1 : 0;
}

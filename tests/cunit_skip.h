/*
 * cunit_skip — a skipped CUnit test, reported as a skip and never as a pass.
 *
 * A test that cannot run here (no GPU, no root, a kernel that refuses a
 * mount namespace) calls test_skip() with the reason and returns. The shared
 * main (cunit_main.c) then exits 77 when nothing failed, which ctest shows as
 * "Skipped" (SKIP_RETURN_CODE); tests that may skip go in suites of their own,
 * registered as ctest entries of their own (ddpsim_add_cunit's SEPARATE), so
 * the suites that did run still show as passed.
 */
#ifndef TESTS_CUNIT_SKIP_H
#define TESTS_CUNIT_SKIP_H

#define TEST_SKIP_STATUS 77

void test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

/* core/dl.h: libraries opened on first use, checked with zlib (which
 * every build has) in place of CUDA and NCCL: the candidates in order, the
 * environment variable that replaces them, the messages naming the library
 * and the variable, a missing symbol, and a table of functions filled
 * through CORE_DL_RESOLVE that calls the same code as the linked zlib. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/err.h"
#include "core/dl.h"

#define ENV "DDPSIM_TEST_DL_ZLIB"

static const core_dl_lib zlib_lib = {
    .what = "zlib",
    .env = ENV,
    .names = {"/nonexistent/libz.so.1", "", "libz.so.1", NULL},
    .hint = "install zlib1g",
};

static const core_dl_lib missing_lib = {
    .what = "NCCL",
    .env = ENV,
    .names = {"libddpsim-missing.so.2", "/nonexistent/libddpsim-missing.so.2", "libddpsim-missing.so"},
    .hint = "install NCCL",
};

static int has(const char *frag) {
  int ok = strstr(core_err_msg(), frag) != NULL;
  if (!ok)
    fprintf(stderr, "\n  message lacks '%s': %s\n", frag, core_err_msg());
  return ok;
}

static void test_candidates_in_order(void) {
  unsetenv(ENV);
  void *h = NULL;
  const char *as = NULL;
  CU_ASSERT_EQUAL_FATAL(core_dl_open(&zlib_lib, &h, &as), 0);
  CU_ASSERT_PTR_NOT_NULL(h);
  CU_ASSERT_STRING_EQUAL(as, "libz.so.1"); /* the missing file and "" skipped */
}

static void test_none_found(void) {
  unsetenv(ENV);
  void *h = (void *)1;
  CU_ASSERT_EQUAL(core_dl_open(&missing_lib, &h, NULL), CORE_EUNSUPPORTED);
  CU_ASSERT_PTR_NULL(h);
  CU_ASSERT(has("NCCL not found: cannot load libddpsim-missing.so.2 (libddpsim-missing.so.2: "));
  CU_ASSERT(has("also tried /nonexistent/libddpsim-missing.so.2, libddpsim-missing.so"));
  CU_ASSERT(has("; install NCCL or set " ENV "=/path/libddpsim-missing.so.2"));
}

static void test_env_replaces_names(void) {
  void *h = NULL;
  const char *as = NULL;
  /* Set: that alone, even where a default would load. */
  setenv(ENV, "/nonexistent/libz-override.so", 1);
  CU_ASSERT_EQUAL(core_dl_open(&zlib_lib, &h, &as), CORE_EUNSUPPORTED);
  CU_ASSERT(has("zlib not found: cannot load /nonexistent/libz-override.so ("));
  CU_ASSERT(has("set " ENV "=/path/libz.so.1"));
  CU_ASSERT(!strstr(core_err_msg(), "also tried"));
  setenv(ENV, "libz.so.1", 1);
  CU_ASSERT_EQUAL(core_dl_open(&missing_lib, &h, &as), 0);
  CU_ASSERT_STRING_EQUAL(as, "libz.so.1");
  /* Empty: as if unset. */
  setenv(ENV, "", 1);
  CU_ASSERT_EQUAL(core_dl_open(&zlib_lib, &h, &as), 0);
  CU_ASSERT_STRING_EQUAL(as, "libz.so.1");
  unsetenv(ENV);
}

static void test_missing_symbol(void) {
  unsetenv(ENV);
  void *h = NULL, *addr = (void *)1;
  const char *as = NULL;
  CU_ASSERT_EQUAL_FATAL(core_dl_open(&zlib_lib, &h, &as), 0);
  CU_ASSERT_EQUAL(core_dl_sym(&zlib_lib, as, h, "ncclCommInitRankConfig", &addr), CORE_EUNSUPPORTED);
  CU_ASSERT_PTR_NULL(addr);
  CU_ASSERT(has("zlib (libz.so.1) lacks ncclCommInitRankConfig"));
  CU_ASSERT(has("older than the release ddpsim was built with"));
}

#define ZLIB_FUNCS(X) X(zlibVersion) X(crc32)
typedef struct zlib_api {
  ZLIB_FUNCS(CORE_DL_FN)
} zlib_api;

static void test_table(void) {
  unsetenv(ENV);
  void *h = NULL;
  const char *as = NULL;
  zlib_api t;
  memset(&t, 0, sizeof t);
  int rc = core_dl_open(&zlib_lib, &h, &as);
#define RESOLVE(f) CORE_DL_RESOLVE(&zlib_lib, as, h, &t, rc, f)
  ZLIB_FUNCS(RESOLVE)
#undef RESOLVE
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  CU_ASSERT_STRING_EQUAL(t.zlibVersion(), zlibVersion());
  const unsigned char msg[] = "ddpsim";
  CU_ASSERT_EQUAL(t.crc32(0, msg, 6), crc32(0, msg, 6));
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("dl", NULL, NULL);
  CU_add_test(s, "candidates tried in order", test_candidates_in_order);
  CU_add_test(s, "none found: the message names each and the variable", test_none_found);
  CU_add_test(s, "the environment variable replaces the names", test_env_replaces_names);
  CU_add_test(s, "a missing symbol", test_missing_symbol);
  CU_add_test(s, "a table of functions", test_table);
}

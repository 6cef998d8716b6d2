/* core/path: a path's directory as dirname(3) gives it, at the root too
 * ("/x.csv" is in "/", not ""), its file name, and a name's stem. */
#include "core/err.h"
#include "core/path.h"

#include <CUnit/CUnit.h>
#include <string.h>

static void test_dir(void) {
  static const char *const cases[][2] = {{"/x.csv", "/"}, {"x.csv", "."}, {"a/b.csv", "a"}, {"/a/b/c.csv", "/a/b"},
      {"./x.csv", "."}, {"../x.csv", ".."}, {"a/b/", "a"}, {"a//b", "a"}, {"/", "/"}, {"", "."}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char out[64] = "unset";
    CU_ASSERT_EQUAL(core_path_dir(cases[i][0], out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, cases[i][1]);
  }
  char small[4];
  CU_ASSERT_EQUAL(core_path_dir("abcd/x", small, sizeof small), CORE_EINVAL);
  CU_ASSERT_EQUAL(core_path_dir("abc/x", small, sizeof small), 0);
  CU_ASSERT_STRING_EQUAL(small, "abc");
}

static void test_base_and_stem(void) {
  CU_ASSERT_STRING_EQUAL(core_path_base("/x.csv"), "x.csv");
  CU_ASSERT_STRING_EQUAL(core_path_base("x.csv"), "x.csv");
  CU_ASSERT_STRING_EQUAL(core_path_base("a/b/c.cfg"), "c.cfg");
  CU_ASSERT_STRING_EQUAL(core_path_base("a/"), "");
  const char *p = "res/x.csv";
  CU_ASSERT_PTR_EQUAL(core_path_base(p), p + 4);
  CU_ASSERT_EQUAL(core_path_stem_len("x.csv", ".csv"), 1);
  CU_ASSERT_EQUAL(core_path_stem_len(".csv", ".csv"), 4); /* nothing before it: a name, not a suffix */
  CU_ASSERT_EQUAL(core_path_stem_len("x.cfg", ".csv"), 5);
  CU_ASSERT_EQUAL(core_path_stem_len("", ".csv"), 0);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("path", NULL, NULL);
  CU_add_test(s, "directory as dirname(3), the root included", test_dir);
  CU_add_test(s, "file name and stem", test_base_and_stem);
}

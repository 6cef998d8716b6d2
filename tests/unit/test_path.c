/* core/path: a path's directory as dirname(3) gives it, at the root too
 * ("/x.csv" is in "/", not ""), its file name, a name's stem, and whether
 * two paths name one file. */
#include "core/err.h"
#include "core/path.h"

#include "testutil.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char scratch[4096];
static int suite_init(void) { return tu_mkdtemp(scratch, sizeof scratch, "path"); }
static int suite_clean(void) {
  tu_rmdir(scratch);
  return 0;
}

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

/* One file by two names, existing or not yet, is one file; a symlink that
 * leads nowhere names the file it would write; other names are not. */
static void test_same_file(void) {
  char a[4200], a2[4200], b[4200], link[4200], later[4200], later2[4200];
  snprintf(a, sizeof a, "%s/a.csv", scratch);
  snprintf(a2, sizeof a2, "%s/./a.csv", scratch);
  snprintf(b, sizeof b, "%s/b.csv", scratch);
  snprintf(link, sizeof link, "%s/link.csv", scratch);
  snprintf(later, sizeof later, "%s/later.csv", scratch);
  snprintf(later2, sizeof later2, "%s/../%s/later.csv", scratch, core_path_base(scratch));
  FILE *f = fopen(a, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fclose(f);
  CU_ASSERT(core_path_same_file(a, a2));
  CU_ASSERT(!core_path_same_file(a, b));
  CU_ASSERT(!core_path_same_file(a, later));
  CU_ASSERT(core_path_same_file(later, later2));
  CU_ASSERT(!core_path_same_file(later, b));
  CU_ASSERT_EQUAL_FATAL(symlink("later.csv", link), 0);
  CU_ASSERT(core_path_same_file(link, later));
  CU_ASSERT(!core_path_same_file(link, b));
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("path", suite_init, suite_clean);
  CU_add_test(s, "directory as dirname(3), the root included", test_dir);
  CU_add_test(s, "file name and stem", test_base_and_stem);
  CU_add_test(s, "two paths of one file, existing or not", test_same_file);
}

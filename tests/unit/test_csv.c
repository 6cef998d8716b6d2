/* core/csv: a value that does not exist (NaN, infinite) is an empty cell,
 * never "nan" or "inf", and reads back as one; an append keeps what the
 * file held, refuses a file under another header, and ends a last line
 * that lacks its newline. A device or binary file read as a CSV (/dev/zero,
 * a NUL byte, a row of megabytes) is refused at its line, in bounded time
 * and memory. */
#include "testutil.h"

#include "core/csv.h"
#include "core/err.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[4096];

static int suite_init(void) { return tu_mkdtemp(dir, sizeof dir, "csv"); }
static int suite_clean(void) {
  tu_rmdir(dir);
  return 0;
}

static const char *const cols[] = {"name", "x", "t"};

static int file_is(const char *path, const char *text) {
  char *got = tu_read_file(path, NULL);
  int same = got && strcmp(got, text) == 0;
  if (got && !same)
    fprintf(stderr, "\n%s holds:\n%s", path, got);
  free(got);
  return same;
}

static void row(core_csv *c, const char *name, double x, double t) {
  core_csv_str(c, name);
  core_csv_num(c, x);
  core_csv_fixed(c, t, 3);
  core_csv_end_row(c);
}

static void test_not_finite_is_empty(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/cells.csv", dir);
  core_csv c;
  CU_ASSERT_EQUAL_FATAL(core_csv_open(&c, path, cols, 3), 0);
  row(&c, "a", 1.5, 0.25);
  row(&c, "b", NAN, -NAN);
  row(&c, "c", INFINITY, -INFINITY);
  row(&c, "d,e", -0.0, -0.0);
  CU_ASSERT_EQUAL_FATAL(core_csv_commit(&c), 0);
  CU_ASSERT(file_is(path, "name,x,t\na,1.5,0.250\nb,,\nc,,\n\"d,e\",0,0.000\n"));
  core_csv_table t;
  CU_ASSERT_EQUAL_FATAL(core_csv_read(path, &t), 0);
  CU_ASSERT_EQUAL(t.nrows, 4);
  CU_ASSERT_STRING_EQUAL(t.rows[1][1], "");
  CU_ASSERT_STRING_EQUAL(t.rows[2][2], "");
  CU_ASSERT_STRING_EQUAL(t.rows[3][0], "d,e");
  core_csv_table_free(&t);
  unlink(path);
}

static int append_row(const char *path, const char *name, double x) {
  core_csv c;
  int rc = core_csv_open_append(&c, path, cols, 3);
  if (rc)
    return rc;
  row(&c, name, x, 1);
  return core_csv_commit(&c);
}

static void test_append(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/runs.csv", dir);
  CU_ASSERT_EQUAL(append_row(path, "a", 1), 0); /* new: the header first */
  CU_ASSERT_EQUAL(append_row(path, "b", NAN), 0);
  CU_ASSERT(file_is(path, "name,x,t\na,1,1.000\nb,,1.000\n"));
  /* A last line without its newline (an edit) gets one before the row. */
  CU_ASSERT_EQUAL(tu_write_file(path, "name,x,t\r\na,1,1.000"), 0);
  CU_ASSERT_EQUAL(append_row(path, "c", 2), 0);
  CU_ASSERT(file_is(path, "name,x,t\r\na,1,1.000\nc,2,1.000\n"));
  /* An empty file is a new one. */
  CU_ASSERT_EQUAL(tu_write_file(path, ""), 0);
  CU_ASSERT_EQUAL(append_row(path, "d", 3), 0);
  CU_ASSERT(file_is(path, "name,x,t\nd,3,1.000\n"));
  /* Another table's header, or one column short or long: refused, untouched. */
  static const char *const others[] = {"name,x,y\n1,2,3\n", "name,x\n", "name,x,t,u\n", "1,2,3\n"};
  for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
    CU_ASSERT_EQUAL(tu_write_file(path, others[i]), 0);
    CU_ASSERT_EQUAL(append_row(path, "e", 4), CORE_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), ":1: not the header"));
    CU_ASSERT(file_is(path, others[i]));
  }
  unlink(path);
}

static void test_not_text(void) {
  core_csv_table t;
  CU_ASSERT_EQUAL(core_csv_read("/dev/zero", &t), CORE_EINVAL);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "/dev/zero:1: a NUL byte"));
  char path[4200];
  snprintf(path, sizeof path, "%s/nul.csv", dir);
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("name,x,t\na,1,2\nb,", f);
  fputc('\0', f);
  fputs(",3\n", f);
  fclose(f);
  CU_ASSERT_EQUAL(core_csv_read(path, &t), CORE_EINVAL);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "nul.csv:3: a NUL byte"));
  /* A row of empty fields, each of which would cost a pointer and an
   * allocation: 4 MiB of commas. */
  snprintf(path, sizeof path, "%s/wide.csv", dir);
  f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs("name,x,t\n", f);
  for (int i = 0; i < (4 << 20); i++)
    fputc(',', f);
  fclose(f);
  CU_ASSERT_EQUAL(core_csv_read(path, &t), CORE_EINVAL);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "wide.csv:2: a row longer than 1 MiB"));
  unlink(path);
  snprintf(path, sizeof path, "%s/nul.csv", dir);
  unlink(path);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("csv", suite_init, suite_clean);
  CU_add_test(s, "NaN and inf are empty cells, and read back so", test_not_finite_is_empty);
  CU_add_test(s, "append: header first, checked after, last line ended", test_append);
  CU_add_test(s, "a device or binary file: refused at its line, bounded", test_not_text);
}

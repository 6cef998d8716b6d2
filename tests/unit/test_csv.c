/* core/csv: a value that does not exist (NaN, infinite) is an empty cell,
 * never "nan" or "inf", and reads back as one; an append keeps what the
 * file held, refuses a file under another header, and ends a last line
 * that lacks its newline. A device or binary file read as a CSV (/dev/zero,
 * a NUL byte, a row of megabytes) is refused at its line, in bounded time
 * and memory. Reading follows RFC 4180: quoted fields hold commas, doubled
 * quotes and line ends; CRLF, LF or a lone CR ends a record, the last may lack
 * one; spaces are kept; a row of another length, a stray quote or an
 * unclosed one is an error at its file:line. */
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

/* Read text as path into t; 0 or the error. */
static int read_text(const char *name, const char *text, core_csv_table *t) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (tu_write_file(path, text) != 0)
    return -100;
  int rc = core_csv_read(path, t);
  unlink(path);
  return rc;
}

/* The error message holds want (a file:line and what is wrong). */
static int msg_has(const char *want) {
  int ok = strstr(core_err_msg(), want) != NULL;
  if (!ok)
    fprintf(stderr, "\nwanted '%s' in: %s\n", want, core_err_msg());
  return ok;
}

static void test_quoted(void) {
  core_csv_table t;
  CU_ASSERT_EQUAL_FATAL(read_text("q.csv",
                            "name,x,t\n"
                            "\"a,b\",\"say \"\"hi\"\"\",\"\"\n"
                            "\"two\nlines\",\" padded \", x \n"
                            "last,2,3\n",
                            &t),
      0);
  CU_ASSERT_EQUAL_FATAL(t.nrows, 3);
  CU_ASSERT_STRING_EQUAL(t.rows[0][0], "a,b");
  CU_ASSERT_STRING_EQUAL(t.rows[0][1], "say \"hi\"");
  CU_ASSERT_STRING_EQUAL(t.rows[0][2], "");
  CU_ASSERT_STRING_EQUAL(t.rows[1][0], "two\nlines");
  CU_ASSERT_STRING_EQUAL(t.rows[1][1], " padded ");
  CU_ASSERT_STRING_EQUAL(t.rows[1][2], " x ");
  CU_ASSERT_STRING_EQUAL(t.rows[2][0], "last");
  core_csv_table_free(&t);
}

static void test_line_ends(void) {
  core_csv_table t;
  /* CRLF throughout, a CRLF inside a quoted field, a blank line, and no
   * line end after the last record. */
  CU_ASSERT_EQUAL_FATAL(read_text("crlf.csv", "name,x,t\r\na,1,2\r\n\r\n\"b\r\nc\",3,4\r\nd,5,6", &t), 0);
  CU_ASSERT_EQUAL_FATAL(t.ncols, 3);
  CU_ASSERT_STRING_EQUAL(t.cols[2], "t");
  CU_ASSERT_EQUAL_FATAL(t.nrows, 3);
  CU_ASSERT_STRING_EQUAL(t.rows[0][2], "2");
  CU_ASSERT_STRING_EQUAL(t.rows[1][0], "b\r\nc");
  CU_ASSERT_STRING_EQUAL(t.rows[2][0], "d");
  CU_ASSERT_STRING_EQUAL(t.rows[2][2], "6");
  core_csv_table_free(&t);
  /* LF, and a last record without its line end that ends in a quoted field. */
  CU_ASSERT_EQUAL_FATAL(read_text("lf.csv", "name,x,t\na,1,2\nb,3,\"4\"", &t), 0);
  CU_ASSERT_EQUAL_FATAL(t.nrows, 2);
  CU_ASSERT_STRING_EQUAL(t.rows[1][2], "4");
  core_csv_table_free(&t);
  /* A lone CR ends a record too (old Mac files). */
  CU_ASSERT_EQUAL_FATAL(read_text("cr.csv", "name,x,t\ra,1,2\rb,3,4", &t), 0);
  CU_ASSERT_EQUAL_FATAL(t.nrows, 2);
  CU_ASSERT_STRING_EQUAL(t.rows[1][0], "b");
  core_csv_table_free(&t);
  /* A header alone is a table of no rows; an empty file is an error. */
  CU_ASSERT_EQUAL_FATAL(read_text("head.csv", "name,x,t", &t), 0);
  CU_ASSERT_EQUAL(t.ncols, 3);
  CU_ASSERT_EQUAL(t.nrows, 0);
  core_csv_table_free(&t);
  CU_ASSERT_EQUAL(read_text("empty.csv", "", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("empty.csv:1: the file is empty"));
  CU_ASSERT_EQUAL(read_text("blank.csv", "\n\r\n", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("blank.csv:1: the file is empty"));
}

static void test_bad_rows(void) {
  core_csv_table t;
  CU_ASSERT_EQUAL(read_text("short.csv", "name,x,t\na,1,2\nb,3\n", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("short.csv:3: 2 fields, but the header has 3; fix or remove the row"));
  CU_ASSERT_PTR_NULL(t.cols); /* nothing is left to free */
  /* Lines are counted through quoted line ends, blank lines and CRLF. */
  CU_ASSERT_EQUAL(read_text("long.csv", "name,x,t\r\n\"a\r\nb\",1,2\r\n\r\nc,3,4,5\r\n", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("long.csv:5: 4 fields, but the header has 3"));
  /* A ragged last row without its line end. */
  CU_ASSERT_EQUAL(read_text("end.csv", "name,x,t\na,1,2\nb", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("end.csv:3: 1 fields, but the header has 3"));
  /* A row that starts on line 3 and spans two lines. */
  CU_ASSERT_EQUAL(read_text("span.csv", "name,x,t\na,1,2\n\"b\nc\",3\n", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("span.csv:3: 2 fields"));
  /* A quote inside an unquoted field, text after a closing quote: the
   * line and column of the character. */
  CU_ASSERT_EQUAL(read_text("stray.csv", "name,x,t\na,b\"c,2\n", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("stray.csv:2:4: a quote inside a field"));
  CU_ASSERT_EQUAL(read_text("after.csv", "name,x,t\na,1,2\n\"b\"c,3,4\n", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("after.csv:3:4: a quote inside a field"));
  /* An unclosed quote: the line where its record starts. */
  CU_ASSERT_EQUAL(read_text("open.csv", "name,x,t\na,1,2\nb,\"3,4\n5\n", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("open.csv:3: a quoted field is not closed; add the closing \""));
}

/* A lone CR ends a line as well as a record: errors in a CR-only file
 * name the line and column an editor shows, and a CRLF split between two
 * blocks read counts once. */
static void test_cr_lines(void) {
  core_csv_table t;
  CU_ASSERT_EQUAL(read_text("crstray.csv", "name,x,t\ra,1,2\rb,x\"y,3\r", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("crstray.csv:3:4: a quote inside a field"));
  CU_ASSERT_EQUAL(read_text("crshort.csv", "name,x,t\r\ra,1,2\rb,3\r", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("crshort.csv:4: 2 fields, but the header has 3"));
  CU_ASSERT_EQUAL_FATAL(read_text("crrows.csv", "name,x,t\ra,1,2\r\rb,3,4", &t), 0);
  CU_ASSERT_EQUAL_FATAL(t.nrows, 2);
  CU_ASSERT_EQUAL(t.lines[0], 2);
  CU_ASSERT_EQUAL(t.lines[1], 4);
  core_csv_table_free(&t);
  /* The CR of row 2's CRLF is the last byte of the first block of 64 KiB. */
  enum { BLOCK = 1 << 16 };
  static char text[BLOCK + 64];
  const char *head = "name,x,t\r\na,1,";
  size_t n = strlen(head);
  memcpy(text, head, n);
  memset(text + n, 'y', BLOCK - 1 - n);
  snprintf(text + BLOCK - 1, sizeof text - (BLOCK - 1), "\r\nb,2\r\n");
  CU_ASSERT_EQUAL(read_text("split.csv", text, &t), CORE_EINVAL);
  CU_ASSERT(msg_has("split.csv:3: 2 fields, but the header has 3"));
}

/* Each row keeps the line it starts on, past blank lines and a quoted
 * field over several lines; so does the header, which core_csv_require's
 * message names. */
static void test_row_lines(void) {
  core_csv_table t;
  CU_ASSERT_EQUAL_FATAL(read_text("lines.csv", "\nname,x,t\na,1,2\n\n\n\"b\nc\nd\",3,4\n\ne,5,6\n", &t), 0);
  CU_ASSERT_EQUAL(t.line, 2);
  CU_ASSERT_EQUAL_FATAL(t.nrows, 3);
  CU_ASSERT_EQUAL(t.lines[0], 3);
  CU_ASSERT_EQUAL(t.lines[1], 6);
  CU_ASSERT_EQUAL(t.lines[2], 10);
  static const char *const need[] = {"name", "y", NULL};
  CU_ASSERT_EQUAL(core_csv_require(&t, need), CORE_EINVAL);
  CU_ASSERT(msg_has("lines.csv:2: no column 'y'"));
  core_csv_table_free(&t);
}

/* Excel's "CSV UTF-8" starts with a byte order mark: not part of the first
 * column's name, nor of a column number. */
static void test_bom(void) {
  core_csv_table t;
  CU_ASSERT_EQUAL_FATAL(read_text("bom.csv", "\xEF\xBB\xBFname,x,t\r\na,1,2\r\n", &t), 0);
  CU_ASSERT_STRING_EQUAL(t.cols[0], "name");
  CU_ASSERT_EQUAL(core_csv_col(&t, "name"), 0);
  CU_ASSERT_EQUAL(t.nrows, 1);
  core_csv_table_free(&t);
  CU_ASSERT_EQUAL(read_text("bomstray.csv", "\xEF\xBB\xBFn\"ame,x,t\n", &t), CORE_EINVAL);
  CU_ASSERT(msg_has("bomstray.csv:1:2: a quote inside a field"));
  /* Only at the start: elsewhere it is a field's text. */
  CU_ASSERT_EQUAL_FATAL(read_text("bom2.csv",
                            "name,x,t\n\xEF\xBB\xBF"
                            "a,1,2\n",
                            &t),
      0);
  CU_ASSERT_STRING_EQUAL(t.rows[0][0], "\xEF\xBB\xBF"
                                       "a");
  core_csv_table_free(&t);
}

/* What core_csv_str writes reads back as it was, and a field longer than
 * libcsv's first buffers (and than a block read at once) is whole. */
static void test_round_trip(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/trip.csv", dir);
  static const char *const names[] = {"plain", "a,b", "say \"hi\"", "two\nlines", "cr\rlf\r\n", " spaced ", ""};
  enum { NNAMES = sizeof names / sizeof *names, BIG = 100000 };
  char *big = malloc(BIG + 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(big);
  for (int i = 0; i < BIG; i++)
    big[i] = i % 1000 == 999 ? ',' : 'a' + i % 26;
  big[BIG] = '\0';
  core_csv c;
  CU_ASSERT_EQUAL_FATAL(core_csv_open(&c, path, cols, 3), 0);
  for (int i = 0; i < NNAMES; i++)
    row(&c, names[i], i, i);
  row(&c, big, 1, 2);
  CU_ASSERT_EQUAL_FATAL(core_csv_commit(&c), 0);
  core_csv_table t;
  CU_ASSERT_EQUAL_FATAL(core_csv_read(path, &t), 0);
  CU_ASSERT_EQUAL_FATAL(t.nrows, NNAMES + 1);
  for (int i = 0; i < NNAMES; i++)
    CU_ASSERT_STRING_EQUAL(t.rows[i][0], names[i]);
  CU_ASSERT_STRING_EQUAL(t.rows[NNAMES][0], big);
  CU_ASSERT_STRING_EQUAL(t.rows[NNAMES][2], "2.000");
  core_csv_table_free(&t);
  free(big);
  unlink(path);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("csv", suite_init, suite_clean);
  CU_add_test(s, "NaN and inf are empty cells, and read back so", test_not_finite_is_empty);
  CU_add_test(s, "append: header first, checked after, last line ended", test_append);
  CU_add_test(s, "a device or binary file: refused at its line, bounded", test_not_text);
  CU_add_test(s, "quoted fields: commas, doubled quotes, line ends, spaces kept", test_quoted);
  CU_add_test(s, "CRLF and LF, blank lines, no line end at the end", test_line_ends);
  CU_add_test(s, "a ragged row, a stray or unclosed quote: refused at file:line", test_bad_rows);
  CU_add_test(s, "what is written reads back, a long field whole", test_round_trip);
  CU_add_test(s, "a lone CR ends a line: errors at the line and column an editor shows", test_cr_lines);
  CU_add_test(s, "each row's starting line, past blank lines and quoted line ends", test_row_lines);
  CU_add_test(s, "a UTF-8 byte order mark at the start is skipped", test_bom);
}

#include "csv.h" /* this module's: a quoted include looks beside this file first */

#include "afile.h"
#include "err.h"

/* libcsv's (libcsv-dev): an include <> never looks beside this file, and
 * the check below stops a build whose include path has core/ in it. */
#include <csv.h>
#ifndef CSV_MAJOR
#error "<csv.h> is not libcsv's header: install libcsv-dev, and keep core/ off the include path"
#endif

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void header(FILE *f, const char *const cols[], int ncols) {
  for (int i = 0; i < ncols; i++)
    fprintf(f, "%s%s", i ? "," : "", cols[i]);
  fputc('\n', f);
}

int core_csv_open(core_csv *c, const char *path, const char *const cols[], int ncols) {
  memset(c, 0, sizeof *c);
  int rc = core_afile_open(&c->a, path);
  if (rc)
    return rc;
  c->ncols = ncols;
  header(c->a.f, cols, ncols);
  return 0;
}

/* Is the first line of f (CRLF or LF) the header of cols? */
static int starts_with_header(FILE *f, const char *const cols[], int ncols) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = fseek(f, 0, SEEK_SET) == 0 ? getline(&line, &cap, f) : -1;
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
    line[--n] = '\0';
  const char *p = n >= 0 ? line : "";
  int ok = n >= 0;
  for (int i = 0; ok && i < ncols; i++) {
    size_t k = strlen(cols[i]);
    ok = strncmp(p, cols[i], k) == 0 && p[k] == (i + 1 < ncols ? ',' : '\0');
    p += k + 1;
  }
  free(line);
  return ok;
}

/* The copied file's first line is this header; its last line ends. */
static int check_appended(core_csv *c, const char *const cols[], int ncols) {
  FILE *f = c->a.f;
  if (!starts_with_header(f, cols, ncols))
    return core_err_set(CORE_EINVAL,
        "%s:1: not the header of the rows this command appends (%s,%s,...); append to a new file or to one it "
        "wrote",
        c->a.path, cols[0], ncols > 1 ? cols[1] : "");
  if (fseek(f, -1, SEEK_END) != 0)
    return core_err_errno(errno, "cannot read back '%s' to append to it", c->a.path);
  int last = fgetc(f);
  if (fseek(f, 0, SEEK_END) != 0)
    return core_err_errno(errno, "cannot read back '%s' to append to it", c->a.path);
  if (last != '\n')
    fputc('\n', f);
  return 0;
}

int core_csv_open_append(core_csv *c, const char *path, const char *const cols[], int ncols) {
  memset(c, 0, sizeof *c);
  long long had;
  int rc = core_afile_open_append(&c->a, path, &had);
  if (rc)
    return rc;
  c->ncols = ncols;
  if (had == 0) {
    header(c->a.f, cols, ncols);
    return 0;
  }
  if ((rc = check_appended(c, cols, ncols)) != 0)
    core_afile_abort(&c->a);
  return rc;
}

static void sep(core_csv *c) {
  if (c->col++ > 0)
    fputc(',', c->a.f);
}

void core_csv_str(core_csv *c, const char *s) {
  sep(c);
  if (strpbrk(s, ",\"\n\r"))
    csv_fwrite(c->a.f, s, strlen(s)); /* quoted, quotes doubled; a write error shows in ferror */
  else
    fputs(s, c->a.f);
}

/* A number the way CSV cells are written. */
static const char *fmt_num(double v, char *buf, int n) {
  if (!isfinite(v))
    buf[0] = '\0';
  else
    snprintf(buf, (size_t)n, "%.9g", v == 0 ? 0.0 : v); /* no "-0" */
  return buf;
}

void core_csv_num(core_csv *c, double v) {
  char buf[48];
  sep(c);
  fputs(fmt_num(v, buf, sizeof buf), c->a.f);
}

void core_csv_fixed(core_csv *c, double v, int decimals) {
  sep(c);
  if (isfinite(v))
    fprintf(c->a.f, "%.*f", decimals, v == 0 ? 0.0 : v);
}

void core_csv_int(core_csv *c, long long v) {
  sep(c);
  fprintf(c->a.f, "%lld", v);
}

void core_csv_end_row(core_csv *c) {
  if (c->col != c->ncols)
    c->bad = 1;
  fputc('\n', c->a.f);
  c->col = 0;
}

int core_csv_commit(core_csv *c) {
  if (c->bad) {
    core_afile_abort(&c->a);
    return core_err_set(
        CORE_EINTERNAL, "CSV '%s': a row did not have %d fields; nothing was written", c->a.path, c->ncols);
  }
  return core_afile_commit(&c->a);
}

void core_csv_abort(core_csv *c) { core_afile_abort(&c->a); }

void core_csv_stream(core_csv *c, FILE *f, const char *what, const char *const cols[], int ncols) {
  memset(c, 0, sizeof *c);
  c->a.f = f;
  c->a.direct = 1;
  c->a.slot = -1;
  snprintf(c->a.path, sizeof c->a.path, "%s", what);
  c->ncols = ncols;
  if (cols)
    header(f, cols, ncols);
}

int core_csv_stream_end(core_csv *c) {
  if (c->bad)
    return core_err_set(CORE_EINTERNAL, "CSV to %s: a row did not have %d fields", c->a.path, c->ncols);
  if (fflush(c->a.f) != 0 || ferror(c->a.f))
    return core_err_errno(errno ? errno : EIO, "writing the CSV to %s failed", c->a.path);
  return 0;
}

/* --- reading ------------------------------------------------------------ */

void core_csv_table_free(core_csv_table *t) {
  for (int j = 0; j < t->ncols; j++)
    free(t->cols[j]);
  free(t->cols);
  for (long i = 0; i < t->nrows; i++) {
    for (int j = 0; j < t->ncols; j++)
      free(t->rows[i][j]);
    free(t->rows[i]);
  }
  free(t->rows);
  free(t->lines);
  memset(t, 0, sizeof *t);
}

/* The longest row read: ddpsim's own rows (a simulation's, with its note,
 * or a run's metrics) are under a few KiB. */
enum { READ_MAX_RECORD = 1 << 20 };
/* Bytes read from the file at a time; a record is fed to libcsv in pieces
 * of at most one line, so that every callback knows the line it is on. */
enum { READ_BLOCK = 1 << 16 };

static void free_fields(char **fields, int nf) {
  for (int i = 0; i < nf; i++)
    free(fields[i]);
  free(fields);
}

/* libcsv's callbacks' state: the table being filled and where in the file
 * the record being read is. */
typedef struct table_reader {
  const char *path;
  core_csv_table *t;
  long rows_cap;
  long line;    /* the line of the piece being fed */
  long start;   /* the line the record being read starts on, for messages */
  int fresh;    /* nothing of a record fed since the last one ended */
  size_t bytes; /* of the record being read, fed so far */
  char **out;   /* its fields done */
  int n, cap;
  int rc; /* the first error; the callbacks do nothing after it */
} table_reader;

static int rd_nomem(table_reader *r) { return core_err_set(CORE_ENOMEM, "out of memory reading %s", r->path); }

/* libcsv's cb1: one field of the record, copied with its terminating NUL. */
static void on_field(void *s, size_t len, void *data) {
  table_reader *r = data;
  if (r->rc)
    return;
  if (r->n == r->cap) {
    int nc = r->cap ? r->cap * 2 : 16;
    char **no = realloc(r->out, sizeof *no * (size_t)nc);
    if (!no) {
      r->rc = rd_nomem(r);
      return;
    }
    r->out = no;
    r->cap = nc;
  }
  char *f = malloc(len + 1);
  if (!f) {
    r->rc = rd_nomem(r);
    return;
  }
  memcpy(f, s, len);
  f[len] = '\0';
  r->out[r->n++] = f;
}

/* The record just read becomes the header (the first) or the next row,
 * which must have the header's field count. */
static int take_record(table_reader *r) {
  core_csv_table *t = r->t;
  if (!t->cols) {
    t->cols = r->out;
    t->ncols = r->n;
    t->line = r->start;
  } else if (r->n != t->ncols) {
    return core_err_set(CORE_EINVAL, "%s:%ld: %d fields, but the header has %d; fix or remove the row", r->path,
        r->start, r->n, t->ncols);
  } else {
    if (t->nrows == r->rows_cap) {
      long nc = r->rows_cap ? r->rows_cap * 2 : 64;
      char ***nr = realloc(t->rows, sizeof *nr * (size_t)nc);
      if (nr)
        t->rows = nr;
      long *nl = nr ? realloc(t->lines, sizeof *nl * (size_t)nc) : NULL;
      if (!nl)
        return rd_nomem(r);
      t->lines = nl;
      r->rows_cap = nc;
    }
    t->lines[t->nrows] = r->start;
    t->rows[t->nrows++] = r->out;
  }
  r->out = NULL;
  r->n = r->cap = 0;
  return 0;
}

/* libcsv's cb2: the end of a record (c is its terminator, -1 at the end of
 * the file). A blank line is no record: libcsv skips it. */
static void on_record(int c, void *data) {
  (void)c;
  table_reader *r = data;
  if (!r->rc)
    r->rc = take_record(r);
  free_fields(r->out, r->n);
  r->out = NULL;
  r->n = r->cap = 0;
  r->fresh = 1;
  r->bytes = 0;
  r->start = r->line;
}

/* A piece made only of line ends: a blank line, no record's start. */
static int blank(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (s[i] != '\n' && s[i] != '\r')
      return 0;
  return 1;
}

/* The error libcsv reports at column col of the current line. */
static int parse_error(table_reader *r, struct csv_parser *p, size_t col) {
  if (csv_error(p) == CSV_EPARSE)
    return core_err_set(CORE_EINVAL,
        "%s:%ld:%zu: a quote inside a field that does not start with one, or text after a closing quote; quote the "
        "whole field and double each quote inside it (RFC 4180)",
        r->path, r->line, col);
  if (csv_error(p) == CSV_ENOMEM)
    return rd_nomem(r);
  return core_err_set(CORE_EINVAL, "%s:%ld: %s; check the file", r->path, r->line, csv_strerror(csv_error(p)));
}

/* Feed libcsv one piece of a line: s[0..len) (ending with the line's '\n'
 * if it has one), which starts at column col + 1 of line r->line. */
static int feed(table_reader *r, struct csv_parser *p, const char *s, size_t len, size_t col) {
  /* A device or a binary file read by mistake (/dev/zero) ends here. */
  const char *nul = memchr(s, '\0', len);
  if (nul)
    return core_err_set(CORE_EINVAL, "%s:%ld: a NUL byte: this is not a text file; give a CSV", r->path, r->line);
  if (r->fresh && !blank(s, len)) {
    r->fresh = 0;
    r->start = r->line;
  }
  if (!r->fresh && (r->bytes += len) > READ_MAX_RECORD)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: a row longer than %d MiB: not a CSV of ddpsim's (whose rows are under a few KiB); check the file",
        r->path, r->start, READ_MAX_RECORD >> 20);
  size_t done = csv_parse(p, s, len, on_field, on_record, r);
  if (r->rc)
    return r->rc;
  return done < len ? parse_error(r, p, col + done + 1) : 0;
}

/* The first piece of s[0..len): up to and with its line end ('\n', "\r\n"
 * or a lone '\r', all of which end a record), or all of s when no line ends
 * in it; *ends: whether one does. A '\r' at s[len - 1] may be half of a
 * "\r\n": it waits for the next block (returns before it) unless the file
 * ends there (last). */
static size_t piece(const char *s, size_t len, int last, int *ends) {
  *ends = 1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '\n')
      return i + 1;
    if (s[i] == '\r') {
      if (i + 1 < len)
        return s[i + 1] == '\n' ? i + 2 : i + 1;
      *ends = last;
      return last ? i + 1 : i;
    }
  }
  *ends = 0;
  return len;
}

/* The UTF-8 byte order mark that Excel's "CSV UTF-8" writes first: not
 * part of the header's first name. */
static size_t bom(const char *s, size_t len) { return len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0; }

/* Feed libcsv all of f, line by line, then end the last record. */
static int feed_file(FILE *f, table_reader *r, struct csv_parser *p) {
  char *buf = malloc(READ_BLOCK);
  if (!buf)
    return rd_nomem(r);
  size_t have = 0, at = 0, col = 0; /* col: bytes of the line fed before */
  int rc = 0, last = 0, first = 1;
  while (!rc && !last) {
    size_t got = fread(buf + have, 1, READ_BLOCK - have, f);
    last = got < READ_BLOCK - have; /* fread is short only at the end or an error */
    have += got;
    at = first ? bom(buf, have) : 0;
    first = 0;
    while (!rc && at < have) {
      int ends;
      size_t len = piece(buf + at, have - at, last, &ends);
      if (len == 0)
        break;
      rc = feed(r, p, buf + at, len, col);
      at += len;
      col = ends ? 0 : col + len;
      r->line += ends;
    }
    memmove(buf, buf + at, have - at);
    have -= at;
  }
  free(buf);
  if (!rc && ferror(f))
    rc = core_err_errno(errno ? errno : EIO, "cannot read '%s'", r->path);
  if (!rc && csv_fini(p, on_field, on_record, r) != 0)
    rc = core_err_set(CORE_EINVAL, "%s:%ld: a quoted field is not closed; add the closing \"", r->path, r->start);
  return rc ? rc : r->rc;
}

/* libcsv's test for a blank to trim around fields: none is, as RFC 4180
 * says spaces are part of a field. */
static int no_trim(unsigned char c) {
  (void)c;
  return 0;
}

/* Open path to read it as a CSV; a directory is refused with the fix. */
static int open_csv(const char *path, FILE **out) {
  FILE *f = fopen(path, "r");
  if (!f)
    return core_err_open(errno, "cannot open CSV '%s'", path);
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    return core_err_set(CORE_EINVAL, "'%s' is a directory, not a CSV file; name the file (e.g. DIR/steps.csv)", path);
  }
  core_afile_note_input_fd(fileno(f), path);
  *out = f;
  return 0;
}

int core_csv_read(const char *path, core_csv_table *t) {
  memset(t, 0, sizeof *t);
  snprintf(t->path, sizeof t->path, "%s", path);
  FILE *f = NULL;
  int rc = open_csv(path, &f);
  if (rc)
    return rc;
  struct csv_parser p;
  if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
    fclose(f);
    return core_err_set(CORE_ENOMEM, "out of memory reading %s", path);
  }
  csv_set_space_func(&p, no_trim);
  table_reader r = {.path = path, .t = t, .line = 1, .start = 1, .fresh = 1};
  rc = feed_file(f, &r, &p);
  free_fields(r.out, r.n);
  csv_free(&p);
  fclose(f);
  if (!rc && !t->cols)
    rc = core_err_set(CORE_EINVAL, "%s:1: the file is empty; expected a header line", path);
  if (rc)
    core_csv_table_free(t);
  return rc;
}

int core_csv_col(const core_csv_table *t, const char *name) {
  for (int j = 0; j < t->ncols; j++)
    if (strcmp(t->cols[j], name) == 0)
      return j;
  return -1;
}

int core_csv_require(const core_csv_table *t, const char *const names[]) {
  for (const char *const *n = names; *n; n++)
    if (core_csv_col(t, *n) < 0)
      return core_err_set(CORE_EINVAL, "%s:%ld: no column '%s'; is this the right kind of CSV?", t->path, t->line, *n);
  return 0;
}

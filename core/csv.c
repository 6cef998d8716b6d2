#include "csv.h"

#include "afile.h"
#include "err.h"

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
  if (strpbrk(s, ",\"\n\r")) {
    fputc('"', c->a.f);
    for (; *s; s++) {
      if (*s == '"')
        fputc('"', c->a.f);
      fputc(*s, c->a.f);
    }
    fputc('"', c->a.f);
  } else {
    fputs(s, c->a.f);
  }
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
  memset(t, 0, sizeof *t);
}

/* The longest row read: ddpsim's own rows (a simulation's, with its note,
 * or a run's metrics) are under a few KiB. */
enum { CSV_MAX_RECORD = 1 << 20 };

typedef struct field_buf {
  char *s;
  size_t n, cap;
} field_buf;

static int fb_put(field_buf *b, int ch) {
  if (b->n + 1 >= b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 64;
    char *ns = realloc(b->s, nc);
    if (!ns)
      return -1;
    b->s = ns;
    b->cap = nc;
  }
  b->s[b->n++] = (char)ch;
  b->s[b->n] = '\0';
  return 0;
}

/* One record being read: the fields done and the one being filled. */
typedef struct record_reader {
  FILE *f;
  const char *path;
  long *line; /* advances over embedded newlines too */
  long start; /* the line the record starts on, for messages */
  size_t bytes;
  int quoted;
  field_buf b; /* the field being filled */
  char **out;  /* the fields done */
  int n, cap;
} record_reader;

static int rr_nomem(const record_reader *r) { return core_err_set(CORE_ENOMEM, "out of memory reading %s", r->path); }

/* 0, or an error for a NUL byte or one byte too many for a record.
 * A device or a binary file read by mistake (/dev/zero) ends here, not
 * when memory runs out. */
static int rr_check_byte(record_reader *r, int ch) {
  if (ch == '\0')
    return core_err_set(CORE_EINVAL, "%s:%ld: a NUL byte: this is not a text file; give a CSV", r->path, *r->line);
  if (ch != EOF && ++r->bytes > CSV_MAX_RECORD)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: a row longer than %d MiB: not a CSV of ddpsim's (whose rows are under a few KiB); check the file",
        r->path, r->start, CSV_MAX_RECORD >> 20);
  return 0;
}

/* Take ch read inside a quoted field: "" is one quote, a lone " closes
 * the field; a newline is part of the field but still a line of the file. */
static int rr_quoted(record_reader *r, int ch) {
  if (ch == EOF)
    return core_err_set(CORE_EINVAL, "%s:%ld: a quoted field is not closed; add the closing \"", r->path, r->start);
  if (ch == '"') {
    int nx = fgetc(r->f);
    if (nx == '"')
      return fb_put(&r->b, '"') ? rr_nomem(r) : 0;
    r->quoted = 0;
    if (nx != EOF)
      ungetc(nx, r->f);
    return 0;
  }
  if (ch == '\n')
    (*r->line)++;
  return fb_put(&r->b, ch) ? rr_nomem(r) : 0;
}

/* Move the field being filled (empty: "") to the fields done. */
static int rr_end_field(record_reader *r) {
  if (r->n == r->cap) {
    r->cap = r->cap ? r->cap * 2 : 16;
    char **no = realloc(r->out, sizeof *no * (size_t)r->cap);
    if (!no)
      return rr_nomem(r);
    r->out = no;
  }
  r->out[r->n++] = r->b.s ? r->b.s : calloc(1, 1);
  if (!r->out[r->n - 1])
    return rr_nomem(r);
  memset(&r->b, 0, sizeof r->b);
  return 0;
}

static void free_fields(char **fields, int nf) {
  for (int i = 0; i < nf; i++)
    free(fields[i]);
  free(fields);
}

/* Read one record; *fields is malloc'd. Returns 1 on a record, 0 at EOF,
 * negative on error. *line advances over embedded newlines too. */
static int read_record(FILE *f, const char *path, long *line, char ***fields, int *nf) {
  record_reader r = {.f = f, .path = path, .line = line, .start = *line};
  int any = 0, rc;
  for (;;) {
    int ch = fgetc(f);
    if (ch == EOF && !any && r.n == 0)
      return 0;
    any = 1;
    if ((rc = rr_check_byte(&r, ch)) != 0)
      break;
    if (r.quoted) {
      if ((rc = rr_quoted(&r, ch)) != 0)
        break;
      continue;
    }
    if (ch == '"' && r.b.n == 0) {
      r.quoted = 1;
      continue;
    }
    if (ch == ',' || ch == '\n' || ch == EOF) {
      if ((rc = rr_end_field(&r)) != 0)
        break;
      if (ch != ',') {
        (*line)++;
        *fields = r.out;
        *nf = r.n;
        return 1;
      }
      continue;
    }
    if (ch == '\r')
      continue;
    if (fb_put(&r.b, ch)) {
      rc = rr_nomem(&r);
      break;
    }
  }
  free(r.b.s);
  free_fields(r.out, r.n);
  return rc;
}

/* Open path to read it as a CSV; a directory is refused with the fix. */
static int open_csv(const char *path, FILE **out) {
  FILE *f = fopen(path, "r");
  if (!f)
    return core_err_set(
        errno == ENOENT ? CORE_EINVAL : CORE_EIO, "cannot open CSV '%s': %s (check the path)", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    return core_err_set(CORE_EINVAL, "'%s' is a directory, not a CSV file; name the file (e.g. DIR/steps.csv)", path);
  }
  core_afile_note_input_fd(fileno(f), path);
  *out = f;
  return 0;
}

/* Append fields as t's next row (*cap rows held); on failure they are freed. */
static int add_row(core_csv_table *t, long *cap, char **fields, int nf, const char *path) {
  if (t->nrows == *cap) {
    *cap = *cap ? *cap * 2 : 64;
    char ***nr = realloc(t->rows, sizeof *nr * (size_t)*cap);
    if (!nr) {
      free_fields(fields, nf);
      return core_err_set(CORE_ENOMEM, "out of memory reading %s", path);
    }
    t->rows = nr;
  }
  t->rows[t->nrows++] = fields;
  return 0;
}

/* Read the rows after t's header up to EOF: blank lines are skipped, a row
 * with another number of fields than the header is an error at its line. */
static int read_rows(FILE *f, const char *path, long *line, core_csv_table *t) {
  long cap = 0;
  char **fields;
  int nf, rc;
  for (;;) {
    long at = *line;
    rc = read_record(f, path, line, &fields, &nf);
    if (rc <= 0)
      return rc;
    if (nf == 1 && fields[0][0] == '\0') { /* blank line */
      free_fields(fields, nf);
      continue;
    }
    if (nf != t->ncols) {
      free_fields(fields, nf);
      return core_err_set(
          CORE_EINVAL, "%s:%ld: %d fields, but the header has %d; fix or remove the row", path, at, nf, t->ncols);
    }
    if ((rc = add_row(t, &cap, fields, nf, path)) != 0)
      return rc;
  }
}

int core_csv_read(const char *path, core_csv_table *t) {
  memset(t, 0, sizeof *t);
  snprintf(t->path, sizeof t->path, "%s", path);
  FILE *f = NULL;
  int rc = open_csv(path, &f);
  if (rc)
    return rc;
  long line = 1;
  rc = read_record(f, path, &line, &t->cols, &t->ncols);
  if (rc <= 0) {
    fclose(f);
    if (rc == 0)
      return core_err_set(CORE_EINVAL, "%s:1: the file is empty; expected a header line", path);
    return rc;
  }
  rc = read_rows(f, path, &line, t);
  fclose(f);
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
      return core_err_set(CORE_EINVAL, "%s:1: no column '%s'; is this the right kind of CSV?", t->path, *n);
  return 0;
}

/*
 * csv — results tables, written atomically (through afile) so a failed run
 * never leaves a truncated CSV where an old good one stood. Numbers are
 * printed with a fixed format so that equal values give equal bytes, which
 * the simulator's determinism guarantee relies on. Fields holding commas or
 * quotes are quoted as RFC 4180 says. A value that does not exist (not
 * measured, not defined: NaN, or infinite) is an empty cell, never "nan" or
 * "inf", in every CSV ddpsim writes.
 */
#ifndef CORE_CSV_H
#define CORE_CSV_H

#include "afile.h"

typedef struct core_csv {
  core_afile a;
  int ncols;
  int col;
  int bad; /* a row had the wrong number of fields */
} core_csv;

int core_csv_open(core_csv *c, const char *path, const char *const cols[], int ncols);
/* Rows added to the end of path (core_afile_open_append): a new or empty
 * file gets the header first; an existing one must start with that header
 * (CORE_EINVAL otherwise: rows under another table's columns would be
 * misread), and a last line without its newline gets one. */
int core_csv_open_append(core_csv *c, const char *path, const char *const cols[], int ncols);

void core_csv_str(core_csv *c, const char *s);
void core_csv_num(core_csv *c, double v);                 /* %.9g; NaN and inf as empty */
void core_csv_fixed(core_csv *c, double v, int decimals); /* %.*f; NaN and inf as empty */
void core_csv_int(core_csv *c, long long v);
void core_csv_end_row(core_csv *c);

int core_csv_commit(core_csv *c);
void core_csv_abort(core_csv *c);

/* Rows to an already open stream (stdout), not a file: the header now
 * (none when cols is NULL: the stream has it already), rows with the calls
 * above, then core_csv_stream_end, which flushes and reports a short row or
 * a write error, and closes nothing. what names the stream in messages. */
void core_csv_stream(core_csv *c, FILE *f, const char *what, const char *const cols[], int ncols);
int core_csv_stream_end(core_csv *c);

/* --- reading ------------------------------------------------------------ */

/* A whole CSV file in memory: the header and every row as strings. */
typedef struct core_csv_table {
  char path[4096];
  int ncols;
  char **cols;
  long line; /* the header's line in the file */
  long nrows;
  char ***rows; /* rows[i][j] */
  long *lines;  /* lines[i]: the line rows[i] starts on, for messages */
} core_csv_table;

/* Read an RFC 4180 file with libcsv: a quoted field may hold commas,
 * doubled quotes and line ends; CRLF, LF or a lone CR ends a line and a
 * record, and the last may have none; spaces are part of a field; blank
 * lines are skipped; a UTF-8 byte order mark at the start is not part of
 * the header. The first record is the header, and every row must have its
 * field count. Errors name file:line (and the column of a stray quote),
 * and the table keeps each row's line for the caller's. */
int core_csv_read(const char *path, core_csv_table *t);
void core_csv_table_free(core_csv_table *t);
/* Column index by name, or -1. */
int core_csv_col(const core_csv_table *t, const char *name);
/* Require columns; the error names the first missing one and the file. */
int core_csv_require(const core_csv_table *t, const char *const names[]);

#endif

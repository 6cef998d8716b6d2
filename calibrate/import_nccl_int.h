/*
 * import_nccl_int — what the nccl-tests importer's two files share (internal
 * to calibrate/import_nccl.c, the parse of one output, and
 * calibrate/import_nccl_coll.c, which collective it holds): the parser's
 * state, the nccl-tests binaries and their element types.
 */
#ifndef CALIBRATE_IMPORT_NCCL_INT_H
#define CALIBRATE_IMPORT_NCCL_INT_H

#include "calibrate/import_nccl.h"

/* One file being parsed. */
typedef struct cal_nccl_parser {
  const char *path;
  cal_nccl_run *run;
  /* Which collective: from the "Collective test starting" line, else from a
   * command line or noise before the table, else from the file name. */
  int hdr_bin;
  long hdr_line;
  int text_bin;
  long text_line;
  /* Ranks. */
  int n_ranks, cap_ranks;
  long long *rank_id;
  long *rank_line;
  char **rank_host;
  int mixed_groups;
  long group_line;
  /* Columns. */
  long cols_line;
  int ncols; /* fields a data row has */
  int c_size, c_count, c_type, c_redop, c_root;
  int c_time[2], c_algbw[2], c_busbw[2], c_wrong[2];
  /* Rows. */
  long footer_line;
  long rows, first_row_line;
  char type[32], redop[32];
  long long root;
  long long last_size;
  long last_size_line;
  long long ratio_size, ratio_count; /* first row with count > 0 */
  long ratio_line;
  double best_algbw, best_busbw; /* out-of-place row of the largest algbw */
  int cap;
} cal_nccl_parser;

/* The binary (an index of the table of nccl-tests binaries) that the text s
 * names as a word, or -1. */
int cal_nccl_binary_in(const char *s);
/* The binary named exactly name, or -1. */
int cal_nccl_binary_find(const char *name);
/* Whether binary b measures a collective a profile holds. */
int cal_nccl_binary_imports(int b);

/* Bytes per element of an nccl-tests type name; 0: unknown. */
int cal_nccl_type_size(const char *t);

/* After the last line: which collective ps's file holds, from its name for
 * it checked against its columns, else from the columns alone, into
 * ps->run's binary, op and how. 0, or CORE_EINVAL with the message set. */
int cal_nccl_identify(const cal_nccl_parser *ps);

#endif

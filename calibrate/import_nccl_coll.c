#include "import_nccl_int.h"

#include "core/err.h"
#include "core/path.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef cal_nccl_parser parser;

/* --- collectives nccl-tests has, and what their tables look like --------- */

/* Every nccl-tests binary we can name. The first four are the collectives a
 * profile holds; the others are recognized only to say so. The column
 * signature of each (redop, root, size/count ratio, busbw factor) is in
 * sig_* below, from src/<collective>.cu: GetCollByteCount, GetBw and the
 * TimeTest call of RunTest. */
enum coll { C_AR, C_AG, C_RS, C_BC, C_REDUCE, C_A2A, C_SENDRECV, C_OTHER, N_COLL };

static const struct {
  const char *binary;
  enum coll c;
  const char *prof; /* the profile's op name; NULL: not importable */
} binaries[] = {
    /* Superstrings before their substrings (all_reduce_perf before reduce_perf). */
    {"all_reduce_perf", C_AR, "allreduce"},
    {"all_gather_perf", C_AG, "allgather"},
    {"reduce_scatter_perf", C_RS, "reducescatter"},
    {"broadcast_perf", C_BC, "broadcast"},
    {"alltoallv_perf", C_OTHER, NULL},
    {"alltoall_perf", C_A2A, NULL},
    {"sendrecv_perf", C_SENDRECV, NULL},
    {"hypercube_perf", C_OTHER, NULL},
    {"reduce_perf", C_REDUCE, NULL},
    {"gather_perf", C_OTHER, NULL},
    {"scatter_perf", C_OTHER, NULL},
};
enum { N_BINARIES = (int)(sizeof binaries / sizeof *binaries) };

/* Names people give the files without the _perf suffix. */
static const struct {
  const char *word;
  enum coll c;
} file_words[] = {
    {"all_reduce", C_AR},
    {"allreduce", C_AR},
    {"all_gather", C_AG},
    {"allgather", C_AG},
    {"reduce_scatter", C_RS},
    {"reducescatter", C_RS},
    {"broadcast", C_BC},
    {"alltoall", C_A2A},
};

static const char *coll_binary(enum coll c) {
  for (int i = 0; i < N_BINARIES; i++)
    if (binaries[i].c == c)
      return binaries[i].binary;
  return "?";
}

#define BIT(c) (1u << (c))
#define ALL_COLL (BIT(N_COLL) - 1u)

/* Bytes per element of nccl-tests' type names (src/common.cu test_typenames;
 * "char" and "int" are NCCL 1's). 0: unknown, no ratio check. */
int cal_nccl_type_size(const char *t) {
  static const struct {
    const char *name;
    int size;
  } types[] = {{"int8", 1}, {"uint8", 1}, {"char", 1}, {"int32", 4}, {"uint32", 4}, {"int", 4}, {"float", 4},
      {"int64", 8}, {"uint64", 8}, {"double", 8}, {"half", 2}, {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1},
      {"fp8_e4m3", 1}, {"fp8_e5m2", 1}};
  for (size_t i = 0; i < sizeof types / sizeof *types; i++)
    if (!strcmp(t, types[i].name))
      return types[i].size;
  return 0;
}

/* Does word occur in s with no letter or digit right before or after it? */
static int has_word(const char *s, const char *word, int nocase) {
  size_t n = strlen(word);
  for (const char *p = s; *p; p++) {
    if ((nocase ? strncasecmp(p, word, n) : strncmp(p, word, n)) != 0)
      continue;
    int left = p == s || !isalnum((unsigned char)p[-1]);
    int right = !isalnum((unsigned char)p[n]);
    if (left && right)
      return 1;
  }
  return 0;
}

/* The binary a line names, or -1. */
int cal_nccl_binary_in(const char *s) {
  for (int i = 0; i < N_BINARIES; i++)
    if (has_word(s, binaries[i].binary, 0))
      return i;
  return -1;
}

int cal_nccl_binary_find(const char *name) {
  for (int i = 0; i < N_BINARIES; i++)
    if (!strcmp(name, binaries[i].binary))
      return i;
  return -1;
}

int cal_nccl_binary_imports(int b) { return b >= 0 && b < N_BINARIES && binaries[b].prof != NULL; }

/* Which collectives the columns allow (a bit set of enum coll). */
static unsigned column_evidence(const parser *ps, int p, char *why, size_t n) {
  unsigned set = ALL_COLL;
  why[0] = '\0';
  size_t len = 0;
#define WHY(...) (len += (size_t)snprintf(why + (len < n ? len : n - 1), len < n ? n - len : 1, __VA_ARGS__))
  if (ps->c_redop >= 0) {
    if (!strcmp(ps->redop, "none"))
      set &= BIT(C_AG) | BIT(C_BC) | BIT(C_A2A) | BIT(C_SENDRECV) | BIT(C_OTHER);
    else
      set &= BIT(C_AR) | BIT(C_RS) | BIT(C_REDUCE) | BIT(C_OTHER);
    WHY("redop %s", ps->redop);
  }
  if (ps->c_root >= 0) {
    if (ps->root >= 0)
      set &= BIT(C_BC) | BIT(C_REDUCE) | BIT(C_OTHER);
    else
      set &= ~(BIT(C_BC) | BIT(C_REDUCE));
    WHY("%sroot %lld", len ? ", " : "", ps->root);
  }
  int ts = cal_nccl_type_size(ps->type);
  if (ts > 0 && ps->ratio_count > 0) {
    if (ps->ratio_size == ps->ratio_count * ts) {
      set &= BIT(C_AR) | BIT(C_BC) | BIT(C_REDUCE) | BIT(C_SENDRECV) | BIT(C_OTHER);
      WHY("%ssize = count x %d bytes", len ? ", " : "", ts);
    } else if (ps->ratio_size == ps->ratio_count * ts * p) {
      set &= BIT(C_AG) | BIT(C_RS) | BIT(C_A2A) | BIT(C_OTHER);
      WHY("%ssize = count x %d bytes x %d ranks", len ? ", " : "", ts, p);
    }
  }
  /* busbw = algbw x factor (doc/PERFORMANCE.md): 2(p-1)/p for allreduce,
   * (p-1)/p for allgather, reduce-scatter and alltoall, 1 otherwise. Two
   * printed decimals are precise enough from 10 GB/s on. */
  if (ps->best_algbw >= 10.0) {
    double f = ps->best_busbw / ps->best_algbw, f_ar = 2.0 * (p - 1) / p, f_ag = (double)(p - 1) / p;
    unsigned fs = BIT(C_OTHER);
    if (fabs(f - f_ar) < 0.02 * f_ar)
      fs |= BIT(C_AR);
    if (fabs(f - f_ag) < 0.02 * f_ag)
      fs |= BIT(C_AG) | BIT(C_RS) | BIT(C_A2A);
    if (fabs(f - 1.0) < 0.02)
      fs |= BIT(C_BC) | BIT(C_REDUCE) | BIT(C_SENDRECV);
    set &= fs;
    WHY("%sbusbw/algbw %.3f", len ? ", " : "", f);
  }
#undef WHY
  return set;
}

/* The binary the file names (binaries[]), -1 if none: the "Collective test
 * starting" line, else a *_perf name in the text, else the file name; src
 * says which. */
static int named_binary(const parser *ps, char *src, size_t n) {
  if (ps->hdr_bin >= 0) {
    snprintf(src, n, "line %ld ('# Collective test starting')", ps->hdr_line);
    return ps->hdr_bin;
  }
  if (ps->text_bin >= 0) {
    snprintf(src, n, "line %ld", ps->text_line);
    return ps->text_bin;
  }
  const char *b = core_path_base(ps->path);
  int named = -1;
  for (int i = 0; i < N_BINARIES && named < 0; i++)
    if (has_word(b, binaries[i].binary, 1))
      named = i;
  for (size_t w = 0; w < sizeof file_words / sizeof *file_words && named < 0; w++)
    if (has_word(b, file_words[w].word, 1))
      for (int i = 0; i < N_BINARIES; i++)
        if (binaries[i].c == file_words[w].c && named < 0)
          named = i;
  if (named >= 0)
    snprintf(src, n, "the file name");
  return named;
}

static void set_binary(cal_nccl_run *r, int b) {
  snprintf(r->binary, sizeof r->binary, "%s", binaries[b].binary);
  snprintf(r->op, sizeof r->op, "%s", binaries[b].prof);
}

/* The collective the file names, checked against the columns (cols, why). */
static int check_named(const parser *ps, int named, const char *src, unsigned cols, const char *why) {
  cal_nccl_run *r = ps->run;
  if (!binaries[named].prof)
    return core_err_set(CORE_EINVAL,
        "%s: %s names %s, not a collective a profile holds; import the output of all_reduce_perf, all_gather_perf, "
        "reduce_scatter_perf or broadcast_perf",
        ps->path, src, binaries[named].binary);
  if (!(cols & BIT(binaries[named].c)))
    return core_err_set(CORE_EINVAL,
        "%s:%ld: %s says %s, but the columns (%s) do not fit it; check that the file holds the output it is named "
        "after",
        ps->path, ps->first_row_line, src, binaries[named].binary, why);
  set_binary(r, named);
  snprintf(r->how, sizeof r->how, "%s from %.120s", r->binary, src);
  return 0;
}

/* The collective the columns (cols, why) leave, when the file names none. */
static int from_columns(const parser *ps, unsigned cols, const char *why) {
  cal_nccl_run *r = ps->run;
  int found = -1, count = 0;
  for (int c = 0; c < C_OTHER; c++)
    if (cols & BIT(c)) {
      found = c;
      count++;
    }
  if (count != 1 || (cols & BIT(C_OTHER) && why[0] == '\0'))
    return core_err_set(CORE_EINVAL,
        "%s: cannot tell which collective this is: no '# Collective test starting' line, no *_perf name in the file or "
        "its name, and the columns (%s) fit several; name the file after the binary, e.g. all_gather_perf.txt",
        ps->path, why[0] ? why : "no redop or root column");
  int b = -1;
  for (int i = 0; i < N_BINARIES; i++)
    if (binaries[i].c == (enum coll)found && binaries[i].prof)
      b = i;
  if (b < 0)
    return core_err_set(CORE_EINVAL,
        "%s: the columns (%s) are those of %s, not of a collective a profile holds; import the output of "
        "all_reduce_perf, all_gather_perf, reduce_scatter_perf or broadcast_perf",
        ps->path, why, coll_binary((enum coll)found));
  set_binary(r, b);
  snprintf(r->how, sizeof r->how, "%s from the columns (%.120s)", r->binary, why);
  return 0;
}

int cal_nccl_identify(const parser *ps) {
  char why[256], src[160];
  unsigned cols = column_evidence(ps, ps->n_ranks, why, sizeof why);
  int named = named_binary(ps, src, sizeof src);
  return named >= 0 ? check_named(ps, named, src, cols, why) : from_columns(ps, cols, why);
}

#include "import_nccl.h"
#include "import_nccl_int.h"

#include "calibrate/import_common.h"

#include "core/afile.h"
#include "core/err.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* --- small helpers -------------------------------------------------------- */

enum { MAX_TOK = 64 };

/* Split s (modified) at white space; returns the count, or MAX_TOK + 1 when
 * there are more than MAX_TOK fields. */
static int split(char *s, char *tok[MAX_TOK]) {
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(s, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
    if (n == MAX_TOK)
      return MAX_TOK + 1;
    tok[n++] = t;
  }
  return n;
}

static int parse_ll(const char *s, long long *v) {
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno || end == s || *end)
    return -1;
  *v = x;
  return 0;
}

static int parse_num(const char *s, double *v) {
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(x))
    return -1;
  *v = x;
  return 0;
}

/* --- parsing one file ------------------------------------------------------ */

typedef cal_nccl_parser parser;

static int add_rank(parser *ps, long long id, const char *host, long line) {
  if (ps->n_ranks == ps->cap_ranks) {
    int cap = ps->cap_ranks ? 2 * ps->cap_ranks : 16;
    long long *ids = realloc(ps->rank_id, sizeof *ids * (size_t)cap);
    if (ids)
      ps->rank_id = ids;
    long *lines = realloc(ps->rank_line, sizeof *lines * (size_t)cap);
    if (lines)
      ps->rank_line = lines;
    char **hosts = realloc(ps->rank_host, sizeof *hosts * (size_t)cap);
    if (hosts)
      ps->rank_host = hosts;
    if (!ids || !lines || !hosts)
      return core_err_set(CORE_ENOMEM, "out of memory reading %s", ps->path);
    ps->cap_ranks = cap;
  }
  for (int i = 0; i < ps->n_ranks; i++)
    if (ps->rank_id[i] == id)
      return core_err_set(CORE_EINVAL,
          "%s:%ld: rank %lld is listed twice (also on line %ld): the outputs of several runs are mixed, as when "
          "nccl-tests built without MPI=1 is started by mpirun (each process then runs alone); build it with MPI=1, or "
          "import each run's output on its own",
          ps->path, line, id, ps->rank_line[i]);
  char *h = strdup(host);
  if (!h)
    return core_err_set(CORE_ENOMEM, "out of memory reading %s", ps->path);
  ps->rank_id[ps->n_ranks] = id;
  ps->rank_line[ps->n_ranks] = line;
  ps->rank_host[ps->n_ranks] = h;
  ps->n_ranks++;
  return 0;
}

/* "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s"
 * (src/util.cu writeDeviceReport; older versions have no Group field). */
static int rank_line(parser *ps, char **tok, int n, const char *raw, long line) {
  long long id, group = 0;
  int on = -1;
  if (n < 2 || parse_ll(tok[1], &id) != 0 || id < 0)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: a '# Rank' line without a rank number; expected '#  Rank N Group G Pid P on HOST device D [BUS] NAME'",
        ps->path, line);
  for (int i = 2; i + 1 < n; i++) {
    if (!strcmp(tok[i], "Group") && parse_ll(tok[i + 1], &group) != 0)
      return core_err_set(
          CORE_EINVAL, "%s:%ld: the group of rank %lld is not a number ('%s')", ps->path, line, id, tok[i + 1]);
    if (!strcmp(tok[i], "on") && on < 0)
      on = i + 1;
  }
  if (on < 0)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: the '# Rank %lld' line names no host ('on HOST'); expected '#  Rank N Group G Pid P on HOST device D "
        "[BUS] NAME'",
        ps->path, line, id);
  if (group != 0 && !ps->mixed_groups) {
    ps->mixed_groups = 1;
    ps->group_line = line;
  }
  if (!ps->run->device[0]) {
    const char *br = strchr(raw, ']');
    if (br) {
      br += strspn(br + 1, " \t") + 1;
      snprintf(ps->run->device, sizeof ps->run->device, "%.*s", (int)strcspn(br, "\r\n"), br);
    }
  }
  return add_rank(ps, id, tok[on], line);
}

/* Note token t, field i of the column header, as the column it names (h:
 * which half, 0 out-of-place, 1 in-place); *extra = 1 when it names the
 * two-field timestamp. An error for a table the importer cannot read. */
static int header_token(parser *ps, const char *t, int i, int h, long line, int *extra) {
  if (!strcmp(t, "size"))
    ps->c_size = i;
  else if (!strcmp(t, "count"))
    ps->c_count = i;
  else if (!strcmp(t, "type"))
    ps->c_type = i;
  else if (!strcmp(t, "redop"))
    ps->c_redop = i;
  else if (!strcmp(t, "root"))
    ps->c_root = i;
  else if (!strcmp(t, "cputime"))
    return core_err_set(CORE_EINVAL,
        "%s:%ld: the table reports cputime (nccl-tests -C 1), the CPU time to launch, not the collective's duration; "
        "rerun without -C",
        ps->path, line);
  else if (!strcmp(t, "time") && ps->c_time[h] < 0)
    ps->c_time[h] = i;
  else if (!strcmp(t, "algbw") && ps->c_algbw[h] < 0)
    ps->c_algbw[h] = i;
  else if (!strcmp(t, "busbw") && ps->c_busbw[h] < 0)
    ps->c_busbw[h] = i;
  else if (!strcmp(t, "#wrong") && ps->c_wrong[h] < 0)
    ps->c_wrong[h] = i;
  else if (!strcmp(t, "error"))
    return core_err_set(CORE_EINVAL,
        "%s:%ld: this table has an 'error' column instead of '#wrong': output of an old nccl-tests (before the "
        "#wrong count), which the importer does not read; rerun with a current nccl-tests",
        ps->path, line);
  else if (!strcmp(t, "timestamp"))
    *extra = 1; /* printed as "%Y-%m-%d %H:%M:%S", two fields */
  return 0;
}

/* The first column a data row needs that the header lacks, or NULL. */
static const char *missing_column(const parser *ps) {
  return ps->c_size < 0       ? "size"
         : ps->c_count < 0    ? "count"
         : ps->c_type < 0     ? "type"
         : ps->c_time[0] < 0  ? "time"
         : ps->c_algbw[0] < 0 ? "algbw"
         : ps->c_busbw[0] < 0 ? "busbw"
         : ps->c_wrong[0] < 0 ? "#wrong"
                              : NULL;
}

/* The column header: "#  size  count  type  redop  root  time  algbw  busbw
 * #wrong  time  algbw  busbw  #wrong" (src/util.cu writeResultHeader), with
 * optional #bitdiff, per-iteration and timestamp columns. */
static int column_header(parser *ps, char **tok, int n, long line) {
  if (ps->cols_line)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: a second table header (the first is on line %ld): one file must hold one nccl-tests run; split the "
        "file",
        ps->path, line, ps->cols_line);
  ps->cols_line = line;
  ps->c_size = ps->c_count = ps->c_type = ps->c_redop = ps->c_root = -1;
  for (int h = 0; h < 2; h++)
    ps->c_time[h] = ps->c_algbw[h] = ps->c_busbw[h] = ps->c_wrong[h] = -1;
  int extra = 0, rc;
  for (int i = 0; i < n; i++) {
    int h = ps->c_time[0] >= 0 && ps->c_wrong[0] >= 0; /* out-of-place done: in-place */
    if ((rc = header_token(ps, tok[i], i, h, line, &extra)) != 0)
      return rc;
  }
  const char *missing = missing_column(ps);
  if (missing)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: the table header has no '%s' column; expected '#  size  count  type  redop  root  time  algbw  busbw  "
        "#wrong  time  algbw  busbw  #wrong'",
        ps->path, line, missing);
  ps->ncols = n + extra;
  return 0;
}

/* size * a == b, without overflow. */
static int times_is(long long size, long long a, long long b) {
  return a > 0 && size <= LLONG_MAX / a ? size * a == b : 0;
}

/* nccl-tests prints size = max(send, receive bytes) and count = the count
 * argument (src/common.cu TimeTest, <coll>GetCollByteCount): size = count x
 * type size for allreduce, broadcast, reduce and sendrecv, count x type size
 * x ranks for allgather, reduce-scatter and alltoall, the same on every row.
 * A row that fits neither had its columns swapped or garbled. */
static int check_size_count(parser *ps, long long size, long long count, const char *type, long line) {
  int ts = cal_nccl_type_size(type), p = ps->n_ranks;
  if (ts == 0 || p == 0)
    return 0; /* unknown type, or no Rank lines (an error of its own later) */
  int one = times_is(count, ts, size), all = times_is(count, (long long)ts * p, size);
  if (!one && !all)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: size %lld bytes is neither count x %d bytes (%s, count %lld) nor that x %d ranks, as nccl-tests "
        "prints every collective; are the size and count columns swapped or edited? Import the output as nccl-tests "
        "wrote it",
        ps->path, line, size, ts, type, count, p);
  if (ps->ratio_count > 0 && count > 0 && one != all) {
    int first_one = times_is(ps->ratio_count, ts, ps->ratio_size);
    if (first_one != one)
      return core_err_set(CORE_EINVAL,
          "%s:%ld: size %lld = count %lld x %d bytes%s, but line %ld has size %lld = count %lld x %d bytes%s: the size "
          "and count columns changed their meaning; import the output as nccl-tests wrote it",
          ps->path, line, size, count, ts, one ? "" : " x ranks", ps->ratio_line, ps->ratio_size, ps->ratio_count, ts,
          first_one ? "" : " x ranks");
  }
  return 0;
}

/* One half of a data row (h 0: out-of-place, 1: in-place): its time, and
 * (when wanted) algbw and busbw; a #wrong > 0 is an error. */
static int row_half(parser *ps, char **tok, int h, long long size, long line, double *t, double *algbw, double *busbw) {
  if (ps->c_time[h] < 0)
    return 0;
  const char *what = h ? "in-place" : "out-of-place";
  double a = 0, b = 0, w;
  if (parse_num(tok[ps->c_time[h]], t) != 0 || *t < 0 || (size > 0 && *t <= 0))
    return core_err_set(CORE_EINVAL, "%s:%ld: the %s time '%s' is not a positive number of microseconds", ps->path,
        line, what, tok[ps->c_time[h]]);
  if ((ps->c_algbw[h] >= 0 && (parse_num(tok[ps->c_algbw[h]], &a) != 0 || a < 0)) ||
      (ps->c_busbw[h] >= 0 && (parse_num(tok[ps->c_busbw[h]], &b) != 0 || b < 0)))
    return core_err_set(CORE_EINVAL, "%s:%ld: the %s algbw or busbw ('%s', '%s') is not a number >= 0", ps->path, line,
        what, ps->c_algbw[h] >= 0 ? tok[ps->c_algbw[h]] : "", ps->c_busbw[h] >= 0 ? tok[ps->c_busbw[h]] : "");
  if (algbw)
    *algbw = a;
  if (busbw)
    *busbw = b;
  if (ps->c_wrong[h] >= 0) {
    const char *s = tok[ps->c_wrong[h]];
    if (!strcmp(s, "N/A"))
      ps->run->validated = 0;
    else if (parse_num(s, &w) != 0 || w < 0)
      return core_err_set(
          CORE_EINVAL, "%s:%ld: the %s #wrong '%s' is neither a count nor N/A", ps->path, line, what, s);
    else if (w > 0)
      return core_err_set(CORE_EINVAL,
          "%s:%ld: %s elements were wrong in the %s result at %lld bytes: NCCL returned corrupted data, so the times "
          "mean nothing; fix the cluster (driver, NVLink/NIC errors, NCCL version) and measure again",
          ps->path, line, s, what, size);
  }
  return 0;
}

/* The fields of a data row that say what was measured. */
typedef struct row_id {
  long long size, count, root;
  const char *type, *redop;
} row_id;

/* Parse a data row's size, count, type, redop and root into *id, after
 * checking that it is a data row with the header's number of fields. */
static int row_id_parse(parser *ps, char **tok, int n, const char *raw, long line, row_id *id) {
  if (parse_ll(tok[0], &id->size) != 0)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: not a data row ('%.60s'): rows start with the size in bytes; if the run failed here, import a "
        "complete run",
        ps->path, line, raw);
  if (n != ps->ncols)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: a data row with %d fields, but the table header (line %ld) has %d columns; the line is cut short or "
        "garbled",
        ps->path, line, n > MAX_TOK ? MAX_TOK : n, ps->cols_line, ps->ncols);
  if (parse_ll(tok[ps->c_size], &id->size) != 0 || id->size < 0 || parse_ll(tok[ps->c_count], &id->count) != 0 ||
      id->count < 0)
    return core_err_set(CORE_EINVAL, "%s:%ld: size and count must be whole numbers >= 0 (got '%s' and '%s')", ps->path,
        line, tok[ps->c_size], tok[ps->c_count]);
  id->type = tok[ps->c_type];
  id->redop = ps->c_redop >= 0 ? tok[ps->c_redop] : "";
  id->root = -1;
  if (ps->c_root >= 0 && parse_ll(tok[ps->c_root], &id->root) != 0)
    return core_err_set(CORE_EINVAL, "%s:%ld: the root '%s' is not a number", ps->path, line, tok[ps->c_root]);
  return 0;
}

/* The first data row sets the type, redop and root; every later row must
 * keep them, since the fit is of one collective. */
static int same_sweep(parser *ps, const row_id *id, long line) {
  if (ps->rows == 0) {
    snprintf(ps->type, sizeof ps->type, "%s", id->type);
    snprintf(ps->redop, sizeof ps->redop, "%s", id->redop);
    ps->root = id->root;
    ps->first_row_line = line;
    return 0;
  }
  if (strcmp(ps->type, id->type) != 0 || strcmp(ps->redop, id->redop) != 0 || ps->root != id->root)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: type, redop or root changes (%s %s %lld, was %s %s %lld on line %ld): one file must hold one sweep; "
        "run nccl-tests with one -d, -o and -r value per output",
        ps->path, line, id->type, id->redop, id->root, ps->type, ps->redop, ps->root, ps->first_row_line);
  return 0;
}

/* Append (size bytes, t us) to the run's points. Sizes must ascend: one
 * sweep prints them so, and the fit takes each size once. */
static int add_point(parser *ps, long long size, double t, long line) {
  cal_nccl_run *r = ps->run;
  if (r->n > 0 && size <= ps->last_size)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: size %lld bytes after %lld (line %ld): sizes must ascend; a file with several sweeps (-d all, -o all, "
        "or outputs appended) must be split",
        ps->path, line, size, ps->last_size, ps->last_size_line);
  if (r->n == ps->cap) {
    int cap = ps->cap ? 2 * ps->cap : 32;
    double *b = realloc(r->bytes, sizeof *b * (size_t)cap);
    if (b)
      r->bytes = b;
    double *tt = realloc(r->time_us, sizeof *tt * (size_t)cap);
    if (tt)
      r->time_us = tt;
    if (!b || !tt)
      return core_err_set(CORE_ENOMEM, "out of memory reading %s", ps->path);
    ps->cap = cap;
  }
  r->bytes[r->n] = (double)size;
  r->time_us[r->n] = t;
  r->n++;
  ps->last_size = size;
  ps->last_size_line = line;
  return 0;
}

/* One data row: "%12li  %12li  %8s  %6s  %6s" then per half
 * "  %7s  %6s  %6s  %6g" (time, algbw, busbw, #wrong or N/A). */
static int data_row(parser *ps, char **tok, int n, const char *raw, long line) {
  row_id id = {0};
  int rc = row_id_parse(ps, tok, n, raw, line, &id);
  if (rc == 0)
    rc = same_sweep(ps, &id, line);
  if (rc == 0)
    rc = check_size_count(ps, id.size, id.count, id.type, line);
  if (rc)
    return rc;
  double t[2] = {0, 0}, algbw = 0, busbw = 0;
  for (int h = 0; h < 2; h++)
    if ((rc = row_half(ps, tok, h, id.size, line, &t[h], h ? NULL : &algbw, h ? NULL : &busbw)) != 0)
      return rc;
  ps->rows++;
  if (id.size == 0) {
    if (ps->run->n > 0)
      return core_err_set(CORE_EINVAL,
          "%s:%ld: size 0 after %lld bytes (line %ld): sizes must ascend; a file with several sweeps (-d all, -o all, "
          "or outputs appended) must be split",
          ps->path, line, ps->last_size, ps->last_size_line);
    return 0; /* no data moved: nothing to fit */
  }
  if ((rc = add_point(ps, id.size, t[0], line)) != 0)
    return rc;
  if (id.count > 0 && ps->ratio_count == 0) {
    ps->ratio_size = id.size;
    ps->ratio_count = id.count;
    ps->ratio_line = line;
  }
  if (algbw > ps->best_algbw) {
    ps->best_algbw = algbw;
    ps->best_busbw = busbw;
  }
  return 0;
}

static int hash_line(parser *ps, char *body, const char *raw, long line) {
  char *tok[MAX_TOK];
  int n = split(body, tok);
  if (n == 0 || n > MAX_TOK)
    return 0;
  cal_nccl_run *r = ps->run;
  if (n >= 3 && !strcmp(tok[0], "nccl-tests") && !strcmp(tok[1], "version")) {
    long long lib = 0;
    for (int i = 2; i < n; i++)
      if (!strncmp(tok[i], "nccl-library=", 13))
        parse_ll(tok[i] + 13, &lib);
    /* NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9 (nccl.h). */
    if (lib >= 20900)
      snprintf(r->version, sizeof r->version, "nccl-tests %.32s, NCCL %lld.%lld.%lld", tok[2], lib / 10000,
          lib / 100 % 100, lib % 100);
    else
      snprintf(r->version, sizeof r->version, "nccl-tests %.32s", tok[2]);
    return 0;
  }
  if (n >= 4 && !strcmp(tok[0], "Collective") && !strcmp(tok[1], "test") && !strcmp(tok[2], "starting:")) {
    if (ps->hdr_line)
      return core_err_set(CORE_EINVAL,
          "%s:%ld: a second nccl-tests run starts here (the first on line %ld): one file must hold one run; split the "
          "file",
          ps->path, line, ps->hdr_line);
    int b = cal_nccl_binary_find(tok[3]);
    if (b < 0 || !cal_nccl_binary_imports(b))
      return core_err_set(CORE_EINVAL,
          "%s:%ld: this is the output of %s, not of a collective a profile holds; import the output of "
          "all_reduce_perf, all_gather_perf, reduce_scatter_perf or broadcast_perf",
          ps->path, line, tok[3]);
    ps->hdr_bin = b;
    ps->hdr_line = line;
    return 0;
  }
  if (!strcmp(tok[0], "Rank")) {
    if (ps->cols_line)
      return 0; /* not the device list */
    return rank_line(ps, tok, n, raw, line);
  }
  if (!strcmp(tok[0], "size") && n >= 3 && !strcmp(tok[1], "count"))
    return column_header(ps, tok, n, line);
  if (n >= 6 && !strcmp(tok[0], "Out") && !strcmp(tok[1], "of") && !strcmp(tok[2], "bounds")) {
    long long bad;
    if (parse_ll(tok[5], &bad) == 0 && bad > 0)
      return core_err_set(CORE_EINVAL,
          "%s:%ld: nccl-tests found %lld out-of-bounds values (wrong data): the times of a run that corrupts data mean "
          "nothing; fix the cluster and measure again",
          ps->path, line, bad);
    ps->footer_line = line;
  }
  return 0;
}

static int parse_line(parser *ps, char *line_buf, long line) {
  char raw[512];
  snprintf(raw, sizeof raw, "%.*s", (int)strcspn(line_buf, "\r\n"), line_buf);
  const char *s = line_buf + strspn(line_buf, " \t");
  if (*s == '#')
    return hash_line(ps, (char *)s + 1, raw, line);
  if (!ps->cols_line || ps->footer_line) {
    /* Before the table: launcher noise, perhaps the command line. */
    if (!ps->cols_line && ps->text_bin < 0) {
      int b = cal_nccl_binary_in(s);
      if (b >= 0) {
        ps->text_bin = b;
        ps->text_line = line;
      }
    }
    return 0;
  }
  if (strstr(s, "NCCL INFO") || strstr(s, "NCCL WARN"))
    return 0; /* NCCL_DEBUG output interleaves with the table */
  char *tok[MAX_TOK];
  int n = split((char *)s, tok);
  if (n == 0)
    return 0;
  return data_row(ps, tok, n, raw, line);
}

/* The table and the ranks are whole: a header, data rows, Rank lines of one
 * group and more than one rank. */
static int check_table(const parser *ps, long lines) {
  const char *path = ps->path;
  if (!ps->cols_line)
    return core_err_set(CORE_EINVAL,
        "%s: no nccl-tests table header ('#  size  count  type  redop  root  time  algbw  busbw  #wrong ...') in its "
        "%ld lines; is it the output of an nccl-tests binary?",
        path, lines);
  if (ps->rows == 0)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: the table has no data rows; the run stopped before its first size (see its error messages) and must "
        "be repeated",
        path, ps->cols_line);
  if (!ps->footer_line)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: the table stops here, at %lld bytes, without the line nccl-tests closes it with ('# Out of bounds "
        "values : N OK'): the run was cut short (killed or timed out) or its output copied in part; import the whole "
        "output of a run that finished",
        path, ps->last_size_line ? ps->last_size_line : ps->first_row_line, ps->last_size);
  if (ps->n_ranks == 0)
    return core_err_set(CORE_EINVAL,
        "%s: no '#  Rank N Group G Pid P on HOST ...' lines; they give the number of ranks and nodes, so import the "
        "whole output (nccl-tests prints them under '# Using devices')",
        path);
  if (ps->mixed_groups)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: ranks in several groups (NCCL_TESTS_SPLIT_MASK): each group ran its own communicator; import the "
        "output of a run without the split",
        path, ps->group_line);
  if (ps->n_ranks < 2)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: one rank: a collective over one rank moves no data; run nccl-tests over several GPUs (-g N, or one "
        "process per GPU under mpirun)",
        path, ps->rank_line[0]);
  return 0;
}

/* Nodes: distinct hosts, each with the same number of ranks. */
static int count_nodes(const parser *ps, int *nodes) {
  int p = ps->n_ranks, per = -1;
  *nodes = 0;
  for (int i = 0; i < p; i++) {
    int seen = 0, k = 0;
    for (int j = 0; j < p; j++) {
      if (j < i && !strcmp(ps->rank_host[j], ps->rank_host[i]))
        seen = 1;
      k += !strcmp(ps->rank_host[j], ps->rank_host[i]);
    }
    if (seen)
      continue;
    (*nodes)++;
    if (per < 0)
      per = k;
    else if (k != per)
      return core_err_set(CORE_EINVAL,
          "%s:%ld: host %s has %d ranks but %s has %d: the profile describes nodes with the same number of ranks each; "
          "run nccl-tests with as many GPUs on every node",
          ps->path, ps->rank_line[i], ps->rank_host[i], k, ps->rank_host[0], per);
  }
  return 0;
}

/* After the last line: the run's ranks, nodes and collective, checked. */
static int finish(parser *ps, long lines) {
  cal_nccl_run *r = ps->run;
  int rc, nodes;
  if ((rc = check_table(ps, lines)) != 0 || (rc = count_nodes(ps, &nodes)) != 0)
    return rc;
  r->ranks = ps->n_ranks;
  r->nodes = nodes;
  snprintf(r->host, sizeof r->host, "%s", ps->rank_host[0]);
  if ((rc = cal_nccl_identify(ps)) != 0)
    return rc;
  if (r->n < 2)
    return core_err_set(CORE_EINVAL,
        "%s:%ld: only %d size(s) with data; an alpha-beta fit needs a sweep, e.g. nccl-tests -b 8 -e 128M -f 2",
        ps->path, ps->cols_line, r->n);
  return 0;
}

void cal_nccl_run_free(cal_nccl_run *run) {
  if (!run)
    return;
  free(run->bytes);
  free(run->time_us);
  run->bytes = run->time_us = NULL;
  run->n = 0;
}

/* The longest line read: nccl-tests prints rows and Rank lines of a few
 * hundred bytes; a device or a binary file (/dev/zero) stops here. */
enum { NCCL_MAX_LINE = 64 << 10 };
enum { LINE_OK, LINE_EOF, LINE_NUL, LINE_LONG };

/* One line (its newline kept) into buf of NCCL_MAX_LINE + 1 bytes. */
static int read_line(FILE *f, char *buf) {
  size_t n = 0;
  int ch = EOF;
  errno = 0;
  while (n < NCCL_MAX_LINE && (ch = getc(f)) != EOF) {
    if (ch == '\0')
      return LINE_NUL;
    buf[n++] = (char)ch;
    if (ch == '\n')
      break;
  }
  buf[n] = '\0';
  if (n == 0 && ch == EOF)
    return LINE_EOF;
  return n == NCCL_MAX_LINE && ch != '\n' ? LINE_LONG : LINE_OK;
}

/* path opened for reading, refused when it is a directory. */
static int open_output(const char *path, FILE **out) {
  FILE *f = fopen(path, "r");
  if (!f)
    return core_err_open(errno, "cannot open nccl-tests output '%s'", path);
  struct stat sb;
  if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
    fclose(f);
    return core_err_set(CORE_EINVAL, "%s: a directory, not an nccl-tests output; give the output files", path);
  }
  core_afile_note_input_fd(fileno(f), path);
  *out = f;
  return 0;
}

/* Every line of f through parse_line, buf of NCCL_MAX_LINE + 1 bytes; the
 * lines read into *line. */
static int parse_lines(parser *ps, FILE *f, char *buf, long *line) {
  const char *path = ps->path;
  for (;;) {
    int got = read_line(f, buf);
    if (got == LINE_EOF)
      return ferror(f) ? core_err_errno(errno ? errno : EIO, "reading '%s'", path) : 0;
    ++*line;
    if (got == LINE_NUL)
      return core_err_set(
          CORE_EINVAL, "%s:%ld: a NUL byte: this is not a text file; import nccl-tests' text output", path, *line);
    if (got == LINE_LONG)
      return core_err_set(CORE_EINVAL,
          "%s:%ld: a line longer than %d KiB: not nccl-tests' output (its lines are a few hundred bytes); import its "
          "text output",
          path, *line, NCCL_MAX_LINE >> 10);
    int rc = parse_line(ps, buf, *line);
    if (rc)
      return rc;
  }
}

int cal_nccl_parse(const char *path, cal_nccl_run *run) {
  memset(run, 0, sizeof *run);
  run->validated = 1;
  if (strlen(path) >= sizeof run->path)
    return core_err_set(CORE_EINVAL, "path too long: %.64s...", path);
  snprintf(run->path, sizeof run->path, "%s", path);
  parser ps = {.path = path, .run = run, .hdr_bin = -1, .text_bin = -1};
  long line = 0;
  char *buf = malloc(NCCL_MAX_LINE + 1);
  if (!buf)
    return core_err_set(CORE_ENOMEM, "out of memory reading '%s'", path);
  FILE *f = NULL;
  int rc = open_output(path, &f);
  if (rc)
    goto out_buf;
  if ((rc = parse_lines(&ps, f, buf, &line)) == 0)
    rc = finish(&ps, line);
  fclose(f);
  for (int i = 0; i < ps.n_ranks; i++)
    free(ps.rank_host[i]);
  free(ps.rank_host);
  free(ps.rank_id);
  free(ps.rank_line);
  if (rc)
    cal_nccl_run_free(run);
out_buf:
  free(buf);
  return rc;
}

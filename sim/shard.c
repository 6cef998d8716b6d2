#include "shard.h"

#include "core/afile.h"
#include "core/err.h"
#include "core/path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

long sim_shard_job_points(const sim_scenario *s) {
  long j = 1;
  for (int d = SIM_N_STEP_DIMS; d < SIM_N_DIMS; d++)
    j *= s->n[d];
  return j;
}

int sim_shard_owns(const sim_scenario *s, int shard, int n_shards, long index) {
  return n_shards <= 1 || (index / sim_shard_job_points(s)) % n_shards == shard;
}

void sim_shard_csv_path(const sim_scenario *s, const char *dir, int shard, int n_shards, char *buf, size_t n) {
  int stem = core_path_stem_len(s->csv_name, ".csv");
  snprintf(buf, n, "%s/%.*s.shard-%d-of-%d.csv", dir, stem, s->csv_name, shard, n_shards);
}

/* A shard's file as lines (each with its newline). */
typedef struct shard_file {
  char path[4200];
  char *text;
  long n_lines, next;
  size_t *start; /* [n_lines + 1] offsets into text */
} shard_file;

static void shard_file_free(shard_file *f) {
  free(f->text);
  free(f->start);
}

/* A shard is a file simulate --shard wrote: a device (/dev/zero) or a FIFO
 * would be read without end or block, and is refused before it is opened. */
static int read_lines(shard_file *f) {
  struct stat st;
  if (stat(f->path, &st) == 0 && !S_ISREG(st.st_mode))
    return core_err_set(CORE_EINVAL,
        "shard %s is not a regular file; a shard is the CSV `ddpsim simulate --shard` wrote: run its task again",
        f->path);
  FILE *in = fopen(f->path, "rb");
  if (!in)
    return core_err_errno(errno, "cannot read shard %s (has its array task finished?)", f->path);
  core_afile_note_input_fd(fileno(in), f->path);
  size_t cap = 1 << 16, len = 0, got;
  f->text = malloc(cap);
  while (f->text && (got = fread(f->text + len, 1, cap - len, in)) > 0) {
    len += got;
    if (len == cap) {
      char *t = realloc(f->text, cap * 2);
      if (!t) {
        free(f->text);
        f->text = NULL;
      }
      f->text = t;
      cap *= 2;
    }
  }
  int err = ferror(in);
  fclose(in);
  if (!f->text)
    return core_err_set(CORE_ENOMEM, "out of memory reading %s", f->path);
  if (err)
    return core_err_set(CORE_EIO, "cannot read shard %s", f->path);
  if (len && f->text[len - 1] != '\n')
    return core_err_set(
        CORE_EINVAL, "%s: the last row has no end of line; the shard was cut short, run its task again", f->path);
  for (size_t i = 0; i < len; i++)
    f->n_lines += f->text[i] == '\n';
  f->start = malloc(sizeof *f->start * (size_t)(f->n_lines + 1));
  if (!f->start)
    return core_err_set(CORE_ENOMEM, "out of memory reading %s", f->path);
  long k = 0;
  f->start[0] = 0;
  for (size_t i = 0; i < len; i++)
    if (f->text[i] == '\n')
      f->start[++k] = i + 1;
  return 0;
}

/* Step-level configurations of shard k of n among total. */
static long configs_of(long total, int k, int n) { return total > k ? (total - 1 - k) / n + 1 : 0; }

/* Does the row at text[from..to) begin with the point's model, nodes,
 * devices per node, GPUs and network, as the CSV writes them? A shard of
 * another version of the scenario (or another shard's file) has the right
 * number of rows but not these. */
static int row_is_point(const sim_scenario *s, long index, const char *row, size_t len) {
  sim_point p;
  char key[512];
  sim_scenario_point(s, index, &p);
  int n = snprintf(key, sizeof key, "%s,%d,%d,%lld,%s,", p.model->name, p.nodes, p.per_node,
      (long long)p.nodes * p.per_node, p.network->name);
  return n > 0 && (size_t)n < sizeof key && (size_t)n <= len && memcmp(row, key, (size_t)n) == 0;
}

static int write_merged(const sim_scenario *s, shard_file *sh, int n, long configs, long J, const char *out) {
  core_afile a;
  int rc = core_afile_open(&a, out);
  if (rc)
    return rc;
  fwrite(sh[0].text, 1, sh[0].start[1], a.f);
  sh[0].next = 1;
  for (long c = 0; c < configs; c++) {
    shard_file *f = &sh[c % n];
    size_t from = f->start[f->next], to = f->start[f->next + J];
    if (!row_is_point(s, c * J, f->text + from, to - from)) {
      core_afile_abort(&a);
      return core_err_set(CORE_EINVAL,
          "%s:%ld: the row is not point %ld of %s (its model, nodes, devices per node or network differ); was the "
          "shard "
          "written by another version of the scenario, or for another shard? Run its task again",
          f->path, f->next + 1, c * J, s->path);
    }
    fwrite(f->text + from, 1, to - from, a.f);
    f->next += J;
  }
  if (ferror(a.f)) {
    core_afile_abort(&a);
    return core_err_set(CORE_EIO, "cannot write %s", out);
  }
  return core_afile_commit(&a);
}

int sim_shard_merge(const sim_scenario *s, const char *dir, int n_shards, const char *out) {
  long J = sim_shard_job_points(s), configs = sim_scenario_points(s) / J;
  shard_file *sh = calloc((size_t)n_shards, sizeof *sh);
  if (!sh)
    return core_err_set(CORE_ENOMEM, "out of memory for %d shards", n_shards);
  int rc = 0;
  for (int k = 0; k < n_shards && !rc; k++) {
    sim_shard_csv_path(s, dir, k, n_shards, sh[k].path, sizeof sh[k].path);
    if ((rc = read_lines(&sh[k])) != 0)
      break;
    long want = configs_of(configs, k, n_shards) * J + (k == 0);
    if (sh[k].n_lines != want)
      rc = core_err_set(CORE_EINVAL,
          "%s holds %ld lines, but shard %d of %d of %s has %ld%s; was it written by another version of the scenario, "
          "or cut short? Run its task again",
          sh[k].path, sh[k].n_lines, k, n_shards, s->path, want, k == 0 ? " (with the header)" : "");
  }
  if (!rc)
    rc = write_merged(s, sh, n_shards, configs, J, out);
  for (int k = 0; k < n_shards; k++)
    shard_file_free(&sh[k]);
  free(sh);
  return rc;
}

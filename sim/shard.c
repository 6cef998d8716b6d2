#include "shard.h"

#include "sim/fabric.h"

#include "core/afile.h"
#include "core/err.h"
#include "core/isal.h"
#include "core/path.h"

#include <errno.h>
#include <stdint.h>
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

int sim_shard_of(const sim_scenario *s, int n_shards, long index) {
  return n_shards <= 1 ? 0 : (int)((index / sim_shard_job_points(s)) % n_shards);
}

int sim_shard_owns(const sim_scenario *s, int shard, int n_shards, long index) {
  return n_shards <= 1 || sim_shard_of(s, n_shards, index) == shard;
}

void sim_shard_csv_path(const sim_scenario *s, const char *dir, int shard, int n_shards, char *buf, size_t n) {
  int stem = core_path_stem_len(s->csv_name, ".csv");
  snprintf(buf, n, "%s/%.*s.shard-%d-of-%d.csv", dir, stem, s->csv_name, shard, n_shards);
}

/* Chain the CRC-64 of path's bytes onto *crc. */
static int crc_file(const char *path, uint64_t *crc) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return core_err_errno(errno, "cannot read %s to stamp the shard with it", path);
  unsigned char buf[1 << 16];
  size_t got;
  int rc = 0;
  while (!rc && (got = fread(buf, 1, sizeof buf, f)) > 0)
    rc = core_isal_crc64(buf, got, crc);
  int err = ferror(f);
  fclose(f);
  if (rc)
    return core_err_wrap(rc, "stamping the shard with %s", path);
  return err ? core_err_set(CORE_EIO, "cannot read %s to stamp the shard with it", path) : 0;
}

/* What a shard was computed from: its place, its seed, the CRC-64 of its
 * profile and of its scenario and model files. */
typedef struct stamp {
  int shard, n_shards;
  unsigned long long seed, profile, inputs;
} stamp;

static int stamp_of(const sim_scenario *s, int shard, int n_shards, stamp *t) {
  uint64_t profile = 0, inputs = 0;
  int rc = crc_file(s->profile->path, &profile);
  if (!rc)
    rc = crc_file(s->path, &inputs);
  for (int m = 0; !rc && m < s->n_models; m++)
    rc = crc_file(s->models[m]->path, &inputs);
  for (int f = 0; !rc && f < s->n_fabrics; f++)
    for (int j = 0; !rc && j < s->fabrics[f].n_jobs; j++)
      rc = crc_file(s->fabrics[f].jobs[j].model->path, &inputs);
  *t = (stamp){shard, n_shards, (unsigned long long)s->seed, profile, inputs};
  return rc;
}

#define STAMP_FMT "# ddpsim shard %d/%d: seed %llu, profile %016llx, scenario and models %016llx"

int sim_shard_stamp(const sim_scenario *s, int shard, int n_shards, char *buf, size_t n) {
  stamp t;
  int rc = stamp_of(s, shard, n_shards, &t);
  if (!rc)
    snprintf(buf, n, STAMP_FMT, t.shard, t.n_shards, t.seed, t.profile, t.inputs);
  return rc;
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
    return core_err_open(errno, "cannot read shard %s (has its array task finished?)", f->path);
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
  f->text[len] = '\0'; /* the loop keeps len < cap; the stamp is parsed as a string */
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

/* Shard k's stamp (its first line) against the merge's own (mine: place,
 * profile, files) and shard 0's seed. */
static int check_stamp(const sim_scenario *s, const shard_file *f, int k, const stamp *mine, stamp *got) {
  int end = 0;
  if (sscanf(f->text, STAMP_FMT "%n", &got->shard, &got->n_shards, &got->seed, &got->profile, &got->inputs, &end) !=
          5 ||
      !end || f->text[end] != '\n')
    return core_err_set(CORE_EINVAL,
        "%s:1: no shard stamp ('# ddpsim shard I/N: seed ...'); it is not a shard that `ddpsim simulate --shard` "
        "wrote, or one of an older ddpsim; run its task again",
        f->path);
  if (got->shard != k || got->n_shards != mine->n_shards)
    return core_err_set(CORE_EINVAL,
        "%s:1: the stamp says shard %d of %d, not %d of %d; was the file renamed or copied? Run shard %d's task again",
        f->path, got->shard, got->n_shards, k, mine->n_shards, k);
  if (got->profile != mine->profile)
    return core_err_set(CORE_EINVAL,
        "%s:1: shard %d was run on another profile than '%s', which this merge loads; give merge the --profile the "
        "shards were run with (simulate --profile), or run the shard again",
        f->path, k, s->profile->path);
  if (got->inputs != mine->inputs)
    return core_err_set(CORE_EINVAL,
        "%s:1: shard %d was run on another version of %s or of its model files (they changed since); run its task "
        "again",
        f->path, k, s->path);
  return 0;
}

static int check_stamps(const sim_scenario *s, shard_file *sh, int n) {
  stamp mine, got, first = {0};
  int rc = stamp_of(s, 0, n, &mine);
  for (int k = 0; k < n && !rc; k++) {
    if ((rc = check_stamp(s, &sh[k], k, &mine, &got)) != 0)
      break;
    if (k == 0)
      first = got;
    else if (got.seed != first.seed)
      rc = core_err_set(CORE_EINVAL,
          "%s:1: shard %d was run with seed %llu, shard 0 (%s) with seed %llu (--seed or simulation.seed); run "
          "every shard with the same seed",
          sh[k].path, k, got.seed, sh[0].path, first.seed);
  }
  return rc;
}

static int write_merged(const sim_scenario *s, shard_file *sh, int n, long configs, long J, const char *out) {
  core_afile a;
  int rc = core_afile_open(&a, out);
  if (rc)
    return rc;
  /* Line 0 of every shard is its stamp; shard 0's line 1 the header. */
  fwrite(sh[0].text + sh[0].start[1], 1, sh[0].start[2] - sh[0].start[1], a.f);
  for (int k = 0; k < n; k++)
    sh[k].next = k == 0 ? 2 : 1;
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
    rc = read_lines(&sh[k]);
  }
  /* The stamps first: a shard of another run or version says so, not only
   * that its length differs. */
  if (!rc)
    rc = check_stamps(s, sh, n_shards);
  for (int k = 0; k < n_shards && !rc; k++) {
    long want = configs_of(configs, k, n_shards) * J + (k == 0) + 1;
    if (sh[k].n_lines != want)
      rc = core_err_set(CORE_EINVAL,
          "%s holds %ld lines, but shard %d of %d of %s has %ld (with the stamp%s); was it written by another "
          "version of the scenario, or cut short? Run its task again",
          sh[k].path, sh[k].n_lines, k, n_shards, s->path, want, k == 0 ? " and the header" : "");
  }
  if (!rc)
    rc = write_merged(s, sh, n_shards, configs, J, out);
  for (int k = 0; k < n_shards; k++)
    shard_file_free(&sh[k]);
  free(sh);
  return rc;
}

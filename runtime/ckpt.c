#include "ckpt.h"

#include "core/afile.h"
#include "core/err.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static const char MAGIC[8] = {'D', 'D', 'P', 'S', 'I', 'M', 'C', 'K'};

/* Offsets in the header (version 2; version 1 has its header CRC at 72). */
enum {
  H_MAGIC = 0,
  H_VERSION = 8,
  H_HBYTES = 12,
  H_PBYTES = 16,
  H_STEP = 24,
  H_EPOCH = 32,
  H_POS = 40,
  H_NPARAMS = 48,
  H_HASH = 56,
  H_MOM = 64,
  H_PCRC = 68,
  H_TIME = 72,
  H_HCRC = 80,
  H_HCRC_V1 = 72
};

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

uint64_t rt_ckpt_model_hash(const core_model *m) {
  /* FNV-1a over the tensor sizes (Fowler, Noll, Vo). */
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int t = 0; t < m->n_tensors; t++)
    for (int i = 0; i < 8; i++) {
      h ^= (uint64_t)(m->tensor_elems[t] >> (8 * i)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  return h;
}

static uint32_t crc_floats(uint32_t crc, const float *v, int64_t n) {
  const unsigned char *p = (const unsigned char *)v;
  size_t left = (size_t)n * sizeof(float);
  while (left) {
    uInt chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
    crc = (uint32_t)crc32(crc, p, chunk);
    p += chunk;
    left -= chunk;
  }
  return crc;
}

/* ---- the header ---------------------------------------------------------------- */

/* A header that passed its own checks (magic, CRC, padding, version). */
typedef struct header {
  int64_t step, epoch, pos, n_params;
  uint64_t pbytes, hash;
  int has_momentum;
  uint32_t pcrc;
  int64_t written_ns;
} header;

static int64_t mtime_ns(const struct stat *st) {
  return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static int parse_header(const char *path, const unsigned char *h, const struct stat *st, header *out) {
  if (memcmp(h + H_MAGIC, MAGIC, sizeof MAGIC) != 0)
    return core_err_set(CORE_ECORRUPT, "%s: not a ddpsim checkpoint (bad magic)", path);
  uint32_t version = get32(h + H_VERSION);
  int hcrc = version == 1 ? H_HCRC_V1 : H_HCRC;
  if (get32(h + hcrc) != (uint32_t)crc32(0, h, (uInt)hcrc))
    return core_err_set(CORE_ECORRUPT, "%s: header checksum mismatch (corrupt header)", path);
  /* The padding after the header CRC is covered by no checksum: the writer
   * leaves it zero, so anything else there is damage. */
  for (int i = hcrc + 4; i < RT_CKPT_HEADER_BYTES; i++)
    if (h[i] != 0)
      return core_err_set(CORE_ECORRUPT, "%s: header padding byte %d is not zero (corrupt header)", path, i);
  if ((version != 1 && version != RT_CKPT_VERSION) || get32(h + H_HBYTES) != RT_CKPT_HEADER_BYTES)
    return core_err_set(
        CORE_ECORRUPT, "%s: version %u, this ddpsim reads versions 1 to %d", path, version, RT_CKPT_VERSION);
  out->step = (int64_t)get64(h + H_STEP);
  out->epoch = (int64_t)get64(h + H_EPOCH);
  out->pos = (int64_t)get64(h + H_POS);
  out->n_params = (int64_t)get64(h + H_NPARAMS);
  out->pbytes = get64(h + H_PBYTES);
  out->hash = get64(h + H_HASH);
  out->has_momentum = (int)get32(h + H_MOM);
  out->pcrc = get32(h + H_PCRC);
  out->written_ns = version == 1 ? mtime_ns(st) : (int64_t)get64(h + H_TIME);
  return 0;
}

/* Open path for reading only if it is a regular file, without blocking on a
 * FIFO or a device named like a checkpoint. */
static int open_regular(const char *path, FILE **f, struct stat *st) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return core_err_errno(errno, "cannot open checkpoint '%s'", path);
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    close(fd);
    return core_err_set(CORE_ECORRUPT, "%s: not a regular file", path);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (!(*f = fdopen(fd, "rb"))) {
    int e = errno;
    close(fd);
    return core_err_errno(e, "cannot open checkpoint '%s'", path);
  }
  return 0;
}

static int read_header(FILE *f, const char *path, const struct stat *st, header *h) {
  unsigned char b[RT_CKPT_HEADER_BYTES];
  if (fread(b, 1, sizeof b, f) != sizeof b)
    return core_err_set(CORE_ECORRUPT, "%s: truncated header (%lld bytes, need %d)", path, (long long)st->st_size,
        RT_CKPT_HEADER_BYTES);
  return parse_header(path, b, st, h);
}

/* ---- the directory ------------------------------------------------------------- */

/* A file named ckpt-<step>.ddpc, with its header when that reads. */
typedef struct entry {
  long long name_step;
  int has_header;
  header h;
  char name[256];
} entry;

/* The step it is ordered by: the one it records, else the one its name says. */
static long long entry_step(const entry *e) { return e->has_header ? e->h.step : e->name_step; }
/* Named for the step it holds: not a stray copy. */
static int entry_genuine(const entry *e) { return !e->has_header || e->h.step == e->name_step; }

static int newest_first(const void *a, const void *b) {
  const entry *x = a, *y = b;
  long long sx = entry_step(x), sy = entry_step(y);
  if (sx != sy)
    return sx < sy ? 1 : -1;
  if (x->has_header != y->has_header)
    return x->has_header ? -1 : 1;
  int64_t tx = x->has_header ? x->h.written_ns : 0, ty = y->has_header ? y->h.written_ns : 0;
  if (tx != ty)
    return tx < ty ? 1 : -1;
  return strcmp(x->name, y->name);
}

static int is_ckpt_name(const char *name, long long *step) {
  char tail[8];
  return sscanf(name, "ckpt-%lld.ddp%7s", step, tail) == 2 && strcmp(tail, "c") == 0 &&
         strlen(name) < sizeof((entry *)0)->name;
}

/* Fill e from dir/name; 0 when it is a regular file (header or not). */
static int look_at(const char *dir, const char *name, int report, entry *e) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  memset(e, 0, sizeof *e);
  snprintf(e->name, sizeof e->name, "%s", name);
  FILE *f;
  struct stat st;
  if (open_regular(path, &f, &st) != 0) {
    if (report)
      fprintf(stderr, "ddpsim: skipping checkpoint: %s\n", core_err_msg());
    return -1;
  }
  e->has_header = read_header(f, path, &st, &e->h) == 0;
  fclose(f);
  return 0;
}

/* The checkpoint files of dir, newest first; report says what was skipped. */
static int list_ckpts(const char *dir, int report, entry **out, int *n) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT)
      return 0;
    return core_err_errno(errno, "cannot list checkpoint directory '%s'", dir);
  }
  int cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    long long step;
    if (!is_ckpt_name(de->d_name, &step))
      continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 16;
      entry *ne = realloc(*out, sizeof *ne * (size_t)cap);
      if (!ne) {
        closedir(d);
        free(*out);
        *out = NULL;
        return core_err_set(CORE_ENOMEM, "out of memory listing checkpoints");
      }
      *out = ne;
    }
    if (look_at(dir, de->d_name, report, &(*out)[*n]) == 0) {
      (*out)[*n].name_step = step;
      (*n)++;
    }
  }
  closedir(d);
  if (*n > 1) /* qsort's base must not be NULL, even for 0 elements */
    qsort(*out, (size_t)*n, sizeof **out, newest_first);
  return 0;
}

int rt_ckpt_claim(const char *dir, int *fd) {
  *fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (*fd < 0)
    return core_err_errno(errno, "cannot open checkpoint directory '%s'", dir);
  if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
    return 0;
  int e = errno;
  close(*fd);
  *fd = -1;
  if (e != EWOULDBLOCK)
    return 0;
  return core_err_set(CORE_EUSAGE,
      "--ckpt-dir %s is in use by another run writing checkpoints there (each would prune the other's); wait for "
      "it to end, stop it, or choose another --ckpt-dir",
      dir);
}

int rt_ckpt_sweep(const char *dir) {
  int rc = core_afile_sweep_stale(dir, "ckpt-");
  return rc < 0 ? rc : 0;
}

/* ---- writing ------------------------------------------------------------------- */

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void make_header(const core_model *m, const rt_ckpt *c, unsigned char h[RT_CKPT_HEADER_BYTES]) {
  memset(h, 0, RT_CKPT_HEADER_BYTES);
  memcpy(h + H_MAGIC, MAGIC, sizeof MAGIC);
  put32(h + H_VERSION, RT_CKPT_VERSION);
  put32(h + H_HBYTES, RT_CKPT_HEADER_BYTES);
  put64(h + H_PBYTES, 2ull * (uint64_t)c->n_params * sizeof(float));
  put64(h + H_STEP, (uint64_t)c->step);
  put64(h + H_EPOCH, (uint64_t)c->epoch);
  put64(h + H_POS, (uint64_t)c->pos);
  put64(h + H_NPARAMS, (uint64_t)c->n_params);
  put64(h + H_HASH, rt_ckpt_model_hash(m));
  put32(h + H_MOM, (uint32_t)c->has_momentum);
  uint32_t pcrc =
      crc_floats(crc_floats((uint32_t)crc32(0, Z_NULL, 0), c->params, c->n_params), c->momentum, c->n_params);
  put32(h + H_PCRC, pcrc);
  put64(h + H_TIME, (uint64_t)now_ns());
  put32(h + H_HCRC, (uint32_t)crc32(0, h, H_HCRC));
}

/* Of the genuine checkpoints up to step (newer ones would belong to another
 * run, and are not ours to delete), keep the newest `keep`; strays stay. */
static void prune(const char *dir, int64_t step, int keep) {
  entry *es;
  int n;
  if (list_ckpts(dir, 0, &es, &n) != 0)
    return;
  int kept = 0;
  for (int i = 0; i < n; i++) {
    if (!entry_genuine(&es[i]) || entry_step(&es[i]) > step || kept++ < keep)
      continue;
    char old[4400];
    snprintf(old, sizeof old, "%s/%s", dir, es[i].name);
    unlink(old);
  }
  free(es);
}

int rt_ckpt_write(const char *dir, const core_model *m, const rt_ckpt *c, int keep) {
  char path[4400];
  int rc = core_mkdirs(dir);
  if (rc || (rc = rt_ckpt_sweep(dir)) != 0)
    return rc;
  snprintf(path, sizeof path, "%s/ckpt-%08lld.ddpc", dir, (long long)c->step);
  unsigned char h[RT_CKPT_HEADER_BYTES];
  make_header(m, c, h);
  core_afile a;
  if ((rc = core_afile_open_atomic(&a, path)) != 0)
    return core_err_wrap(rc, "writing checkpoint");
  if (fwrite(h, 1, sizeof h, a.f) != sizeof h ||
      fwrite(c->params, sizeof(float), (size_t)c->n_params, a.f) != (size_t)c->n_params ||
      fwrite(c->momentum, sizeof(float), (size_t)c->n_params, a.f) != (size_t)c->n_params) {
    int e = errno ? errno : EIO;
    core_afile_abort(&a);
    return core_err_errno(e, "writing checkpoint '%s' (the previous checkpoint is kept)", path);
  }
  if ((rc = core_afile_commit(&a)) != 0)
    return core_err_wrap(rc, "checkpoint '%s' was not written; the previous one is kept", path);
  /* Only now, with the new one durable, drop the oldest. */
  prune(dir, c->step, keep);
  return 0;
}

/* ---- reading ------------------------------------------------------------------- */

static int check_fits(const char *path, const header *h, const struct stat *st, const core_model *m) {
  if (h->n_params != m->n_params || h->hash != rt_ckpt_model_hash(m))
    return core_err_set(CORE_ECORRUPT,
        "%s: written for a model with %lld parameters of another shape, not '%s' (%lld parameters); use the checkpoint "
        "directory of this model",
        path, (long long)h->n_params, m->name, (long long)m->n_params);
  if (h->pbytes != 2ull * (uint64_t)h->n_params * sizeof(float) ||
      (uint64_t)st->st_size != RT_CKPT_HEADER_BYTES + h->pbytes)
    return core_err_set(CORE_ECORRUPT, "%s: %lld bytes on disk, the header promises %llu (truncated?)", path,
        (long long)st->st_size, (unsigned long long)(RT_CKPT_HEADER_BYTES + h->pbytes));
  return 0;
}

/* Read the payload into scratch; the caller's state changes only if all
 * checks pass. */
static int read_payload(FILE *f, const char *path, const header *h, rt_ckpt *c) {
  int64_t np = h->n_params;
  int rc = 0;
  float *p = malloc(sizeof(float) * (size_t)np), *mo = malloc(sizeof(float) * (size_t)np);
  if (!p || !mo) {
    rc = core_err_set(CORE_ENOMEM, "out of memory reading checkpoint '%s'", path);
  } else if (fread(p, sizeof(float), (size_t)np, f) != (size_t)np ||
             fread(mo, sizeof(float), (size_t)np, f) != (size_t)np) {
    rc = core_err_set(CORE_ECORRUPT, "%s: short read of the payload", path);
  } else if (crc_floats(crc_floats((uint32_t)crc32(0, Z_NULL, 0), p, np), mo, np) != h->pcrc) {
    rc = core_err_set(CORE_ECORRUPT, "%s: payload checksum mismatch (corrupt data)", path);
  } else {
    memcpy(c->params, p, sizeof(float) * (size_t)np);
    memcpy(c->momentum, mo, sizeof(float) * (size_t)np);
    c->n_params = np;
    c->step = h->step;
    c->epoch = h->epoch;
    c->pos = h->pos;
    c->has_momentum = h->has_momentum;
    c->written_ns = h->written_ns;
  }
  free(p);
  free(mo);
  return rc;
}

int rt_ckpt_read(const char *path, const core_model *m, rt_ckpt *c) {
  FILE *f;
  struct stat st;
  header h;
  int rc = open_regular(path, &f, &st);
  if (rc)
    return rc;
  if ((rc = read_header(f, path, &st, &h)) == 0 && (rc = check_fits(path, &h, &st, m)) == 0)
    rc = read_payload(f, path, &h, c);
  fclose(f);
  return rc;
}

int rt_ckpt_load_latest(const char *dir, const core_model *m, rt_ckpt *c, char *path_used, size_t n) {
  entry *es;
  int count, rc = rt_ckpt_sweep(dir);
  if (rc || (rc = list_ckpts(dir, 1, &es, &count)) != 0)
    return rc;
  for (int i = 0; i < count; i++)
    if (!entry_genuine(&es[i]))
      fprintf(stderr,
          "ddpsim: checkpoint '%s/%s' holds step %lld, not the step its name says (a copy?): it counts as step %lld\n",
          dir, es[i].name, (long long)es[i].h.step, (long long)es[i].h.step);
  for (int i = 0; i < count; i++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, es[i].name);
    if ((rc = rt_ckpt_read(path, m, c)) == 0) {
      snprintf(path_used, n, "%s", path);
      free(es);
      return 0;
    }
    fprintf(stderr, "ddpsim: skipping checkpoint: %s\n", core_err_msg());
  }
  free(es);
  if (count)
    return core_err_set(CORE_ECORRUPT,
        "no valid checkpoint in '%s': all %d were rejected (see above); pass the --model they were written for, or "
        "move them out of the directory to start from step 0",
        dir, count);
  return core_err_set(CORE_EINVAL, "no valid checkpoint in '%s'", dir);
}

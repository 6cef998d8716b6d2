#include "ckpt.h"

#include "core/afile.h"
#include "core/err.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static const char MAGIC[8] = {'D', 'D', 'P', 'S', 'I', 'M', 'C', 'K'};

/* Offsets in the header. */
enum {
  H_MAGIC = 0, H_VERSION = 8, H_HBYTES = 12, H_PBYTES = 16, H_STEP = 24, H_EPOCH = 32,
  H_POS = 40, H_NPARAMS = 48, H_HASH = 56, H_MOM = 64, H_PCRC = 68, H_HCRC = 72
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

/* Checkpoint files sorted newest first; names ckpt-<step>.ddpc. */
typedef struct entry {
  long long step;
  char name[256];
} entry;

static int by_step_desc(const void *a, const void *b) {
  long long x = ((const entry *)a)->step, y = ((const entry *)b)->step;
  return x < y ? 1 : x > y ? -1 : 0;
}

static int list_ckpts(const char *dir, entry **out, int *n) {
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
    char tail[8];
    if (sscanf(de->d_name, "ckpt-%lld.ddp%7s", &step, tail) != 2 || strcmp(tail, "c") != 0 ||
        strlen(de->d_name) >= sizeof((*out)->name))
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
    (*out)[*n].step = step;
    snprintf((*out)[*n].name, sizeof (*out)[*n].name, "%s", de->d_name);
    (*n)++;
  }
  closedir(d);
  if (*n > 1) /* qsort's base must not be NULL, even for 0 elements */
    qsort(*out, (size_t)*n, sizeof **out, by_step_desc);
  return 0;
}

int rt_ckpt_write(const char *dir, const core_model *m, const rt_ckpt *c, int keep) {
  char path[4400];
  int rc = core_mkdirs(dir);
  if (rc)
    return rc;
  snprintf(path, sizeof path, "%s/ckpt-%08lld.ddpc", dir, (long long)c->step);
  unsigned char h[RT_CKPT_HEADER_BYTES] = {0};
  uint64_t pbytes = 2ull * (uint64_t)c->n_params * sizeof(float);
  memcpy(h + H_MAGIC, MAGIC, sizeof MAGIC);
  put32(h + H_VERSION, RT_CKPT_VERSION);
  put32(h + H_HBYTES, RT_CKPT_HEADER_BYTES);
  put64(h + H_PBYTES, pbytes);
  put64(h + H_STEP, (uint64_t)c->step);
  put64(h + H_EPOCH, (uint64_t)c->epoch);
  put64(h + H_POS, (uint64_t)c->pos);
  put64(h + H_NPARAMS, (uint64_t)c->n_params);
  put64(h + H_HASH, rt_ckpt_model_hash(m));
  put32(h + H_MOM, (uint32_t)c->has_momentum);
  uint32_t pcrc = crc_floats(crc_floats((uint32_t)crc32(0, Z_NULL, 0), c->params, c->n_params),
                             c->momentum, c->n_params);
  put32(h + H_PCRC, pcrc);
  put32(h + H_HCRC, (uint32_t)crc32(0, h, H_HCRC));

  core_afile a;
  if ((rc = core_afile_open(&a, path)) != 0)
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

  /* Only now, with the new one durable, drop the oldest: of the
   * checkpoints up to this one (newer ones would belong to another run,
   * and are not ours to delete), keep the newest `keep`. */
  entry *es;
  int n;
  if (list_ckpts(dir, &es, &n) == 0) {
    int kept = 0;
    for (int i = 0; i < n; i++) {
      if (es[i].step > c->step || kept++ < keep)
        continue;
      char old[4400];
      snprintf(old, sizeof old, "%s/%s", dir, es[i].name);
      unlink(old);
    }
    free(es);
  }
  return 0;
}

int rt_ckpt_read(const char *path, const core_model *m, rt_ckpt *c) {
  unsigned char h[RT_CKPT_HEADER_BYTES];
  int rc = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return core_err_errno(errno, "cannot open checkpoint '%s'", path);
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    rc = core_err_errno(errno, "cannot stat checkpoint '%s'", path);
    goto out_close;
  }
  if (fread(h, 1, sizeof h, f) != sizeof h) {
    rc = core_err_set(CORE_ECORRUPT, "%s: truncated header (%lld bytes, need %d)", path, (long long)st.st_size,
                      RT_CKPT_HEADER_BYTES);
    goto out_close;
  }
  if (memcmp(h + H_MAGIC, MAGIC, sizeof MAGIC) != 0) {
    rc = core_err_set(CORE_ECORRUPT, "%s: not a ddpsim checkpoint (bad magic)", path);
    goto out_close;
  }
  if (get32(h + H_HCRC) != (uint32_t)crc32(0, h, H_HCRC)) {
    rc = core_err_set(CORE_ECORRUPT, "%s: header checksum mismatch (corrupt header)", path);
    goto out_close;
  }
  /* The padding after the header CRC is covered by no checksum: the writer
   * leaves it zero, so anything else there is damage. */
  for (int i = H_HCRC + 4; i < RT_CKPT_HEADER_BYTES; i++)
    if (h[i] != 0) {
      rc = core_err_set(CORE_ECORRUPT, "%s: header padding byte %d is not zero (corrupt header)", path, i);
      goto out_close;
    }
  if (get32(h + H_VERSION) != RT_CKPT_VERSION || get32(h + H_HBYTES) != RT_CKPT_HEADER_BYTES) {
    rc = core_err_set(CORE_ECORRUPT, "%s: version %u, this ddpsim reads version %d", path, get32(h + H_VERSION),
                      RT_CKPT_VERSION);
    goto out_close;
  }
  int64_t np = (int64_t)get64(h + H_NPARAMS);
  uint64_t pbytes = get64(h + H_PBYTES);
  if (np != m->n_params || get64(h + H_HASH) != rt_ckpt_model_hash(m)) {
    rc = core_err_set(CORE_ECORRUPT, "%s: written for a model with %lld parameters of another shape, not '%s' (%lld parameters); use the checkpoint directory of this model",
                      path, (long long)np, m->name, (long long)m->n_params);
    goto out_close;
  }
  if (pbytes != 2ull * (uint64_t)np * sizeof(float) ||
      (uint64_t)st.st_size != RT_CKPT_HEADER_BYTES + pbytes) {
    rc = core_err_set(CORE_ECORRUPT, "%s: %lld bytes on disk, the header promises %llu (truncated?)", path,
                      (long long)st.st_size, (unsigned long long)(RT_CKPT_HEADER_BYTES + pbytes));
    goto out_close;
  }
  /* Read into scratch; the caller's state changes only if all checks pass. */
  float *p = malloc(sizeof(float) * (size_t)np), *mo = malloc(sizeof(float) * (size_t)np);
  if (!p || !mo) {
    free(p);
    free(mo);
    rc = core_err_set(CORE_ENOMEM, "out of memory reading checkpoint '%s'", path);
    goto out_close;
  }
  if (fread(p, sizeof(float), (size_t)np, f) != (size_t)np || fread(mo, sizeof(float), (size_t)np, f) != (size_t)np) {
    rc = core_err_set(CORE_ECORRUPT, "%s: short read of the payload", path);
  } else if (crc_floats(crc_floats((uint32_t)crc32(0, Z_NULL, 0), p, np), mo, np) != get32(h + H_PCRC)) {
    rc = core_err_set(CORE_ECORRUPT, "%s: payload checksum mismatch (corrupt data)", path);
  } else {
    memcpy(c->params, p, sizeof(float) * (size_t)np);
    memcpy(c->momentum, mo, sizeof(float) * (size_t)np);
    c->n_params = np;
    c->step = (int64_t)get64(h + H_STEP);
    c->epoch = (int64_t)get64(h + H_EPOCH);
    c->pos = (int64_t)get64(h + H_POS);
    c->has_momentum = (int)get32(h + H_MOM);
  }
  free(p);
  free(mo);
out_close:
  fclose(f);
  return rc;
}

int rt_ckpt_load_latest(const char *dir, const core_model *m, rt_ckpt *c, char *path_used,
                        size_t n) {
  entry *es;
  int count, rc = list_ckpts(dir, &es, &count);
  if (rc)
    return rc;
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
  return core_err_set(CORE_EINVAL, "no valid checkpoint in '%s'%s", dir,
                      count ? " (all were rejected; see above)" : "");
}

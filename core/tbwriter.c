/* tbwriter — TensorBoard event files (core/tbwriter.h). */
#include "tbwriter.h"

#include "afile.h"
#include "err.h"
#include "isal.h"

#include "tbevent.pb-c.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- records ------------------------------------------------------------------ */

int core_tb_crc32c(const void *p, size_t n, uint32_t *crc) { return core_isal_crc32c(p, n, crc); }

uint32_t core_tb_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

static void put_le(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static int reserve(core_tb_buf *b, size_t more) {
  if (b->n + more <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->n + more)
    cap *= 2;
  unsigned char *p = realloc(b->p, cap);
  if (!p)
    return core_err_set(CORE_ENOMEM, "out of memory for %zu bytes of TensorBoard events", cap);
  b->p = p;
  b->cap = cap;
  return 0;
}

void core_tb_buf_free(core_tb_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* Append ev as one record: header, packed event, CRC. */
static int put_event(core_tb_buf *b, const Tb__Event *ev) {
  size_t len = tb__event__get_packed_size(ev);
  int rc = reserve(b, len + CORE_TB_RECORD_OVERHEAD);
  if (rc)
    return rc;
  unsigned char *h = b->p + b->n;
  uint32_t crc = 0;
  put_le(h, len, 8);
  if ((rc = core_tb_crc32c(h, 8, &crc)) != 0)
    return rc;
  put_le(h + 8, core_tb_mask(crc), 4);
  size_t packed = tb__event__pack(ev, h + 12);
  if (packed != len)
    return core_err_set(CORE_EINTERNAL, "protobuf-c packed %zu bytes of an event it sized at %zu", packed, len);
  if ((rc = core_tb_crc32c(h + 12, len, &crc)) != 0)
    return rc;
  put_le(h + 12 + len, core_tb_mask(crc), 4);
  b->n += len + CORE_TB_RECORD_OVERHEAD;
  return 0;
}

int core_tb_put_version(core_tb_buf *b, double wall_time) {
  Tb__Event ev = TB__EVENT__INIT;
  ev.wall_time = wall_time;
  ev.what_case = TB__EVENT__WHAT_FILE_VERSION;
  ev.file_version = (char *)CORE_TB_FILE_VERSION;
  return put_event(b, &ev);
}

int core_tb_put_scalars(core_tb_buf *b, double wall_time, int64_t step, const core_tb_scalar *v, int n) {
  Tb__Summary__Value *vals = calloc((size_t)(n > 0 ? n : 1), sizeof *vals);
  Tb__Summary__Value **ptrs = calloc((size_t)(n > 0 ? n : 1), sizeof *ptrs);
  int rc = 0;
  if (!vals || !ptrs) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %d TensorBoard scalars", n);
    goto free_values;
  }
  for (int i = 0; i < n; i++) {
    tb__summary__value__init(&vals[i]);
    vals[i].tag = (char *)v[i].tag;
    vals[i].value_case = TB__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
    vals[i].simple_value = (float)v[i].value;
    ptrs[i] = &vals[i];
  }
  Tb__Summary sum = TB__SUMMARY__INIT;
  sum.n_value = (size_t)n;
  sum.value = ptrs;
  Tb__Event ev = TB__EVENT__INIT;
  ev.wall_time = wall_time;
  ev.step = step;
  ev.what_case = TB__EVENT__WHAT_SUMMARY;
  ev.summary = &sum;
  rc = put_event(b, &ev);
free_values:
  free(ptrs);
  free(vals);
  return rc;
}

int core_tb_put_start(core_tb_buf *b, double wall_time, int64_t step, const char *msg) {
  Tb__SessionLog sl = TB__SESSION_LOG__INIT;
  sl.status = TB__SESSION_LOG__SESSION_STATUS__START;
  sl.msg = (char *)(msg ? msg : "");
  Tb__Event ev = TB__EVENT__INIT;
  ev.wall_time = wall_time;
  ev.step = step;
  ev.what_case = TB__EVENT__WHAT_SESSION_LOG;
  ev.session_log = &sl;
  return put_event(b, &ev);
}

int core_tb_record(const unsigned char *p, size_t n, const unsigned char **data, size_t *len, size_t *used) {
  uint32_t crc = 0;
  int rc;
  if (n < 12)
    return 1;
  if ((rc = core_tb_crc32c(p, 8, &crc)) != 0)
    return rc;
  if ((uint32_t)get_le(p + 8, 4) != core_tb_mask(crc))
    return core_err_set(CORE_ECORRUPT, "the length of a record fails its CRC-32C");
  uint64_t l = get_le(p, 8);
  if (l > n - 12 || n - 12 - l < 4)
    return 1;
  if ((rc = core_tb_crc32c(p + 12, (size_t)l, &crc)) != 0)
    return rc;
  if ((uint32_t)get_le(p + 12 + l, 4) != core_tb_mask(crc))
    return core_err_set(CORE_ECORRUPT, "the data of a record of %llu bytes fails its CRC-32C", (unsigned long long)l);
  *data = p + 12;
  *len = (size_t)l;
  *used = (size_t)l + CORE_TB_RECORD_OVERHEAD;
  return 0;
}

/* ---- files ---------------------------------------------------------------------- */

int core_tb_newest(const char *dir, char *path, size_t n) {
  DIR *d = opendir(dir);
  if (!d)
    return errno == ENOENT ? 1 : core_err_errno(errno, "cannot list '%s'", dir);
  char best[1024] = "";
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, CORE_TB_PREFIX, strlen(CORE_TB_PREFIX)) != 0 || strlen(e->d_name) >= sizeof best)
      continue;
    if (!best[0] || strcmp(e->d_name, best) > 0)
      snprintf(best, sizeof best, "%s", e->d_name);
  }
  closedir(d);
  if (!best[0])
    return 1;
  if ((size_t)snprintf(path, n, "%s/%s", dir, best) >= n)
    return core_err_set(CORE_EUSAGE, "the path of '%s' in '%s' is too long", best, dir);
  return 0;
}

/* Fill buf[have..cap) from the file at offset base + have; *got bytes. */
static int fill(int fd, const char *path, unsigned char *buf, size_t have, size_t cap, int64_t base, size_t *got) {
  *got = 0;
  for (;;) {
    ssize_t r = pread(fd, buf + have, cap - have, (off_t)(base + (int64_t)have));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return core_err_errno(errno, "cannot read '%s'", path);
    *got = (size_t)r;
    return 0;
  }
}

/* The end of the last whole, valid record of the file open as fd (size
 * bytes), read through a window that grows to the largest record. */
static int scan(int fd, const char *path, int64_t size, int64_t *valid, int *damaged) {
  size_t cap = 1 << 20, have = 0, pos = 0, got;
  int64_t base = 0;
  int rc = 0;
  unsigned char *buf = malloc(cap);
  *valid = 0;
  *damaged = 0;
  if (!buf)
    return core_err_set(CORE_ENOMEM, "out of memory reading '%s'", path);
  for (;;) {
    const unsigned char *data;
    size_t len, used;
    int r = core_tb_record(buf + pos, have - pos, &data, &len, &used);
    if (r == 0) {
      pos += used;
      continue;
    }
    if (r < 0) {
      *damaged = 1; /* a checksum fails: damage, not a write cut short */
      break;
    }
    if (base + (int64_t)have >= size)
      break;
    memmove(buf, buf + pos, have - pos);
    base += (int64_t)pos;
    have -= pos;
    pos = 0;
    uint64_t need = have >= 12 ? get_le(buf, 8) + CORE_TB_RECORD_OVERHEAD : 12;
    if (need > (uint64_t)(size - base))
      break; /* a record cut short: the file ends inside it */
    if (need > cap) {
      unsigned char *p = realloc(buf, (size_t)need);
      if (!p) {
        rc = core_err_set(
            CORE_ENOMEM, "out of memory for a record of %llu bytes in '%s'", (unsigned long long)need, path);
        goto free_buf;
      }
      buf = p;
      cap = (size_t)need;
    }
    if ((rc = fill(fd, path, buf, have, cap, base, &got)) != 0)
      goto free_buf;
    if (got == 0)
      break;
    have += got;
  }
  core_err_clear();
  *valid = base + (int64_t)pos;
free_buf:
  free(buf);
  return rc;
}

/* Open an existing event file to append: a regular file, checked, cut. */
static int open_existing(core_tb_log *l, int64_t *cut) {
  int rc = core_afile_check(l->path);
  if (rc)
    return rc;
  l->fd = open(l->path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (l->fd < 0)
    return core_err_errno(errno, "cannot open the event file '%s' to append to it", l->path);
  struct stat st;
  if (fstat(l->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    rc = core_err_set(
        CORE_EUSAGE, "'%s' is not a regular file: an event file cannot continue in it; move it away", l->path);
    goto close_fd;
  }
  int64_t valid = 0;
  int damaged;
  if ((rc = scan(l->fd, l->path, (int64_t)st.st_size, &valid, &damaged)) != 0)
    goto close_fd;
  if (damaged) {
    /* Cutting would lose every record after the damage: leave it. */
    l->damaged_at = valid;
    goto close_fd;
  }
  if (valid < (int64_t)st.st_size && ftruncate(l->fd, (off_t)valid) != 0) {
    rc = core_err_errno(errno, "cannot cut the torn last record of '%s'", l->path);
    goto close_fd;
  }
  if (cut)
    *cut = (int64_t)st.st_size - valid;
  l->size = valid;
  return 0;
close_fd:
  close(l->fd);
  l->fd = -1;
  return rc;
}

int core_tb_log_open(core_tb_log *l, const char *dir, const char *tail, int append, int64_t *cut) {
  memset(l, 0, sizeof *l);
  l->fd = -1;
  l->damaged_at = -1;
  if (cut)
    *cut = 0;
  if (append) {
    int found = core_tb_newest(dir, l->path, sizeof l->path);
    if (found < 0)
      return found;
    if (found == 0) {
      int rc = open_existing(l, cut);
      if (rc || l->damaged_at < 0)
        return rc;
      snprintf(l->damaged, sizeof l->damaged, "%s", l->path);
    }
  }
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  if ((size_t)snprintf(l->path, sizeof l->path, "%s/" CORE_TB_PREFIX "%010lld.%s.%s", dir, (long long)time(NULL), host,
          tail) >= sizeof l->path)
    return core_err_set(CORE_EUSAGE, "the event file's path in '%s' is too long", dir);
  int rc = core_afile_check(l->path);
  if (rc)
    return rc;
  l->fd = open(l->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (l->fd < 0)
    return core_err_errno(errno, "cannot create the event file '%s'", l->path);
  return 0;
}

int core_tb_log_write(core_tb_log *l, const core_tb_buf *b) {
  size_t done = 0;
  while (done < b->n) {
    ssize_t w = pwrite(l->fd, b->p + done, b->n - done, (off_t)(l->size + (int64_t)done));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int e = w < 0 ? errno : ENOSPC;
      /* Whole records only: what this write put there goes again. */
      if (done > 0 && ftruncate(l->fd, (off_t)l->size) != 0)
        return core_err_errno(errno, "cannot cut a partly written record from '%s'", l->path);
      return core_err_errno(e, "writing %zu bytes of events to '%s'", b->n, l->path);
    }
    done += (size_t)w;
  }
  l->size += (int64_t)b->n;
  return 0;
}

int core_tb_log_close(core_tb_log *l) {
  if (l->fd < 0)
    return 0;
  int rc = 0;
  if (fsync(l->fd) != 0)
    rc = core_err_errno(errno, "cannot sync the event file '%s'", l->path);
  if (close(l->fd) != 0 && !rc)
    rc = core_err_errno(errno, "cannot close the event file '%s'", l->path);
  l->fd = -1;
  return rc;
}

int core_tb_write_file(const char *path, const core_tb_buf *b) {
  core_afile a;
  int rc = core_afile_open(&a, path);
  if (rc)
    return rc;
  if (b->n && fwrite(b->p, 1, b->n, a.f) != b->n) {
    int e = errno ? errno : EIO;
    core_afile_abort(&a);
    return core_err_errno(e, "writing events to '%s'", path);
  }
  return core_afile_commit(&a);
}

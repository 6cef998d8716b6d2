#include "kineto.h"
#include "kineto_int.h"

#include "core/afile.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/path.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (1 << 18) /* bytes decompressed and parsed at a time */

/* Where in the text the parse is: line and column, both from 1. */
typedef struct kpos {
  long line, col;
} kpos;

static void advance(kpos *at, const unsigned char *b, size_t n) {
  const unsigned char *end = b + n, *nl;
  while ((nl = memchr(b, '\n', (size_t)(end - b))) != NULL) {
    at->line++;
    at->col = 1;
    b = nl + 1;
  }
  at->col += (long)(end - b);
}

static int json_error(const cal_kfile *f, yajl_handle h, kpos at, int at_end) {
  unsigned char *m = yajl_get_error(h, 0, NULL, 0);
  char msg[160];
  snprintf(msg, sizeof msg, "%s", m ? (const char *)m : "parse error");
  yajl_free_error(h, m);
  msg[strcspn(msg, "\n")] = '\0';
  if (at_end)
    return core_err_set(CORE_EINVAL,
        "%s:%ld:%ld: not valid JSON: the text ends before the JSON does (%s); the trace was cut short: export or copy "
        "it again",
        f->path, at.line, at.col, msg);
  return core_err_set(CORE_EINVAL,
      "%s:%ld:%ld: not valid JSON (%s); expected a Chrome trace from torch.profiler (prof.export_chrome_trace(path))",
      f->path, at.line, at.col, msg);
}

/* Who reports reads that run long (cal_ktrace_progress); NULL: nobody. */
static _Atomic(const char *) progress_who;
static _Atomic double progress_after_s;

void cal_ktrace_progress(const char *who, double after_s) {
  progress_after_s = after_s;
  progress_who = who;
}

/* How far the read of f is, on stderr when it is due. */
static void progress(cal_kfile *f) {
  double now = core_now();
  if (!core_progress_due(&f->pr, now))
    return;
  z_off_t off = gzoffset(f->g); /* -1 through a pipe, which has no offset: the text read so far */
  double at = (double)(off >= 0 ? off : gztell(f->g)), of = (double)f->bytes;
  char size[64] = "";
  if (of > 0) /* not a pipe */
    snprintf(size, sizeof size, " of %.0f MB (%.0f%%)", of / 1e6, 100.0 * fmin(at / of, 1.0));
  core_progress_line(&f->pr, now, "%s: reading %s, %.0f MB%s, %.0f s", progress_who, core_path_base(f->path), at / 1e6,
      size, now - f->pr.t0);
}

/* Decompress (or copy) f through YAJL. */
int cal_kfile_parse(cal_kfile *f, yajl_handle h, const int *cancel_rc) {
  kpos at = {1, 1};
  size_t total = 0;
  for (;;) {
    int k = gzread(f->g, f->buf, CHUNK);
    int zerr = Z_OK;
    const char *zmsg = k <= 0 ? gzerror(f->g, &zerr) : NULL;
    if (zmsg && !strncmp(zmsg, "<fd:", 4) && strstr(zmsg, ": ")) /* gzdopen names the file so */
      zmsg = strstr(zmsg, ": ") + 2;
    if (zerr == Z_ERRNO)
      return core_err_errno(errno ? errno : EIO, "reading trace '%s'", f->path);
    if (zerr == Z_BUF_ERROR)
      return core_err_set(CORE_EINVAL,
          "%s: the gzip stream ends early (%s): the file is truncated; copy or export it again", f->path, zmsg);
    if (k < 0 || (zerr != Z_OK && zerr != Z_STREAM_END))
      return core_err_set(CORE_EINVAL,
          "%s: cannot decompress the trace (%s); it is a damaged .gz file, export it again", f->path,
          zmsg ? zmsg : "read error");
    if (k == 0)
      break;
    yajl_status st = yajl_parse(h, f->buf, (size_t)k);
    if (st == yajl_status_client_canceled)
      return *cancel_rc;
    if (st != yajl_status_ok) {
      advance(&at, f->buf, yajl_get_bytes_consumed(h));
      return json_error(f, h, at, 0);
    }
    advance(&at, f->buf, (size_t)k);
    total += (size_t)k;
    progress(f);
  }
  if (total == 0)
    return core_err_set(CORE_EINVAL, "%s: the file is empty; expected a Chrome trace from torch.profiler", f->path);
  yajl_status st = yajl_complete_parse(h);
  if (st == yajl_status_client_canceled)
    return *cancel_rc;
  return st == yajl_status_ok ? 0 : json_error(f, h, at, 1);
}

/* Open path for gzread: gzip or plain, told by the magic bytes. */
static int open_trace(const char *path, gzFile *g, int64_t *bytes) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) /* a path that leads nowhere is bad input; only real I/O trouble is not */
    return core_err_set(errno == EIO || errno == ENOMEM || errno == EMFILE || errno == ENFILE ? CORE_EIO : CORE_EINVAL,
        "cannot open trace '%s': %s (check the path)", path, strerror(errno));
  struct stat sb = {0};
  unsigned char magic[2] = {0, 0};
  if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    close(fd);
    return core_err_set(CORE_EINVAL, "%s: a directory, not a trace; give the trace file", path);
  }
  *bytes = sb.st_size;
  core_afile_note_input(path); /* by name: a refused output then names it */
  ssize_t r = pread(fd, magic, 2, 0);
  int gz = r == 2 && magic[0] == 0x1f && magic[1] == 0x8b; /* RFC 1952, 2.3.1 */
  size_t len = strlen(path);
  if (!gz && len > 3 && !strcmp(path + len - 3, ".gz")) {
    close(fd);
    return core_err_set(CORE_EINVAL,
        "%s: named .gz but not gzip-compressed (it does not start with the gzip magic bytes 1f 8b); rename it, or "
        "compress it with gzip",
        path);
  }
  if (!(*g = gzdopen(fd, "rb"))) {
    close(fd);
    return core_err_set(CORE_ENOMEM, "out of memory opening %s", path);
  }
  gzbuffer(*g, CHUNK);
  return 0;
}

int cal_kfile_open(cal_kfile *f, const char *path) {
  memset(f, 0, sizeof *f);
  f->path = path;
  int rc = open_trace(path, &f->g, &f->bytes);
  if (rc)
    return rc;
  const char *who = progress_who;
  core_progress_start(&f->pr, who != NULL, progress_after_s);
  if (!(f->buf = malloc(CHUNK))) {
    cal_kfile_close(f);
    return core_err_set(CORE_ENOMEM, "out of memory reading %s", path);
  }
  return 0;
}

void cal_kfile_close(cal_kfile *f) {
  core_progress_end(&f->pr);
  free(f->buf);
  f->buf = NULL;
  if (f->g)
    gzclose(f->g);
  f->g = NULL;
}

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

#define CHUNK (1 << 18) /* bytes read, and decompressed and parsed, at a time */

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
  double at = (double)f->read_bytes, of = (double)f->bytes;
  char size[64] = "";
  if (of > 0) /* not a pipe */
    snprintf(size, sizeof size, " of %.0f MB (%.0f%%)", of / 1e6, 100.0 * fmin(at / of, 1.0));
  core_progress_line(&f->pr, now, "%s: reading %s, %.0f MB%s, %.0f s", progress_who, core_path_base(f->path), at / 1e6,
      size, now - f->pr.t0);
}

/* More of the file into f->in, after the bytes of it not yet used. */
static int fill(cal_kfile *f) {
  size_t have = f->z.avail_in;
  if (f->eof || have == CHUNK)
    return 0;
  if (have && f->z.next_in != f->in)
    memmove(f->in, f->z.next_in, have);
  ssize_t r;
  do
    r = read(f->fd, f->in + have, CHUNK - have);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return core_err_errno(errno, "reading trace '%s'", f->path);
  f->eof = r == 0;
  f->read_bytes += r;
  f->z.next_in = f->in;
  f->z.avail_in = (uInt)(have + (size_t)r);
  return 0;
}

/* At least want unused bytes in f->in, or all the file has left. */
static int fill_to(cal_kfile *f, size_t want) {
  int rc = 0;
  while (rc == 0 && f->z.avail_in < want && !f->eof)
    rc = fill(f);
  return rc;
}

static int starts_gzip(const cal_kfile *f) {
  return f->z.avail_in >= 2 && f->z.next_in[0] == 0x1f && f->z.next_in[1] == 0x8b; /* RFC 1952, 2.3.1 */
}

/* After a member's end: the next member, or the end of the file (*end). */
static int next_member(cal_kfile *f, int *end) {
  int rc = fill_to(f, 2);
  if (rc || (*end = f->z.avail_in == 0) != 0)
    return rc;
  if (!starts_gzip(f))
    return core_err_set(CORE_EINVAL,
        "%s: trailing bytes after the gzip stream, from byte %lld, are not gzip data: the file was damaged or "
        "something was appended to it; copy or export it again",
        f->path, (long long)(f->read_bytes - f->z.avail_in));
  return inflateReset(&f->z) == Z_OK ? 0 : core_err_set(CORE_EINVAL, "%s: cannot decompress the trace", f->path);
}

/* Up to CHUNK bytes of text into f->buf (*k; 0 at the end): inflated
 * member after member. */
static int inflate_chunk(cal_kfile *f, size_t *k, int *member_end) {
  int rc = 0, end = 0;
  f->z.next_out = f->buf;
  f->z.avail_out = CHUNK;
  while (rc == 0 && !end && f->z.avail_out == CHUNK) {
    if (*member_end) {
      if ((rc = next_member(f, &end)) != 0 || end)
        break;
      *member_end = 0;
    }
    if ((rc = fill_to(f, 1)) != 0)
      break;
    if (f->z.avail_in == 0)
      return core_err_set(CORE_EINVAL,
          "%s: the gzip stream ends early (unexpected end of file): the file is truncated; copy or export it again",
          f->path);
    int zr = inflate(&f->z, Z_NO_FLUSH);
    if (zr == Z_STREAM_END)
      *member_end = 1;
    else if (zr == Z_MEM_ERROR)
      rc = core_err_set(CORE_ENOMEM, "out of memory decompressing %s", f->path);
    else if (zr != Z_OK && zr != Z_BUF_ERROR)
      rc = core_err_set(CORE_EINVAL, "%s: cannot decompress the trace (%s); it is a damaged .gz file, export it again",
          f->path, f->z.msg ? f->z.msg : "data error");
  }
  *k = CHUNK - f->z.avail_out;
  return rc;
}

/* The next chunk of text (*k bytes at *data; 0 at the end). */
static int next_chunk(cal_kfile *f, const unsigned char **data, size_t *k, int *member_end) {
  if (f->gz) {
    *data = f->buf;
    return inflate_chunk(f, k, member_end);
  }
  int rc = fill_to(f, 1);
  *data = f->z.next_in;
  *k = rc ? 0 : f->z.avail_in;
  f->z.avail_in = 0;
  return rc;
}

/* Decompress (or copy) f through YAJL. */
int cal_kfile_parse(cal_kfile *f, yajl_handle h, const int *cancel_rc) {
  kpos at = {1, 1};
  size_t total = 0, k = 0;
  int member_end = 0, rc;
  const unsigned char *data;
  while ((rc = next_chunk(f, &data, &k, &member_end)) == 0 && k > 0) {
    yajl_status st = yajl_parse(h, data, k);
    if (st == yajl_status_client_canceled)
      return *cancel_rc;
    if (st != yajl_status_ok) {
      advance(&at, data, yajl_get_bytes_consumed(h));
      return json_error(f, h, at, 0);
    }
    advance(&at, data, k);
    total += k;
    progress(f);
  }
  if (rc)
    return rc;
  if (total == 0)
    return core_err_set(CORE_EINVAL, "%s: the file is empty; expected a Chrome trace from torch.profiler", f->path);
  yajl_status st = yajl_complete_parse(h);
  if (st == yajl_status_client_canceled)
    return *cancel_rc;
  return st == yajl_status_ok ? 0 : json_error(f, h, at, 1);
}

/* Open f->path and read its first bytes: gzip or plain, told by the magic
 * bytes (a pipe too). */
static int open_trace(cal_kfile *f) {
  const char *path = f->path;
  f->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (f->fd < 0)
    return core_err_open(errno, "cannot open trace '%s'", path);
  struct stat sb = {0};
  if (fstat(f->fd, &sb) == 0 && S_ISDIR(sb.st_mode))
    return core_err_set(CORE_EINVAL, "%s: a directory, not a trace; give the trace file", path);
  f->bytes = sb.st_size;
  core_afile_note_input(path); /* by name: a refused output then names it */
  int rc = fill_to(f, 2);
  if (rc)
    return rc;
  f->gz = starts_gzip(f);
  size_t len = strlen(path);
  if (!f->gz && len > 3 && !strcmp(path + len - 3, ".gz"))
    return core_err_set(CORE_EINVAL,
        "%s: named .gz but not gzip-compressed (it does not start with the gzip magic bytes 1f 8b); rename it, or "
        "compress it with gzip",
        path);
  if (f->gz) {
    if (inflateInit2(&f->z, 15 + 16) != Z_OK) /* 15 + 16: the largest window, a gzip header (zlib.h) */
      return core_err_set(CORE_ENOMEM, "out of memory opening %s", path);
    f->z_live = 1;
  }
  return 0;
}

int cal_kfile_open(cal_kfile *f, const char *path) {
  memset(f, 0, sizeof *f);
  f->path = path;
  f->fd = -1;
  if (!(f->in = malloc(CHUNK)) || !(f->buf = malloc(CHUNK))) {
    cal_kfile_close(f);
    return core_err_set(CORE_ENOMEM, "out of memory reading %s", path);
  }
  int rc = open_trace(f);
  if (rc) {
    cal_kfile_close(f);
    return rc;
  }
  const char *who = progress_who;
  core_progress_start(&f->pr, who != NULL, progress_after_s);
  return 0;
}

void cal_kfile_close(cal_kfile *f) {
  core_progress_end(&f->pr);
  if (f->z_live)
    inflateEnd(&f->z);
  f->z_live = 0;
  free(f->buf);
  free(f->in);
  f->buf = f->in = NULL;
  if (f->fd >= 0)
    close(f->fd);
  f->fd = -1;
}

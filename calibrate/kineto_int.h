/*
 * kineto_int — the trace file under kineto's parse (internal to
 * calibrate/kineto.c and calibrate/kineto_file.c): opening it, gzip or plain
 * told by the magic bytes; feeding it through YAJL in chunks, with the line
 * and column of text that is not JSON; and the report of a read that runs
 * long (cal_ktrace_progress). A gzip file may hold several members one after
 * the other (RFC 1952, 2.2), all read; bytes after the last that are not a
 * member are refused (gzread would drop them without a word).
 */
#ifndef CALIBRATE_KINETO_INT_H
#define CALIBRATE_KINETO_INT_H

#include "core/progress.h"

#include <yajl/yajl_parse.h>
#include <zlib.h>

#include <stdint.h>

/* A trace file being read. */
typedef struct cal_kfile {
  const char *path;
  int fd;             /* -1: closed */
  int gz;             /* gzip (inflated through z), else plain text */
  int z_live;         /* z initialised: inflateEnd owed */
  int eof;            /* the file's bytes all read into in */
  z_stream z;         /* its next_in/avail_in: the bytes of in not yet used */
  int64_t bytes;      /* the file's size, for progress */
  int64_t read_bytes; /* bytes read from the file so far */
  unsigned char *in, *buf;
  core_progress pr;
} cal_kfile;

/* Open path (f zeroed first) and start its progress report. 0, or a negative
 * core_err code with the message set and nothing left open. */
int cal_kfile_open(cal_kfile *f, const char *path);
/* Feed the whole file through h. When a callback cancels the parse, the
 * error it recorded, *cancel_rc. */
int cal_kfile_parse(cal_kfile *f, yajl_handle h, const int *cancel_rc);
void cal_kfile_close(cal_kfile *f);

#endif

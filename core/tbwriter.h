/*
 * tbwriter — TensorBoard event files, written by `ddpsim train --tensorboard`
 * (a streamed log per rank) and `ddpsim simulate --tensorboard` (whole files).
 *
 * A file is a sequence of records in TensorFlow's format
 * (tensorflow/core/lib/io/record_writer.cc, RecordWriter::WriteRecord): the
 * data's length as a little-endian u64, the masked CRC-32C of those 8 bytes
 * (u32), the data, the masked CRC-32C of the data (u32). Each record's data
 * is one Event message (core/tbevent.proto, encoded with protobuf-c): the
 * first gives the file version "brain.Event:2", the others hold scalars
 * (Summary.Value.simple_value, a float32 as TensorBoard stores them) or a
 * SessionLog START, TensorBoard's restart marker: its reader drops the
 * events of steps at and after it that an earlier attempt wrote, so replayed
 * steps show once. CRC-32C comes from ISA-L (crc32_iscsi).
 *
 * A streamed log grows by whole records only: a failed write (a full disk) is
 * cut back to the last whole record, and a file reopened to append is first
 * checked record by record and cut after its last whole one (a writer killed
 * mid-record), so a reader always gets every record up to the last one
 * written. Logs are regular files created in the directory given; they never
 * follow a symlink, replace a special file or write over an input.
 */
#ifndef CORE_TBWRITER_H
#define CORE_TBWRITER_H

#include <stddef.h>
#include <stdint.h>

/* The prefix TensorBoard looks for (it loads files whose name holds
 * "tfevents"; TensorFlow names them events.out.tfevents.TIME.HOST...). */
#define CORE_TB_PREFIX "events.out.tfevents."
/* Event.file_version of TensorFlow's event writer
 * (tensorflow/core/util/events_writer.cc, kVersionPrefix "brain.Event:" and
 * kCurrentVersion 2). */
#define CORE_TB_FILE_VERSION "brain.Event:2"
/* Bytes of a record around its data: length, its CRC, the data's CRC. */
#define CORE_TB_RECORD_OVERHEAD 16

typedef struct core_tb_scalar {
  const char *tag; /* "Train/Loss" */
  double value;    /* stored as float32 */
} core_tb_scalar;

/* Records built in memory, then written at once. */
typedef struct core_tb_buf {
  unsigned char *p;
  size_t n, cap;
} core_tb_buf;

void core_tb_buf_free(core_tb_buf *b);

/* Append one record to b: the file-version event, an event of n scalars at
 * step, or a SessionLog START at step with msg. */
int core_tb_put_version(core_tb_buf *b, double wall_time);
int core_tb_put_scalars(core_tb_buf *b, double wall_time, int64_t step, const core_tb_scalar *v, int n);
int core_tb_put_start(core_tb_buf *b, double wall_time, int64_t step, const char *msg);

/* CRC-32C of p[0..n) into *crc, and the mask TensorFlow stores
 * (tensorflow/tsl/lib/hash/crc32c.h, Mask: rotate right by 15, add
 * 0xa282ead8). The CRC is core_isal_crc32c's (core/isal.h). */
int core_tb_crc32c(const void *p, size_t n, uint32_t *crc);
uint32_t core_tb_mask(uint32_t crc);

/* The record at p[0..n): its data in *data and *len, its size in *used.
 * 0; 1 when p holds only part of a record; CORE_ECORRUPT when a CRC does
 * not match (CORE_EUNSUPPORTED without ISA-L). */
int core_tb_record(const unsigned char *p, size_t n, const unsigned char **data, size_t *len, size_t *used);

/* The last event file of dir by name (TensorBoard's order) into path: 0,
 * 1 when there is none (or no dir), or a negative code. */
int core_tb_newest(const char *dir, char *path, size_t n);

/* A streamed event file. */
typedef struct core_tb_log {
  int fd;
  int64_t size; /* bytes of whole records */
  char path[4400];
  char damaged[4400]; /* the newest file, left as it was for its damage; or "" */
  int64_t damaged_at; /* its bytes before the damage; -1 when none */
} core_tb_log;

/* Open the log of dir (which must exist): with append, its newest event file
 * if it has one, checked and cut after its last whole record (*cut gets the
 * bytes cut; NULL allowed); otherwise a new file
 * dir/events.out.tfevents.TIME.HOST.TAIL. A newest file with a record that
 * fails its checksum (damage, not a write cut short) is left as it is, named
 * in l->damaged, and a new file is opened instead. */
int core_tb_log_open(core_tb_log *l, const char *dir, const char *tail, int append, int64_t *cut);
/* Append b's records. On failure the file is cut back to its last whole
 * record and the error returned (CORE_ENOSPC for a full disk); later writes
 * may succeed. */
int core_tb_log_write(core_tb_log *l, const core_tb_buf *b);
/* fsync and close; safe on a log never opened (fd -1) and twice. */
int core_tb_log_close(core_tb_log *l);

/* Write b as the whole file path (core/afile.h: atomically, refusing what
 * core_afile_open refuses). */
int core_tb_write_file(const char *path, const core_tb_buf *b);

#endif

/* core/tbwriter: TensorFlow's record format (CRC-32C check values, the
 * mask, framing), events that decode back to what was put (a scalar of 0.0
 * included, the restart marker), damage detected, and streamed logs that
 * grow by whole records only: a torn last record is cut when the file is
 * reopened to append, a damaged one left as it is, a symlink is refused. TensorBoard's own reader reads
 * the files in the tensorboard integration test. */
#include "testutil.h"

#include "core/err.h"
#include "core/isal.h"
#include "core/tbwriter.h"

#include "tbevent.pb-c.h"

#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[4096];

static int suite_init(void) { return tu_mkdtemp(dir, sizeof dir, "tbwriter"); }
static int suite_clean(void) {
  tu_rmdir(dir);
  return 0;
}

/* CRC-32C check values: "123456789" (the CRC catalogue's check value of
 * CRC-32/ISCSI) and RFC 3720 appendix B.4's 32 zero bytes and 32 bytes
 * counting up. */
static void test_crc(void) {
  uint32_t crc = 0;
  CU_ASSERT_EQUAL_FATAL(core_isal_available(), 1); /* this build's ISA-L */
  CU_ASSERT_EQUAL(core_tb_crc32c("123456789", 9, &crc), 0);
  CU_ASSERT_EQUAL(crc, 0xe3069283u);
  unsigned char z[32] = {0}, up[32];
  for (int i = 0; i < 32; i++)
    up[i] = (unsigned char)i;
  CU_ASSERT_EQUAL(core_tb_crc32c(z, 32, &crc), 0);
  CU_ASSERT_EQUAL(crc, 0x8a9136aau);
  CU_ASSERT_EQUAL(core_tb_crc32c(up, 32, &crc), 0);
  CU_ASSERT_EQUAL(crc, 0x46dd794eu);
  /* Mask: rotate right by 15 and add 0xa282ead8. */
  CU_ASSERT_EQUAL(core_tb_mask(0), 0xa282ead8u);
  CU_ASSERT_EQUAL(core_tb_mask(0x8000u), 0xa282ead8u + 1u);
  CU_ASSERT_EQUAL(core_tb_mask(1u), 0xa282ead8u + 0x20000u);
}

/* The next record's Event, decoded (NULL at the end). */
static Tb__Event *next_event(const core_tb_buf *b, size_t *off) {
  const unsigned char *data;
  size_t len, used;
  if (*off >= b->n || core_tb_record(b->p + *off, b->n - *off, &data, &len, &used) != 0)
    return NULL;
  *off += used;
  return tb__event__unpack(NULL, len, data);
}

static void test_round_trip(void) {
  core_tb_buf b = {0};
  core_tb_scalar v[] = {{"Train/Loss", 0.25}, {"Logger/Dropped", 0.0}, {"Dist/SyncTime", 1e-3}};
  CU_ASSERT_EQUAL(core_tb_put_version(&b, 12.5), 0);
  CU_ASSERT_EQUAL(core_tb_put_scalars(&b, 13.0, 7, v, 3), 0);
  CU_ASSERT_EQUAL(core_tb_put_start(&b, 14.0, 5, "attempt 1"), 0);
  size_t off = 0;
  Tb__Event *e = next_event(&b, &off);
  CU_ASSERT_PTR_NOT_NULL_FATAL(e);
  CU_ASSERT_EQUAL(e->what_case, TB__EVENT__WHAT_FILE_VERSION);
  CU_ASSERT_STRING_EQUAL(e->file_version, "brain.Event:2");
  CU_ASSERT_EQUAL(e->wall_time, 12.5);
  tb__event__free_unpacked(e, NULL);
  e = next_event(&b, &off);
  CU_ASSERT_PTR_NOT_NULL_FATAL(e);
  CU_ASSERT_EQUAL(e->what_case, TB__EVENT__WHAT_SUMMARY);
  CU_ASSERT_EQUAL(e->step, 7);
  CU_ASSERT_EQUAL_FATAL(e->summary->n_value, 3);
  for (int i = 0; i < 3; i++) {
    CU_ASSERT_STRING_EQUAL(e->summary->value[i]->tag, v[i].tag);
    /* A zero is written too: the oneof keeps it on the wire. */
    CU_ASSERT_EQUAL(e->summary->value[i]->value_case, TB__SUMMARY__VALUE__VALUE_SIMPLE_VALUE);
    CU_ASSERT_EQUAL(e->summary->value[i]->simple_value, (float)v[i].value);
  }
  tb__event__free_unpacked(e, NULL);
  e = next_event(&b, &off);
  CU_ASSERT_PTR_NOT_NULL_FATAL(e);
  CU_ASSERT_EQUAL(e->what_case, TB__EVENT__WHAT_SESSION_LOG);
  CU_ASSERT_EQUAL(e->session_log->status, TB__SESSION_LOG__SESSION_STATUS__START);
  CU_ASSERT_EQUAL(e->step, 5);
  CU_ASSERT_STRING_EQUAL(e->session_log->msg, "attempt 1");
  tb__event__free_unpacked(e, NULL);
  CU_ASSERT_EQUAL(off, b.n);
  core_tb_buf_free(&b);
}

/* Every truncation is "incomplete"; every flipped byte is detected. */
static void test_damage(void) {
  core_tb_buf b = {0};
  core_tb_scalar v = {"Train/Loss", 3.5};
  CU_ASSERT_EQUAL_FATAL(core_tb_put_scalars(&b, 1.0, 1, &v, 1), 0);
  const unsigned char *data;
  size_t len, used;
  for (size_t n = 0; n < b.n; n++)
    CU_ASSERT_EQUAL(core_tb_record(b.p, n, &data, &len, &used), 1);
  CU_ASSERT_EQUAL(core_tb_record(b.p, b.n, &data, &len, &used), 0);
  CU_ASSERT_EQUAL(used, b.n);
  for (size_t i = 0; i < b.n; i++) {
    b.p[i] ^= 0x10;
    int rc = core_tb_record(b.p, b.n, &data, &len, &used);
    /* A flipped length may also read as a longer record not yet complete. */
    CU_ASSERT(rc == CORE_ECORRUPT || (i < 8 && rc == 1));
    b.p[i] ^= 0x10;
  }
  core_tb_buf_free(&b);
}

/* Records of the file at path; -1 when one is damaged. */
static int count_records(const char *path) {
  size_t n;
  char *text = tu_read_file(path, &n);
  if (!text)
    return -1;
  size_t off = 0;
  int count = 0;
  while (off < n) {
    const unsigned char *data;
    size_t len, used;
    if (core_tb_record((unsigned char *)text + off, n - off, &data, &len, &used) != 0) {
      count = -1;
      break;
    }
    off += used;
    count++;
  }
  free(text);
  return count;
}

static void test_log_append_cuts_torn_record(void) {
  char sub[4200], path[4400];
  snprintf(sub, sizeof sub, "%s/append", dir);
  CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0755), 0);
  core_tb_log l;
  core_tb_buf b = {0};
  core_tb_scalar v = {"Train/Loss", 1.0};
  CU_ASSERT_EQUAL_FATAL(core_tb_log_open(&l, sub, "t", 0, NULL), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(l.path, "/" CORE_TB_PREFIX));
  CU_ASSERT_EQUAL(core_tb_put_version(&b, 1.0), 0);
  CU_ASSERT_EQUAL(core_tb_put_scalars(&b, 1.0, 0, &v, 1), 0);
  CU_ASSERT_EQUAL(core_tb_log_write(&l, &b), 0);
  int64_t whole = l.size;
  snprintf(path, sizeof path, "%s", l.path);
  CU_ASSERT_EQUAL(core_tb_log_close(&l), 0);
  CU_ASSERT_EQUAL(core_tb_log_close(&l), 0);
  /* A writer killed mid-record left 20 bytes of the next one. */
  int fd = open(path, O_WRONLY | O_APPEND);
  CU_ASSERT_EQUAL_FATAL(write(fd, b.p, 20), 20);
  close(fd);
  CU_ASSERT_EQUAL(count_records(path), -1);
  int64_t cut = -1;
  CU_ASSERT_EQUAL_FATAL(core_tb_log_open(&l, sub, "t2", 1, &cut), 0);
  CU_ASSERT_STRING_EQUAL(l.path, path);
  CU_ASSERT_EQUAL(cut, 20);
  CU_ASSERT_EQUAL(l.size, whole);
  b.n = 0;
  CU_ASSERT_EQUAL(core_tb_put_scalars(&b, 2.0, 1, &v, 1), 0);
  CU_ASSERT_EQUAL(core_tb_log_write(&l, &b), 0);
  CU_ASSERT_EQUAL(core_tb_log_close(&l), 0);
  CU_ASSERT_EQUAL(count_records(path), 3);
  /* Nothing to cut the next time. */
  CU_ASSERT_EQUAL(core_tb_log_open(&l, sub, "t3", 1, &cut), 0);
  CU_ASSERT_EQUAL(cut, 0);
  CU_ASSERT_EQUAL(core_tb_log_close(&l), 0);
  core_tb_buf_free(&b);
}

static long slurp(const char *path, unsigned char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  long n = (long)fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

/* A record in the middle that fails its checksum is damage, not a torn
 * write: appending leaves the file byte for byte as it was (cutting would
 * lose the records after it) and opens a new file beside it. */
static void test_log_append_keeps_damaged_file(void) {
  char sub[4200], path[4400];
  snprintf(sub, sizeof sub, "%s/damaged", dir);
  CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0755), 0);
  core_tb_log l;
  core_tb_buf b = {0};
  core_tb_scalar v = {"Train/Loss", 1.0};
  CU_ASSERT_EQUAL_FATAL(core_tb_log_open(&l, sub, "t", 0, NULL), 0);
  CU_ASSERT_EQUAL(core_tb_put_version(&b, 1.0), 0);
  CU_ASSERT_EQUAL(core_tb_log_write(&l, &b), 0);
  int64_t first = l.size;
  b.n = 0;
  for (int k = 0; k < 3; k++)
    CU_ASSERT_EQUAL(core_tb_put_scalars(&b, 1.0 + k, k, &v, 1), 0);
  CU_ASSERT_EQUAL(core_tb_log_write(&l, &b), 0);
  snprintf(path, sizeof path, "%s", l.path);
  CU_ASSERT_EQUAL(core_tb_log_close(&l), 0);
  /* One byte of the second record's data flipped. */
  unsigned char before[4096], after[4096];
  long n = slurp(path, before, sizeof before);
  CU_ASSERT_FATAL(n > first + 20);
  before[first + 14] ^= 0x40;
  FILE *f = fopen(path, "wb");
  CU_ASSERT_FATAL(f != NULL);
  CU_ASSERT_EQUAL(fwrite(before, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  int64_t cut = -1;
  CU_ASSERT_EQUAL_FATAL(core_tb_log_open(&l, sub, "t4", 1, &cut), 0);
  CU_ASSERT_STRING_EQUAL(l.damaged, path);
  CU_ASSERT_EQUAL(l.damaged_at, first);
  CU_ASSERT_EQUAL(cut, 0);
  CU_ASSERT_STRING_NOT_EQUAL(l.path, path);
  CU_ASSERT_EQUAL(l.size, 0);
  CU_ASSERT_EQUAL(core_tb_log_close(&l), 0);
  CU_ASSERT_EQUAL(slurp(path, after, sizeof after), n);
  CU_ASSERT_EQUAL(memcmp(before, after, (size_t)n), 0);
  core_tb_buf_free(&b);
}

/* The newest file by name is the one appended to; a symlink is not
 * followed; a missing directory is an error naming it. */
static void test_log_files(void) {
  char sub[4200], p[4400], target[4400], got[4400];
  snprintf(sub, sizeof sub, "%s/files", dir);
  CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0755), 0);
  CU_ASSERT_EQUAL(core_tb_newest(sub, got, sizeof got), 1);
  snprintf(p, sizeof p, "%s/" CORE_TB_PREFIX "0000000001.h.a", sub);
  CU_ASSERT_EQUAL(tu_write_file(p, ""), 0);
  snprintf(p, sizeof p, "%s/" CORE_TB_PREFIX "0000000002.h.b", sub);
  CU_ASSERT_EQUAL(tu_write_file(p, ""), 0);
  snprintf(p, sizeof p, "%s/other.txt", sub);
  CU_ASSERT_EQUAL(tu_write_file(p, ""), 0);
  CU_ASSERT_EQUAL(core_tb_newest(sub, got, sizeof got), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(got, "0000000002.h.b"));
  snprintf(target, sizeof target, "%s/precious", dir);
  CU_ASSERT_EQUAL(tu_write_file(target, "keep"), 0);
  snprintf(p, sizeof p, "%s/" CORE_TB_PREFIX "0000000003.h.link", sub);
  CU_ASSERT_EQUAL(symlink(target, p), 0);
  core_tb_log l;
  CU_ASSERT_NOT_EQUAL(core_tb_log_open(&l, sub, "x", 1, NULL), 0);
  CU_ASSERT_EQUAL(l.fd, -1);
  char *kept = tu_read_file(target, NULL);
  CU_ASSERT(kept && strcmp(kept, "keep") == 0);
  free(kept);
  snprintf(p, sizeof p, "%s/missing", dir);
  CU_ASSERT_NOT_EQUAL(core_tb_log_open(&l, p, "x", 0, NULL), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "missing"));
}

/* Whole files (simulate) go through core/afile: replaced, never appended. */
static void test_write_file(void) {
  char p[4400];
  core_tb_buf b = {0};
  snprintf(p, sizeof p, "%s/" CORE_TB_PREFIX "whole", dir);
  CU_ASSERT_EQUAL(core_tb_put_version(&b, 0.0), 0);
  CU_ASSERT_EQUAL(core_tb_write_file(p, &b), 0);
  CU_ASSERT_EQUAL(core_tb_write_file(p, &b), 0);
  CU_ASSERT_EQUAL(count_records(p), 1);
  core_tb_buf_free(&b);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("tbwriter", suite_init, suite_clean);
  CU_add_test(s, "CRC-32C check values and TensorFlow's mask", test_crc);
  CU_add_test(s, "events decode to what was put", test_round_trip);
  CU_add_test(s, "truncations and flipped bytes detected", test_damage);
  CU_add_test(s, "append cuts a torn last record", test_log_append_cuts_torn_record);
  CU_add_test(s, "append leaves a damaged file and opens another", test_log_append_keeps_damaged_file);
  CU_add_test(s, "newest file, no symlink followed, missing dir", test_log_files);
  CU_add_test(s, "whole files through afile", test_write_file);
}

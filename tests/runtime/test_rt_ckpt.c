/* Checkpoints (runtime/ckpt.h): what is written is read back bit for bit;
 * the file has the documented layout (checked here against the header
 * comment, with a CRC-32 computed by this file, not by zlib); a file cut at
 * any byte, or with any byte changed, or written for another model shape, is
 * rejected with a message and never half-loaded, and the loader then falls
 * back to the previous valid file; `keep` removes only older checkpoints;
 * a full disk leaves the previous checkpoint intact and no temp file.
 *
 * The full-disk test mounts a 256 KiB tmpfs. It does so in a child process
 * with its own mount namespace, so the mount exists only for that child and
 * disappears with it even if the child crashes; the child also unmounts it
 * explicitly. It needs root and a kernel that allows the namespace and the
 * mount; elsewhere it is reported as skipped (its own ctest entry,
 * test_rt_ckpt_full_disk). */
#define _GNU_SOURCE
#include "cunit_skip.h"

#include <CUnit/CUnit.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "core/model.h"
#include "runtime/ckpt.h"
#include "rtt.h"

/* ---- helpers ------------------------------------------------------------ */

/* A model file of linear layers widths[0] -> widths[1] -> ... in dir. */
static core_model *make_model(const char *dir, const char *name, const int *w, int n_layers) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s.cfg", dir, name);
  FILE *f = fopen(path, "w");
  if (!f)
    return NULL;
  fprintf(f, "model = {\n  name = \"%s\";\n  loss = \"mse\";\n  layers = (\n", name);
  for (int l = 0; l < n_layers; l++)
    fprintf(f, "    { name = \"fc%d\"; type = \"linear\"; in = %d; out = %d; activation = \"%s\"; }%s\n", l + 1, w[l],
        w[l + 1], l + 1 < n_layers ? "relu" : "none", l + 1 < n_layers ? "," : "");
  fprintf(f, "  );\n};\n");
  fclose(f);
  core_model *m = NULL;
  if (core_model_load(path, &m) != 0) {
    fprintf(stderr, "\nloading %s: %s\n", path, core_err_msg());
    return NULL;
  }
  unlink(path);
  return m;
}

/* xorshift64*: the tests' own deterministic random numbers. */
static uint64_t rnd(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

/* CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), bit by bit. */
static uint32_t crc32_ref(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

static uint64_t le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

typedef struct state {
  int64_t n;
  float *params, *momentum;
} state;

static int state_alloc(state *s, int64_t n) {
  s->n = n;
  s->params = malloc(sizeof(float) * (size_t)n);
  s->momentum = malloc(sizeof(float) * (size_t)n);
  return s->params && s->momentum ? 0 : -1;
}
static void state_free(state *s) {
  free(s->params);
  free(s->momentum);
  s->params = s->momentum = NULL;
}
/* Random bit patterns, so NaN payloads, infinities, -0 and subnormals
 * appear too: they must survive unchanged. */
static void state_fill(state *s, uint64_t seed) {
  uint64_t r = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (int64_t i = 0; i < s->n; i++) {
    uint32_t a = (uint32_t)rnd(&r), b = (uint32_t)rnd(&r);
    memcpy(&s->params[i], &a, 4);
    memcpy(&s->momentum[i], &b, 4);
  }
  if (s->n >= 4) {
    uint32_t special[4] = {0x7FC01234u /* quiet NaN with payload */, 0x80000000u /* -0 */,
        0x00000001u /* smallest subnormal */, 0xFF800000u /* -inf */};
    memcpy(s->params, special, sizeof special);
  }
}

static rt_ckpt as_ckpt(const state *s, int64_t step, int64_t epoch, int64_t pos, int mom) {
  rt_ckpt c = {.step = step,
      .epoch = epoch,
      .pos = pos,
      .n_params = s->n,
      .has_momentum = mom,
      .params = s->params,
      .momentum = s->momentum};
  return c;
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return b;
}

static int spit(const char *path, const unsigned char *b, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  int ok = fwrite(b, 1, len, f) == len;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* Names in dir, sorted, joined by spaces (for comparing listings). */
static void listing(const char *dir, char *out, size_t n) {
  struct dirent **es;
  out[0] = '\0';
  int k = scandir(dir, &es, NULL, alphasort);
  for (int i = 0; i < k; i++) {
    if (strcmp(es[i]->d_name, ".") && strcmp(es[i]->d_name, "..")) {
      size_t l = strlen(out);
      snprintf(out + l, n - l, "%s%s", l ? " " : "", es[i]->d_name);
    }
    free(es[i]);
  }
  if (k >= 0)
    free(es);
}

/* Run fn with stderr going to a file; returns what it wrote (malloc'd). */
static char *capture_stderr(const char *dir, int (*fn)(void *), void *arg, int *rc) {
  char path[600];
  snprintf(path, sizeof path, "%s/stderr.txt", dir);
  fflush(stderr);
  int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (saved < 0 || fd < 0) {
    if (saved >= 0)
      close(saved);
    if (fd >= 0)
      close(fd);
    *rc = fn(arg);
    return NULL;
  }
  dup2(fd, 2);
  close(fd);
  *rc = fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  size_t len;
  unsigned char *b = slurp(path, &len);
  unlink(path);
  if (!b)
    return NULL;
  char *s = realloc(b, len + 1);
  if (!s) {
    free(b);
    return NULL;
  }
  s[len] = '\0';
  return s;
}

/* The small model: 4 -> 3 -> 2, 23 parameters, a 96 + 184 = 280-byte file. */
static const int SMALL[] = {4, 3, 2};
/* Same parameter count, another shape: 20 -> 1 -> 1 (20+1 + 1+1 = 23). */
static const int SAME_COUNT[] = {20, 1, 1};
/* Another count: 4 -> 3 -> 3 (15 + 12 = 27). */
static const int OTHER[] = {4, 3, 3};

/* ---- round trip and layout -------------------------------------------- */

static void test_round_trip(void) {
  char dir[512], path[700];
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(dir, sizeof dir), 0);
  core_model *m = make_model(dir, "small", SMALL, 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL(m->n_params, 23);
  state s, r;
  CU_ASSERT_EQUAL_FATAL(state_alloc(&s, m->n_params), 0);
  CU_ASSERT_EQUAL_FATAL(state_alloc(&r, m->n_params), 0);
  state_fill(&s, 1);
  memset(r.params, 0, sizeof(float) * (size_t)r.n);
  memset(r.momentum, 0, sizeof(float) * (size_t)r.n);

  /* Into a directory that does not exist yet (created). */
  char sub[600];
  snprintf(sub, sizeof sub, "%s/a/b", dir);
  rt_ckpt c = as_ckpt(&s, 1234567890123LL, 77, 5, 1);
  CU_ASSERT_EQUAL_FATAL(rt_ckpt_write(sub, m, &c, 2), 0);
  snprintf(path, sizeof path, "%s/ckpt-1234567890123.ddpc", sub);

  rt_ckpt got = {.params = r.params, .momentum = r.momentum};
  CU_ASSERT_EQUAL(rt_ckpt_read(path, m, &got), 0);
  CU_ASSERT_EQUAL(got.step, 1234567890123LL);
  CU_ASSERT_EQUAL(got.epoch, 77);
  CU_ASSERT_EQUAL(got.pos, 5);
  CU_ASSERT_EQUAL(got.n_params, 23);
  CU_ASSERT_EQUAL(got.has_momentum, 1);
  CU_ASSERT_EQUAL(memcmp(r.params, s.params, sizeof(float) * 23), 0);
  CU_ASSERT_EQUAL(memcmp(r.momentum, s.momentum, sizeof(float) * 23), 0);

  /* The documented layout, byte by byte. */
  size_t len = 0;
  unsigned char *b = slurp(path, &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  CU_ASSERT_EQUAL(len, (size_t)RT_CKPT_HEADER_BYTES + 2 * 23 * 4);
  CU_ASSERT_EQUAL(RT_CKPT_HEADER_BYTES, 96);
  CU_ASSERT_EQUAL(memcmp(b, "DDPSIMCK", 8), 0);
  CU_ASSERT_EQUAL(le(b + 8, 4), RT_CKPT_VERSION);
  CU_ASSERT_EQUAL(le(b + 12, 4), 96);
  CU_ASSERT_EQUAL(le(b + 16, 8), 2 * 23 * 4);
  CU_ASSERT_EQUAL(le(b + 24, 8), 1234567890123ULL);
  CU_ASSERT_EQUAL(le(b + 32, 8), 77);
  CU_ASSERT_EQUAL(le(b + 40, 8), 5);
  CU_ASSERT_EQUAL(le(b + 48, 8), 23);
  CU_ASSERT_EQUAL(le(b + 56, 8), rt_ckpt_model_hash(m));
  CU_ASSERT_EQUAL(le(b + 64, 4), 1);
  CU_ASSERT_EQUAL(le(b + 68, 4), crc32_ref(b + 96, len - 96));
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t written = (int64_t)le(b + 72, 8), now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
  CU_ASSERT(written <= now_ns && written > now_ns - 60LL * 1000000000); /* write time, ns */
  CU_ASSERT_EQUAL(got.written_ns, written);
  CU_ASSERT_EQUAL(le(b + 80, 4), crc32_ref(b, 80));
  for (int i = 84; i < 96; i++)
    CU_ASSERT_EQUAL(b[i], 0); /* padding */
  /* fp32 little-endian, as in memory on this (little-endian) host */
  CU_ASSERT_EQUAL(memcmp(b + 96, s.params, 23 * 4), 0);
  CU_ASSERT_EQUAL(memcmp(b + 96 + 23 * 4, s.momentum, 23 * 4), 0);
  free(b);

  /* has_momentum 0 round-trips as 0; the newest is what load_latest gets. */
  state_fill(&s, 2);
  c = as_ckpt(&s, 1234567890124LL, 0, 0, 0);
  CU_ASSERT_EQUAL(rt_ckpt_write(sub, m, &c, 2), 0);
  char used[700];
  got.has_momentum = 1;
  CU_ASSERT_EQUAL(rt_ckpt_load_latest(sub, m, &got, used, sizeof used), 0);
  CU_ASSERT_EQUAL(got.step, 1234567890124LL);
  CU_ASSERT_EQUAL(got.has_momentum, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(used, "ckpt-1234567890124.ddpc"));
  CU_ASSERT_EQUAL(memcmp(r.params, s.params, sizeof(float) * 23), 0);
  CU_ASSERT_EQUAL(memcmp(r.momentum, s.momentum, sizeof(float) * 23), 0);

  /* Missing file: an I/O error naming it. Empty directory: none valid. */
  CU_ASSERT_EQUAL(rt_ckpt_read("/nonexistent/ckpt-1.ddpc", m, &got), CORE_EIO);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "/nonexistent/ckpt-1.ddpc"));
  char empty[600];
  snprintf(empty, sizeof empty, "%s/empty", dir);
  mkdir(empty, 0755);
  CU_ASSERT_EQUAL(rt_ckpt_load_latest(empty, m, &got, used, sizeof used), CORE_EINVAL);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "no valid checkpoint"));
  rmdir(empty);

  rtt_rmdir(sub);
  snprintf(sub, sizeof sub, "%s/a", dir);
  rmdir(sub);
  rtt_rmdir(dir);
  state_free(&s);
  state_free(&r);
  core_model_free(m);
}

/* ---- rejection ---------------------------------------------------------- */

typedef struct reject_env {
  char dir[512];
  core_model *m;
  state good;           /* what ckpt-00000001 holds */
  unsigned char *bytes; /* a valid ckpt-00000002 */
  size_t len;
  state scratch;
  char bad_path[700];
} reject_env;

static int reject_setup(reject_env *e, const int *widths) {
  memset(e, 0, sizeof *e);
  if (rtt_scratch_dir(e->dir, sizeof e->dir) != 0)
    return -1;
  e->m = make_model(e->dir, "small", widths, 2);
  if (!e->m || state_alloc(&e->good, e->m->n_params) || state_alloc(&e->scratch, e->m->n_params))
    return -1;
  state_fill(&e->good, 11);
  rt_ckpt c = as_ckpt(&e->good, 1, 0, 3, 1);
  if (rt_ckpt_write(e->dir, e->m, &c, 10) != 0)
    return -1;
  state other;
  if (state_alloc(&other, e->m->n_params))
    return -1;
  state_fill(&other, 12);
  c = as_ckpt(&other, 2, 0, 4, 1);
  int rc = rt_ckpt_write(e->dir, e->m, &c, 10);
  state_free(&other);
  if (rc)
    return -1;
  snprintf(e->bad_path, sizeof e->bad_path, "%s/ckpt-00000002.ddpc", e->dir);
  e->bytes = slurp(e->bad_path, &e->len);
  return e->bytes ? 0 : -1;
}

static void reject_teardown(reject_env *e) {
  free(e->bytes);
  state_free(&e->good);
  state_free(&e->scratch);
  core_model_free(e->m);
  rtt_rmdir(e->dir);
}

typedef struct load_call {
  reject_env *e;
  rt_ckpt *c;
  char used[700];
} load_call;

static int do_load_latest(void *arg) {
  load_call *l = arg;
  return rt_ckpt_load_latest(l->e->dir, l->e->m, l->c, l->used, sizeof l->used);
}

/* ckpt-00000002 now holds (b, len): it must be rejected by rt_ckpt_read
 * without touching the caller's buffers, and load_latest must fall back to
 * ckpt-00000001, saying why it skipped the other. Returns 1 when all held. */
static int check_rejected(reject_env *e, const unsigned char *b, size_t len, const char *what) {
  int ok = 1;
  if (spit(e->bad_path, b, len) != 0) {
    fprintf(stderr, "\n%s: cannot write the damaged file\n", what);
    return 0;
  }
  memset(e->scratch.params, 0xA5, sizeof(float) * (size_t)e->scratch.n);
  memset(e->scratch.momentum, 0x5A, sizeof(float) * (size_t)e->scratch.n);
  rt_ckpt c = {.step = -7,
      .epoch = -7,
      .pos = -7,
      .n_params = -7,
      .has_momentum = -7,
      .params = e->scratch.params,
      .momentum = e->scratch.momentum};
  int rc = rt_ckpt_read(e->bad_path, e->m, &c);
  if (rc != CORE_ECORRUPT || !strstr(core_err_msg(), e->bad_path)) {
    fprintf(stderr, "\n%s: read gave %d (%s), expected a corrupt-file error naming the file\n", what, rc,
        rc ? core_err_msg() : "accepted");
    ok = 0;
  }
  /* Never half-loaded. */
  for (int64_t i = 0; i < e->scratch.n; i++) {
    uint32_t p, q;
    memcpy(&p, &e->scratch.params[i], 4);
    memcpy(&q, &e->scratch.momentum[i], 4);
    if (p != 0xA5A5A5A5u || q != 0x5A5A5A5Au) {
      fprintf(stderr, "\n%s: rejected file changed the caller's buffers\n", what);
      ok = 0;
      break;
    }
  }
  if (c.step != -7 || c.epoch != -7 || c.pos != -7 || c.n_params != -7 || c.has_momentum != -7) {
    fprintf(stderr, "\n%s: rejected file changed the caller's counters\n", what);
    ok = 0;
  }

  load_call l = {.e = e, .c = &c};
  int lrc;
  char *err = capture_stderr(e->dir, do_load_latest, &l, &lrc);
  if (lrc != 0 || c.step != 1 || c.pos != 3 || !strstr(l.used, "ckpt-00000001.ddpc") ||
      memcmp(e->scratch.params, e->good.params, sizeof(float) * (size_t)e->good.n) != 0 ||
      memcmp(e->scratch.momentum, e->good.momentum, sizeof(float) * (size_t)e->good.n) != 0) {
    fprintf(stderr, "\n%s: load_latest gave %d (%s), step %lld, file %s; expected ckpt-00000001\n", what, lrc,
        lrc ? core_err_msg() : "ok", (long long)c.step, l.used);
    ok = 0;
  }
  if (!err || !strstr(err, "skipping checkpoint") || !strstr(err, "ckpt-00000002.ddpc")) {
    fprintf(stderr, "\n%s: load_latest did not say why it skipped ckpt-00000002: %s\n", what,
        err ? err : "(nothing captured)");
    ok = 0;
  }
  free(err);
  return ok;
}

static void test_truncated_everywhere(void) {
  reject_env e;
  CU_ASSERT_EQUAL_FATAL(reject_setup(&e, SMALL), 0);
  CU_ASSERT_EQUAL(e.len, 280u);
  int bad = 0;
  char what[64];
  for (size_t cut = 0; cut < e.len; cut++) {
    snprintf(what, sizeof what, "cut at %zu of %zu bytes", cut, e.len);
    bad += !check_rejected(&e, e.bytes, cut, what);
  }
  /* One byte too many is as wrong as one too few. */
  unsigned char *longer = malloc(e.len + 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(longer);
  memcpy(longer, e.bytes, e.len);
  longer[e.len] = 0;
  bad += !check_rejected(&e, longer, e.len + 1, "one byte appended");
  free(longer);
  CU_ASSERT_EQUAL(bad, 0);

  /* The intact bytes are accepted (the damage, not the setup, was the
   * reason), and with no valid file left the loader says so. */
  CU_ASSERT_EQUAL(spit(e.bad_path, e.bytes, e.len), 0);
  rt_ckpt c = {.params = e.scratch.params, .momentum = e.scratch.momentum};
  CU_ASSERT_EQUAL(rt_ckpt_read(e.bad_path, e.m, &c), 0);
  CU_ASSERT_EQUAL(c.step, 2);
  char p1[700];
  snprintf(p1, sizeof p1, "%s/ckpt-00000001.ddpc", e.dir);
  CU_ASSERT_EQUAL(truncate(p1, 100), 0);
  CU_ASSERT_EQUAL(spit(e.bad_path, e.bytes, 50), 0);
  load_call l = {.e = &e, .c = &c};
  int lrc;
  char *err = capture_stderr(e.dir, do_load_latest, &l, &lrc);
  CU_ASSERT_EQUAL(lrc, CORE_ECORRUPT);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "no valid checkpoint"));
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "rejected"));
  CU_ASSERT(err && strstr(err, "ckpt-00000001.ddpc") && strstr(err, "ckpt-00000002.ddpc"));
  free(err);
  reject_teardown(&e);
}

/* Every byte changed once (two patterns each: lowest bit, all bits), then
 * random damage: 1..8 bytes at random places with random values. */
static void test_byte_flips(void) {
  reject_env e;
  CU_ASSERT_EQUAL_FATAL(reject_setup(&e, SMALL), 0);
  unsigned char *b = malloc(e.len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  int bad = 0;
  char what[96];
  static const unsigned char pats[] = {0x01, 0xFF};
  for (size_t pos = 0; pos < e.len; pos++)
    for (size_t k = 0; k < sizeof pats; k++) {
      memcpy(b, e.bytes, e.len);
      b[pos] ^= pats[k];
      snprintf(what, sizeof what, "byte %zu xor 0x%02x", pos, pats[k]);
      bad += !check_rejected(&e, b, e.len, what);
    }
  for (uint64_t seed = 1; seed <= 1500; seed++) {
    uint64_t r = seed * 0xD1B54A32D192ED03ULL;
    memcpy(b, e.bytes, e.len);
    int n = 1 + (int)(rnd(&r) % 8);
    for (int i = 0; i < n; i++) {
      size_t pos = (size_t)(rnd(&r) % e.len);
      unsigned char x = (unsigned char)(1 + rnd(&r) % 255);
      b[pos] ^= x;
    }
    if (memcmp(b, e.bytes, e.len) == 0)
      continue; /* two changes cancelled out */
    snprintf(what, sizeof what, "seed %llu (%d random bytes changed)", (unsigned long long)seed, n);
    bad += !check_rejected(&e, b, e.len, what);
  }
  CU_ASSERT_EQUAL(bad, 0);
  free(b);
  reject_teardown(&e);
}

/* Damage that a writer could make with valid checksums: a header field
 * changed and the header CRC recomputed (by this file's CRC-32). The field
 * checks, not the checksum, must reject these. */
static void test_consistent_lies(void) {
  reject_env e;
  CU_ASSERT_EQUAL_FATAL(reject_setup(&e, SMALL), 0);
  unsigned char *b = malloc(e.len + 8);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  struct {
    int off, bytes;
    uint64_t value;
    const char *what;
  } lies[] = {
      {8, 4, RT_CKPT_VERSION + 1, "a newer version"},
      {12, 4, 128, "another header size"},
      {16, 8, 2 * 23 * 4 - 4, "payload length one float short"},
      {48, 8, 22, "parameter count 22"},
      {56, 8, 0x0123456789abcdefULL, "another model hash"},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
    memcpy(b, e.bytes, e.len);
    for (int k = 0; k < lies[i].bytes; k++)
      b[lies[i].off + k] = (unsigned char)(lies[i].value >> (8 * k));
    uint32_t h = crc32_ref(b, 80);
    for (int k = 0; k < 4; k++)
      b[80 + k] = (unsigned char)(h >> (8 * k));
    bad += !check_rejected(&e, b, e.len, lies[i].what);
  }
  /* Payload changed and its CRC recomputed, header CRC recomputed too:
   * that is a valid checkpoint of other numbers, and must load as such
   * (proof that the two CRCs are the whole integrity check). */
  memcpy(b, e.bytes, e.len);
  b[100] ^= 0x40;
  uint32_t p = crc32_ref(b + 96, e.len - 96);
  for (int k = 0; k < 4; k++)
    b[68 + k] = (unsigned char)(p >> (8 * k));
  uint32_t h = crc32_ref(b, 80);
  for (int k = 0; k < 4; k++)
    b[80 + k] = (unsigned char)(h >> (8 * k));
  CU_ASSERT_EQUAL(spit(e.bad_path, b, e.len), 0);
  rt_ckpt c = {.params = e.scratch.params, .momentum = e.scratch.momentum};
  CU_ASSERT_EQUAL(rt_ckpt_read(e.bad_path, e.m, &c), 0);
  CU_ASSERT_EQUAL(memcmp(e.scratch.params, b + 96, 23 * 4), 0);
  CU_ASSERT_EQUAL(bad, 0);
  free(b);
  reject_teardown(&e);
}

static void test_other_shape(void) {
  char dir[512];
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(dir, sizeof dir), 0);
  core_model *a = make_model(dir, "a", SMALL, 2), *same = make_model(dir, "same", SAME_COUNT, 2),
             *other = make_model(dir, "other", OTHER, 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(a);
  CU_ASSERT_PTR_NOT_NULL_FATAL(same);
  CU_ASSERT_PTR_NOT_NULL_FATAL(other);
  CU_ASSERT_EQUAL(a->n_params, same->n_params);
  CU_ASSERT_NOT_EQUAL(rt_ckpt_model_hash(a), rt_ckpt_model_hash(same));
  state s, r;
  CU_ASSERT_EQUAL_FATAL(state_alloc(&s, a->n_params), 0);
  CU_ASSERT_EQUAL_FATAL(state_alloc(&r, other->n_params), 0);
  state_fill(&s, 3);
  rt_ckpt c = as_ckpt(&s, 8, 0, 0, 1);
  CU_ASSERT_EQUAL_FATAL(rt_ckpt_write(dir, a, &c, 2), 0);
  char path[700], used[700];
  snprintf(path, sizeof path, "%s/ckpt-00000008.ddpc", dir);
  memset(r.params, 0x11, sizeof(float) * (size_t)r.n);
  rt_ckpt got = {.params = r.params, .momentum = r.momentum};
  /* Same number of parameters, other shapes: the shape hash tells. */
  CU_ASSERT_EQUAL(rt_ckpt_read(path, same, &got), CORE_ECORRUPT);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "another shape"));
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "same"));
  /* Another count. */
  CU_ASSERT_EQUAL(rt_ckpt_read(path, other, &got), CORE_ECORRUPT);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "another shape"));
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "27"));
  unsigned char expect[4] = {0x11, 0x11, 0x11, 0x11};
  CU_ASSERT_EQUAL(memcmp(r.params, expect, 4), 0); /* untouched */
  /* load_latest finds nothing usable for the other model, and says that
   * there were checkpoints (of another model), not that there were none. */
  fflush(stderr);
  CU_ASSERT_EQUAL(rt_ckpt_load_latest(dir, other, &got, used, sizeof used), CORE_ECORRUPT);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "all 1 were rejected"));
  /* and everything for the right one */
  rt_ckpt ok = {.params = r.params, .momentum = r.momentum};
  CU_ASSERT_EQUAL(rt_ckpt_load_latest(dir, a, &ok, used, sizeof used), 0);
  CU_ASSERT_EQUAL(memcmp(r.params, s.params, sizeof(float) * (size_t)s.n), 0);
  state_free(&s);
  state_free(&r);
  core_model_free(a);
  core_model_free(same);
  core_model_free(other);
  rtt_rmdir(dir);
}

/* ---- keep --------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The listing a directory should have: the checkpoints named plus the
 * files that are not checkpoints, sorted like listing(). */
static void expected(const char *ckpts, char *out, size_t n) {
  static const char *const others[] = {
      "notes.txt", "ckpt-00000001.ddpc.bak", "ckpt-x.ddpc", "ckpt-00000002.ddpcx", "ckpt-00000003.ddpc.tmp.Ab12Cd"};
  const char *v[32];
  char buf[1024];
  int k = 0;
  snprintf(buf, sizeof buf, "%s", ckpts);
  for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && k < 27; t = strtok_r(NULL, " ", &save))
    v[k++] = t;
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
    v[k++] = others[i];
  qsort(v, (size_t)k, sizeof v[0], cmp_str);
  out[0] = '\0';
  for (int i = 0; i < k; i++) {
    size_t l = strlen(out);
    snprintf(out + l, n - l, "%s%s", i ? " " : "", v[i]);
  }
}

static void test_keep(void) {
  char dir[512], names[2048], want[2048], path[700];
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(dir, sizeof dir), 0);
  core_model *m = make_model(dir, "small", SMALL, 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  /* Files that are not checkpoints stay, whatever keep says (among them
   * the temp file of another writer, alive: it holds its lock). */
  static const char *const others[] = {
      "notes.txt", "ckpt-00000001.ddpc.bak", "ckpt-x.ddpc", "ckpt-00000002.ddpcx", "ckpt-00000003.ddpc.tmp.Ab12Cd"};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, others[i]);
    CU_ASSERT_EQUAL(spit(path, (const unsigned char *)"x", 1), 0);
  }
  int live = open(path, O_RDONLY);
  CU_ASSERT_FATAL(live >= 0 && flock(live, LOCK_EX) == 0);
  state s;
  CU_ASSERT_EQUAL_FATAL(state_alloc(&s, m->n_params), 0);
  state_fill(&s, 4);
  static const char *const keep2[] = {
      "ckpt-00000001.ddpc",
      "ckpt-00000001.ddpc ckpt-00000002.ddpc",
      "ckpt-00000002.ddpc ckpt-00000003.ddpc",
      "ckpt-00000003.ddpc ckpt-00000004.ddpc",
      "ckpt-00000004.ddpc ckpt-00000005.ddpc",
  };
  for (int step = 1; step <= 5; step++) {
    rt_ckpt c = as_ckpt(&s, step, 0, 0, 1);
    CU_ASSERT_EQUAL(rt_ckpt_write(dir, m, &c, 2), 0);
    listing(dir, names, sizeof names);
    expected(keep2[step - 1], want, sizeof want);
    if (strcmp(names, want) != 0)
      fprintf(stderr, "\nafter step %d: '%s'\n  expected '%s'\n", step, names, want);
    CU_ASSERT_STRING_EQUAL(names, want);
  }
  /* keep 1, then keep 3: only ever the older ones go. */
  rt_ckpt c = as_ckpt(&s, 6, 0, 0, 1);
  CU_ASSERT_EQUAL(rt_ckpt_write(dir, m, &c, 1), 0);
  listing(dir, names, sizeof names);
  expected("ckpt-00000006.ddpc", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(names, want);
  for (int step = 7; step <= 9; step++) {
    c = as_ckpt(&s, step, 0, 0, 1);
    CU_ASSERT_EQUAL(rt_ckpt_write(dir, m, &c, 3), 0);
  }
  listing(dir, names, sizeof names);
  expected("ckpt-00000007.ddpc ckpt-00000008.ddpc ckpt-00000009.ddpc", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(names, want);
  /* Steps order as numbers, not as names: 100000000 (9 digits) is newer
   * than 00000009. */
  c = as_ckpt(&s, 100000000, 0, 0, 1);
  CU_ASSERT_EQUAL(rt_ckpt_write(dir, m, &c, 2), 0);
  listing(dir, names, sizeof names);
  expected("ckpt-00000009.ddpc ckpt-100000000.ddpc", want, sizeof want);
  CU_ASSERT_STRING_EQUAL(names, want);
  close(live);
  state_free(&s);
  core_model_free(m);
  rtt_rmdir(dir);
}

/* ---- what is in the directory besides our checkpoints ----------------------- */

typedef struct latest_call {
  const char *dir;
  const core_model *m;
  rt_ckpt *c;
  char used[700];
} latest_call;

static int call_latest(void *arg) {
  latest_call *l = arg;
  return rt_ckpt_load_latest(l->dir, l->m, l->c, l->used, sizeof l->used);
}

static void put_file(const char *dir, const char *name, const unsigned char *b, size_t len) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  CU_ASSERT_EQUAL(spit(path, b, len), 0);
}

/* A copy of step 1 named as step 99 neither wins nor lets the real newer
 * ones be pruned; a FIFO named like a checkpoint is skipped at once. */
static void test_stray_and_fifo(void) {
  char dir[512], path[700], names[1024];
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(dir, sizeof dir), 0);
  core_model *m = make_model(dir, "small", SMALL, 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  state s, r;
  CU_ASSERT_EQUAL_FATAL(state_alloc(&s, m->n_params), 0);
  CU_ASSERT_EQUAL_FATAL(state_alloc(&r, m->n_params), 0);
  for (int step = 1; step <= 3; step++) {
    state_fill(&s, (uint64_t)step);
    rt_ckpt c = as_ckpt(&s, step, 0, step, 1);
    CU_ASSERT_EQUAL(rt_ckpt_write(dir, m, &c, 10), 0);
  }
  size_t len;
  snprintf(path, sizeof path, "%s/ckpt-00000001.ddpc", dir);
  unsigned char *one = slurp(path, &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(one);
  put_file(dir, "ckpt-00000099.ddpc", one, len);
  snprintf(path, sizeof path, "%s/ckpt-00000100.ddpc", dir);
  CU_ASSERT_EQUAL(mkfifo(path, 0644), 0);

  rt_ckpt got = {.params = r.params, .momentum = r.momentum};
  latest_call l = {.dir = dir, .m = m, .c = &got};
  int rc;
  double t0 = rtt_now();
  char *err = capture_stderr(dir, call_latest, &l, &rc);
  CU_ASSERT(rtt_now() - t0 < 5.0);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_EQUAL(got.step, 3);
  CU_ASSERT_PTR_NOT_NULL(strstr(l.used, "ckpt-00000003.ddpc"));
  CU_ASSERT_PTR_NOT_NULL(err && strstr(err, "ckpt-00000099.ddpc' holds step 1"));
  CU_ASSERT_PTR_NOT_NULL(err && strstr(err, "ckpt-00000100.ddpc: not a regular file"));
  free(err);

  /* Writing step 4 with keep 2 prunes 1 and 2, never the stray or the FIFO. */
  state_fill(&s, 4);
  rt_ckpt c = as_ckpt(&s, 4, 0, 4, 1);
  CU_ASSERT_EQUAL(rt_ckpt_write(dir, m, &c, 2), 0);
  listing(dir, names, sizeof names);
  CU_ASSERT_STRING_EQUAL(names, "ckpt-00000003.ddpc ckpt-00000004.ddpc ckpt-00000099.ddpc ckpt-00000100.ddpc");
  /* Reading the FIFO by name fails at once too. */
  CU_ASSERT_EQUAL(rt_ckpt_read(path, m, &got), CORE_ECORRUPT);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "not a regular file"));
  free(one);
  state_free(&s);
  state_free(&r);
  core_model_free(m);
  rtt_rmdir(dir);
}

/* The temp file of a writer that died (nobody holds its lock) goes at the
 * next load or write, with a message; a live writer's stays. */
static void test_dead_writer_temp(void) {
  char dir[512], names[1024], path[700];
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(dir, sizeof dir), 0);
  core_model *m = make_model(dir, "small", SMALL, 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  state s;
  CU_ASSERT_EQUAL_FATAL(state_alloc(&s, m->n_params), 0);
  state_fill(&s, 9);
  rt_ckpt c = as_ckpt(&s, 5, 0, 0, 1);
  CU_ASSERT_EQUAL(rt_ckpt_write(dir, m, &c, 2), 0);
  put_file(dir, "ckpt-00000006.ddpc.tmp.dead01", (const unsigned char *)"partial", 7);
  put_file(dir, "ckpt-00000006.ddpc.tmp.live01", (const unsigned char *)"partial", 7);
  snprintf(path, sizeof path, "%s/ckpt-00000006.ddpc.tmp.live01", dir);
  int live = open(path, O_RDONLY);
  CU_ASSERT_FATAL(live >= 0 && flock(live, LOCK_EX) == 0);
  rt_ckpt got = {.params = s.params, .momentum = s.momentum};
  latest_call l = {.dir = dir, .m = m, .c = &got};
  int rc;
  char *err = capture_stderr(dir, call_latest, &l, &rc);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(
      err && strstr(err, "ckpt-00000006.ddpc.tmp.dead01' (7 bytes), the temp file of a writer that died"));
  free(err);
  listing(dir, names, sizeof names);
  CU_ASSERT_STRING_EQUAL(names, "ckpt-00000005.ddpc ckpt-00000006.ddpc.tmp.live01");
  close(live);
  /* Its writer gone, the live one's file goes at the next write. */
  c = as_ckpt(&s, 6, 0, 0, 1);
  CU_ASSERT_EQUAL(rt_ckpt_write(dir, m, &c, 2), 0);
  listing(dir, names, sizeof names);
  CU_ASSERT_STRING_EQUAL(names, "ckpt-00000005.ddpc ckpt-00000006.ddpc");
  state_free(&s);
  core_model_free(m);
  rtt_rmdir(dir);
}

/* A version 1 file (no write time, header CRC at 72) still loads; its time
 * is the file's. */
static void test_version_1(void) {
  char dir[512], path[700];
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(dir, sizeof dir), 0);
  core_model *m = make_model(dir, "small", SMALL, 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  state s, r;
  CU_ASSERT_EQUAL_FATAL(state_alloc(&s, m->n_params), 0);
  CU_ASSERT_EQUAL_FATAL(state_alloc(&r, m->n_params), 0);
  state_fill(&s, 21);
  rt_ckpt c = as_ckpt(&s, 7, 1, 2, 1);
  CU_ASSERT_EQUAL(rt_ckpt_write(dir, m, &c, 2), 0);
  snprintf(path, sizeof path, "%s/ckpt-00000007.ddpc", dir);
  size_t len;
  unsigned char *b = slurp(path, &len);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  b[8] = 1; /* version 1 */
  memset(b + 72, 0, 24);
  uint32_t h = crc32_ref(b, 72);
  for (int k = 0; k < 4; k++)
    b[72 + k] = (unsigned char)(h >> (8 * k));
  CU_ASSERT_EQUAL(spit(path, b, len), 0);
  struct stat st;
  CU_ASSERT_EQUAL(stat(path, &st), 0);
  rt_ckpt got = {.params = r.params, .momentum = r.momentum};
  CU_ASSERT_EQUAL(rt_ckpt_read(path, m, &got), 0);
  CU_ASSERT_EQUAL(got.step, 7);
  CU_ASSERT_EQUAL(got.written_ns, (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
  CU_ASSERT_EQUAL(memcmp(r.params, s.params, sizeof(float) * (size_t)s.n), 0);
  free(b);
  state_free(&s);
  state_free(&r);
  core_model_free(m);
  rtt_rmdir(dir);
}

/* ---- disk full ------------------------------------------------------------ */

/* In the child (rtt_tmpfs_run): on a 256 KiB tmpfs, two checkpoints of
 * 149,088 bytes each (96 -> 96 -> 96: 18,624 parameters): the first fits,
 * the second cannot (the first is kept until the second is durable). */
static void full_checks(const char *mnt, void *arg) {
  (void)arg;
  char dir[600], names[1024], path[700];
  snprintf(dir, sizeof dir, "%s/ck", mnt);
  static const int W[] = {96, 96, 96};
  core_model *m = make_model(mnt, "wide", W, 2);
  state s, r;
  RTT_CHECK(m != NULL, "cannot load the model");
  if (m && state_alloc(&s, m->n_params) == 0 && state_alloc(&r, m->n_params) == 0) {
    RTT_CHECK(m->n_params == 18624, "model has %lld parameters", (long long)m->n_params);
    state_fill(&s, 5);
    rt_ckpt c = as_ckpt(&s, 10, 1, 2, 1);
    int rc = rt_ckpt_write(dir, m, &c, 2);
    RTT_CHECK(rc == 0, "the first checkpoint (149 KB of 256 KB) failed: %s", core_err_msg());
    state t;
    if (state_alloc(&t, m->n_params) == 0) {
      state_fill(&t, 6);
      c = as_ckpt(&t, 20, 1, 5, 1);
      rc = rt_ckpt_write(dir, m, &c, 2);
      RTT_CHECK(rc == CORE_ENOSPC, "the second checkpoint gave %d, expected CORE_ENOSPC: %s", rc,
          rc ? core_err_msg() : "accepted");
      RTT_CHECK(strstr(core_err_msg(), "space") || strstr(core_err_msg(), "disk"),
          "message does not mention the disk or space: %s", core_err_msg());
      RTT_CHECK(strstr(core_err_msg(), "ckpt-00000020.ddpc") != NULL, "message does not name the checkpoint: %s",
          core_err_msg());
      fprintf(stderr, "\n  full disk: %s\n", core_err_msg());
      state_free(&t);
    }
    /* Only the first checkpoint is there: no temp file, no partial file. */
    listing(dir, names, sizeof names);
    RTT_CHECK(strcmp(names, "ckpt-00000010.ddpc") == 0, "directory holds '%.300s'", names);
    snprintf(path, sizeof path, "%s/ckpt-00000010.ddpc", dir);
    rt_ckpt got = {.params = r.params, .momentum = r.momentum};
    rc = rt_ckpt_read(path, m, &got);
    RTT_CHECK(rc == 0, "the previous checkpoint no longer loads: %s", core_err_msg());
    RTT_CHECK(got.step == 10 && got.pos == 2 && memcmp(r.params, s.params, sizeof(float) * (size_t)s.n) == 0 &&
                  memcmp(r.momentum, s.momentum, sizeof(float) * (size_t)s.n) == 0,
        "the previous checkpoint changed");
    char used[700];
    rc = rt_ckpt_load_latest(dir, m, &got, used, sizeof used);
    RTT_CHECK(rc == 0 && got.step == 10, "load_latest after the full disk: %d step %lld", rc, (long long)got.step);
    /* The failed write holds no space (its temp file is gone, not just
     * unlinked while open): with the first removed, a new one fits. */
    RTT_CHECK(unlink(path) == 0, "cannot remove %.300s: %s", path, strerror(errno));
    state_fill(&s, 7);
    c = as_ckpt(&s, 30, 2, 0, 1);
    rc = rt_ckpt_write(dir, m, &c, 1);
    RTT_CHECK(rc == 0, "with the space freed, writing failed: %s", core_err_msg());
    listing(dir, names, sizeof names);
    RTT_CHECK(strcmp(names, "ckpt-00000030.ddpc") == 0, "directory holds '%.300s'", names);
    state_free(&s);
    state_free(&r);
  }
  core_model_free(m);
}

static void test_disk_full(void) {
  if (geteuid() != 0) {
    test_skip("the full-disk test mounts a tmpfs and needs root (CI runs it as root)");
    return;
  }
  char mnt[512], why[1024];
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(mnt, sizeof mnt), 0);
  int rc = rtt_tmpfs_run(mnt, "size=256k,mode=0755", full_checks, NULL, why, sizeof why);
  if (rc == RTT_REFUSED)
    test_skip("%s", why);
  else if (rc != 0)
    fprintf(stderr, "\n  full disk: %s\n", why);
  CU_ASSERT(rc == 0 || rc == RTT_REFUSED);
  /* The mount lived in the child's namespace only: here the directory was
   * never a mount point and is empty. */
  char names[256];
  listing(mnt, names, sizeof names);
  CU_ASSERT_STRING_EQUAL(names, "");
  FILE *mi = fopen("/proc/self/mountinfo", "r");
  if (mi) {
    char line[4096];
    while (fgets(line, sizeof line, mi))
      CU_ASSERT_PTR_NULL(strstr(line, mnt));
    fclose(mi);
  }
  CU_ASSERT_EQUAL(rmdir(mnt), 0);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("checkpoint format", NULL, rtt_scratch_cleanup);
  CU_add_test(s, "round trip is bit-exact; documented layout", test_round_trip);
  s = CU_add_suite("checkpoint rejection", NULL, rtt_scratch_cleanup);
  CU_add_test(s, "truncated at every byte, then fallback", test_truncated_everywhere);
  CU_add_test(s, "every byte changed, and random damage", test_byte_flips);
  CU_add_test(s, "consistent checksums, inconsistent fields", test_consistent_lies);
  CU_add_test(s, "another model shape", test_other_shape);
  s = CU_add_suite("checkpoint files", NULL, rtt_scratch_cleanup);
  CU_add_test(s, "keep removes only older checkpoints", test_keep);
  CU_add_test(s, "a stray copy and a FIFO: reported, never chosen, never pruning", test_stray_and_fifo);
  CU_add_test(s, "temp files of a dead writer removed, a live one's kept", test_dead_writer_temp);
  CU_add_test(s, "version 1 files still load", test_version_1);
  s = CU_add_suite("full disk", NULL, rtt_scratch_cleanup);
  CU_add_test(s, "full disk: clear error, previous one intact", test_disk_full);
}

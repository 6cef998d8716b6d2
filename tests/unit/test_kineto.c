/* The streaming reader of PyTorch profiler traces (calibrate/kineto.h).
 *
 * tests/data/torch-trace/kineto-small.json (object form) and kineto-array.json
 * (bare array) are written by hand (their README says what each holds): the
 * reader must keep exactly the complete events of the kept categories, in
 * file order, with their index in traceEvents, times as exact integer
 * nanoseconds, the args the importers use, names, threads and shapes
 * interned, and the trace-level metadata wherever it stands. A gzip copy,
 * made here with zlib, must read the same. Every broken trace is refused with
 * CORE_EINVAL, the file named with line:column or traceEvents[i], and
 * nothing kept. A read that runs long reports how far it is on stderr. */
#include "calibrate/kineto.h"

#include "core/err.h"

#include "testutil.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define SMALL TU_DATA("torch-trace/kineto-small.json")
#define ARRAY TU_DATA("torch-trace/kineto-array.json")

static char scratch[4096];

static int suite_init(void) { return tu_mkdtemp(scratch, sizeof scratch, "kineto"); }
static int suite_clean(void) {
  tu_rmdir(scratch);
  return 0;
}

static const char *in_scratch(const char *name) {
  static char buf[8][8192];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", scratch, name);
  return buf[k];
}

/* len bytes of text, gzip-compressed into path; 0 on success. */
static int write_gz(const char *path, const char *text, size_t len) {
  gzFile g = gzopen(path, "wb");
  if (!g)
    return -1;
  int ok = gzwrite(g, text, (unsigned)len) == (int)len;
  return gzclose(g) == Z_OK && ok ? 0 : -1;
}

/* The kept event named name, the nth of them. */
static const cal_kevent *find(const cal_ktrace *t, const char *name, int nth) {
  int32_t id = cal_ktrace_find_str(t, name);
  for (int64_t i = 0; id >= 0 && i < t->n; i++)
    if (t->ev[i].name == id && nth-- == 0)
      return &t->ev[i];
  return NULL;
}

/* kineto-small.json's complete events of kept categories, in file order:
 * their traceEvents index, category, name. */
static const struct {
  int64_t index;
  int cat;
  const char *name;
} small_events[] = {
    {1, CAL_K_CPU_OP, "aten::linear"}, {2, CAL_K_CPU_OP, "aten::cat"}, {3, CAL_K_RUNTIME, "cudaLaunchKernel"},
    {5, CAL_K_KERNEL, "ampere_sgemm_128x64_tn"}, {7, CAL_K_RUNTIME, "cuLaunchKernel"},
    {8, CAL_K_MEMCPY, "Memcpy HtoD (Pageable -> Device)"}, {9, CAL_K_MEMSET, "Memset (Device)"},
    {10, CAL_K_KERNEL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"},
    {11, CAL_K_KERNEL, "ampere_sgemm_128x64_tn"}, {12, CAL_K_CPU_OP, "record_param_comms"},
    {13, CAL_K_USER_ANNOTATION, "ProfilerStep#3"}, {14, CAL_K_GPU_ANNOTATION, "ProfilerStep#3"},
    {15, CAL_K_PYTHON, "torch/nn/modules/linear.py(116): forward"},
    {16, CAL_K_CPU_OP, "aten::linear"}, /* no "cat": a CPU op */
};
enum { N_SMALL = (int)(sizeof small_events / sizeof *small_events) };

static int read_ok(const char *path, cal_ktrace *t) {
  int rc = cal_ktrace_read(path, t);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  return rc;
}

static void test_events_kept(void) {
  cal_ktrace t;
  CU_ASSERT_FATAL(read_ok(SMALL, &t) == 0);
  CU_ASSERT_STRING_EQUAL(t.path, SMALL);
  CU_ASSERT_EQUAL_FATAL(t.n, N_SMALL);
  for (int i = 0; i < N_SMALL; i++) {
    CU_ASSERT_EQUAL(t.ev[i].index, small_events[i].index);
    CU_ASSERT_EQUAL(t.ev[i].cat, small_events[i].cat);
    CU_ASSERT_STRING_EQUAL(cal_ktrace_str(&t, t.ev[i].name), small_events[i].name);
  }
  /* Skipped events leave no strings behind: only kept events' are found. */
  CU_ASSERT_EQUAL(cal_ktrace_find_str(&t, "PyTorch Profiler (0)"), -1);
  CU_ASSERT_EQUAL(cal_ktrace_find_str(&t, "never kept"), -1);
  CU_ASSERT_EQUAL(cal_ktrace_find_str(&t, "ac2g"), -1);
  CU_ASSERT_EQUAL(cal_ktrace_find_str(&t, "process_name"), -1);
  CU_ASSERT_STRING_EQUAL(cal_ktrace_str(&t, -1), "");
  CU_ASSERT_STRING_EQUAL(cal_ktrace_str(&t, 1 << 30), "");
  CU_ASSERT_STRING_EQUAL(cal_kcat_name(CAL_K_RUNTIME), "cuda_runtime");
  cal_ktrace_free(&t);
}

/* Times: the file's microseconds as exact nanoseconds, whatever the form. */
static void test_times_ns(void) {
  cal_ktrace t;
  CU_ASSERT_FATAL(read_ok(SMALL, &t) == 0);
  CU_ASSERT_EQUAL(t.ev[0].ts_ns, INT64_C(1745981234567890123)); /* 16 digits and a fraction */
  CU_ASSERT_EQUAL(t.ev[0].dur_ns, 12500);
  CU_ASSERT_EQUAL(t.ev[1].ts_ns, INT64_C(1745981234567903000)); /* integral */
  CU_ASSERT_EQUAL(t.ev[2].ts_ns, INT64_C(1745981234567905500));
  CU_ASSERT_EQUAL(t.ev[3].ts_ns, INT64_C(1745981234567910250));
  CU_ASSERT_EQUAL(t.ev[3].dur_ns, 40004);
  CU_ASSERT_EQUAL(t.ev[8].dur_ns, 15000); /* 1.5e1 */
  CU_ASSERT_EQUAL(t.ev[9].dur_ns, 12346); /* 12.3456 µs, to the nearest ns */
  /* Order in the file is kept, not sorted by time. */
  CU_ASSERT(t.ev[10].ts_ns < t.ev[9].ts_ns);
  cal_ktrace_free(&t);
}

static void test_args(void) {
  cal_ktrace t;
  CU_ASSERT_FATAL(read_ok(SMALL, &t) == 0);
  const cal_kevent *lin = &t.ev[0], *launch = &t.ev[2], *k = &t.ev[3], *cpy = &t.ev[5], *set = &t.ev[6];
  const cal_kevent *nccl = &t.ev[7], *comms = &t.ev[9], *step = &t.ev[10];
  CU_ASSERT(lin->ext_id == 7 && lin->seq == 42 && lin->corr == -1);
  CU_ASSERT(launch->ext_id == 7 && launch->corr == 77 && launch->device == -1);
  /* A kernel: its launch's correlation, device and stream. */
  CU_ASSERT(k->corr == 77 && k->ext_id == 7 && k->device == 1 && k->stream == 7 && k->bytes == -1);
  CU_ASSERT(cpy->bytes == 4096 && cpy->device == 1 && cpy->stream == 7 && cpy->corr == 79);
  CU_ASSERT(set->bytes == 64);
  CU_ASSERT(nccl->in_nelems == 1024 && nccl->out_nelems == 1024);
  CU_ASSERT_STRING_EQUAL(cal_ktrace_str(&t, nccl->coll), "allreduce");
  CU_ASSERT(comms->in_nelems == 2049000 && comms->out_nelems == 2049000);
  CU_ASSERT_STRING_EQUAL(cal_ktrace_str(&t, comms->dtype), "Float");
  /* Interned: one id per distinct string. */
  CU_ASSERT_EQUAL(comms->dtype, nccl->dtype);
  CU_ASSERT_EQUAL(comms->coll, nccl->coll);
  CU_ASSERT(step->ext_id == -1 && step->corr == -1 && step->seq == -1 && step->device == -1 && step->stream == -1 &&
            step->bytes == -1 && step->in_nelems == -1 && step->out_nelems == -1 && step->dtype == -1 &&
            step->coll == -1 && step->dims == -1);
  cal_ktrace_free(&t);
}

/* Threads: "pid/tid" as written, strings and negative ids alike, interned. */
static void test_threads(void) {
  cal_ktrace t;
  CU_ASSERT_FATAL(read_ok(SMALL, &t) == 0);
  CU_ASSERT_STRING_EQUAL(cal_ktrace_str(&t, t.ev[0].thread), "100/101");
  CU_ASSERT_STRING_EQUAL(cal_ktrace_str(&t, t.ev[2].thread), "100/-5");
  CU_ASSERT_STRING_EQUAL(cal_ktrace_str(&t, t.ev[3].thread), "1/7");
  CU_ASSERT_EQUAL(t.ev[0].thread, t.ev[1].thread);
  CU_ASSERT_EQUAL(t.ev[2].thread, t.ev[4].thread);
  CU_ASSERT_NOT_EQUAL(t.ev[0].thread, t.ev[2].thread);
  CU_ASSERT_EQUAL(t.ev[0].name, t.ev[13].name);
  CU_ASSERT_EQUAL(t.ev[3].name, t.ev[8].name);
  CU_ASSERT_EQUAL(cal_ktrace_find_str(&t, "aten::linear"), t.ev[0].name);
  cal_ktrace_free(&t);
  CU_ASSERT_FATAL(read_ok(ARRAY, &t) == 0);
  CU_ASSERT_STRING_EQUAL(cal_ktrace_str(&t, t.ev[0].thread), "CPU functions/main");
  CU_ASSERT_STRING_EQUAL(cal_ktrace_str(&t, t.ev[1].thread), "0/stream 7");
  cal_ktrace_free(&t);
}

static void test_dims(void) {
  cal_ktrace t;
  CU_ASSERT_FATAL(read_ok(SMALL, &t) == 0);
  const cal_kevent *lin = find(&t, "aten::linear", 0), *cat = find(&t, "aten::cat", 0);
  CU_ASSERT_FATAL(lin && cat);
  int64_t s[4] = {0};
  CU_ASSERT_EQUAL(cal_ktrace_n_inputs(&t, lin), 3);
  CU_ASSERT_EQUAL(cal_ktrace_dims(&t, lin, 0, s, 4), 2);
  CU_ASSERT(s[0] == 32 && s[1] == 512);
  CU_ASSERT_EQUAL(cal_ktrace_dims(&t, lin, 1, s, 4), 2);
  CU_ASSERT(s[0] == 1024 && s[1] == 512);
  CU_ASSERT_EQUAL(cal_ktrace_dims(&t, lin, 2, s, 4), 1);
  CU_ASSERT(s[0] == 1024);
  CU_ASSERT_EQUAL(cal_ktrace_numel(&t, lin, 0), 32 * 512);
  CU_ASSERT_EQUAL(cal_ktrace_numel(&t, lin, 2), 1024);
  CU_ASSERT_EQUAL(cal_ktrace_dims(&t, lin, 3, s, 4), -1);
  CU_ASSERT_EQUAL(cal_ktrace_dims(&t, lin, -1, s, 4), -1);
  /* Fewer sizes asked for than the rank: the rank, and only max written. */
  s[1] = -7;
  CU_ASSERT_EQUAL(cal_ktrace_dims(&t, lin, 1, s, 1), 2);
  CU_ASSERT(s[0] == 1024 && s[1] == -7);
  /* A tensor list, an empty input, a size that is no number, a scalar. */
  CU_ASSERT_EQUAL(cal_ktrace_n_inputs(&t, cat), 4);
  CU_ASSERT_EQUAL(cal_ktrace_dims(&t, cat, 0, s, 4), -1);
  CU_ASSERT_EQUAL(cal_ktrace_dims(&t, cat, 1, s, 4), 0);
  CU_ASSERT_EQUAL(cal_ktrace_dims(&t, cat, 2, s, 4), -1);
  CU_ASSERT_EQUAL(cal_ktrace_dims(&t, cat, 3, s, 4), -1);
  /* Without Input Dims. */
  CU_ASSERT_EQUAL(cal_ktrace_n_inputs(&t, &t.ev[2]), -1);
  CU_ASSERT_EQUAL(cal_ktrace_dims(&t, &t.ev[2], 0, s, 4), -1);
  /* Two ops of one shape share it. */
  const cal_kevent *lin2 = find(&t, "aten::linear", 1);
  CU_ASSERT_FATAL(lin2 != NULL);
  CU_ASSERT(lin2->dims >= 0 && lin2->dims == lin->dims);
  CU_ASSERT_NOT_EQUAL(lin->dims, cat->dims);
  cal_ktrace_free(&t);
}

/* A shape whose elements overflow 64 bits, or with a negative size, has no
 * element count (-1), not a wrapped one. */
static void test_numel_overflow(void) {
  const char *p = in_scratch("numel.json");
  CU_ASSERT_FATAL(
      tu_write_file(p, "[{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"ts\": 1, \"dur\": 1, "
                       "\"args\": {\"Input Dims\": [[4000000000, 4000000000, 4], [3, -2], [3, 4]]}}]") == 0);
  cal_ktrace t;
  CU_ASSERT_FATAL(read_ok(p, &t) == 0 && t.n == 1);
  CU_ASSERT_EQUAL(cal_ktrace_numel(&t, &t.ev[0], 0), -1);
  CU_ASSERT_EQUAL(cal_ktrace_numel(&t, &t.ev[0], 1), -1);
  CU_ASSERT_EQUAL(cal_ktrace_numel(&t, &t.ev[0], 2), 12);
  cal_ktrace_free(&t);
}

/* deviceProperties after traceEvents, distributedInfo before it. */
static void test_metadata(void) {
  cal_ktrace t;
  CU_ASSERT_FATAL(read_ok(SMALL, &t) == 0);
  CU_ASSERT_EQUAL(t.n_devices, 2);
  /* Device 1 ran most kernels; rank 2 modulo 2 devices would say 0. */
  CU_ASSERT_EQUAL(t.device_id, 1);
  CU_ASSERT_STRING_EQUAL(t.device_name, "NVIDIA H100 80GB HBM3");
  CU_ASSERT_EQUAL(t.sm_count, 132);
  CU_ASSERT(t.cc_major == 9 && t.cc_minor == 0);
  CU_ASSERT_EQUAL(t.device_mem, INT64_C(85045870592));
  CU_ASSERT_STRING_EQUAL(t.backend, "nccl");
  CU_ASSERT(t.rank == 2 && t.world_size == 4);
  CU_ASSERT_STRING_EQUAL(t.nccl_version, "2.17.1");
  CU_ASSERT_EQUAL(t.base_time_ns, INT64_C(1745980000000000000));
  cal_ktrace_free(&t);
}

/* The bare-array form: events only, metadata absent. */
static void test_array_form(void) {
  cal_ktrace t;
  CU_ASSERT_FATAL(read_ok(ARRAY, &t) == 0);
  CU_ASSERT_EQUAL_FATAL(t.n, 2);
  CU_ASSERT(t.ev[0].index == 0 && t.ev[1].index == 2);
  CU_ASSERT(t.ev[0].ts_ns == 100000 && t.ev[1].ts_ns == 105500);
  int64_t s[2];
  CU_ASSERT(cal_ktrace_dims(&t, &t.ev[0], 1, s, 2) == 2 && s[0] == 16 && s[1] == 4);
  CU_ASSERT(t.n_devices == 0 && t.device_id == -1 && t.device_name[0] == '\0' && t.sm_count == -1);
  CU_ASSERT(t.rank == -1 && t.world_size == -1 && t.backend[0] == '\0' && t.nccl_version[0] == '\0');
  CU_ASSERT_EQUAL(t.base_time_ns, 0);
  cal_ktrace_free(&t);
}

/* A gzip copy, told by its magic bytes whatever its name, reads the same. */
static void test_gzip(void) {
  size_t len;
  char *text = tu_read_file(SMALL, &len);
  CU_ASSERT_FATAL(text != NULL);
  const char *gz = in_scratch("small.json.gz"), *unnamed = in_scratch("small-gz.json");
  CU_ASSERT_FATAL(write_gz(gz, text, len) == 0 && write_gz(unnamed, text, len) == 0);
  free(text);
  cal_ktrace a, b, c;
  CU_ASSERT_FATAL(read_ok(SMALL, &a) == 0);
  CU_ASSERT_FATAL(read_ok(gz, &b) == 0);
  CU_ASSERT_FATAL(read_ok(unnamed, &c) == 0);
  CU_ASSERT_EQUAL_FATAL(b.n, a.n);
  CU_ASSERT_EQUAL_FATAL(c.n, a.n);
  for (int64_t i = 0; i < a.n; i++) {
    CU_ASSERT(b.ev[i].ts_ns == a.ev[i].ts_ns && b.ev[i].dur_ns == a.ev[i].dur_ns && b.ev[i].index == a.ev[i].index);
    CU_ASSERT(b.ev[i].corr == a.ev[i].corr && b.ev[i].cat == a.ev[i].cat && c.ev[i].ts_ns == a.ev[i].ts_ns);
    CU_ASSERT_STRING_EQUAL(cal_ktrace_str(&b, b.ev[i].name), cal_ktrace_str(&a, a.ev[i].name));
  }
  CU_ASSERT(b.device_id == a.device_id && b.rank == a.rank && b.base_time_ns == a.base_time_ns);
  cal_ktrace_free(&a);
  cal_ktrace_free(&b);
  cal_ktrace_free(&c);
}

/* The bytes of a and then of b (either NULL: nothing) into path; 0 on success. */
static int write_joined(const char *path, const char *a, const char *b) {
  size_t la, lb;
  char *x = a ? tu_read_file(a, &la) : NULL, *y = b ? tu_read_file(b, &lb) : NULL;
  FILE *f = fopen(path, "wb");
  int ok = f && (!a || (x && fwrite(x, 1, la, f) == la)) && (!b || (y && fwrite(y, 1, lb, f) == lb));
  if (f)
    ok &= fclose(f) == 0;
  free(x);
  free(y);
  return ok ? 0 : -1;
}

/* path is refused with CORE_EINVAL, the message holds what and where, and
 * nothing is kept. */
static int refused(const char *path, const char *what, const char *where) {
  cal_ktrace t;
  memset(&t, 0x5a, sizeof t);
  int rc = cal_ktrace_read(path, &t);
  const char *msg = core_err_msg();
  int ok = rc == CORE_EINVAL && strstr(msg, what) && strstr(msg, where) && t.n == 0 && t.ev == NULL;
  if (!ok)
    fprintf(stderr, "\n%s: rc %d, message:\n  %s\nwanted '%s' and '%s'\n", path, rc, msg, what, where);
  if (rc == 0)
    cal_ktrace_free(&t);
  return ok;
}

/* text written to a scratch file name; its path. */
static const char *file_with(const char *name, const char *text) {
  const char *p = in_scratch(name);
  return tu_write_file(p, text) == 0 ? p : NULL;
}

static const char *where(const char *path, const char *suffix) {
  static char buf[2][8400];
  static int k;
  k ^= 1;
  snprintf(buf[k], sizeof buf[k], "%s%s", path, suffix);
  return buf[k];
}

/* A broken trace written to a scratch file, the message it must be
 * refused with, and where: the path followed by suffix. */
typedef struct {
  const char *name, *text, *what, *suffix;
} bad_trace;

/* Every case of the table refused as it says. */
static void refuse_all(const bad_trace *cases, int n) {
  for (int i = 0; i < n; i++) {
    const char *p = file_with(cases[i].name, cases[i].text);
    CU_ASSERT(refused(p, cases[i].what, where(p, cases[i].suffix)));
  }
}
#define REFUSE_ALL(cases) refuse_all(cases, (int)(sizeof cases / sizeof *cases))

/* The small trace cut in two, each half a gzip member of its own, into path
 * (`cat a.gz b.gz`); 0 on success. */
static int write_members(const char *path) {
  size_t len;
  char *text = tu_read_file(SMALL, &len);
  const char *h1 = in_scratch("half1.gz"), *h2 = in_scratch("half2.gz");
  int rc = text && write_gz(h1, text, len / 2) == 0 && write_gz(h2, text + len / 2, len - len / 2) == 0
               ? write_joined(path, h1, h2)
               : -1;
  free(text);
  return rc;
}

/* A gzip file of several members (RFC 1952, 2.2) is their texts one after
 * the other: the halves of a trace read as the whole. */
static void test_gzip_members(void) {
  const char *both = in_scratch("members.json.gz");
  CU_ASSERT_FATAL(write_members(both) == 0);
  cal_ktrace a, b;
  CU_ASSERT_FATAL(read_ok(SMALL, &a) == 0);
  CU_ASSERT_FATAL(read_ok(both, &b) == 0);
  CU_ASSERT_EQUAL_FATAL(b.n, a.n);
  for (int64_t i = 0; i < a.n; i++)
    CU_ASSERT(b.ev[i].ts_ns == a.ev[i].ts_ns && b.ev[i].dur_ns == a.ev[i].dur_ns && b.ev[i].corr == a.ev[i].corr);
  cal_ktrace_free(&a);
  cal_ktrace_free(&b);
}

/* Bytes after the gzip stream that are not a gzip member are refused naming
 * the file and where they start, whatever they are: text, a lone newline,
 * after one member or after two. */
static void test_gzip_trailing(void) {
  size_t len;
  char *text = tu_read_file(SMALL, &len);
  CU_ASSERT_FATAL(text != NULL);
  const char *whole = in_scratch("t-whole.json.gz");
  CU_ASSERT_FATAL(write_gz(whole, text, len) == 0);
  free(text);
  const char *junk = file_with("junk.txt", "junk after the stream\n"), *nl = file_with("nl.txt", "\n");
  const char *p = in_scratch("trailing.json.gz"), *q = in_scratch("trailing-nl.json.gz");
  CU_ASSERT_FATAL(write_joined(p, whole, junk) == 0 && write_joined(q, whole, nl) == 0);
  CU_ASSERT(refused(p, "trailing bytes after the gzip stream", where(p, ": ")));
  CU_ASSERT(refused(q, "trailing bytes after the gzip stream", where(q, ": ")));
  const char *two = in_scratch("two.json.gz");
  CU_ASSERT_FATAL(write_members(two) == 0);
  const char *r = in_scratch("trailing-two.json.gz");
  CU_ASSERT_FATAL(write_joined(r, two, junk) == 0);
  CU_ASSERT(refused(r, "trailing bytes after the gzip stream", where(r, ": ")));
}

static void test_errors_json(void) {
  static const bad_trace bad[] = {
      {"garbage.json", "this is not a trace\n", "not valid JSON", ":1:"},
      {"syntax.json", "{\"traceEvents\": [\n  {\"ph\": \"M\"},\n  {\"ph\": \"X\" \"cat\": 1}\n]}\n", "not valid JSON",
          ":3:"},
  };
  REFUSE_ALL(bad);
  const char *p;
  /* Cut short: the plain fixture, and a gzip whose stream stops. */
  size_t len;
  char *text = tu_read_file(SMALL, &len);
  CU_ASSERT_FATAL(text != NULL);
  text[len / 2] = '\0';
  p = file_with("cut.json", text);
  CU_ASSERT(refused(p, "the text ends before the JSON does", where(p, ":")));
  {
    const char *m = strstr(core_err_msg(), ".json:");
    CU_ASSERT(m && atoi(m + 6) > 10); /* the line it ended on */
  }
  free(text);
  text = tu_read_file(SMALL, &len);
  const char *whole = in_scratch("whole.json.gz");
  CU_ASSERT_FATAL(write_gz(whole, text, len) == 0);
  free(text);
  char *gz = tu_read_file(whole, &len);
  CU_ASSERT_FATAL(gz != NULL && len > 40);
  FILE *f = fopen((p = in_scratch("cut.json.gz")), "wb");
  CU_ASSERT_FATAL(f != NULL);
  CU_ASSERT_FATAL(fwrite(gz, 1, len / 2, f) == len / 2);
  fclose(f);
  free(gz);
  CU_ASSERT(refused(p, "gzip stream ends early", where(p, ":")));
  /* Named .gz but plain text. */
  text = tu_read_file(SMALL, NULL);
  p = file_with("plain.json.gz", text);
  free(text);
  CU_ASSERT(refused(p, "named .gz but not gzip", where(p, ":")));
  p = file_with("empty.json", "");
  CU_ASSERT(refused(p, "empty", where(p, ":")));
}

static void test_errors_shape(void) {
  static const bad_trace bad[] = {
      {"no-events.json", "{\"schemaVersion\": 1, \"events\": []}", "no \"traceEvents\" array", ":"},
      {"events-object.json", "{\"traceEvents\": {}}", "\"traceEvents\" is not an array", ":"},
      {"events-number.json", "{\"deviceProperties\": [], \"traceEvents\": 3}", "\"traceEvents\" is not an array", ":"},
      {"scalar.json", "42", "neither an object with a \"traceEvents\" array nor an array", ":"},
      {"not-object.json", "[{\"ph\": \"M\", \"name\": \"x\"}, 42]", "is not an object", ": traceEvents[1]"},
      {"list-event.json", "{\"traceEvents\": [{\"ph\": \"M\"}, {\"ph\": \"M\"}, []]}", "is not an object",
          ": traceEvents[2]"},
      /* No event kept: none at all, or only metadata and other categories. */
      {"empty-events.json", "{\"traceEvents\": []}", "no complete events", ":"},
      {"only-meta.json",
          "[{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"tid\": 0},"
          " {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"t\", \"ts\": 1, \"dur\": 2}]",
          "no complete events", ":"},
  };
  REFUSE_ALL(bad);
}

static void test_errors_event(void) {
  static const bad_trace bad[] = {
      {"no-ts.json",
          "[{\"ph\": \"M\", \"name\": \"m\"}, {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"dur\": 2}]",
          "\"ts\" is missing", ": traceEvents[1] (\"k\")"},
      {"no-dur.json", "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 5}]}",
          "\"dur\" is missing", ": traceEvents[0]"},
      {"str-dur.json", "[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 5, \"dur\": \"abc\"}]",
          "\"dur\" is missing or not a number", ": traceEvents[0]"},
      {"neg-dur.json", "[{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"ts\": 5, \"dur\": -1}]", ">= 0",
          ": traceEvents[0]"},
      {"obj-ts.json", "[{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"ts\": {\"v\": 1}, \"dur\": 1}]",
          "\"ts\" is missing or not a number", ": traceEvents[0]"},
      {"no-name.json", "[{\"ph\": \"X\", \"cat\": \"cpu_op\", \"ts\": 5, \"dur\": 1}]", "without a \"name\" string",
          ": traceEvents[0]"},
      {"ph-number.json", "[{\"ph\": 88, \"name\": \"a\"}]", "\"ph\" is not a string", ": traceEvents[0]"},
      {"huge-ts.json", "[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1e300, \"dur\": 1}]",
          "\"ts\" is missing or not a number of microseconds (of magnitude below 9.2e15)", ": traceEvents[0]"},
      {"huge-dur.json", "[{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"dur\": 1e300}]",
          "\"dur\" is missing or not a number of microseconds >= 0 (and below 9.2e15)", ": traceEvents[0]"},
      /* distributedInfo's world size or rank out of range is refused, not
       * taken as absent (the job would be replayed as a world of one). */
      {"world-huge.json", "{\"distributedInfo\": {\"rank\": 0, \"world_size\": 1e30}, \"traceEvents\": []}",
          "distributedInfo.world_size is 1e30", ": "},
      {"world-zero.json", "{\"distributedInfo\": {\"rank\": 0, \"world_size\": 0}, \"traceEvents\": []}",
          "distributedInfo.world_size is 0", ": "},
      {"rank-str.json", "{\"distributedInfo\": {\"rank\": \"x\", \"world_size\": 2}, \"traceEvents\": []}",
          "distributedInfo.rank is x, not a whole number", ": "},
      /* A rank outside its world is as damaged, whichever key comes first. */
      {"rank-past.json", "{\"distributedInfo\": {\"rank\": 2, \"world_size\": 2}, \"traceEvents\": []}",
          "distributedInfo.rank is 2, not below its world_size of 2", ": "},
      {"rank-first.json", "{\"distributedInfo\": {\"world_size\": 4, \"rank\": 7}, \"traceEvents\": []}",
          "distributedInfo.rank is 7, not below its world_size of 4", ": "},
  };
  REFUSE_ALL(bad);
  /* A complete event of a category not kept needs no ts or dur. */
  const char *p =
      file_with("other-cat.json", "[{\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"t\"},"
                                  " {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"ts\": 1, \"dur\": 1}]");
  cal_ktrace t;
  CU_ASSERT(read_ok(p, &t) == 0 && t.n == 1);
  cal_ktrace_free(&t);
  /* A missing file is bad input (exit 3), not an I/O failure. */
  CU_ASSERT(cal_ktrace_read(in_scratch("missing.json"), &t) == CORE_EINVAL && t.ev == NULL);
  CU_ASSERT(strstr(core_err_msg(), "missing.json") != NULL && strstr(core_err_msg(), "check the path") != NULL);
}

/* The read of path with stderr into a file of the scratch directory: what
 * it printed, malloc'd. */
static char *read_stderr(const char *path) {
  const char *err = in_scratch("stderr.txt");
  fflush(stderr);
  int keep = dup(2), fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CU_ASSERT_FATAL(keep >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
  cal_ktrace t;
  CU_ASSERT(cal_ktrace_read(path, &t) == 0);
  cal_ktrace_free(&t);
  fflush(stderr);
  dup2(keep, 2);
  close(keep);
  return tu_read_file(err, NULL);
}

/* A read reports how far it is once it has run after_s (0 here: at once),
 * naming the command and the file; by default, and before after_s, it
 * prints nothing. */
static void test_progress(void) {
  char *quiet = read_stderr(SMALL);
  CU_ASSERT(quiet && !quiet[0]);
  free(quiet);
  cal_ktrace_progress("test", 3600.0);
  char *short_read = read_stderr(SMALL);
  CU_ASSERT(short_read && !short_read[0]);
  free(short_read);
  cal_ktrace_progress("test", 0.0);
  char *line = read_stderr(SMALL);
  cal_ktrace_progress(NULL, 0.0);
  CU_ASSERT(line && strstr(line, "test: reading kineto-small.json, 0 MB of 0 MB (100%), 0 s\n"));
  if (line && !strstr(line, "test: reading kineto-small.json"))
    fprintf(stderr, "\ngot: %s\n", line);
  free(line);
  /* Through a pipe, which has no size or offset: the text read so far. */
  size_t len;
  char *text = tu_read_file(SMALL, &len), path[64];
  int fds[2];
  CU_ASSERT_FATAL(text && pipe(fds) == 0 && write(fds[1], text, len) == (ssize_t)len);
  close(fds[1]);
  free(text);
  snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
  cal_ktrace_progress("test", 0.0);
  line = read_stderr(path);
  cal_ktrace_progress(NULL, 0.0);
  close(fds[0]);
  CU_ASSERT(line && strstr(line, ", 0 MB, 0 s\n") && !strstr(line, "-0"));
  if (line && (!strstr(line, ", 0 MB, 0 s\n") || strstr(line, "-0")))
    fprintf(stderr, "\ngot: %s\n", line);
  free(line);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("kineto", suite_init, suite_clean);
  CU_add_test(s, "progress: only past its delay, naming the command and the file", test_progress);
  CU_add_test(s, "the complete events of the kept categories, in file order", test_events_kept);
  CU_add_test(s, "times in exact integer ns, whatever the number's form", test_times_ns);
  CU_add_test(s, "the args the importers use; -1 when absent; strings interned", test_args);
  CU_add_test(s, "threads as pid/tid, string and negative ids, interned", test_threads);
  CU_add_test(s, "Input Dims: ranks and sizes, lists and scalars, shared shapes", test_dims);
  CU_add_test(s, "element counts: -1 on overflow or a negative size", test_numel_overflow);
  CU_add_test(s, "metadata before and after traceEvents; the kernels' device", test_metadata);
  CU_add_test(s, "the bare array form", test_array_form);
  CU_add_test(s, "gzip, told by its magic bytes, reads the same", test_gzip);
  CU_add_test(s, "gzip of several members: their texts one after the other", test_gzip_members);
  CU_add_test(s, "bytes after the gzip stream that are not gzip: refused, naming the file", test_gzip_trailing);
  CU_add_test(s, "bad or cut JSON, cut gzip, .gz not gzip, empty file: line:column", test_errors_json);
  CU_add_test(s, "no traceEvents, not an array, not objects, nothing kept", test_errors_shape);
  CU_add_test(s, "events without ts, dur or name: traceEvents[i]; distributedInfo out of range", test_errors_event);
}

/* runtime/tblog: the TensorBoard logger of a training rank. Every figure
 * handed over comes out in its step's event (buckets and system figures
 * included); handing over never waits: with the queue full, steps are
 * dropped and every step is either logged or counted as dropped; a restart
 * appends after a SessionLog START at its first step; a fresh run refuses a
 * directory with an earlier run's file, and an unusable directory is
 * CORE_EUSAGE before anything runs. GPU figures come from NVML (a stand-in
 * library through DDPSIM_NVML), and without NVML the logger says why and
 * goes on. A full disk (a 64 KiB tmpfs in a private mount namespace; root,
 * skipped where the kernel refuses): writes fail, the steps are counted as
 * dropped, and the file still holds only whole records. */
#define _GNU_SOURCE
#include "rtt.h"

#include "cunit_skip.h"

#include "runtime/tblog.h"

#include "core/err.h"
#include "core/tbwriter.h"

#include "tbevent.pb-c.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- reading the file back ------------------------------------------------ */

typedef struct events {
  Tb__Event *e[4096];
  int n;
  int damaged; /* a record failed its checks */
} events;

static void events_read(const char *path, events *ev) {
  memset(ev, 0, sizeof *ev);
  FILE *f = fopen(path, "rb");
  if (!f) {
    ev->damaged = 1;
    return;
  }
  static unsigned char buf[1 << 21];
  size_t n = fread(buf, 1, sizeof buf, f), off = 0;
  fclose(f);
  while (off < n && ev->n < 4096) {
    const unsigned char *data;
    size_t len, used;
    if (core_tb_record(buf + off, n - off, &data, &len, &used) != 0) {
      ev->damaged = 1;
      break;
    }
    ev->e[ev->n++] = tb__event__unpack(NULL, len, data);
    off += used;
  }
}

static void events_free(events *ev) {
  for (int i = 0; i < ev->n; i++)
    tb__event__free_unpacked(ev->e[i], NULL);
  ev->n = 0;
}

/* The value of tag in event e: 1 when present. */
static int value(const Tb__Event *e, const char *tag, double *v) {
  if (!e || e->what_case != TB__EVENT__WHAT_SUMMARY)
    return 0;
  for (size_t i = 0; i < e->summary->n_value; i++)
    if (strcmp(e->summary->value[i]->tag, tag) == 0) {
      *v = e->summary->value[i]->simple_value;
      return 1;
    }
  return 0;
}

static int close_to(double got, double want) { return fabs(got - want) <= fabs(want) * 1e-6 + 1e-12; }

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static rt_tblog_figures figures(long step, double *bucket_s) {
  for (int b = 0; b < 3; b++)
    bucket_s[b] = 0.001 * (double)(b + 1) + 1e-6 * (double)step;
  return (rt_tblog_figures){.step = step,
      .step_s = 0.02 + 1e-4 * (double)step,
      .compute_s = 0.015,
      .comm_s = 0.006,
      .exposed_comm_s = 0.005 + 1e-4 * (double)step,
      .loss = 2.0 / (double)(step + 1),
      .bucket_s = bucket_s};
}

/* ---- the figures --------------------------------------------------------- */

static void check_step_event(const Tb__Event *e, long step, int attempt, int with_system) {
  double b[3], v;
  rt_tblog_figures f = figures(step, b);
  CU_ASSERT_EQUAL(e->step, step);
  CU_ASSERT(value(e, "Train/Loss", &v) && close_to(v, f.loss));
  CU_ASSERT(value(e, "Train/LR", &v) && close_to(v, 0.05));
  CU_ASSERT(value(e, "Train/StepTime", &v) && close_to(v, f.step_s));
  CU_ASSERT(value(e, "Train/SamplesPerSec", &v) && close_to(v, 16.0 * 2 / f.step_s));
  CU_ASSERT(value(e, "Train/Attempt", &v) && v == attempt);
  CU_ASSERT(value(e, "Dist/SyncTime", &v) && close_to(v, f.comm_s));
  CU_ASSERT(value(e, "Dist/ExposedComm", &v) && close_to(v, f.exposed_comm_s));
  CU_ASSERT(value(e, "Dist/CommRatio", &v) && close_to(v, f.comm_s / f.step_s));
  CU_ASSERT(value(e, "Logger/Dropped", &v) && v == 0);
  for (int k = 0; k < 3; k++) {
    char tag[48];
    snprintf(tag, sizeof tag, "Dist/BucketAllreduce/%d", k);
    CU_ASSERT(value(e, tag, &v) && close_to(v, b[k]));
  }
  if (with_system) {
    CU_ASSERT(value(e, "System/CPUUtil", &v) && v >= 0);
    CU_ASSERT(value(e, "System/MemoryRSS", &v) && v > 1.0);
    CU_ASSERT(value(e, "System/NetRxGbps", &v) && v >= 0);
    CU_ASSERT(value(e, "System/NetTxGbps", &v) && v >= 0);
    CU_ASSERT(!value(e, "System/GPUUtil", &v));
  }
}

static rt_tblog *open_logger(const char *dir, int attempt, int resume, int gpu, int queue, long first) {
  rt_tblog_opts o = {
      .dir = dir, .rank = 1, .attempt = attempt, .resume = resume, .gpu = gpu, .queue_steps = queue, .sys_every_s = 0};
  rt_tblog *l = NULL;
  int rc = rt_tblog_open(&o, &l);
  if (rc) {
    fprintf(stderr, "\n  rt_tblog_open: %s\n", core_err_msg());
    return NULL;
  }
  rt_tblog_run r = {.world = 2, .batch = 16, .n_buckets = 3, .lr = 0.05, .first_step = first};
  if ((rc = rt_tblog_start(l, &r)) != 0) {
    fprintf(stderr, "\n  rt_tblog_start: %s\n", core_err_msg());
    rt_tblog_close(l, NULL);
    return NULL;
  }
  return l;
}

/* Steps first..last, paced so that the queue never fills. */
static void log_steps(rt_tblog *l, long first, long last) {
  for (long s = first; s <= last; s++) {
    double b[3];
    rt_tblog_figures f = figures(s, b);
    rt_tblog_step(l, &f);
    sleep_ms(2);
  }
}

static void test_figures_and_restart(void) {
  char dir[512], path[4400];
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(dir, sizeof dir), 0);
  rt_tblog *l = open_logger(dir, 0, 0, -1, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(l);
  log_steps(l, 0, 9);
  rt_tblog_stats st;
  CU_ASSERT_EQUAL(rt_tblog_close(l, &st), 0);
  CU_ASSERT_EQUAL(st.logged, 10);
  CU_ASSERT_EQUAL(st.dropped_queue + st.dropped_write, 0);
  snprintf(path, sizeof path, "%s", st.path);
  CU_ASSERT_PTR_NOT_NULL(strstr(path, "/rank_1/" CORE_TB_PREFIX));
  events ev;
  events_read(path, &ev);
  CU_ASSERT_FALSE(ev.damaged);
  CU_ASSERT_EQUAL_FATAL(ev.n, 11);
  CU_ASSERT_EQUAL(ev.e[0]->what_case, TB__EVENT__WHAT_FILE_VERSION);
  for (int i = 1; i < 11; i++)
    check_step_event(ev.e[i], i - 1, 0, 1);
  events_free(&ev);

  /* The restart resumes at step 6: same file, START at 6, then 6..11. */
  l = open_logger(dir, 1, 0, -1, 0, 6);
  CU_ASSERT_PTR_NOT_NULL_FATAL(l);
  log_steps(l, 6, 11);
  CU_ASSERT_EQUAL(rt_tblog_close(l, &st), 0);
  CU_ASSERT_STRING_EQUAL(st.path, path);
  events_read(path, &ev);
  CU_ASSERT_FALSE(ev.damaged);
  CU_ASSERT_EQUAL_FATAL(ev.n, 11 + 1 + 6);
  CU_ASSERT_EQUAL(ev.e[11]->what_case, TB__EVENT__WHAT_SESSION_LOG);
  CU_ASSERT_EQUAL(ev.e[11]->session_log->status, TB__SESSION_LOG__SESSION_STATUS__START);
  CU_ASSERT_EQUAL(ev.e[11]->step, 6);
  for (int i = 12; i < ev.n; i++)
    check_step_event(ev.e[i], 6 + (i - 12), 1, 1);
  events_free(&ev);

  /* A fresh run refuses the directory; --resume continues it. */
  rt_tblog_opts o = {.dir = dir, .rank = 1, .gpu = -1, .sys_every_s = -1};
  CU_ASSERT_EQUAL(rt_tblog_open(&o, &l), CORE_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "already holds an event file"));
  o.resume = 1;
  CU_ASSERT_EQUAL(rt_tblog_open(&o, &l), 0);
  CU_ASSERT_EQUAL(rt_tblog_close(l, NULL), 0);
}

static void test_unusable_dir(void) {
  char dir[512], file[600];
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(dir, sizeof dir), 0);
  snprintf(file, sizeof file, "%s/plain-file", dir);
  FILE *f = fopen(file, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fclose(f);
  rt_tblog_opts o = {.dir = file, .rank = 0, .gpu = -1, .sys_every_s = -1};
  rt_tblog *l = (rt_tblog *)&o;
  CU_ASSERT_EQUAL(rt_tblog_open(&o, &l), CORE_EUSAGE);
  CU_ASSERT_PTR_NULL(l);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "--tensorboard"));
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "plain-file"));
  CU_ASSERT_EQUAL(rt_tblog_close(NULL, NULL), 0);
}

/* A queue of 4 handed 20,000 steps at once: most are dropped, none is
 * lost without being counted, and the counts are in the last event. */
static void test_queue_full(void) {
  char dir[512];
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(dir, sizeof dir), 0);
  rt_tblog *l = open_logger(dir, 0, 0, -1, 4, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(l);
  enum { N = 20000 };
  for (long s = 0; s < N; s++) {
    double b[3];
    rt_tblog_figures f = figures(s, b);
    rt_tblog_step(l, &f);
  }
  rt_tblog_stats st;
  CU_ASSERT_EQUAL(rt_tblog_close(l, &st), 0);
  CU_ASSERT(st.dropped_queue > 0);
  CU_ASSERT_EQUAL(st.dropped_write, 0);
  CU_ASSERT_EQUAL(st.logged + st.dropped_queue, N);
  events ev;
  events_read(st.path, &ev);
  CU_ASSERT_FALSE(ev.damaged);
  CU_ASSERT_EQUAL(ev.n, 1 + st.logged);
  double v;
  long prev = -1;
  for (int i = 1; i < ev.n; i++) {
    CU_ASSERT(ev.e[i]->step > prev);
    prev = (long)ev.e[i]->step;
  }
  /* Logger/Dropped counts what was dropped before each logged step. */
  CU_ASSERT(value(ev.e[ev.n - 1], "Logger/Dropped", &v) && v > 0 && v <= st.dropped_queue);
  events_free(&ev);
}

/* ---- GPU figures (NVML is loaded once per process: each case is a child) -- */

typedef struct gpu_case {
  char dir[512];
  const char *nvml; /* DDPSIM_NVML */
  int device;
  const char *why; /* expected in gpu_why, or NULL: figures expected */
} gpu_case;

static int gpu_child(int rank, int size, void *arg) {
  (void)rank;
  (void)size;
  const gpu_case *c = arg;
  rtt_fails = 0;
  setenv("DDPSIM_NVML", c->nvml, 1);
  rt_tblog *l = open_logger(c->dir, 0, 0, c->device, 0, 0);
  RTT_CHECK(l != NULL, "the logger did not open: %s", core_err_msg());
  if (!l)
    return 1;
  log_steps(l, 0, 2);
  rt_tblog_stats st;
  RTT_CHECK(rt_tblog_close(l, &st) == 0, "close: %s", core_err_msg());
  if (c->why)
    RTT_CHECK(strstr(st.gpu_why, c->why) != NULL, "gpu_why '%s' lacks '%s'", st.gpu_why, c->why);
  else
    RTT_CHECK(st.gpu_why[0] == 0, "gpu_why: %s", st.gpu_why);
  events ev;
  events_read(st.path, &ev);
  RTT_CHECK(!ev.damaged && ev.n == 4, "%d events, damaged %d", ev.n, ev.damaged);
  for (int i = 1; i < ev.n; i++) {
    double u = -1, m = -1, loss;
    int has_u = value(ev.e[i], "System/GPUUtil", &u), has_m = value(ev.e[i], "System/GPUMemory", &m);
    RTT_CHECK(value(ev.e[i], "Train/Loss", &loss), "step %d: no Train/Loss", i - 1);
    if (c->why)
      RTT_CHECK(!has_u && !has_m, "step %d: GPU figures without a GPU", i - 1);
    else
      RTT_CHECK(has_u && u == 42 && has_m && m == 1234, "step %d: GPUUtil %g GPUMemory %g", i - 1, u, m);
  }
  events_free(&ev);
  return rtt_fails ? 1 : 0;
}

static void run_gpu_case(const char *nvml, int device, const char *why) {
  gpu_case c = {.nvml = nvml, .device = device, .why = why};
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(c.dir, sizeof c.dir), 0);
  CU_ASSERT(rtt_run(1, gpu_child, &c, 60));
}

static void test_gpu_figures(void) { run_gpu_case(DDPSIM_FAKE_NVML, 0, NULL); }
static void test_gpu_missing(void) {
  run_gpu_case("/nonexistent/libnvidia-ml.so.1", 0, "NVML not found: cannot load /nonexistent/libnvidia-ml.so.1");
  run_gpu_case(DDPSIM_FAKE_NVML, 3, "nvmlDeviceGetHandleByIndex failed: Invalid Argument");
}

/* ---- full disk -------------------------------------------------------------- */

enum { DISK_STEPS = 400 };

/* The logger on a 64 KiB tmpfs: about 150 steps fit, 400 are logged. */
static void disk_checks(const char *mnt, void *arg) {
  (void)arg;
  char dir[600];
  snprintf(dir, sizeof dir, "%s/tb", mnt);
  rt_tblog *l = open_logger(dir, 0, 0, -1, DISK_STEPS, 0);
  RTT_CHECK(l != NULL, "the logger did not open on the tmpfs: %s", core_err_msg());
  if (!l)
    return;
  for (long s = 0; s < DISK_STEPS; s++) {
    double b[3];
    rt_tblog_figures f = figures(s, b);
    rt_tblog_step(l, &f);
    sleep_ms(1);
  }
  rt_tblog_stats st;
  rt_tblog_close(l, &st);
  RTT_CHECK(
      st.dropped_queue == 0 && st.dropped_write > 0 && st.logged > 0 && st.logged + st.dropped_write == DISK_STEPS,
      "logged %ld, dropped %ld (queue) %ld (writes)", st.logged, st.dropped_queue, st.dropped_write);
  RTT_CHECK(strstr(st.write_error, "No space left") != NULL, "write error: '%s'", st.write_error);
  events ev;
  events_read(st.path, &ev);
  RTT_CHECK(!ev.damaged && ev.n == 1 + st.logged, "%d events (damaged %d) for %ld logged", ev.n, ev.damaged, st.logged);
  for (int i = 2; i < ev.n; i++)
    RTT_CHECK(ev.e[i]->step > ev.e[i - 1]->step, "steps out of order at event %d", i);
  events_free(&ev);
}

/* In a child of its own mount namespace, on a 64 KiB tmpfs. */
static void test_full_disk(void) {
  if (geteuid() != 0) {
    test_skip("the full-disk test mounts a tmpfs and needs root (CI runs it as root)");
    return;
  }
  char mnt[512], why[1024];
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(mnt, sizeof mnt), 0);
  int rc = rtt_tmpfs_run(mnt, "size=64k,mode=0755", disk_checks, NULL, why, sizeof why);
  if (rc == RTT_REFUSED) {
    test_skip("%s", why);
    return;
  }
  if (rc != 0)
    fprintf(stderr, "\n  full disk: %s\n", why);
  CU_ASSERT_EQUAL(rc, 0);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("tblog", NULL, rtt_scratch_cleanup);
  CU_add_test(s, "every figure in its step's event; a restart appends after START", test_figures_and_restart);
  CU_add_test(s, "an unusable directory: CORE_EUSAGE naming it", test_unusable_dir);
  CU_add_test(s, "a full queue drops and counts, never waits", test_queue_full);
  s = CU_add_suite("gpu", NULL, rtt_scratch_cleanup);
  CU_add_test(s, "GPU figures from NVML (a stand-in library)", test_gpu_figures);
  CU_add_test(s, "no NVML, no such GPU: said why, logging goes on", test_gpu_missing);
  s = CU_add_suite("full disk", NULL, rtt_scratch_cleanup);
  CU_add_test(s, "full disk: steps dropped and counted, whole records only", test_full_disk);
}

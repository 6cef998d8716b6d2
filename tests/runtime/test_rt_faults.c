/* Faults end in a clear error within a bounded time: a rank SIGKILLed in
 * the middle of a series of allreduces (CORE_EPEER, or CORE_ETIMEDOUT), a
 * rank stopped with SIGSTOP (CORE_ETIMEDOUT), a rank that never joins the
 * rendezvous (CORE_ETIMEDOUT), a bad store spec (CORE_EUSAGE). Every bound
 * is timeout + 5 s, measured with CLOCK_MONOTONIC from the moment of the
 * fault to the moment the rank saw the error. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "runtime/comm.h"
#include "runtime/pg.h"
#include "rtt.h"

#define SLACK_S 5.0

enum fault { FAULT_KILL, FAULT_STOP };

typedef struct fjob {
  char dir[512];
  char prefix[128];
  enum rt_algo algo;
  double timeout_s;
  int report_w;  /* ranks -> parent */
  int release_r; /* parent closes its end to let survivors exit */
  int release_w;
} fjob;

/* Wait until the parent closes the release pipe, so a survivor's exit does
 * not turn the other survivors' timeouts into closed connections. */
static void wait_release(const fjob *j) {
  char b;
  while (read(j->release_r, &b, 1) < 0 && errno == EINTR)
    ;
}

/* Allreduce over and over until something fails; report the failure. */
static int series_rank(int rank, int size, void *arg) {
  const fjob *j = arg;
  close(j->release_w);
  rt_pg_info in = rtt_pg_local(rank, size);
  rt_comm *c = NULL;
  if (rt_pg_connect(&in, j->dir, "127.0.0.1", j->timeout_s, j->prefix, &c)) {
    rtt_report_send(j->report_w, rank, 1, core_err_msg());
    return 2;
  }
  enum { N = 1 << 16 };
  float *buf = calloc(N, sizeof *buf);
  if (!buf)
    return 4;
  int rc = 0, status = 0;
  double end = rtt_now() + 120;
  for (long it = 0; rtt_now() < end; it++) {
    rc = rt_allreduce(c, buf, N, RT_FP32, j->algo);
    if (rc)
      break;
    if (it == 0)
      rtt_report_send(j->report_w, rank, 0, "ready");
  }
  if (!rc) {
    rtt_report_send(j->report_w, rank, 0, "no failure seen in 120 s");
    status = 5;
  } else {
    rtt_report_send(j->report_w, rank, rc, core_err_msg());
    /* A failed communicator stays failed, with the first error's code. */
    int again = rt_allreduce(c, buf, N, RT_FP32, j->algo);
    if (again != rc || !strstr(core_err_msg(), "already failed")) {
      fprintf(stderr, "rank %d: second call after failure gave %d: %s\n", rank, again, core_err_msg());
      status = 6;
    }
  }
  free(buf);
  wait_release(j);
  rt_comm_destroy(c);
  return status;
}

static void check_msg(const rtt_report *r, int size, const char *op) {
  char who[64];
  snprintf(who, sizeof who, "rank %d of %d", r->rank, size);
  if (!strstr(r->msg, op) || !strstr(r->msg, who)) {
    fprintf(stderr, "\nmessage lacks '%s' or '%s': %s\n", op, who, r->msg);
    CU_FAIL("error message does not name the operation and the rank");
  }
}

/* Run size ranks, fault the last one, and check what the survivors saw. */
static void run_fault(int size, enum fault f, enum rt_algo algo, double timeout_s) {
  fjob j;
  memset(&j, 0, sizeof j);
  j.algo = algo;
  j.timeout_s = timeout_s;
  int rp[2], lp[2];
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(j.dir, sizeof j.dir), 0);
  rtt_prefix(j.prefix, sizeof j.prefix, "fault");
  CU_ASSERT_EQUAL_FATAL(rtt_pipe_open(rp), 0);
  CU_ASSERT_EQUAL_FATAL(rtt_pipe_open(lp), 0);
  j.report_w = rp[1];
  j.release_r = lp[0];
  j.release_w = lp[1];

  rtt_group g;
  int spawned = rtt_spawn(&g, 0, size, size, series_rank, &j) == 0;
  close(rp[1]);
  close(lp[0]);
  CU_ASSERT(spawned);
  const int victim = size - 1;

  int ready = 0;
  rtt_report r;
  while (spawned && ready < size && rtt_report_recv(rp[0], &r, 60)) {
    if (r.code == 0 && strcmp(r.msg, "ready") == 0)
      ready++;
    else
      fprintf(stderr, "\nrank %d before the fault: %d %s\n", r.rank, r.code, r.msg);
  }
  CU_ASSERT_EQUAL(ready, size);

  if (ready == size) {
    /* Let the series run a little so the fault lands mid-collective. */
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    int64_t t_fault = rtt_now_ns();
    kill(g.pid[victim], f == FAULT_KILL ? SIGKILL : SIGSTOP);

    int got = 0, timeouts = 0;
    while (got < size - 1 && rtt_report_recv(rp[0], &r, timeout_s + SLACK_S + 10)) {
      got++;
      double after = (double)(r.t_ns - t_fault) / 1e9;
      fprintf(stderr, "\n  rank %d saw %s after %.2f s: %s\n", r.rank, core_err_name(r.code), after, r.msg);
      CU_ASSERT(r.rank != victim);
      CU_ASSERT(after <= timeout_s + SLACK_S);
      if (f == FAULT_KILL) {
        CU_ASSERT(r.code == CORE_EPEER || r.code == CORE_ETIMEDOUT);
      } else if (size == 2) {
        CU_ASSERT_EQUAL(r.code, CORE_ETIMEDOUT);
      } else {
        /* a survivor may see another survivor close on its timeout */
        CU_ASSERT(r.code == CORE_ETIMEDOUT || r.code == CORE_EPEER);
      }
      timeouts += r.code == CORE_ETIMEDOUT;
      check_msg(&r, size, "allreduce");
      if (r.code == CORE_EPEER) {
        CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, "rank died?"));
      }
      if (r.code == CORE_ETIMEDOUT) {
        CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, "raise the timeout"));
      }
    }
    CU_ASSERT_EQUAL(got, size - 1);
    if (f == FAULT_STOP) {
      CU_ASSERT(timeouts >= 1);
    }
  }

  /* Survivors may exit now; the victim dies (a stopped one too). */
  close(lp[1]);
  kill(g.pid[victim], SIGKILL);
  CU_ASSERT(rtt_wait(&g, 30));
  for (int i = 0; i < size - 1; i++) {
    char b[64];
    if (!rtt_ok(&g, i))
      fprintf(stderr, "\nsurvivor %d ended with %s\n", i, rtt_describe(&g, i, b, sizeof b));
    CU_ASSERT(rtt_ok(&g, i));
  }
  close(rp[0]);
  rtt_rmdir(j.dir);
}

static void test_kill_default_3(void) { run_fault(3, FAULT_KILL, RT_ALGO_DEFAULT, 3); }
static void test_kill_ring_3(void) { run_fault(3, FAULT_KILL, RT_ALGO_RING, 3); }
static void test_kill_hd_4(void) { run_fault(4, FAULT_KILL, RT_ALGO_HALVING_DOUBLING, 3); }
static void test_stop_default_2(void) { run_fault(2, FAULT_STOP, RT_ALGO_DEFAULT, 2); }
static void test_stop_ring_2(void) { run_fault(2, FAULT_STOP, RT_ALGO_RING, 2); }
static void test_stop_default_3(void) { run_fault(3, FAULT_STOP, RT_ALGO_DEFAULT, 2); }

/* ---- rendezvous ---------------------------------------------------------- */

static int lonely_rank(int rank, int size, void *arg) {
  const fjob *j = arg;
  rt_pg_info in = rtt_pg_local(rank, size);
  rt_comm *c = NULL;
  int rc = rt_pg_connect(&in, j->dir, "127.0.0.1", j->timeout_s, j->prefix, &c);
  rtt_report_send(j->report_w, rank, rc, rc ? core_err_msg() : "connected");
  rt_comm_destroy(c);
  return 0;
}

static void test_missing_rank(void) {
  fjob j;
  memset(&j, 0, sizeof j);
  j.timeout_s = 2;
  int rp[2];
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(j.dir, sizeof j.dir), 0);
  rtt_prefix(j.prefix, sizeof j.prefix, "lonely");
  CU_ASSERT_EQUAL_FATAL(rtt_pipe_open(rp), 0);
  j.report_w = rp[1];
  const int size = 3;

  int64_t t0 = rtt_now_ns();
  rtt_group g;
  int spawned = rtt_spawn(&g, 0, size - 1, size, lonely_rank, &j) == 0; /* rank 2 never comes */
  close(rp[1]);
  CU_ASSERT(spawned);
  rtt_report r;
  int got = 0;
  while (spawned && got < size - 1 && rtt_report_recv(rp[0], &r, j.timeout_s + SLACK_S + 10)) {
    got++;
    double after = (double)(r.t_ns - t0) / 1e9;
    fprintf(stderr, "\n  rank %d saw %s after %.2f s: %s\n", r.rank, core_err_name(r.code), after, r.msg);
    CU_ASSERT_EQUAL(r.code, CORE_ETIMEDOUT);
    CU_ASSERT(after <= j.timeout_s + SLACK_S);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, "3 ranks"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, j.dir));
  }
  CU_ASSERT_EQUAL(got, size - 1);
  CU_ASSERT(rtt_wait(&g, 30));
  close(rp[0]);
  rtt_rmdir(j.dir);
}

static void test_bad_spec(void) {
  rt_pg_info in = rtt_pg_local(0, 2);
  static const char *const bad[] = {"tcp://127.0.0.1:29500", "redis://", "no-such-dir-xyz", "redis://127.0.0.1:http"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rt_comm *c = NULL;
    int64_t t0 = rtt_now_ns();
    CU_ASSERT_EQUAL(rt_pg_connect(&in, bad[i], "127.0.0.1", 2, "p", &c), CORE_EUSAGE);
    CU_ASSERT(rtt_now_ns() - t0 < 1000000000LL); /* refused at once, no waiting */
    CU_ASSERT_PTR_NULL(c);
    CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), bad[i]));
    CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "accepted forms"));
  }
  /* A well-formed spec naming a directory that is not there is a usage
   * error naming it and saying to create it. */
  rt_comm *c = NULL;
  CU_ASSERT_EQUAL(rt_pg_connect(&in, "/nonexistent/ddpsim-rdv", "127.0.0.1", 2, "p", &c), CORE_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "'/nonexistent/ddpsim-rdv' does not exist: create it"));
}

/* An address that is not this host's: no device, a message naming it. Run
 * in a child, since a Gloo device starts threads. */
static int bad_bind_rank(int rank, int size, void *arg) {
  const fjob *j = arg;
  rt_pg_info in = rtt_pg_local(rank, size);
  rt_comm *c = NULL;
  /* 192.0.2.1 is TEST-NET-1 (RFC 5737): never assigned to a real host. */
  int rc = rt_pg_connect(&in, j->dir, "192.0.2.1", j->timeout_s, j->prefix, &c);
  rtt_report_send(j->report_w, rank, rc, rc ? core_err_msg() : "connected");
  rt_comm_destroy(c);
  return 0;
}

static void test_bad_bind(void) {
  fjob j;
  memset(&j, 0, sizeof j);
  j.timeout_s = 2;
  int rp[2];
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(j.dir, sizeof j.dir), 0);
  rtt_prefix(j.prefix, sizeof j.prefix, "bind");
  CU_ASSERT_EQUAL_FATAL(rtt_pipe_open(rp), 0);
  j.report_w = rp[1];
  int64_t t0 = rtt_now_ns();
  rtt_group g;
  int spawned = rtt_spawn(&g, 0, 1, 2, bad_bind_rank, &j) == 0;
  close(rp[1]);
  CU_ASSERT(spawned);
  rtt_report r;
  int got = spawned && rtt_report_recv(rp[0], &r, j.timeout_s + SLACK_S + 10);
  CU_ASSERT(got);
  if (got) {
    fprintf(stderr, "\n  rank 0 saw %s after %.2f s: %s\n", core_err_name(r.code), (double)(r.t_ns - t0) / 1e9, r.msg);
    CU_ASSERT_EQUAL(r.code, CORE_ECOMM);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, "192.0.2.1"));
    CU_ASSERT((double)(r.t_ns - t0) / 1e9 <= j.timeout_s + SLACK_S);
  }
  CU_ASSERT(rtt_wait(&g, 30));
  close(rp[0]);
  rtt_rmdir(j.dir);
}

/* The tests' own watchdog: a rank that hangs is SIGKILLed at the deadline
 * and reaped, and the run reports it instead of waiting. */
static int hang_rank(int rank, int size, void *arg) {
  (void)size;
  (void)arg;
  if (rank == 1)
    for (;;)
      pause();
  return 0;
}

static void test_watchdog(void) {
  rtt_group g;
  CU_ASSERT_EQUAL_FATAL(rtt_spawn(&g, 0, 2, 2, hang_rank, NULL), 0);
  double t0 = rtt_now();
  CU_ASSERT_EQUAL(rtt_wait(&g, 1.0), 0);
  CU_ASSERT(rtt_now() - t0 < 1.0 + SLACK_S);
  CU_ASSERT(rtt_ok(&g, 0));
  CU_ASSERT(g.reaped[1] && WIFSIGNALED(g.status[1]) && WTERMSIG(g.status[1]) == SIGKILL);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("dead peer", NULL, NULL);
  CU_add_test(s, "SIGKILL mid-series, default algorithm, 3 ranks", test_kill_default_3);
  CU_add_test(s, "SIGKILL mid-series, ring, 3 ranks", test_kill_ring_3);
  CU_add_test(s, "SIGKILL mid-series, halving_doubling, 4 ranks", test_kill_hd_4);
  s = CU_add_suite("stopped peer", NULL, NULL);
  CU_add_test(s, "SIGSTOP, default algorithm, 2 ranks", test_stop_default_2);
  CU_add_test(s, "SIGSTOP, ring, 2 ranks", test_stop_ring_2);
  CU_add_test(s, "SIGSTOP, default algorithm, 3 ranks", test_stop_default_3);
  s = CU_add_suite("rendezvous", NULL, NULL);
  CU_add_test(s, "a rank never shows up", test_missing_rank);
  CU_add_test(s, "bad store spec", test_bad_spec);
  CU_add_test(s, "bind address not of this host", test_bad_bind);
  s = CU_add_suite("watchdog", NULL, NULL);
  CU_add_test(s, "a hung rank is killed at the deadline", test_watchdog);
}

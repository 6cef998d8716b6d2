/* Rendezvous stores: Gloo's FileStore in a scratch directory and its
 * RedisStore on a real redis-server started for this suite (and killed in
 * the suite's cleanup, which CUnit runs whatever the tests did; the server
 * also dies with this process). Values are raw bytes, waits are bounded,
 * prefixes keep runs apart, and ranks rendezvous through redis:// specs. */
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "runtime/comm.h"
#include "runtime/store.h"
#include "runtime/pg.h"
#include "rtt.h"

#define SLACK_S 5.0

static const unsigned char blob[] = {0x00, 0x01, 0xff, 'k', 0x00, 0x7f, '\n', 0x80};

/* Check set/get/wait, timeouts and set-once on an open store. */
static void exercise_store(rt_store *s) {
  CU_ASSERT_EQUAL(rt_store_set(s, "blob", blob, sizeof blob), 0);
  void *v = NULL;
  size_t n = 0;
  CU_ASSERT_EQUAL_FATAL(rt_store_get(s, "blob", 1000, &v, &n), 0);
  CU_ASSERT_EQUAL(n, sizeof blob);
  CU_ASSERT(n == sizeof blob && memcmp(v, blob, n) == 0);
  free(v);

  CU_ASSERT_EQUAL(rt_store_set(s, "a", "1", 1), 0);
  const char *const both[] = {"a", "blob"};
  CU_ASSERT_EQUAL(rt_store_wait(s, both, 2, 1000), 0);

  /* A key nobody sets: a timeout naming the key and the store, in time. */
  int64_t t0 = rtt_now_ns();
  v = (void *)1;
  CU_ASSERT_EQUAL(rt_store_get(s, "never", 1000, &v, &n), CORE_ETIMEDOUT);
  double took = (double)(rtt_now_ns() - t0) / 1e9;
  CU_ASSERT(took >= 1.0 && took <= 1.0 + SLACK_S);
  CU_ASSERT_PTR_NULL(v);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "never"));
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), rt_store_describe(s)));
  const char *const some[] = {"a", "never"};
  CU_ASSERT_EQUAL(rt_store_wait(s, some, 2, 1000), CORE_ETIMEDOUT);

  /* Keys are set once; the message says how to avoid the clash. */
  CU_ASSERT_EQUAL(rt_store_set(s, "a", "2", 1), CORE_EINVAL);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "prefix"));
  CU_ASSERT_EQUAL(rt_store_set(s, "empty", "", 0), CORE_EINVAL);
}

/* Two stores on the same backing store under different prefixes do not see
 * each other's keys; a third under the first prefix does. */
static void exercise_prefixes(rt_store *p1, rt_store *p2, rt_store *p1b) {
  CU_ASSERT_EQUAL(rt_store_set(p1, "k", "x", 1), 0);
  void *v = NULL;
  size_t n = 0;
  CU_ASSERT_EQUAL(rt_store_get(p2, "k", 500, &v, &n), CORE_ETIMEDOUT);
  CU_ASSERT_EQUAL(rt_store_set(p2, "k", "y", 1), 0);
  CU_ASSERT_EQUAL_FATAL(rt_store_get(p1b, "k", 500, &v, &n), 0);
  CU_ASSERT(n == 1 && *(char *)v == 'x');
  free(v);
}

/* ---- FileStore --------------------------------------------------------- */

static void test_file_ops(void) {
  char dir[512];
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(dir, sizeof dir), 0);
  rt_store *s = NULL;
  CU_ASSERT_EQUAL(rt_store_open_file(dir, "ops", &s), 0);
  if (s) {
    CU_ASSERT_PTR_NOT_NULL(strstr(rt_store_describe(s), dir));
    exercise_store(s);
  }
  rt_store_close(s);

  rt_store *p1 = NULL, *p2 = NULL, *p1b = NULL;
  CU_ASSERT_EQUAL(rt_store_open_file(dir, "run1", &p1), 0);
  CU_ASSERT_EQUAL(rt_store_open_file(dir, "run2", &p2), 0);
  CU_ASSERT_EQUAL(rt_store_open_file(dir, "run1", &p1b), 0);
  if (p1 && p2 && p1b)
    exercise_prefixes(p1, p2, p1b);
  rt_store_close(p1);
  rt_store_close(p2);
  rt_store_close(p1b);
  rtt_rmdir(dir);
}

static void test_file_bad(void) {
  rt_store *s = (rt_store *)1;
  CU_ASSERT_EQUAL(rt_store_open_file("/nonexistent/ddpsim-rdv", "p", &s), CORE_EUSAGE);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "'/nonexistent/ddpsim-rdv' does not exist: create it"));
  CU_ASSERT_EQUAL(rt_store_open_file("/dev/null", "p", &s), CORE_EINVAL);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "not a directory"));
  CU_ASSERT_EQUAL(rt_store_open_file("/tmp", "", &s), CORE_EINVAL);
}

/* A value set by another process after a while is what get returns. */
typedef struct late {
  char dir[512];
} late;

static int late_setter(int rank, int size, void *arg) {
  (void)rank;
  (void)size;
  const late *l = arg;
  struct timespec ts = {0, 300 * 1000 * 1000};
  nanosleep(&ts, NULL);
  rt_store *s = NULL;
  if (rt_store_open_file(l->dir, "late", &s))
    return 2;
  int rc = rt_store_set(s, "id", blob, sizeof blob);
  rt_store_close(s);
  return rc ? 3 : 0;
}

static void test_file_cross_process(void) {
  late l;
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(l.dir, sizeof l.dir), 0);
  rtt_group g;
  CU_ASSERT_EQUAL_FATAL(rtt_spawn(&g, 0, 1, 1, late_setter, &l), 0);
  rt_store *s = NULL;
  CU_ASSERT_EQUAL(rt_store_open_file(l.dir, "late", &s), 0);
  void *v = NULL;
  size_t n = 0;
  CU_ASSERT_EQUAL(rt_store_get(s, "id", 10000, &v, &n), 0);
  CU_ASSERT(n == sizeof blob && v && memcmp(v, blob, n) == 0);
  free(v);
  rt_store_close(s);
  CU_ASSERT(rtt_wait(&g, 30));
  CU_ASSERT(rtt_ok(&g, 0));
  rtt_rmdir(l.dir);
}

/* ---- RedisStore ---------------------------------------------------------- */

static rtt_redis redis = {-1, -1};

static int redis_init(void) {
  /* A failure to start shows up in every test of the suite (below), not as
   * a silently skipped suite. */
  rtt_redis_start(&redis);
  return 0;
}

static int redis_cleanup(void) {
  rtt_redis_stop(&redis);
  return 0;
}

#define NEED_REDIS() CU_ASSERT_FATAL(redis.pid > 0 && "redis-server did not start")

static void test_redis_ops(void) {
  NEED_REDIS();
  rt_store *s = NULL;
  CU_ASSERT_EQUAL_FATAL(rt_store_open_redis("127.0.0.1", redis.port, "ops", &s), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(rt_store_describe(s), "redis://127.0.0.1:"));
  exercise_store(s);
  rt_store_close(s);

  rt_store *p1 = NULL, *p2 = NULL, *p1b = NULL;
  CU_ASSERT_EQUAL(rt_store_open_redis("127.0.0.1", redis.port, "run1", &p1), 0);
  CU_ASSERT_EQUAL(rt_store_open_redis("127.0.0.1", redis.port, "run2", &p2), 0);
  CU_ASSERT_EQUAL(rt_store_open_redis("127.0.0.1", redis.port, "run1", &p1b), 0);
  if (p1 && p2 && p1b)
    exercise_prefixes(p1, p2, p1b);
  rt_store_close(p1);
  rt_store_close(p2);
  rt_store_close(p1b);
}

static void test_redis_unreachable(void) {
  NEED_REDIS();
  /* The port of the running server plus one: nothing listens there (the
   * test server took a free port; its neighbour is very likely free too). */
  rt_store *s = NULL;
  int64_t t0 = rtt_now_ns();
  int port = redis.port == 65535 ? redis.port - 1 : redis.port + 1;
  CU_ASSERT_EQUAL(rt_store_open_redis("127.0.0.1", port, "p", &s), CORE_ECOMM);
  CU_ASSERT(rtt_now_ns() - t0 < (int64_t)(SLACK_S * 1e9));
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "redis-server"));
  CU_ASSERT_EQUAL(rt_store_open_redis("127.0.0.1", 0, "p", &s), CORE_EINVAL);
}

typedef struct rjob {
  char spec[128];
  char prefix[128];
} rjob;

/* Rendezvous through redis://, then an allreduce and an allgather. */
static int redis_rank(int rank, int size, void *arg) {
  const rjob *j = arg;
  rt_pg_info in = rtt_pg_local(rank, size);
  rt_comm *c = NULL;
  if (rt_pg_connect(&in, j->spec, NULL, 30, j->prefix, &c)) {
    fprintf(stderr, "rank %d: %s\n", rank, core_err_msg());
    return 2;
  }
  int status = 0;
  enum { N = 1001 };
  float x[N];
  for (int i = 0; i < N; i++)
    x[i] = (float)((rank + 1) * (i % 7));
  if (rt_allreduce(c, x, N, RT_FP32, RT_ALGO_DEFAULT)) {
    fprintf(stderr, "rank %d: %s\n", rank, core_err_msg());
    status = 3;
  }
  for (int i = 0; i < N && !status; i++)
    if (x[i] != (float)(size * (size + 1) / 2 * (i % 7))) {
      fprintf(stderr, "rank %d: allreduce [%d] = %g\n", rank, i, x[i]);
      status = 4;
    }
  float me = (float)rank, all[RTT_MAX_RANKS];
  if (!status && rt_allgather(c, &me, all, 1, RT_FP32)) {
    fprintf(stderr, "rank %d: %s\n", rank, core_err_msg());
    status = 5;
  }
  for (int r = 0; r < size && !status; r++)
    if (all[r] != (float)r)
      status = 6;
  rt_comm_destroy(c);
  return status;
}

static void redis_rendezvous(int size) {
  NEED_REDIS();
  rjob j;
  snprintf(j.spec, sizeof j.spec, "redis://127.0.0.1:%d", redis.port);
  rtt_prefix(j.prefix, sizeof j.prefix, "redis-rdv");
  CU_ASSERT(rtt_run(size, redis_rank, &j, 120));
}

static void test_redis_rendezvous_2(void) { redis_rendezvous(2); }
static void test_redis_rendezvous_3(void) { redis_rendezvous(3); }

void test_register(void) {
  CU_pSuite s = CU_add_suite("filestore", NULL, NULL);
  CU_add_test(s, "set/get/wait, timeouts, set-once, prefixes", test_file_ops);
  CU_add_test(s, "missing directory, not a directory, empty prefix", test_file_bad);
  CU_add_test(s, "get waits for another process's set", test_file_cross_process);
  s = CU_add_suite("redisstore", redis_init, redis_cleanup);
  CU_add_test(s, "set/get/wait, timeouts, set-once, prefixes", test_redis_ops);
  CU_add_test(s, "no server on the port", test_redis_unreachable);
  CU_add_test(s, "rendezvous and allreduce, 2 ranks", test_redis_rendezvous_2);
  CU_add_test(s, "rendezvous and allreduce, 3 ranks", test_redis_rendezvous_3);
}

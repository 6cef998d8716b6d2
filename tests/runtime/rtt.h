/*
 * rtt — what the runtime tests share: ranks as real forked processes with a
 * deadline (a hung rank is SIGKILLed and reported, never waited on forever,
 * and every child is reaped), a pipe on which ranks report what happened to
 * them, a rank's process-group figures in a one-node world, scratch
 * directories, a child on a tmpfs of its own mount namespace (a full disk),
 * the CUDA device probe, a real redis-server on a free loopback port, and
 * exact fp16 encodings of small integers.
 *
 * The parent never creates a Gloo context itself: Gloo starts threads, and a
 * process with threads must not fork.
 */
#ifndef TESTS_RUNTIME_RTT_H
#define TESTS_RUNTIME_RTT_H

#include "runtime/pg.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum { RTT_MAX_RANKS = 8 };

/* A rank's body; its return value becomes the child's exit status (0 = all
 * checks passed). */
typedef int (*rtt_rank_fn)(int rank, int size, void *arg);

typedef struct rtt_group {
  int n; /* children started */
  pid_t pid[RTT_MAX_RANKS];
  int status[RTT_MAX_RANKS]; /* wait status, once reaped */
  int reaped[RTT_MAX_RANKS];
} rtt_group;

/* Start ranks first..first+n-1 of a world of size, each in its own child. */
int rtt_spawn(rtt_group *g, int first, int n, int size, rtt_rank_fn fn, void *arg);
/* Reap every child; those still running after deadline_s seconds are
 * SIGKILLed (and reaped). Returns 1 when all exited by themselves in time. */
int rtt_wait(rtt_group *g, double deadline_s);
/* 1 when child i exited normally with status 0. */
int rtt_ok(const rtt_group *g, int i);
/* Describe child i's end ("exit 3", "signal 9") for failure messages. */
const char *rtt_describe(const rtt_group *g, int i, char *buf, size_t len);

/* Spawn size ranks and wait; returns 1 when every rank exited 0 in time,
 * printing which did not otherwise. */
int rtt_run(int size, rtt_rank_fn fn, void *arg, double deadline_s);

/* The process-group figures of rank in a world of size on one node: every
 * rank local, nothing from the environment. */
rt_pg_info rtt_pg_local(int rank, int size);

/* ---- checks inside ranks ---------------------------------------------- */

/* A rank is a forked child, so CUnit's asserts would not reach the parent:
 * a rank checks with RTT_CHECK, which prints the first 20 failures and
 * counts them in rtt_fails (reset it when the rank starts), and its body
 * returns a nonzero exit status when any failed. */
extern int rtt_fails;
#define RTT_CHECK(cond, ...)                                                                                           \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      if (rtt_fails++ < 20) {                                                                                          \
        fprintf(stderr, "rank check failed at %s:%d: ", __FILE__, __LINE__);                                           \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fputc('\n', stderr);                                                                                           \
      }                                                                                                                \
    }                                                                                                                  \
  } while (0)

/* ---- reports from ranks ---------------------------------------------- */

typedef struct rtt_report {
  int rank;
  int code;      /* what the rank saw: 0 or a core_err code */
  int64_t t_ns;  /* CLOCK_MONOTONIC when it saw it */
  char msg[768]; /* core_err_msg() or a note */
} rtt_report;

/* A pipe opened before spawning; children write whole reports (smaller than
 * PIPE_BUF, so they never interleave), the parent reads them. */
int rtt_pipe_open(int fds[2]);
void rtt_report_send(int fd, int rank, int code, const char *msg);
/* Read one report, waiting at most timeout_s; returns 1 when one arrived. */
int rtt_report_recv(int fd, rtt_report *r, double timeout_s);

/* ---- time, files, numbers -------------------------------------------- */

int64_t rtt_now_ns(void);
double rtt_now(void);
/* A fresh directory under $TMPDIR (or /tmp); removed with its files by
 * rtt_rmdir (the stores write flat directories). */
int rtt_mkdtemp(char *buf, size_t len);
void rtt_rmdir(const char *dir);
/* A fresh directory like rtt_mkdtemp's, recorded so that
 * rtt_scratch_cleanup (a suite's cleanup, which CUnit runs even after a
 * failed _FATAL assertion ended a test early) removes it with everything
 * under it. */
int rtt_scratch_dir(char *buf, size_t len);
int rtt_scratch_cleanup(void);
/* A prefix no earlier test used: test name, pid and a counter. */
void rtt_prefix(char *buf, size_t len, const char *name);

/* fp16 bits of a small integer (|v| <= 2048, exact) and back. */
uint16_t rtt_half(int v);
double rtt_half_value(uint16_t h);

/* ---- a full disk ------------------------------------------------------- */

/* rtt_tmpfs_run's answer when the kernel refuses the namespace or the mount
 * (a container without CAP_SYS_ADMIN): the test is skipped, not failed. */
enum { RTT_REFUSED = 77 };

/* body(mnt, arg) in a child with its own mount namespace, on a tmpfs of
 * opts ("size=64k,mode=0755") mounted on the directory mnt (needs root);
 * body checks with RTT_CHECK. 0 when every check passed and the child
 * unmounted and exited 0 in time, RTT_REFUSED, or 1; why says what
 * happened either way. The mount never reaches this process's namespace. */
int rtt_tmpfs_run(
    const char *mnt, const char *opts, void (*body)(const char *mnt, void *arg), void *arg, char *why, size_t len);

/* ---- the CUDA device probe ---------------------------------------------- */

/* The CUDA devices this machine offers, counted in a child (the parent,
 * which forks ranks, must not start CUDA): > 0; 0 for none, with *code the
 * error and msg why; -1 when the child reported nothing in deadline_s. */
int rtt_gpu_probe(double deadline_s, int *code, char *msg, size_t len);

/* ---- redis-server ------------------------------------------------------ */

typedef struct rtt_redis {
  pid_t pid;
  int port;
} rtt_redis;

/* Start redis-server on 127.0.0.1 at a free port, not saving anything, as a
 * child that dies with this process; waits until it accepts connections.
 * Returns 0, or -1 with a note on stderr (redis-server missing). */
int rtt_redis_start(rtt_redis *r);
void rtt_redis_stop(rtt_redis *r);

#endif

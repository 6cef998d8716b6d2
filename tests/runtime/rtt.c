#define _GNU_SOURCE /* nftw, unshare */
#include "rtt.h"

#include "core/err.h"
#include "runtime/gpu.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <ftw.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int rtt_fails;

/* ---- children -------------------------------------------------------- */

int rtt_spawn(rtt_group *g, int first, int n, int size, rtt_rank_fn fn, void *arg) {
  memset(g, 0, sizeof *g);
  if (n < 1 || n > RTT_MAX_RANKS)
    return -1;
  /* Unflushed output would be written once per child. */
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("rtt_spawn: fork");
      for (int j = 0; j < i; j++)
        kill(g->pid[j], SIGKILL);
      g->n = i;
      rtt_wait(g, 5);
      return -1;
    }
    if (pid == 0) {
      /* A child must not outlive a test runner that crashed. */
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      int rc = fn(first + i, size, arg);
      fflush(stdout);
      fflush(stderr);
      /* exit(), not _exit(): LeakSanitizer checks the child at exit. */
      exit(rc);
    }
    g->pid[i] = pid;
    g->n = i + 1;
  }
  return 0;
}

int rtt_wait(rtt_group *g, double deadline_s) {
  double end = rtt_now() + deadline_s;
  int left = 0, in_time = 1;
  for (int i = 0; i < g->n; i++)
    left += !g->reaped[i];
  while (left > 0) {
    for (int i = 0; i < g->n; i++) {
      if (g->reaped[i])
        continue;
      pid_t r = waitpid(g->pid[i], &g->status[i], WNOHANG);
      if (r == g->pid[i] || (r < 0 && errno == ECHILD)) {
        g->reaped[i] = 1;
        left--;
      }
    }
    if (left == 0)
      break;
    if (rtt_now() > end) {
      in_time = 0;
      for (int i = 0; i < g->n; i++) {
        if (!g->reaped[i]) {
          fprintf(
              stderr, "rtt: child %d (pid %d) still running after %.1f s: SIGKILL\n", i, (int)g->pid[i], deadline_s);
          kill(g->pid[i], SIGKILL);
          /* A SIGSTOPped child dies of SIGKILL too; reap it blocking. */
          while (waitpid(g->pid[i], &g->status[i], 0) < 0 && errno == EINTR)
            ;
          g->reaped[i] = 1;
        }
      }
      break;
    }
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return in_time;
}

int rtt_ok(const rtt_group *g, int i) {
  return g->reaped[i] && WIFEXITED(g->status[i]) && WEXITSTATUS(g->status[i]) == 0;
}

const char *rtt_describe(const rtt_group *g, int i, char *buf, size_t len) {
  if (!g->reaped[i])
    snprintf(buf, len, "not reaped");
  else if (WIFEXITED(g->status[i]))
    snprintf(buf, len, "exit %d", WEXITSTATUS(g->status[i]));
  else if (WIFSIGNALED(g->status[i]))
    snprintf(buf, len, "signal %d", WTERMSIG(g->status[i]));
  else
    snprintf(buf, len, "status 0x%x", g->status[i]);
  return buf;
}

int rtt_run(int size, rtt_rank_fn fn, void *arg, double deadline_s) {
  rtt_group g;
  if (rtt_spawn(&g, 0, size, size, fn, arg) != 0)
    return 0;
  int in_time = rtt_wait(&g, deadline_s);
  int ok = in_time;
  for (int i = 0; i < g.n; i++) {
    if (!rtt_ok(&g, i)) {
      char b[64];
      fprintf(stderr, "rtt: rank %d of %d ended with %s\n", i, size, rtt_describe(&g, i, b, sizeof b));
      ok = 0;
    }
  }
  return ok;
}

rt_pg_info rtt_pg_local(int rank, int size) {
  rt_pg_info in;
  memset(&in, 0, sizeof in);
  in.rank = rank;
  in.world_size = size;
  in.local_rank = rank;
  in.local_world_size = size;
  return in;
}

/* ---- reports --------------------------------------------------------- */

int rtt_pipe_open(int fds[2]) {
  if (pipe(fds) != 0)
    return -1;
  return 0;
}

void rtt_report_send(int fd, int rank, int code, const char *msg) {
  rtt_report r;
  memset(&r, 0, sizeof r);
  r.rank = rank;
  r.code = code;
  r.t_ns = rtt_now_ns();
  snprintf(r.msg, sizeof r.msg, "%s", msg ? msg : "");
  ssize_t w;
  do
    w = write(fd, &r, sizeof r);
  while (w < 0 && errno == EINTR);
}

int rtt_report_recv(int fd, rtt_report *r, double timeout_s) {
  double end = rtt_now() + timeout_s;
  size_t got = 0;
  while (got < sizeof *r) {
    int ms = (int)((end - rtt_now()) * 1000);
    if (ms < 0)
      return 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int pr = poll(&p, 1, ms);
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr <= 0)
      return 0;
    ssize_t n = read(fd, (char *)r + got, sizeof *r - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return 0;
    got += (size_t)n;
  }
  return 1;
}

/* ---- time, files, numbers -------------------------------------------- */

int64_t rtt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double rtt_now(void) { return (double)rtt_now_ns() / 1e9; }

int rtt_mkdtemp(char *buf, size_t len) {
  const char *tmp = getenv("TMPDIR");
  snprintf(buf, len, "%s/ddpsim-rt-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  return mkdtemp(buf) ? 0 : -1;
}

static char scratch[32][512];
static int n_scratch;

int rtt_scratch_dir(char *buf, size_t len) {
  if (rtt_mkdtemp(buf, len) != 0)
    return -1;
  if (n_scratch < (int)(sizeof scratch / sizeof scratch[0]))
    snprintf(scratch[n_scratch++], sizeof scratch[0], "%s", buf);
  return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (flag == FTW_DP)
    rmdir(path);
  else
    unlink(path);
  return 0;
}

int rtt_scratch_cleanup(void) {
  for (int i = 0; i < n_scratch; i++)
    nftw(scratch[i], rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  n_scratch = 0;
  return 0;
}

void rtt_rmdir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

void rtt_prefix(char *buf, size_t len, const char *name) {
  static int counter;
  snprintf(buf, len, "%s-%d-%d", name, (int)getpid(), ++counter);
}

uint16_t rtt_half(int v) {
  uint16_t sign = 0;
  if (v < 0) {
    sign = 0x8000;
    v = -v;
  }
  if (v == 0)
    return sign;
  int e = 0;
  while ((1 << (e + 1)) <= v)
    e++;
  /* v = 1.m * 2^e with e <= 11, so the 10-bit mantissa holds it exactly. */
  uint16_t mant = (uint16_t)(((unsigned)v << (10 - e)) & 0x3ff);
  return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | mant);
}

double rtt_half_value(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  int m = h & 0x3ff;
  double v;
  if (e == 0)
    v = m / 1024.0 / 16384.0; /* subnormal: m * 2^-24 */
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else {
    v = 1.0 + m / 1024.0;
    for (int i = 15; i < e; i++)
      v *= 2;
    for (int i = e; i < 15; i++)
      v /= 2;
  }
  return (h & 0x8000) ? -v : v;
}

/* ---- redis-server ---------------------------------------------------- */

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t l = sizeof a;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &l) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

static int port_accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return 0;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)port);
  int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

int rtt_redis_start(rtt_redis *r) {
  r->pid = -1;
  r->port = free_port();
  if (r->port < 0)
    return -1;
  char port[16];
  snprintf(port, sizeof port, "%d", r->port);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, STDOUT_FILENO);
      close(devnull);
    }
    execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--daemonize", "no", (char *)NULL);
    fprintf(stderr, "rtt: cannot run redis-server: %s (install redis-server)\n", strerror(errno));
    _exit(127);
  }
  r->pid = pid;
  double end = rtt_now() + 10;
  while (rtt_now() < end) {
    if (port_accepts(r->port))
      return 0;
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      fprintf(stderr, "rtt: redis-server on port %d exited before accepting connections\n", r->port);
      r->pid = -1;
      return -1;
    }
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "rtt: redis-server on port %d did not accept connections within 10 s\n", r->port);
  rtt_redis_stop(r);
  return -1;
}

void rtt_redis_stop(rtt_redis *r) {
  if (r->pid <= 0)
    return;
  kill(r->pid, SIGKILL);
  while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
    ;
  r->pid = -1;
}

/* ---- a full disk --------------------------------------------------------- */

typedef struct tmpfs_job {
  const char *mnt, *opts;
  void (*body)(const char *mnt, void *arg);
  void *arg;
  int report_w;
} tmpfs_job;

static int tmpfs_refused(const tmpfs_job *j, const char *what) {
  char m[700];
  snprintf(m, sizeof m, "this kernel refuses %s on %.300s here: %s", what, j->mnt, strerror(errno));
  rtt_report_send(j->report_w, 0, RTT_REFUSED, m);
  return 2;
}

/* The child: own mount namespace, the tmpfs, the body, the unmount. */
static int tmpfs_child(int rank, int size, void *arg) {
  (void)rank;
  (void)size;
  const tmpfs_job *j = arg;
  rtt_fails = 0;
  if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
    return tmpfs_refused(j, "a private mount namespace");
  if (mount("tmpfs", j->mnt, "tmpfs", MS_NOSUID | MS_NODEV, j->opts) != 0)
    return tmpfs_refused(j, "a tmpfs mount");
  j->body(j->mnt, j->arg);
  if (umount2(j->mnt, 0) != 0) {
    RTT_CHECK(0, "umount %s: %s", j->mnt, strerror(errno));
    umount2(j->mnt, MNT_DETACH);
  }
  rtt_report_send(j->report_w, 0, rtt_fails ? 1 : 0, rtt_fails ? "checks failed (above)" : "done");
  return rtt_fails ? 1 : 0;
}

int rtt_tmpfs_run(
    const char *mnt, const char *opts, void (*body)(const char *mnt, void *arg), void *arg, char *why, size_t len) {
  tmpfs_job j = {.mnt = mnt, .opts = opts, .body = body, .arg = arg};
  int rp[2];
  if (rtt_pipe_open(rp) != 0) {
    snprintf(why, len, "no pipe for the child's report: %s", strerror(errno));
    return 1;
  }
  j.report_w = rp[1];
  rtt_group g;
  int spawned = rtt_spawn(&g, 0, 1, 1, tmpfs_child, &j) == 0;
  close(rp[1]);
  rtt_report r;
  int got = spawned && rtt_report_recv(rp[0], &r, 60);
  int in_time = spawned && rtt_wait(&g, 30);
  close(rp[0]);
  char end[64];
  if (!spawned)
    snprintf(why, len, "the child did not start");
  else if (!got)
    snprintf(why, len, "no report from the child in 60 s (%s)", rtt_describe(&g, 0, end, sizeof end));
  else if (r.code == RTT_REFUSED || (r.code == 0 && in_time && rtt_ok(&g, 0)))
    snprintf(why, len, "%s", r.msg);
  else
    snprintf(why, len, "%s; the child: %s", r.msg, rtt_describe(&g, 0, end, sizeof end));
  if (got && r.code == RTT_REFUSED)
    return RTT_REFUSED;
  return got && r.code == 0 && in_time && rtt_ok(&g, 0) ? 0 : 1;
}

/* ---- the CUDA device probe ------------------------------------------------ */

static int probe_child(int rank, int size, void *arg) {
  (void)size;
  int fd = *(const int *)arg;
  int n = 0;
  int rc = rt_gpu_count(&n);
  rtt_report_send(fd, rank, rc ? rc : n, rc ? core_err_msg() : "ok");
  return 0;
}

int rtt_gpu_probe(double deadline_s, int *code, char *msg, size_t len) {
  int n = -1, fds[2];
  if (rtt_pipe_open(fds) != 0)
    return -1;
  rtt_group g;
  if (rtt_spawn(&g, 0, 1, 1, probe_child, &fds[1]) == 0) {
    rtt_report r;
    if (rtt_report_recv(fds[0], &r, deadline_s)) {
      n = r.code > 0 ? r.code : 0;
      *code = r.code > 0 ? 0 : r.code;
      snprintf(msg, len, "%s", r.msg);
    }
    rtt_wait(&g, deadline_s);
  }
  close(fds[0]);
  close(fds[1]);
  return n;
}

#define _GNU_SOURCE
#include "launch.h"

#include "core/afile.h"
#include "core/clock.h"
#include "core/err.h"

#include <arpa/inet.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* torchrun's default rendezvous port (torch/distributed/run.py --master-port). */
#define DEFAULT_MASTER_PORT 29500

static volatile sig_atomic_t got_signal;

static void on_signal(int sig) { got_signal = sig; }

/* The first global IPv4 address of this (network namespace's) interfaces,
 * or 127.0.0.1 when there is none. */
static int local_addr(char *buf, int n) {
  struct ifaddrs *ifs, *i;
  snprintf(buf, (size_t)n, "127.0.0.1");
  if (getifaddrs(&ifs) != 0)
    return core_err_errno(errno, "cannot list network interfaces");
  for (i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
      continue;
    struct in_addr a = ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr;
    if ((ntohl(a.s_addr) >> 24) == 127)
      continue;
    inet_ntop(AF_INET, &a, buf, (socklen_t)n);
    break;
  }
  freeifaddrs(ifs);
  return 0;
}

/* In the child: enter the host's network namespace (iproute2 keeps named
 * namespaces under /var/run/netns). */
static int enter_netns(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "/var/run/netns/%s", name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr,
        "ddpsim launch: cannot open network namespace '%s' (%s): %s; is the testbed up? (scripts/testbed.sh status)\n",
        name, path, strerror(errno));
    return -1;
  }
  if (setns(fd, CLONE_NEWNET) != 0) {
    fprintf(stderr, "ddpsim launch: cannot enter network namespace '%s': %s (needs root)\n", name, strerror(errno));
    close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

static void set_env_int(const char *k, long v) {
  char b[32];
  snprintf(b, sizeof b, "%ld", v);
  setenv(k, b, 1);
}

/* cgroup of one rank with a CPU quota of 1.25 ms a period (a period of
 * 2.5 ms at 0.5 CPU). The kernel checks the quota at its tick (4 ms at
 * HZ=250): shorter periods throttle a rank below its quota, longer ones let
 * a rank run unthrottled after an idle spell, faster than calibrated
 * (bench/NOTES.md, "CPU quota period"). The kernel takes quotas and periods
 * of 1 ms to 1 s (sched-bwc.rst). */
enum { QUOTA_US = 1250, PERIOD_MIN_US = 1000, PERIOD_MAX_US = 1000000 };

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

static void cgroup_path(char *buf, size_t n, int rank, int v2) {
  snprintf(buf, n, v2 ? "/sys/fs/cgroup/ddpsim-%d-r%d" : "/sys/fs/cgroup/cpu/ddpsim-%d-r%d", (int)getpid(), rank);
}

/* In the child: move itself into a new cgroup limited to quota CPUs. */
static int enter_cgroup(int rank, double quota, pid_t launcher) {
  char dir[256], f[320], v[64];
  int v2 = access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", F_OK) != 0;
  snprintf(
      dir, sizeof dir, v2 ? "/sys/fs/cgroup/ddpsim-%d-r%d" : "/sys/fs/cgroup/cpu/ddpsim-%d-r%d", (int)launcher, rank);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    goto fail;
  long period = (long)(QUOTA_US / quota + 0.5);
  if (period < PERIOD_MIN_US)
    period = PERIOD_MIN_US;
  if (period > PERIOD_MAX_US)
    period = PERIOD_MAX_US;
  long q = (long)(quota * period + 0.5);
  if (q < 1000) /* the kernel's smallest quota */
    q = 1000;
  if (v2) {
    snprintf(f, sizeof f, "%s/cpu.max", dir);
    snprintf(v, sizeof v, "%ld %ld", q, period);
    if (write_file(f, v))
      goto fail;
  } else {
    snprintf(f, sizeof f, "%s/cpu.cfs_period_us", dir);
    snprintf(v, sizeof v, "%ld", period);
    if (write_file(f, v))
      goto fail;
    snprintf(f, sizeof f, "%s/cpu.cfs_quota_us", dir);
    snprintf(v, sizeof v, "%ld", q);
    if (write_file(f, v))
      goto fail;
  }
  snprintf(f, sizeof f, "%s/cgroup.procs", dir);
  snprintf(v, sizeof v, "%d", (int)getpid());
  if (write_file(f, v))
    goto fail;
  return 0;
fail:
  fprintf(stderr,
      "ddpsim launch: cannot limit rank %d to %.2f CPUs in cgroup %s: %s (needs root and the cgroup cpu controller)\n",
      rank, quota, dir, strerror(errno));
  return -1;
}

typedef struct child {
  pid_t pid;
  int rank;
  int done;
  int status;
} child;

static void describe(int status, char *buf, size_t n) {
  if (WIFSIGNALED(status))
    snprintf(buf, n, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
}

static int failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }
/* Exit 4 (CLI_EXIT_PEER): the rank only saw another rank die or hang. */
static int peer_failure(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 4; }

/* The address of each host: a child enters the namespace and reports it, so
 * every rank can be told MASTER_ADDR (rank 0's host) before it starts. */
static int host_addrs(const rt_launch_opts *o, char (*addr)[64]) {
  for (int h = 0; h < o->n_hosts; h++) {
    int fd[2];
    if (pipe(fd) != 0)
      return core_err_errno(errno, "cannot create a pipe");
    pid_t pid = fork();
    if (pid < 0) {
      close(fd[0]);
      close(fd[1]);
      return core_err_errno(errno, "cannot fork");
    }
    if (pid == 0) {
      char a[64];
      close(fd[0]);
      if (enter_netns(o->hosts[h]) != 0)
        _exit(1);
      local_addr(a, sizeof a);
      ssize_t w = write(fd[1], a, strlen(a) + 1);
      _exit(w > 0 ? 0 : 1);
    }
    close(fd[1]);
    ssize_t n = read(fd[0], addr[h], 63);
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (n <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      return core_err_set(CORE_EUSAGE,
          "cannot enter host '%s' (network namespace); is the testbed up? (scripts/testbed.sh status)", o->hosts[h]);
    addr[h][n < 63 ? n : 63] = '\0';
  }
  return 0;
}

/* Wall-clock time the previous attempt's failure was seen and how long
 * stopping its other ranks took, for the ranks of the next attempt to
 * measure their recovery (DDPSIM_FAIL_TIME, DDPSIM_STOP_S). */
static double prev_fail_rt, prev_stop_s;

/* Rank r's block of the launcher's CPUs for --cpu-bind: the allowed CPUs in
 * order, split into nproc contiguous blocks (the first ones a CPU larger
 * when they do not divide evenly), so that neighbouring CPU numbers, which
 * usually share caches, go to the same rank. */
static void cpu_block(const cpu_set_t *all, int nproc, int r, cpu_set_t *out) {
  int n = CPU_COUNT(all), per = n / nproc, extra = n % nproc;
  int first = r * per + (r < extra ? r : extra), len = per + (r < extra);
  CPU_ZERO(out);
  for (int c = 0, i = 0; c < CPU_SETSIZE && i < first + len; c++)
    if (CPU_ISSET(c, all)) {
      if (i >= first)
        CPU_SET(c, out);
      i++;
    }
}

/* An attempt's times as its ranks' environment gives them. */
typedef struct attempt_times {
  char launch[64], fail[64], stop[64];
} attempt_times;

/* In rank r's child: torchrun's variables and the launcher's own. */
static void rank_env(
    const rt_launch_opts *o, int attempt, int r, const char *rdzv, char (*addr)[64], const attempt_times *t) {
  int per_host = o->n_hosts ? o->nproc / o->n_hosts : o->nproc;
  setenv("DDPSIM_LAUNCH_TIME", t->launch, 1);
  if (attempt > 0) {
    setenv("DDPSIM_FAIL_TIME", t->fail, 1);
    setenv("DDPSIM_STOP_S", t->stop, 1);
  }
  set_env_int("RANK", r);
  set_env_int("WORLD_SIZE", o->nproc);
  set_env_int("LOCAL_RANK", r % per_host);
  set_env_int("LOCAL_WORLD_SIZE", per_host);
  set_env_int("GROUP_RANK", r / per_host);
  set_env_int("DDPSIM_RESTART_COUNT", attempt);
  set_env_int("TORCHELASTIC_RESTART_COUNT", attempt);
  set_env_int("MASTER_PORT", o->master_port > 0 ? o->master_port : DEFAULT_MASTER_PORT);
  setenv("MASTER_ADDR", o->n_hosts ? addr[0] : "127.0.0.1", 1);
  setenv("DDPSIM_RDZV", rdzv, 1);
  setenv("DDPSIM_BIND_ADDR", o->n_hosts ? addr[r / per_host] : "127.0.0.1", 1);
}

/* Start one attempt's ranks. */
static int start_group(
    const rt_launch_opts *o, int attempt, const char *rdzv, char (*addr)[64], const cpu_set_t *cpus, child *ch) {
  int per_host = o->n_hosts ? o->nproc / o->n_hosts : o->nproc;
  pid_t launcher = getpid();
  attempt_times t;
  snprintf(t.launch, sizeof t.launch, "%.6f", core_wall_now());
  snprintf(t.fail, sizeof t.fail, "%.6f", prev_fail_rt);
  snprintf(t.stop, sizeof t.stop, "%.6f", prev_stop_s);
  for (int r = 0; r < o->nproc; r++) {
    ch[r].rank = r;
    ch[r].done = 0;
    pid_t pid = fork();
    if (pid < 0)
      return core_err_errno(errno, "cannot start rank %d", r);
    if (pid == 0) {
      setpgid(0, 0);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      /* A launcher killed outright (SIGKILL, OOM) cannot stop its ranks: the
       * kernel does, or they would train on, writing the run's checkpoints
       * beside the next launch's. */
      if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != launcher)
        _exit(4);
      if (o->n_hosts && enter_netns(o->hosts[r / per_host]) != 0)
        _exit(3);
      if (o->cpu_quota > 0 && enter_cgroup(r, o->cpu_quota, launcher) != 0)
        _exit(3);
      if (o->cpu_bind) {
        cpu_set_t mine;
        cpu_block(cpus, o->nproc, r, &mine);
        if (sched_setaffinity(0, sizeof mine, &mine) != 0) {
          fprintf(stderr, "ddpsim launch: cannot bind rank %d to its CPUs: %s\n", r, strerror(errno));
          _exit(3);
        }
      }
      rank_env(o, attempt, r, rdzv, addr, &t);
      execvp(o->argv[0], o->argv);
      fprintf(stderr, "ddpsim launch: cannot run '%s': %s\n", o->argv[0], strerror(errno));
      _exit(127);
    }
    setpgid(pid, pid); /* also here, so signals reach it even before it runs */
    ch[r].pid = pid;
  }
  return 0;
}

/* Empty cgroups of this launcher's ranks go away once their ranks are gone. */
static void remove_cgroups(const rt_launch_opts *o) {
  if (o->cpu_quota <= 0)
    return;
  int v2 = access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", F_OK) != 0;
  for (int r = 0; r < o->nproc; r++) {
    char dir[256];
    cgroup_path(dir, sizeof dir, r, v2);
    rmdir(dir);
  }
}

static void signal_all(child *ch, int n, int sig) {
  for (int r = 0; r < n; r++)
    if (!ch[r].done && ch[r].pid > 0)
      kill(-ch[r].pid, sig);
}

static int reap(child *ch, int n, int flags) {
  int st;
  pid_t pid = waitpid(-1, &st, flags);
  if (pid <= 0)
    return -1;
  for (int r = 0; r < n; r++)
    if (ch[r].pid == pid) {
      ch[r].done = 1;
      ch[r].status = st;
      return r;
    }
  return -1;
}

/* Stop everything still running: SIGTERM, then SIGKILL after grace_s. */
static void stop_group(const rt_launch_opts *o, child *ch) {
  signal_all(ch, o->nproc, SIGTERM);
  double deadline = core_now() + o->grace_s;
  int left;
  for (;;) {
    left = 0;
    for (int r = 0; r < o->nproc; r++)
      left += !ch[r].done;
    if (!left)
      return;
    if (reap(ch, o->nproc, WNOHANG) >= 0)
      continue;
    if (core_now() >= deadline)
      break;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  signal_all(ch, o->nproc, SIGKILL);
  while (left > 0 && reap(ch, o->nproc, 0) >= 0)
    left--;
}

/* One launch: what every attempt shares. */
typedef struct launcher {
  const rt_launch_opts *o;
  rt_launch_result *res;
  cpu_set_t cpus;   /* with cpu_bind: the CPUs dealt out to the ranks */
  child *ch;        /* [nproc]: the current attempt's ranks */
  char (*addr)[64]; /* each host's address */
  gsl_rng *rng;     /* with fail_mtbf_s: the injected failures' draws */
  struct sigaction old_int, old_term;
} launcher;

/* 1 when path names an executable regular file. */
static int executable(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The command is looked up as execvp will look it up, so that one that
 * cannot run is bad usage now, not every rank dying with status 127. */
static int check_command(const char *cmd) {
  if (strchr(cmd, '/')) {
    if (executable(cmd))
      return 0;
    return core_err_set(CORE_EUSAGE, "cannot run '%s': %s; give the path of an executable file", cmd,
        access(cmd, F_OK) != 0 ? strerror(errno) : "not an executable file");
  }
  const char *path = getenv("PATH");
  char dirs[8192], full[8192 + 256];
  snprintf(dirs, sizeof dirs, "%s", path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    snprintf(full, sizeof full, "%s/%s", *d ? d : ".", cmd);
    if (executable(full))
      return 0;
  }
  return core_err_set(
      CORE_EUSAGE, "cannot run '%s': no such command on PATH; give its path (e.g. ./build/ddpsim)", cmd);
}

static int check_opts(const rt_launch_opts *o, cpu_set_t *cpus) {
  if (o->nproc < 1)
    return core_err_set(CORE_EUSAGE, "--nproc must be at least 1");
  int rc = check_command(o->argv[0]);
  if (rc)
    return rc;
  if (o->n_hosts && o->nproc % o->n_hosts != 0)
    return core_err_set(CORE_EUSAGE, "--nproc %d does not divide over %d hosts; give a multiple of the host count",
        o->nproc, o->n_hosts);
  CPU_ZERO(cpus);
  if (!o->cpu_bind)
    return 0;
  if (sched_getaffinity(0, sizeof *cpus, cpus) != 0)
    return core_err_errno(errno, "--cpu-bind: cannot read the CPUs this launcher may use");
  if (CPU_COUNT(cpus) < o->nproc)
    return core_err_set(CORE_EUSAGE,
        "--cpu-bind gives every rank CPUs of its own, but %d ranks meet %d CPUs here; "
        "start at most %d ranks, or drop --cpu-bind",
        o->nproc, CPU_COUNT(cpus), CPU_COUNT(cpus));
  /* With one CPU a rank, Gloo's loop thread and the caller take turns on
   * it, a scheduler tick at a time (bench/NOTES.md, "--cpu-bind"). */
  if (CPU_COUNT(cpus) / o->nproc < 2 && !o->quiet)
    fprintf(stderr, "ddpsim launch: warning: --cpu-bind leaves each rank one CPU, which Gloo's threads share with "
                    "the rank's own: small collectives may wait a scheduler tick (milliseconds) each\n");
  return 0;
}

/* The ranks' table, the signal handlers, the failures' generator and the
 * hosts' addresses; launcher_close undoes it, also after a failure here. */
static int launcher_open(launcher *L) {
  const rt_launch_opts *o = L->o;
  int rc = 0;
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &L->old_int);
  sigaction(SIGTERM, &sa, &L->old_term);
  got_signal = 0;
  if (o->fail_mtbf_s > 0) {
    L->rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (L->rng)
      gsl_rng_set(L->rng, o->fail_seed);
  }
  L->addr = calloc((size_t)(o->n_hosts ? o->n_hosts : 1), sizeof *L->addr);
  if (!L->addr || (o->n_hosts && (rc = host_addrs(o, L->addr)) != 0)) {
    if (!L->addr)
      rc = core_err_set(CORE_ENOMEM, "out of memory");
    L->res->exit_code = rc == CORE_EUSAGE ? 2 : 1;
  }
  return rc;
}

static void launcher_close(launcher *L) {
  remove_cgroups(L->o);
  gsl_rng_free(L->rng);
  free(L->addr);
  sigaction(SIGINT, &L->old_int, NULL);
  sigaction(SIGTERM, &L->old_term, NULL);
  free(L->ch);
}

/* A signal to the launcher: forwarded, every rank stopped. */
static int interrupted(launcher *L, int running) {
  int sig = got_signal;
  if (!L->o->quiet)
    fprintf(stderr, "ddpsim launch: got signal %d (%s), stopping %d rank(s)\n", sig, strsignal(sig), running);
  signal_all(L->ch, L->o->nproc, sig);
  stop_group(L->o, L->ch);
  L->res->exit_code = 128 + sig;
  return core_err_set(CORE_EIO, "interrupted by signal %d (%s); every rank was stopped", sig, strsignal(sig));
}

/* Watch the group until every rank exited or one failed (*bad, else -1),
 * killing this attempt's injected victim when its moment comes. */
static int supervise(launcher *L, int attempt, int *bad) {
  const rt_launch_opts *o = L->o;
  child *ch = L->ch;
  int running = o->nproc, victim = -1;
  double kill_at = INFINITY;
  *bad = -1;
  if (o->fail_mtbf_s > 0 && attempt < o->max_restarts && L->rng) {
    kill_at = core_now() + gsl_ran_exponential(L->rng, o->fail_mtbf_s);
    victim = (int)gsl_rng_uniform_int(L->rng, (unsigned long)o->nproc);
  }
  while (running > 0) {
    if (victim >= 0 && core_now() >= kill_at) {
      if (!ch[victim].done) {
        if (!o->quiet)
          fprintf(stderr, "ddpsim launch: injected failure: SIGKILL to rank %d\n", victim);
        kill(-ch[victim].pid, SIGKILL);
      }
      victim = -1;
    }
    if (got_signal)
      return interrupted(L, running);
    /* Until the injected failure is due, wait in short slices. */
    int r = reap(ch, o->nproc, victim >= 0 ? WNOHANG : 0);
    if (r < 0 && victim >= 0) {
      struct timespec ts = {0, 5 * 1000 * 1000};
      nanosleep(&ts, NULL);
      continue;
    }
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      break;
    running--;
    if (failed(ch[r].status)) {
      *bad = r;
      break;
    }
  }
  /* Ranks that die together are reaped in any order (a launcher that runs
   * late finds them all dead, and waitpid returns the oldest first): blame
   * a rank that failed on its own over one that exited 4 because of it. */
  for (int r; *bad >= 0 && (r = reap(ch, o->nproc, WNOHANG)) >= 0;)
    if (failed(ch[r].status) && peer_failure(ch[*bad].status) && !peer_failure(ch[r].status))
      *bad = r;
  return 0;
}

/* One attempt: a fresh rendezvous directory, the group started and watched
 * (*bad: the rank that failed, else -1). */
static int run_attempt(launcher *L, int attempt, int *bad) {
  const rt_launch_opts *o = L->o;
  char rdzv[4200];
  int rc;
  *bad = -1;
  /* Fresh for every attempt even when --rdzv-dir is reused by a later
   * job: a FileStore key can be set only once. */
  if ((rc = core_mkdirs(o->rdzv_dir)) != 0)
    return rc;
  snprintf(rdzv, sizeof rdzv, "%s/attempt-%d.XXXXXX", o->rdzv_dir, attempt);
  if (!mkdtemp(rdzv))
    return core_err_errno(errno, "cannot create a rendezvous directory in '%s'", o->rdzv_dir);
  L->res->attempts = attempt + 1;
  if ((rc = start_group(o, attempt, rdzv, L->addr, &L->cpus, L->ch)) != 0) {
    stop_group(o, L->ch);
    return rc;
  }
  if ((rc = supervise(L, attempt, bad)) != 0)
    return rc;
  remove_cgroups(o);
  return 0;
}

/* Rank bad failed: stop the rest within a bounded time and say so. 0 when
 * the group may start again; otherwise why not. */
static int after_failure(launcher *L, int attempt, int bad) {
  const rt_launch_opts *o = L->o;
  rt_launch_result *res = L->res;
  const child *c = &L->ch[bad];
  char how[128];
  describe(c->status, how, sizeof how);
  prev_fail_rt = core_wall_now();
  double t0 = core_now();
  stop_group(o, L->ch);
  res->stop_s = core_now() - t0;
  prev_stop_s = res->stop_s;
  remove_cgroups(o);
  res->failed_rank = bad;
  int code = WIFEXITED(c->status) ? WEXITSTATUS(c->status) : 0;
  if (!o->quiet)
    fprintf(stderr, "ddpsim launch: rank %d (pid %d%s%s) %s; stopped the other %d rank(s) in %.2f s\n", bad,
        (int)c->pid, o->n_hosts ? ", host " : "", o->n_hosts ? o->hosts[bad / (o->nproc / o->n_hosts)] : "", how,
        o->nproc - 1, res->stop_s);
  if (code == 2 || code == 3) {
    res->exit_code = code;
    return core_err_set(code == 2 ? CORE_EUSAGE : CORE_EINVAL,
        "rank %d %s (bad usage or input); not restarting, fix the command", bad, how);
  }
  if (attempt >= o->max_restarts) {
    res->exit_code = 4;
    return core_err_set(
        CORE_EPEER, "rank %d %s%s", bad, how, o->max_restarts ? "; no restarts left (--max-restarts)" : "");
  }
  if (!o->quiet)
    fprintf(stderr, "ddpsim launch: restarting the group (restart %d of %d)\n", attempt + 1, o->max_restarts);
  return 0;
}

int rt_launch_run(const rt_launch_opts *o, rt_launch_result *res) {
  launcher L = {.o = o, .res = res};
  int rc;
  memset(res, 0, sizeof *res);
  res->failed_rank = -1;
  if ((rc = check_opts(o, &L.cpus)) != 0)
    return rc;
  if (!(L.ch = calloc((size_t)o->nproc, sizeof *L.ch)))
    return core_err_set(CORE_ENOMEM, "out of memory launching %d ranks", o->nproc);
  rc = launcher_open(&L);
  for (int attempt = 0, bad; rc == 0; attempt++) {
    if ((rc = run_attempt(&L, attempt, &bad)) != 0)
      break;
    if (bad < 0) {
      res->exit_code = 0;
      break;
    }
    rc = after_failure(&L, attempt, bad);
  }
  launcher_close(&L);
  return rc;
}

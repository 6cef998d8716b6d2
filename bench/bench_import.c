/*
 * bench_import — time of `ddpsim import nccl-tests` against the length of
 * the table (an importer must be linear in its input). It writes
 * all_reduce_perf outputs of 500, 2,000 and 20,000 sizes (a linear step,
 * nccl-tests -i, as a fine sweep prints them) and times parse + fit + profile
 * write of each in a child process, stopped after LIMIT seconds.
 * Usage: bench_import [LIMIT_S [ROWS...]]  (defaults: 300; 500 2000 20000)
 */
#include "calibrate/import_nccl.h"

#include "bench/synth_nccl.h"

#include "core/err.h"
#include "core/profile.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The import in this process: parse, fit, write the profile. */
static int import_one(const char *log, const char *base, const char *out, int *regimes) {
  const char *paths[] = {log};
  cal_nccl_opts o = {.base = base};
  core_profile *p;
  int rc = cal_import_nccl(paths, 1, &o, &p, NULL, 0);
  if (rc)
    return rc;
  *regimes = p->colls[p->n_colls - 1].n_fits;
  rc = core_profile_write(p, out);
  core_profile_free(p);
  return rc;
}

/* One size in a child, stopped after limit_s; prints one line. */
static int bench_rows(const char *dir, const char *base, int rows, unsigned limit_s) {
  char log[4200], out[4200];
  snprintf(log, sizeof log, "%s/all_reduce_perf-%d.txt", dir, rows);
  snprintf(out, sizeof out, "%s/profile-%d.cfg", dir, rows);
  if (synth_nccl_write(log, rows) != 0) {
    fprintf(stderr, "bench_import: cannot write %s\n", log);
    return 1;
  }
  int fd[2];
  if (pipe(fd))
    return 1;
  double t0 = now_s();
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    alarm(limit_s);
    int regimes = 0;
    double c0 = now_s();
    int rc = import_one(log, base, out, &regimes);
    if (rc)
      fprintf(stderr, "bench_import: %s\n", core_err_msg());
    dprintf(fd[1], "%.6f %d\n", now_s() - c0, regimes);
    _exit(rc ? 1 : 0);
  }
  close(fd[1]);
  char buf[128] = {0};
  ssize_t got = read(fd[0], buf, sizeof buf - 1);
  close(fd[0]);
  int st;
  struct rusage ru;
  pid_t w = wait4(pid, &st, 0, &ru);
  unlink(log);
  unlink(out);
  if (w < 0)
    return 1;
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) {
    printf("%6d rows: stopped after %.1f s (over the %u s limit)\n", rows, now_s() - t0, limit_s);
    return 0;
  }
  double dt;
  int regimes;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || got <= 0 || sscanf(buf, "%lf %d", &dt, &regimes) != 2) {
    fprintf(stderr, "bench_import: the import of %d rows failed\n", rows);
    return 1;
  }
  printf("%6d rows: %8.3f s, %d fit regime(s), peak RSS %.1f MiB\n", rows, dt, regimes, ru.ru_maxrss / 1024.0);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  unsigned limit_s = argc > 1 ? (unsigned)atoi(argv[1]) : 300;
  int defaults[] = {500, 2000, 20000};
  char dir[] = "/tmp/bench-import-XXXXXX";
  if (limit_s == 0 || !mkdtemp(dir)) {
    fprintf(stderr, "usage: bench_import [LIMIT_S [ROWS...]]\n");
    return 2;
  }
  const char *base = DDPSIM_SOURCE_DIR "/scenarios/profiles/dgx-h100.cfg";
  printf("import nccl-tests: all_reduce_perf tables, 8 ranks, sizes 64 KiB apart\n");
  fflush(stdout);
  int rc = 0, n = argc > 2 ? argc - 2 : 3;
  for (int i = 0; i < n && !rc; i++)
    rc = bench_rows(dir, base, argc > 2 ? atoi(argv[i + 2]) : defaults[i], limit_s);
  if (rmdir(dir) != 0)
    fprintf(stderr, "bench_import: could not remove %s\n", dir);
  return rc;
}

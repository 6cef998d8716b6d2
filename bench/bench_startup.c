/*
 * bench_startup — start-up cost of a command: runs it N times (after one
 * untimed run that warms the page cache), each in a child with stdout and
 * stderr on /dev/null, and prints the median, minimum and maximum of its
 * wall time, the median of its CPU time (user + system: what other load on
 * the machine disturbs least) and the median, minimum and maximum of its
 * peak resident memory (wait4's rusage, which counts the child alone).
 *
 *   bench_startup N LABEL COMMAND [ARGS...]
 *
 * Exit status 1 when the command fails on any run (its figures would
 * measure an error path), 2 on wrong usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

enum { MAX_RUNS = 1000 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double seconds(struct timeval tv) { return (double)tv.tv_sec + tv.tv_usec * 1e-6; }

/* One run: wall and CPU seconds, peak RSS in MiB; 0, or -1 when it failed. */
static int run_once(char **argv, double *wall, double *cpu, double *rss_mib) {
  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execvp(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) != pid)
    return -1;
  *wall = now_s() - t0;
  *cpu = seconds(ru.ru_utime) + seconds(ru.ru_stime);
  *rss_mib = ru.ru_maxrss / 1024.0; /* kilobytes on Linux */
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  int n = argc > 3 ? atoi(argv[1]) : 0;
  if (n < 1 || n > MAX_RUNS) {
    fprintf(stderr, "usage: bench_startup N(1..%d) LABEL COMMAND [ARGS...]\n", MAX_RUNS);
    return 2;
  }
  static double wall[MAX_RUNS], cpu[MAX_RUNS], rss[MAX_RUNS];
  double w, c, r;
  if (run_once(argv + 3, &w, &c, &r) != 0) {
    fprintf(stderr, "bench_startup: %s failed (exit status not 0); run it by hand\n", argv[3]);
    return 1;
  }
  for (int i = 0; i < n; i++)
    if (run_once(argv + 3, &wall[i], &cpu[i], &rss[i]) != 0) {
      fprintf(stderr, "bench_startup: run %d of %s failed\n", i + 1, argv[3]);
      return 1;
    }
  double wmed = median(wall, n), cmed = median(cpu, n), rmed = median(rss, n);
  printf("%-26s runs %3d  wall median %6.1f ms (min %6.1f, max %6.1f)  CPU median %6.1f ms  "
         "max RSS median %6.1f MiB (min %6.1f, max %6.1f)\n",
      argv[2], n, wmed * 1e3, wall[0] * 1e3, wall[n - 1] * 1e3, cmed * 1e3, rmed, rss[0], rss[n - 1]);
  return 0;
}

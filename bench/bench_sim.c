/*
 * bench_sim — the simulator's reference figures (issue 2):
 *  1. wall time of the whole gigabit-vs-ib study (load + all points), with one
 *     worker and with one per CPU; goal < 1 s;
 *  2. one step of GPT-2 1.5B on 16,384 GPUs with every rank simulated: wall
 *     time, events and peak memory of a child process that does only that;
 *     goals < 1 s and < 1 GiB.
 * Usage: bench_sim [SOURCE_DIR]  (default: the source tree it was built from)
 */
#include "sim/scenario.h"
#include "sim/sweep.h"

#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Load and run a scenario; returns wall seconds or -1. */
static double run_study(const char *path, int jobs, uint64_t *events, long *points) {
  double t0 = now_s();
  sim_scenario *s;
  if (sim_scenario_load(path, &s)) {
    fprintf(stderr, "bench_sim: %s\n", core_err_msg());
    return -1;
  }
  sim_sweep_opts o = {.jobs = jobs, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  if (sim_sweep_run(s, &o, &w)) {
    fprintf(stderr, "bench_sim: %s\n", core_err_msg());
    sim_scenario_free(s);
    return -1;
  }
  double dt = now_s() - t0;
  *events = 0;
  for (long i = 0; i < w.n; i++)
    *events += w.res[i].events;
  *points = w.n;
  sim_sweep_free(&w);
  sim_scenario_free(s);
  return dt;
}

int main(int argc, char **argv) {
  const char *src = argc > 1 ? argv[1] : DDPSIM_SOURCE_DIR;
  char path[4096];
  uint64_t ev;
  long pts;

  snprintf(path, sizeof path, "%s/scenarios/gigabit-vs-ib.cfg", src);
  for (int jobs = 1; jobs <= 2; jobs++) {
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
      double dt = run_study(path, jobs == 1 ? 1 : 0, &ev, &pts);
      if (dt < 0)
        return 1;
      if (dt < best)
        best = dt;
    }
    printf("gigabit-vs-ib: %ld points, %llu events, %s: best of 5 = %.3f s\n", pts,
           (unsigned long long)ev, jobs == 1 ? "1 worker" : "1 worker per CPU", best);
  }

  /* The 16k-rank step in a child, so its peak RSS is its own. */
  snprintf(path, sizeof path, "%s/scenarios/gpt2-16k.cfg", src);
  int fd[2];
  if (pipe(fd))
    return 1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    double dt = run_study(path, 1, &ev, &pts);
    dprintf(fd[1], "%.6f %llu\n", dt, (unsigned long long)ev);
    _exit(dt < 0);
  }
  close(fd[1]);
  char buf[128] = {0};
  ssize_t got = read(fd[0], buf, sizeof buf - 1);
  close(fd[0]);
  int st;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || got <= 0) {
    fprintf(stderr, "bench_sim: the GPT-2 16k run failed\n");
    return 1;
  }
  double dt;
  unsigned long long events;
  sscanf(buf, "%lf %llu", &dt, &events);
  printf("gpt2-xl 16384 GPUs, every rank: %.3f s wall (load + 1 step), %llu events, peak RSS %.1f MiB\n",
         dt, events, ru.ru_maxrss / 1024.0);
  return 0;
}

/*
 * bench_engine — event-queue throughput on one core, the classic "hold"
 * model: the queue holds Q events; each step pops the earliest and pushes one
 * at now + a random increment (uniform in 1 ns to 1 ms), so the queue size
 * stays Q. Prints events per second (one pop + one push = one event) for
 * several Q over RUNS runs: the lowest, median and highest rate per second
 * of the thread's CPU time (what the queue costs, whatever else the machine
 * runs), and the median per second of wall time.
 * Goal: >= 20 million events/s with 16,384 pending.
 * Usage: bench_engine [EVENTS_PER_RUN [RUNS]]
 */
#include "sim/engine.h"

#include "core/err.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void nop(sim_engine *e, void *ctx, uint64_t arg) {
  (void)e;
  (void)ctx;
  (void)arg;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One run of the hold model; events per CPU second and per wall second. */
static int hold(int q, long events, uint64_t seed, double *cpu_rate, double *wall_rate) {
  sim_engine *e;
  if (sim_engine_new(&e))
    return -1;
  for (int i = 0; i < q; i++)
    sim_engine_push(e, xorshift(&seed) % 1000000, nop, NULL, 0, NULL);
  double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
  for (long i = 0; i < events; i++) {
    sim_time t;
    sim_handler h;
    void *ctx;
    uint64_t arg;
    sim_engine_pop(e, &t, &h, &ctx, &arg);
    if (sim_engine_push(e, t + 1 + xorshift(&seed) % 1000000, h, ctx, arg, NULL)) {
      sim_engine_free(e);
      return -1;
    }
  }
  double dc = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0, dw = clock_s(CLOCK_MONOTONIC) - w0;
  int rc = sim_engine_check(e);
  sim_engine_free(e);
  *cpu_rate = events / dc;
  *wall_rate = events / dw;
  return rc ? -1 : 0;
}

int main(int argc, char **argv) {
  long events = argc > 1 ? atol(argv[1]) : 20000000L;
  int runs = argc > 2 ? atoi(argv[2]) : 7;
  static const int sizes[] = {16, 1024, 16384, 262144};
  if (events < 1 || runs < 1 || runs > 100) {
    fprintf(stderr, "usage: bench_engine [EVENTS_PER_RUN [RUNS (1-100)]]\n");
    return 2;
  }
  printf("engine hold model: %ld events per run, %d runs; events per CPU second (low / median / high) "
         "and per wall second (median)\n",
      events, runs);
  printf("%10s %12s %12s %12s %12s\n", "pending", "cpu_low", "cpu_median", "cpu_high", "wall_median");
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    double cpu[100], wall[100];
    for (int r = 0; r < runs; r++)
      if (hold(sizes[k], events, 88172645463325252ULL + (uint64_t)r, &cpu[r], &wall[r])) {
        fprintf(stderr, "bench_engine: %s\n", core_err_msg());
        return 1;
      }
    qsort(cpu, (size_t)runs, sizeof *cpu, cmp_double);
    qsort(wall, (size_t)runs, sizeof *wall, cmp_double);
    printf("%10d %12.0f %12.0f %12.0f %12.0f\n", sizes[k], cpu[0], cpu[runs / 2], cpu[runs - 1], wall[runs / 2]);
  }
  return 0;
}

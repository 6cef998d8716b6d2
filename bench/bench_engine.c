/*
 * bench_engine — event-queue throughput on one core, the classic "hold"
 * model: the queue holds Q events; each step pops the earliest and pushes one
 * at now + a random increment, so the queue size stays Q. Prints events per
 * second (one pop + one push = one event) for several Q, best of 5 runs.
 * Goal: >= 20 million events/s.
 */
#include "sim/engine.h"

#include "core/err.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void nop(sim_engine *e, void *ctx, uint64_t arg) { (void)e; (void)ctx; (void)arg; }

int main(int argc, char **argv) {
  long events = argc > 1 ? atol(argv[1]) : 20000000L;
  static const int sizes[] = {16, 1024, 16384, 262144};
  printf("engine hold model: %ld events per run, best of 5\n", events);
  printf("%10s %14s\n", "queue", "events/s");
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    int q = sizes[k];
    double best = 0;
    for (int run = 0; run < 5; run++) {
      sim_engine *e;
      if (sim_engine_new(&e)) {
        fprintf(stderr, "%s\n", core_err_msg());
        return 1;
      }
      uint64_t seed = 88172645463325252ULL + (uint64_t)run;
      for (int i = 0; i < q; i++)
        sim_engine_push(e, xorshift(&seed) % 1000000, nop, NULL, 0, NULL);
      double t0 = now_s();
      for (long i = 0; i < events; i++) {
        sim_time t;
        sim_handler h;
        void *ctx;
        uint64_t arg;
        sim_engine_pop(e, &t, &h, &ctx, &arg);
        if (sim_engine_push(e, t + 1 + xorshift(&seed) % 1000000, h, ctx, arg, NULL)) {
          fprintf(stderr, "%s\n", core_err_msg());
          return 1;
        }
      }
      double dt = now_s() - t0;
      if (sim_engine_check(e)) {
        fprintf(stderr, "%s\n", core_err_msg());
        return 1;
      }
      sim_engine_free(e);
      if (events / dt > best)
        best = events / dt;
    }
    printf("%10d %14.0f\n", q, best);
  }
  return 0;
}

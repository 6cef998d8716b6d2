/* What the TensorBoard logger (runtime/tblog.h) costs per step, in CPU
 * time, free of the noise of a shared machine's step times: the training
 * thread's hand-over (rt_tblog_step) and the logger thread's encoding and
 * writing, for a step of the MLP's figures (4 buckets, system figures every
 * 0.2 s), N steps into a scratch directory: handed over as fast as they
 * come, or one every PACE_MS milliseconds as training hands them over (the
 * logger's polling and system sampling then count too, and the figure is
 * also given as a share of the step).
 *
 *   build/bench/bench_tblog [N [PACE_MS]]   (default 200000 0; e.g. 500 20) */
#include "runtime/tblog.h"

#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double process_cpu(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 200000;
  double pace_ms = argc > 2 ? atof(argv[2]) : 0;
  char dir[] = "/tmp/ddpsim-bench-tblog-XXXXXX";
  if (n < 1 || !mkdtemp(dir)) {
    fprintf(stderr, "usage: bench_tblog [N >= 1] (and a writable /tmp)\n");
    return 2;
  }
  rt_tblog_opts o = {
      .dir = dir, .rank = 0, .gpu = -1, .queue_steps = (int)(n < (1 << 20) ? n : 1 << 20), .sys_every_s = -1};
  rt_tblog *l;
  rt_tblog_run r = {.world = 2, .batch = 32, .n_buckets = 4, .lr = 0.01};
  if (rt_tblog_open(&o, &l) != 0 || rt_tblog_start(l, &r) != 0) {
    fprintf(stderr, "bench_tblog: %s\n", core_err_msg());
    return 1;
  }
  double bucket_s[4] = {0.01, 0.02, 0.03, 0.04};
  double cpu0 = process_cpu(), t0 = now(CLOCK_THREAD_CPUTIME_ID);
  for (long s = 0; s < n; s++) {
    rt_tblog_figures f = {.step = s,
        .step_s = 0.2,
        .compute_s = 0.15,
        .comm_s = 0.1,
        .exposed_comm_s = 0.05,
        .loss = 1.0 / (double)(s + 1),
        .bucket_s = bucket_s};
    rt_tblog_step(l, &f);
    if (pace_ms > 0) {
      struct timespec ts = {(time_t)(pace_ms / 1000), (long)((pace_ms - 1000 * (long)(pace_ms / 1000)) * 1e6)};
      nanosleep(&ts, NULL);
    }
  }
  double hand = now(CLOCK_THREAD_CPUTIME_ID) - t0;
  rt_tblog_stats st;
  rt_tblog_close(l, &st);
  double total = process_cpu() - cpu0;
  if (pace_ms > 0)
    printf("bench_tblog: one step every %g ms: logger %.2f us a step (CPU), %.4f%% of the step\n", pace_ms,
        (total - hand) / (double)n * 1e6, (total - hand) / (double)n / (pace_ms * 1e-3) * 100);
  printf("bench_tblog: %ld steps: hand-over on the training thread %.1f ns a step (CPU); logger thread "
         "%.2f us a step (CPU: encoding and writing); %ld logged, %ld dropped; %s\n",
      n, hand / (double)n * 1e9, (total - hand) / (double)n * 1e6, st.logged, st.dropped_queue + st.dropped_write,
      st.path);
  unlink(st.path);
  char sub[64];
  snprintf(sub, sizeof sub, "%s/rank_0", dir);
  rmdir(sub);
  rmdir(dir);
  return 0;
}

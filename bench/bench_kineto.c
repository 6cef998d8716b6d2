/* bench_kineto — read PyTorch profiler traces with the streaming reader
 * (calibrate/kineto.h) and print, per trace, what was kept, the wall time
 * and the process's peak resident memory so far.
 *
 *   bench_kineto TRACE...
 *
 * One line per trace: path, file bytes, events kept (and per category),
 * distinct strings, device and distributedInfo, seconds, peak RSS in MiB.
 * bench/trace_memory.sh runs it on synthetic traces of 100 MB and 1 GB. */
#include "calibrate/kineto.h"
#include "core/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double peak_rss_mib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_kineto TRACE...\n");
    return 2;
  }
  int status = 0;
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    long long bytes = stat(argv[i], &sb) == 0 ? (long long)sb.st_size : -1;
    cal_ktrace t;
    double t0 = now_s();
    int rc = cal_ktrace_read(argv[i], &t);
    double dt = now_s() - t0;
    if (rc) {
      fprintf(stderr, "%s\n", core_err_msg());
      status = 3;
      continue;
    }
    int64_t per[CAL_K_N] = {0};
    for (int64_t k = 0; k < t.n; k++)
      per[t.ev[k].cat]++;
    printf("%s: %lld bytes, %" PRId64 " events kept (", argv[i], bytes, t.n);
    for (int c = 0; c < CAL_K_N; c++)
      if (per[c])
        printf("%s%s %" PRId64, c ? " " : "", cal_kcat_name(c), per[c]);
    printf("), device %d '%s' (%d listed, %d SMs, cc %d.%d), %s rank %d of %d, %.2f s, peak RSS %.0f MiB\n",
        t.device_id, t.device_name, t.n_devices, t.sm_count, t.cc_major, t.cc_minor, t.backend[0] ? t.backend : "-",
        t.rank, t.world_size, dt, peak_rss_mib());
    cal_ktrace_free(&t);
  }
  return status;
}

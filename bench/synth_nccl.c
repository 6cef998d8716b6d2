#include "bench/synth_nccl.h"

#include <stdio.h>

static double model_us(double bytes, unsigned *seed) {
  static const double lat_us[3] = {6.0, 9.0, 18.0}, gbps[3] = {40.0, 150.0, SYNTH_NCCL_TOP_GBPS};
  double best = 1e300;
  for (int k = 0; k < 3; k++) {
    double t = lat_us[k] + bytes / (gbps[k] * 1e3);
    if (t < best)
      best = t;
  }
  *seed = *seed * 1103515245u + 12345u;
  return best * (1.0 + 0.02 * ((double)(*seed >> 8 & 0xffff) / 65535.0 - 0.5));
}

int synth_nccl_write(const char *path, int rows) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fprintf(f,
      "# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703\n"
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 8 minBytes %d maxBytes %lld step: %d(bytes) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n",
      SYNTH_NCCL_STEP, (long long)rows * SYNTH_NCCL_STEP, SYNTH_NCCL_STEP);
  for (int r = 0; r < 8; r++)
    fprintf(f, "#  Rank %2d Group  0 Pid  4100%d on synth-node device %2d [0000:%02x:00] NVIDIA H100 80GB HBM3\n", r, r,
        r, 0x18 + r);
  fprintf(f, "#\n#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
             "algbw   busbw  #wrong\n");
  unsigned seed = 1;
  for (int i = 0; i < rows; i++) {
    long long size = (long long)(i + 1) * SYNTH_NCCL_STEP;
    double t0 = model_us((double)size, &seed), t1 = model_us((double)size, &seed);
    double a0 = (double)size / t0 / 1e3, a1 = (double)size / t1 / 1e3;
    fprintf(f, "%12lld  %12lld  %8s  %6s  %6s  %7.2f  %6.2f  %6.2f  %6d  %7.2f  %6.2f  %6.2f  %6d\n", size, size / 4,
        "float", "sum", "-1", t0, a0, a0 * 1.75, 0, t1, a1, a1 * 1.75, 0);
  }
  fprintf(f, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 100.0\n");
  return fclose(f);
}

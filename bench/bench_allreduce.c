/*
 * bench_allreduce — allreduce bus bandwidth of the Gloo backend between the
 * ranks of a launch, nccl-tests style (calibrate/sweep.h), compared with the
 * link's line rate. Run under the launcher, e.g. on the testbed:
 *
 *   ddpsim launch --nproc 2 --hosts ddpsim-h1,ddpsim-h2 -- \
 *       build/bench/bench_allreduce --line-gbps 1 --mib 64
 *
 * Prints, on rank 0, per algorithm: time, algbw, busbw and busbw / line rate.
 */
#include "calibrate/sweep.h"
#include "runtime/pg.h"

#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  double line_gbps = 0, mib = 64;
  int iters = 5, all = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--line-gbps") && i + 1 < argc)
      line_gbps = atof(argv[++i]);
    else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
      mib = atof(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--all-algorithms"))
      all = 1;
    else {
      fprintf(stderr, "usage: bench_allreduce [--line-gbps G] [--mib M] [--iters N] [--all-algorithms]\n");
      return 2;
    }
  }
  rt_pg_info pg;
  rt_comm *c;
  int rc = rt_pg_from_env(&pg);
  if (!rc)
    rc = rt_pg_connect(&pg, getenv("DDPSIM_RDZV") ? getenv("DDPSIM_RDZV") : "/tmp", getenv("DDPSIM_BIND_ADDR"), 60,
        "bench-allreduce", &c);
  if (rc) {
    fprintf(stderr, "bench_allreduce: %s\n", core_err_msg());
    return 1;
  }
  static const enum rt_algo algos[] = {
      RT_ALGO_DEFAULT, RT_ALGO_RING, RT_ALGO_RING_CHUNKED, RT_ALGO_HALVING_DOUBLING, RT_ALGO_BCUBE};
  int n = all ? 5 : 1;
  if (pg.rank == 0)
    printf("allreduce of %.0f MiB across %d ranks, %d iterations (median)\n%-18s %10s %10s %10s %12s\n", mib, c->size,
        iters, "algorithm", "time_ms", "algbw_GBps", "busbw_GBps", "busbw/line");
  for (int a = 0; a < n; a++) {
    cal_point pt;
    rc = cal_sweep_one(c, CORE_COLL_ALLREDUCE, algos[a], mib * 1048576.0, 1, iters, &pt);
    if (rc == CORE_EUNSUPPORTED) {
      if (pg.rank == 0)
        printf("%-18s (not supported here: %s)\n", rt_algo_name(algos[a]), core_err_msg());
      continue;
    }
    if (rc) {
      fprintf(stderr, "bench_allreduce: rank %d: %s\n", pg.rank, core_err_msg());
      return 1;
    }
    if (pg.rank == 0)
      printf("%-18s %10.2f %10.4f %10.4f %12.3f\n", rt_algo_name(algos[a]), pt.t_p50_s * 1e3, pt.algbw_GBps,
          pt.busbw_GBps, line_gbps > 0 ? pt.busbw_GBps / (line_gbps / 8) : 0.0);
  }
  rt_comm_destroy(c);
  return 0;
}

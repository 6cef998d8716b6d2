/*
 * synth_nccl — a synthetic nccl-tests all_reduce_perf output (the 2.17
 * layout) of a given number of sizes, for the importer's benchmark and its
 * scaling test. Times are the fastest of three protocols, each a latency
 * plus size over bandwidth (the shape of NCCL's LL, LL128 and Simple), with
 * a deterministic +-1% noise: not a measurement.
 */
#ifndef BENCH_SYNTH_NCCL_H
#define BENCH_SYNTH_NCCL_H

/* The size step between rows (nccl-tests -i), in bytes. */
#define SYNTH_NCCL_STEP 65536
/* The bandwidth of the protocol the largest sizes run at, GB/s. */
#define SYNTH_NCCL_TOP_GBPS 230.0

/* Write the output of `rows` sizes, SYNTH_NCCL_STEP apart, to path; 0 or -1. */
int synth_nccl_write(const char *path, int rows);

#endif

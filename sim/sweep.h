/*
 * sweep — run every point of a scenario (in parallel across cores, each
 * worker with its own event engine; results land in point order, so the
 * output does not depend on the number of workers), optionally only one
 * shard i/n of them for batch schedulers (sim/shard.h), then write the CSV atomically and
 * print a summary table. Nothing is written unless every point succeeded.
 * With a job level, the work of its Monte Carlo is estimated from every
 * point before any of it runs, and a point whose estimate exceeds
 * simulation.max_events fails the study at once (CORE_EINVAL at the key
 * that sets the failure rate); the bound holds while it runs as well.
 */
#ifndef SIM_SWEEP_H
#define SIM_SWEEP_H

#include "sim/predict.h"
#include "sim/scenario.h"

#include "core/progress.h"

typedef struct sim_sweep_opts {
  int jobs;            /* worker threads; <= 0: one per online CPU */
  int shard, n_shards; /* run shard `shard` of n_shards (sim/shard.h) */
  long trace_point;    /* point to trace, or -1 */
  const char *trace_path;
  int trace_ranks;
  int progress;            /* report progress on stderr ... */
  double progress_after_s; /* ... once the sweep has run this long (0: from the start) */
} sim_sweep_opts;

/* When `ddpsim simulate` starts to report progress. */
#define SIM_SWEEP_PROGRESS_AFTER_S CORE_PROGRESS_AFTER_S

typedef struct sim_sweep {
  long n;
  sim_point_result *res;
} sim_sweep;

int sim_sweep_run(const sim_scenario *s, const sim_sweep_opts *o, sim_sweep *out);
void sim_sweep_free(sim_sweep *w);

/* Write rows to path atomically; with_header 0 for shards after the first;
 * stamp, when not NULL, a line written first (a shard's, sim/shard.h). A
 * study with a job level has its columns; one with prices, the cost columns
 * (scenarios/README.md lists them). */
int sim_sweep_write_csv(
    const sim_scenario *s, const sim_sweep *w, const char *path, int with_header, const char *stamp);

#endif

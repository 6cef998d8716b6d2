/*
 * validate — a prediction set against a measurement: one scenario point is
 * simulated and compared with the per-step metrics of a real run (the
 * steps.csv of `ddpsim train`, or the same columns from PyTorch), giving the
 * relative error of step time, compute, exposed communication and
 * throughput. Warm-up steps are skipped; means are over every rank's
 * remaining steps. Communication time is compared when the run measured it:
 * its comm_s column may be left empty in every row (PyTorch's built-in
 * allreduce has no per-bucket timing without a hook that slows the step).
 * Measured times must be numbers >= 0 (step_s > 0), rank and step whole
 * numbers >= 0; anything else is an error at file:line.
 *
 * The measured run may also be a PyTorch profiler trace (a file named .json
 * or .gz): its ProfilerStep spans are the measured steps (skip counts them
 * from the first; unless given, its leading warm-up steps are left out by
 * the rule `import torch-trace` uses, calibrate/import_gpu.h), and only step
 * time and throughput are compared.
 */
#ifndef CALIBRATE_VALIDATE_H
#define CALIBRATE_VALIDATE_H

#include "sim/predict.h"
#include "sim/scenario.h"

typedef struct cal_metric {
  const char *name;
  double predicted, measured; /* measured NaN: not in the run's file (comm_s left empty) */
  double rel_err;             /* (predicted - measured) / measured */
} cal_metric;

enum { CAL_M_STEP = 0, CAL_M_COMPUTE, CAL_M_EXPOSED, CAL_M_COMM, CAL_M_THROUGHPUT, CAL_N_METRICS };

typedef struct cal_validation {
  sim_point_result pred;
  long steps_used; /* distinct measured steps */
  long rows_used;  /* values averaged: a CSV's rows (a rank's step each), a trace's steps */
  long skip;       /* the steps left out before them (given, or found as warm-up) */
  int skip_found;  /* skip was found by the warm-up rule, not given */
  int ranks_seen;
  cal_metric m[CAL_N_METRICS];
} cal_validation;

/* Steps a CSV's ranks leave out as warm-up when no skip is given. */
#define CAL_VALIDATE_CSV_SKIP 3

/* Compare point `point` of s with the measured CSV or trace; skip steps <
 * skip. skip < 0: a trace's leading warm-up steps, a CSV's first
 * CAL_VALIDATE_CSV_SKIP. */
int cal_validate(const sim_scenario *s, long point, const char *measured_path, long skip, cal_validation *v);

#endif

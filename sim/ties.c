#include "ties.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int sim_ties_decide(sim_point_result *res, long n, double tol) {
  long best = -1;
  int unresolved = 0;
  char ties[sizeof res->ties] = "";
  for (long i = 0; i < n; i++)
    if (res[i].has_job && (best < 0 || res[i].job.mean[SIM_JOB_GOODPUT] > res[best].job.mean[SIM_JOB_GOODPUT]))
      best = i;
  if (best < 0) {
    /* No point of the group runs (each times out or does not fit): no best
     * interval. */
    for (long i = 0; i < n; i++)
      res[i].best_every_s = res[i].best_goodput_lo = res[i].best_goodput_hi = NAN;
    return 0;
  }
  for (long i = 0; i < n; i++) {
    double d, h;
    if (i == best || !res[i].has_job || sim_job_paired(&res[best].job, &res[i].job, SIM_JOB_GOODPUT, &d, &h) != 0)
      continue;
    if (d - h > 0)
      continue; /* told apart */
    unresolved |= h > tol;
    size_t len = strlen(ties);
    snprintf(ties + len, sizeof ties - len, "%s%.6g", len ? ";" : "", res[i].ckpt_every_s);
  }
  for (long i = 0; i < n; i++) {
    res[i].best_every_s = res[best].ckpt_every_s;
    res[i].best_goodput_lo = res[best].job.lo[SIM_JOB_GOODPUT];
    res[i].best_goodput_hi = res[best].job.hi[SIM_JOB_GOODPUT];
    snprintf(res[i].ties, sizeof res[i].ties, "%s", ties);
  }
  return unresolved;
}

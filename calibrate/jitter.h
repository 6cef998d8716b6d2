/*
 * jitter — the distribution of step-time variation. Samples are divided by
 * their mean (relative step times), then normal, lognormal and shifted
 * exponential are fitted by maximum likelihood and the one with the highest
 * log-likelihood is kept (all three have two parameters, so likelihood alone
 * is a fair comparison). The simulator draws per-rank multipliers from it.
 */
#ifndef CALIBRATE_JITTER_H
#define CALIBRATE_JITTER_H

#include "core/profile.h"

typedef struct cal_jitter {
  enum core_jitter_dist best;
  double params[2];  /* of best, as the profile stores them */
  double loglik[3];  /* normal, lognormal, shifted exponential */
  double fits[3][2]; /* parameters of each */
  double cv;         /* coefficient of variation of the samples */
} cal_jitter;

/* x: n >= 3 positive samples; relative is filled with x / mean. */
int cal_jitter_fit(const double *x, int n, double *relative, cal_jitter *j);

#endif

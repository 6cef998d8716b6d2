/*
 * fit — α–β models of measured collective times, T(S) = α + β S, fitted with
 * GSL's weighted least squares (gsl_fit_wlinear). Weights are the inverse
 * variance of each point when its standard error is known (so a size whose
 * iterations scattered counts less), floored at 0.5% of its time; without
 * it, 1/T², relative error. Points more than three robust
 * standard deviations off (median absolute deviation of relative residuals)
 * are dropped and the fit repeated. Alpha is held at zero or above: where
 * the free fit's intercept is negative, the fit is the one through the
 * origin (gsl_fit_wmul). The size range is split into up to three
 * regimes — latency-bound small messages, bandwidth-bound large ones, and in
 * between whatever a protocol switch or a shaper's token bucket makes — when
 * the split lowers the Bayesian information criterion clearly; the knees are
 * the splits that fit best. Each regime carries R² and 95% confidence intervals
 * (Student t on the scaled covariance). Up to 64 sizes every split is tried;
 * beyond, closed-form least squares screens the splits (each cut on a grid of
 * 64 sizes evenly spaced in log size with the other at any size, the best
 * pair then refined at full resolution) and the best few are scored as
 * above, so a fit of n sizes costs O(n log n), not O(n^3 log n).
 */
#ifndef CALIBRATE_FIT_H
#define CALIBRATE_FIT_H

#include "core/profile.h"

typedef struct cal_fit {
  double min_bytes, max_bytes; /* the regime covers [min, max) */
  double alpha_s, beta_s;      /* T = alpha + beta * S */
  double r2;
  double alpha_lo, alpha_hi; /* 95% */
  double beta_lo, beta_hi;
  int n_used, n_rejected;
} cal_fit;

enum { CAL_FIT_MAX_REGIMES = 3 };

/* bytes ascending; se: standard errors of t, or NULL; fits holds room for
 * CAL_FIT_MAX_REGIMES. */
int cal_fit_alpha_beta(const double *bytes, const double *t, const double *se, int n, cal_fit *fits, int *n_fits);

/* A fit as a profile keeps it: alpha in us, bandwidth 1/beta in GB/s, and
 * the intervals (bandwidth's flipped; unbounded above when beta's reaches
 * zero, capped). */
void cal_fit_to_profile(const cal_fit *f, core_prof_fit *pf);

#endif

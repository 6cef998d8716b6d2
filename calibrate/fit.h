/*
 * fit — α–β models of measured collective times, T(S) = α + β S, fitted with
 * GSL's weighted least squares (gsl_fit_wlinear, weights 1/T², so small and
 * large messages count by relative error). Points more than three robust
 * standard deviations off (median absolute deviation of relative residuals)
 * are dropped and the fit repeated. A second regime is used when splitting
 * the size range in two — latency-bound small messages, bandwidth-bound large
 * ones — lowers the Bayesian information criterion; the knee is the split
 * that fits best. Each regime carries R² and 95% confidence intervals
 * (Student t on the scaled covariance).
 */
#ifndef CALIBRATE_FIT_H
#define CALIBRATE_FIT_H

typedef struct cal_fit {
  double min_bytes, max_bytes;   /* the regime covers [min, max) */
  double alpha_s, beta_s;        /* T = alpha + beta * S */
  double r2;
  double alpha_lo, alpha_hi;     /* 95% */
  double beta_lo, beta_hi;
  int n_used, n_rejected;
} cal_fit;

/* bytes ascending; fits holds room for 2. */
int cal_fit_alpha_beta(const double *bytes, const double *t, int n, cal_fit *fits, int *n_fits);

#endif

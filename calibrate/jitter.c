#include "jitter.h"

#include "core/err.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>

static double loglik(const double *x, int n, double (*pdf)(double, const double *), const double *p) {
  double s = 0;
  for (int i = 0; i < n; i++) {
    double d = pdf(x[i], p);
    s += d > 0 ? log(d) : -1e300;
  }
  return s;
}

static double pdf_normal(double x, const double *p) { return gsl_ran_gaussian_pdf(x - p[0], p[1]); }
static double pdf_lognormal(double x, const double *p) { return gsl_ran_lognormal_pdf(x, p[0], p[1]); }
static double pdf_sexp(double x, const double *p) { return gsl_ran_exponential_pdf(x - p[0], p[1]); }

int cal_jitter_fit(const double *x, int n, double *r, cal_jitter *j) {
  if (n < 3)
    return core_err_set(CORE_EINVAL, "a jitter fit needs at least 3 samples (got %d)", n);
  double mean = gsl_stats_mean(x, 1, (size_t)n);
  for (int i = 0; i < n; i++) {
    if (!(x[i] > 0))
      return core_err_set(CORE_EINVAL, "step-time sample %d is not positive (%g)", i, x[i]);
    r[i] = x[i] / mean;
  }
  double *lg = malloc(sizeof *lg * (size_t)n);
  if (!lg)
    return core_err_set(CORE_ENOMEM, "out of memory fitting jitter");
  for (int i = 0; i < n; i++)
    lg[i] = log(r[i]);
  /* Maximum-likelihood estimates: sample moments with divisor n (normal, and
   * normal on the logarithms); for the shifted exponential the shift is the
   * minimum and the scale the mean excess over it. */
  double m = gsl_stats_mean(r, 1, (size_t)n);
  double sd = sqrt(gsl_stats_variance_with_fixed_mean(r, 1, (size_t)n, m));
  double lm = gsl_stats_mean(lg, 1, (size_t)n);
  double lsd = sqrt(gsl_stats_variance_with_fixed_mean(lg, 1, (size_t)n, lm));
  double mn = gsl_stats_min(r, 1, (size_t)n);
  free(lg);
  /* Identical samples leave no spread to fit; a tiny floor keeps the
   * densities proper (and the result "no measurable jitter"). */
  const double floor = 1e-9;
  j->fits[0][0] = m;
  j->fits[0][1] = sd > floor ? sd : floor;
  j->fits[1][0] = lm;
  j->fits[1][1] = lsd > floor ? lsd : floor;
  j->fits[2][0] = mn;
  j->fits[2][1] = m - mn > floor ? m - mn : floor;
  j->loglik[0] = loglik(r, n, pdf_normal, j->fits[0]);
  j->loglik[1] = loglik(r, n, pdf_lognormal, j->fits[1]);
  j->loglik[2] = loglik(r, n, pdf_sexp, j->fits[2]);
  int b = 0;
  for (int k = 1; k < 3; k++)
    if (j->loglik[k] > j->loglik[b])
      b = k;
  static const enum core_jitter_dist d[3] = {CORE_JITTER_NORMAL, CORE_JITTER_LOGNORMAL, CORE_JITTER_SHIFTED_EXP};
  j->best = d[b];
  j->params[0] = j->fits[b][0];
  j->params[1] = j->fits[b][1];
  j->cv = sd / m;
  return 0;
}

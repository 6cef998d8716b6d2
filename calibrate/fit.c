#include "fit.h"

#include "core/err.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fit points [lo, hi) with outlier rejection; returns weighted SSE or -1. */
static double fit_range(const double *x, const double *y, int lo, int hi, cal_fit *f) {
  int n = hi - lo;
  double *w = malloc(sizeof *w * (size_t)n), *xs = malloc(sizeof *xs * (size_t)n),
         *ys = malloc(sizeof *ys * (size_t)n), *res = malloc(sizeof *res * (size_t)n);
  int *keep = malloc(sizeof *keep * (size_t)n);
  double sse = -1;
  if (!w || !xs || !ys || !res || !keep)
    goto out;
  for (int i = 0; i < n; i++)
    keep[i] = 1;
  double c0 = 0, c1 = 0, cov00 = 0, cov01 = 0, cov11 = 0, chisq = 0;
  int m = 0;
  for (int round = 0; round < 3; round++) {
    m = 0;
    for (int i = 0; i < n; i++)
      if (keep[i]) {
        xs[m] = x[lo + i];
        ys[m] = y[lo + i];
        w[m] = 1.0 / (y[lo + i] * y[lo + i]);
        m++;
      }
    if (m < 2)
      goto out;
    gsl_fit_wlinear(xs, 1, w, 1, ys, 1, (size_t)m, &c0, &c1, &cov00, &cov01, &cov11, &chisq);
    /* Robust scale of the relative residuals of every point. */
    for (int i = 0; i < n; i++)
      res[i] = fabs((y[lo + i] - (c0 + c1 * x[lo + i])) / y[lo + i]);
    memcpy(xs, res, sizeof *xs * (size_t)n);
    gsl_sort(xs, 1, (size_t)n);
    double s = 1.4826 * gsl_stats_median_from_sorted_data(xs, 1, (size_t)n);
    if (s < 0.01)
      s = 0.01; /* below 1% everything is noise-level agreement */
    int changed = 0, kept = 0;
    for (int i = 0; i < n; i++) {
      int k = res[i] <= 3 * s;
      changed |= k != keep[i];
      keep[i] = k;
      kept += k;
    }
    if (!changed || kept < 3)
      break;
  }
  f->alpha_s = c0;
  f->beta_s = c1;
  f->n_used = m;
  f->n_rejected = n - m;
  /* Weighted R^2 around the weighted mean. */
  double sw = 0, swy = 0, stot = 0;
  for (int i = 0; i < m; i++) {
    sw += w[i];
    swy += w[i] * ys[i];
  }
  double ybar = swy / sw;
  for (int i = 0; i < m; i++)
    stot += w[i] * (ys[i] - ybar) * (ys[i] - ybar);
  f->r2 = stot > 0 ? 1.0 - chisq / stot : 1.0;
  /* The weights are relative, not inverse variances: scale the covariance
   * by the residual variance (chisq / dof). */
  if (m > 2) {
    double scale = chisq / (m - 2), tq = gsl_cdf_tdist_Pinv(0.975, m - 2);
    double ha = tq * sqrt(cov00 * scale), hb = tq * sqrt(cov11 * scale);
    f->alpha_lo = c0 - ha;
    f->alpha_hi = c0 + ha;
    f->beta_lo = c1 - hb;
    f->beta_hi = c1 + hb;
  } else {
    f->alpha_lo = f->alpha_hi = c0;
    f->beta_lo = f->beta_hi = c1;
  }
  sse = chisq;
out:
  free(w);
  free(xs);
  free(ys);
  free(res);
  free(keep);
  return sse;
}

static double bic(double sse, int n, int k) { return n * log(sse / n + 1e-300) + k * log((double)n); }

int cal_fit_alpha_beta(const double *bytes, const double *t, int n, cal_fit *fits, int *n_fits) {
  if (n < 2)
    return core_err_set(CORE_EINVAL, "an alpha-beta fit needs at least 2 sizes (got %d)", n);
  for (int i = 0; i < n; i++)
    if (!(t[i] > 0) || !(bytes[i] >= 0) || (i && !(bytes[i] > bytes[i - 1])))
      return core_err_set(CORE_EINVAL, "fit input %d (%g bytes, %g s) is not a positive time at an ascending size", i,
                          bytes[i], t[i]);
  cal_fit one;
  memset(&one, 0, sizeof one);
  double sse1 = fit_range(bytes, t, 0, n, &one);
  if (sse1 < 0)
    return core_err_set(CORE_ENOMEM, "alpha-beta fit failed (out of memory)");
  double best = bic(sse1, n, 2);
  int split = -1;
  cal_fit a, b, ba, bb;
  /* Each regime needs three points of its own. */
  for (int j = 3; j <= n - 3; j++) {
    double s1 = fit_range(bytes, t, 0, j, &a), s2 = fit_range(bytes, t, j, n, &b);
    if (s1 < 0 || s2 < 0)
      continue;
    double v = bic(s1 + s2, n, 4);
    /* A second regime must earn its two parameters clearly (BIC drop > 6,
     * "strong" evidence in Kass and Raftery 1995) and have a positive slope. */
    if (v < best - 6 && a.beta_s > 0 && b.beta_s > 0) {
      best = v;
      split = j;
      ba = a;
      bb = b;
    }
  }
  if (split < 0) {
    fits[0] = one;
    fits[0].min_bytes = 0;
    fits[0].max_bytes = 1e15;
    *n_fits = 1;
  } else {
    fits[0] = ba;
    fits[1] = bb;
    double knee = sqrt(bytes[split - 1] * bytes[split]);
    fits[0].min_bytes = 0;
    fits[0].max_bytes = knee;
    fits[1].min_bytes = knee;
    fits[1].max_bytes = 1e15;
    *n_fits = 2;
  }
  for (int i = 0; i < *n_fits; i++) {
    /* A negative intercept is a fitting artefact of the bandwidth regime;
     * a collective cannot take less than no time. */
    if (fits[i].alpha_s < 0)
      fits[i].alpha_s = 0;
    if (!(fits[i].beta_s > 0))
      return core_err_set(CORE_EINVAL, "the fitted bandwidth of sizes %g..%g bytes is not positive (times do not grow with size); measure larger sizes or more iterations",
                          fits[i].min_bytes, fits[i].max_bytes);
  }
  return 0;
}

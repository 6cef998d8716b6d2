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
/* Weight of point i: inverse variance, with a floor on the error so that a
 * size whose iterations happened to agree exactly cannot dominate. */
static double weight(const double *y, const double *se, int i) {
  double s = 0.005 * y[i];
  if (se && se[i] > s)
    s = se[i];
  return 1.0 / (s * s);
}

static double fit_range(const double *x, const double *y, const double *se, int lo, int hi, cal_fit *f) {
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
  int m = 0, origin = 0;
  for (int round = 0; round < 3; round++) {
    m = 0;
    for (int i = 0; i < n; i++)
      if (keep[i]) {
        xs[m] = x[lo + i];
        ys[m] = y[lo + i];
        w[m] = weight(y, se, lo + i);
        m++;
      }
    if (m < 2)
      goto out;
    gsl_fit_wlinear(xs, 1, w, 1, ys, 1, (size_t)m, &c0, &c1, &cov00, &cov01, &cov11, &chisq);
    origin = c0 < 0;
    if (origin) {
      /* No collective takes negative time at size zero: the least-squares
       * fit with alpha >= 0 is then the one through the origin. Clamping
       * alpha after the free fit would keep its steeper slope and put the
       * whole regime above its points (a shaper's token bucket makes
       * megabyte sizes faster than the line: the free intercept goes
       * negative). */
      gsl_fit_wmul(xs, 1, w, 1, ys, 1, (size_t)m, &c1, &cov11, &chisq);
      c0 = cov00 = cov01 = 0;
    }
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
  int dof = m - (origin ? 1 : 2);
  if (dof > 0 && m > 2) {
    double scale = chisq / dof, tq = gsl_cdf_tdist_Pinv(0.975, dof);
    double ha = tq * sqrt(cov00 * scale), hb = tq * sqrt(cov11 * scale);
    f->alpha_lo = c0 - ha;
    f->alpha_hi = c0 + ha;
    f->beta_lo = c1 - hb;
    f->beta_hi = c1 + hb;
  } else {
    f->alpha_lo = f->alpha_hi = c0;
    f->beta_lo = f->beta_hi = c1;
  }
  /* Score the range by every point it holds, rejected ones included: a
   * split must not win by discarding the points that disagree with it
   * (around a protocol switch, say). */
  sse = 0;
  for (int i = 0; i < n; i++) {
    double r = y[lo + i] - (c0 + c1 * x[lo + i]);
    sse += weight(y, se, lo + i) * r * r;
  }
out:
  free(w);
  free(xs);
  free(ys);
  free(res);
  free(keep);
  return sse;
}

static double bic(double sse, int n, int k) { return n * log(sse / n + 1e-300) + k * log((double)n); }

int cal_fit_alpha_beta(const double *bytes, const double *t, const double *se, int n, cal_fit *fits,
                       int *n_fits) {
  if (n < 2)
    return core_err_set(CORE_EINVAL, "an alpha-beta fit needs at least 2 sizes (got %d)", n);
  for (int i = 0; i < n; i++)
    if (!(t[i] > 0) || !(bytes[i] >= 0) || (i && !(bytes[i] > bytes[i - 1])))
      return core_err_set(CORE_EINVAL, "fit input %d (%g bytes, %g s) is not a positive time at an ascending size", i,
                          bytes[i], t[i]);
  /* Candidates: one regime, or 2 or 3 consecutive ones, each with at least
   * three points of its own and a positive slope. A split must lower the BIC
   * by more than 6 per added regime ("strong" evidence, Kass and Raftery
   * 1995) to be kept. */
  cal_fit best_f[CAL_FIT_MAX_REGIMES], f[CAL_FIT_MAX_REGIMES];
  int best_n = 0, best_cut[CAL_FIT_MAX_REGIMES + 1];
  double best_bic = 0;
  double sse = fit_range(bytes, t, se, 0, n, &best_f[0]);
  if (sse < 0)
    return core_err_set(CORE_ENOMEM, "alpha-beta fit failed (out of memory)");
  best_n = 1;
  best_bic = bic(sse, n, 2);
  double bic1 = best_bic;
  best_cut[0] = 0;
  best_cut[1] = n;
  for (int j1 = 3; j1 <= n - 3; j1++) {
    double s1 = fit_range(bytes, t, se, 0, j1, &f[0]), s2 = fit_range(bytes, t, se, j1, n, &f[1]);
    if (s1 >= 0 && s2 >= 0 && f[0].beta_s > 0 && f[1].beta_s > 0) {
      double v = bic(s1 + s2, n, 4);
      if (v < bic1 - 6.0 && v < best_bic) {
        best_bic = v;
        best_n = 2;
        best_f[0] = f[0];
        best_f[1] = f[1];
        best_cut[1] = j1;
        best_cut[2] = n;
      }
    }
  }
  double bic2 = best_bic;
  int n2 = best_n;
  for (int j1 = 3; j1 <= n - 6; j1++)
    for (int j2 = j1 + 3; j2 <= n - 3; j2++) {
      double s1 = fit_range(bytes, t, se, 0, j1, &f[0]), s2 = fit_range(bytes, t, se, j1, j2, &f[1]),
             s3 = fit_range(bytes, t, se, j2, n, &f[2]);
      if (s1 < 0 || s2 < 0 || s3 < 0 || !(f[0].beta_s > 0 && f[1].beta_s > 0 && f[2].beta_s > 0))
        continue;
      double v = bic(s1 + s2 + s3, n, 6);
      /* Against the best fit with fewer regimes: 6 per regime added. */
      if (v < bic2 - 6.0 * (3 - n2) && v < best_bic) {
        best_bic = v;
        best_n = 3;
        for (int k = 0; k < 3; k++)
          best_f[k] = f[k];
        best_cut[1] = j1;
        best_cut[2] = j2;
        best_cut[3] = n;
      }
    }
  for (int k = 0; k < best_n; k++) {
    fits[k] = best_f[k];
    fits[k].min_bytes = k == 0 ? 0 : sqrt(bytes[best_cut[k] - 1] * bytes[best_cut[k]]);
    fits[k].max_bytes = k == best_n - 1 ? 1e15 : sqrt(bytes[best_cut[k + 1] - 1] * bytes[best_cut[k + 1]]);
  }
  *n_fits = best_n;
  for (int i = 0; i < *n_fits; i++) {
    if (!(fits[i].beta_s > 0))
      return core_err_set(CORE_EINVAL, "the fitted bandwidth of sizes %g..%g bytes is not positive (times do not grow with size); measure larger sizes or more iterations",
                          fits[i].min_bytes, fits[i].max_bytes);
  }
  return 0;
}

void cal_fit_to_profile(const cal_fit *f, core_prof_fit *pf) {
  pf->min_bytes = f->min_bytes;
  pf->max_bytes = f->max_bytes;
  pf->alpha_us = f->alpha_s * 1e6;
  pf->algbw_GBps = 1.0 / (f->beta_s * 1e9);
  pf->r2 = f->r2;
  pf->has_ci = 1;
  pf->alpha_us_lo = f->alpha_lo * 1e6;
  pf->alpha_us_hi = f->alpha_hi * 1e6;
  pf->algbw_GBps_lo = f->beta_hi > 0 ? 1.0 / (f->beta_hi * 1e9) : 0;
  pf->algbw_GBps_hi = f->beta_lo > 0 ? 1.0 / (f->beta_lo * 1e9) : 1e9;
  if (pf->algbw_GBps_hi > 1e9)
    pf->algbw_GBps_hi = 1e9;
}

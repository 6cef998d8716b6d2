#include "fit.h"

#include "core/err.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Weight of point i: inverse variance, with a floor on the error so that a
 * size whose iterations happened to agree exactly cannot dominate. */
static double weight(const double *y, const double *se, int i) {
  double s = 0.005 * y[i];
  if (se && se[i] > s)
    s = se[i];
  return 1.0 / (s * s);
}

/* A weighted least-squares line over the kept points of a range. */
typedef struct wls {
  double c0, c1, cov00, cov01, cov11, chisq;
  int m, origin;
} wls;

/* Fits the kept points of [lo, lo + n) into r, leaving them in xs, ys, w;
 * returns -1 when fewer than two are kept. */
static int fit_kept(const double *x, const double *y, const double *se, int lo, int n, const int *keep, double *xs,
    double *ys, double *w, wls *r) {
  r->m = 0;
  for (int i = 0; i < n; i++)
    if (keep[i]) {
      xs[r->m] = x[lo + i];
      ys[r->m] = y[lo + i];
      w[r->m] = weight(y, se, lo + i);
      r->m++;
    }
  if (r->m < 2)
    return -1;
  gsl_fit_wlinear(xs, 1, w, 1, ys, 1, (size_t)r->m, &r->c0, &r->c1, &r->cov00, &r->cov01, &r->cov11, &r->chisq);
  r->origin = r->c0 < 0;
  if (r->origin) {
    /* No collective takes negative time at size zero: the least-squares
     * fit with alpha >= 0 is then the one through the origin. Clamping
     * alpha after the free fit would keep its steeper slope and put the
     * whole regime above its points (a shaper's token bucket makes
     * megabyte sizes faster than the line: the free intercept goes
     * negative). */
    gsl_fit_wmul(xs, 1, w, 1, ys, 1, (size_t)r->m, &r->c1, &r->cov11, &r->chisq);
    r->c0 = r->cov00 = r->cov01 = 0;
  }
  return 0;
}

/* Keeps the points within 3 robust scales of the line's relative residuals;
 * returns 1 when the fit should be repeated (the set changed and at least
 * three remain). res is scratch of n values, sorted holds n more. */
static int reject_outliers(
    const double *x, const double *y, int lo, int n, const wls *r, double *res, double *sorted, int *keep) {
  for (int i = 0; i < n; i++)
    res[i] = fabs((y[lo + i] - (r->c0 + r->c1 * x[lo + i])) / y[lo + i]);
  memcpy(sorted, res, sizeof *sorted * (size_t)n);
  gsl_sort(sorted, 1, (size_t)n);
  double s = 1.4826 * gsl_stats_median_from_sorted_data(sorted, 1, (size_t)n);
  if (s < 0.01)
    s = 0.01; /* below 1% everything is noise-level agreement */
  int changed = 0, kept = 0;
  for (int i = 0; i < n; i++) {
    int k = res[i] <= 3 * s;
    changed |= k != keep[i];
    keep[i] = k;
    kept += k;
  }
  return changed && kept >= 3;
}

/* The line's coefficients, weighted R^2 and 95% intervals into f. */
static void fit_summary(const wls *r, const double *w, const double *ys, int n, cal_fit *f) {
  f->alpha_s = r->c0;
  f->beta_s = r->c1;
  f->n_used = r->m;
  f->n_rejected = n - r->m;
  double sw = 0, swy = 0, stot = 0;
  for (int i = 0; i < r->m; i++) {
    sw += w[i];
    swy += w[i] * ys[i];
  }
  double ybar = swy / sw;
  for (int i = 0; i < r->m; i++)
    stot += w[i] * (ys[i] - ybar) * (ys[i] - ybar);
  f->r2 = stot > 0 ? 1.0 - r->chisq / stot : 1.0;
  /* The weights are relative, not inverse variances: scale the covariance
   * by the residual variance (chisq / dof). */
  int dof = r->m - (r->origin ? 1 : 2);
  if (dof > 0 && r->m > 2) {
    double scale = r->chisq / dof, tq = gsl_cdf_tdist_Pinv(0.975, dof);
    double ha = tq * sqrt(r->cov00 * scale), hb = tq * sqrt(r->cov11 * scale);
    f->alpha_lo = r->c0 - ha;
    f->alpha_hi = r->c0 + ha;
    f->beta_lo = r->c1 - hb;
    f->beta_hi = r->c1 + hb;
  } else {
    f->alpha_lo = f->alpha_hi = r->c0;
    f->beta_lo = f->beta_hi = r->c1;
  }
}

/* Fit points [lo, hi) with outlier rejection; returns the weighted SSE of
 * every point of the range, or -1. */
static double fit_range(const double *x, const double *y, const double *se, int lo, int hi, cal_fit *f) {
  int n = hi - lo;
  double *w = malloc(sizeof *w * (size_t)n), *xs = malloc(sizeof *xs * (size_t)n), *ys = malloc(sizeof *ys * (size_t)n),
         *res = malloc(sizeof *res * (size_t)n);
  int *keep = malloc(sizeof *keep * (size_t)n);
  double sse = -1;
  if (!w || !xs || !ys || !res || !keep)
    goto out;
  for (int i = 0; i < n; i++)
    keep[i] = 1;
  wls r = {0};
  for (int round = 0; round < 3; round++) {
    if (fit_kept(x, y, se, lo, n, keep, xs, ys, w, &r) < 0)
      goto out;
    /* xs is free once fitted; the last round's kept points stay in ys and w. */
    if (!reject_outliers(x, y, lo, n, &r, res, xs, keep))
      break;
  }
  fit_summary(&r, w, ys, n, f);
  /* Score the range by every point it holds, rejected ones included: a
   * split must not win by discarding the points that disagree with it
   * (around a protocol switch, say). */
  sse = 0;
  for (int i = 0; i < n; i++) {
    double d = y[lo + i] - (r.c0 + r.c1 * x[lo + i]);
    sse += weight(y, se, lo + i) * d * d;
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

/* --- the search for knees ----------------------------------------------------
 * Candidates: one regime, or 2 or 3 consecutive ones, each with at least
 * three points of its own and a positive slope. A split must lower the BIC
 * by more than 6 per added regime ("strong" evidence, Kass and Raftery
 * 1995) to be kept. Every candidate is scored by fit_range (robust, every
 * point counted); up to FIT_EXACT_MAX sizes every split is tried. */
typedef struct search {
  const double *x, *y, *se;
  int n;
  cal_fit best_f[CAL_FIT_MAX_REGIMES];
  int best_n, best_cut[CAL_FIT_MAX_REGIMES + 1];
  double best_bic, bic1, bic2;
  int n2;
} search;

static void try_two(search *s, int j1) {
  cal_fit f[2];
  double s1 = fit_range(s->x, s->y, s->se, 0, j1, &f[0]), s2 = fit_range(s->x, s->y, s->se, j1, s->n, &f[1]);
  if (s1 < 0 || s2 < 0 || !(f[0].beta_s > 0 && f[1].beta_s > 0))
    return;
  double v = bic(s1 + s2, s->n, 4);
  if (v < s->bic1 - 6.0 && v < s->best_bic) {
    s->best_bic = v;
    s->best_n = 2;
    s->best_f[0] = f[0];
    s->best_f[1] = f[1];
    s->best_cut[1] = j1;
    s->best_cut[2] = s->n;
  }
}

static void try_three(search *s, int j1, int j2) {
  cal_fit f[3];
  double s1 = fit_range(s->x, s->y, s->se, 0, j1, &f[0]), s2 = fit_range(s->x, s->y, s->se, j1, j2, &f[1]),
         s3 = fit_range(s->x, s->y, s->se, j2, s->n, &f[2]);
  if (s1 < 0 || s2 < 0 || s3 < 0 || !(f[0].beta_s > 0 && f[1].beta_s > 0 && f[2].beta_s > 0))
    return;
  double v = bic(s1 + s2 + s3, s->n, 6);
  /* Against the best fit with fewer regimes: 6 per regime added. */
  if (v < s->bic2 - 6.0 * (3 - s->n2) && v < s->best_bic) {
    s->best_bic = v;
    s->best_n = 3;
    for (int k = 0; k < 3; k++)
      s->best_f[k] = f[k];
    s->best_cut[1] = j1;
    s->best_cut[2] = j2;
    s->best_cut[3] = s->n;
  }
}

/* Beyond this many sizes (nccl-tests with a linear step -i prints thousands)
 * trying every split costs O(n^3 log n); the splits are then screened in
 * closed form first and only the best few are scored robustly. A factor-2
 * sweep from 8 B to 1 TiB has 38 sizes. */
enum { FIT_EXACT_MAX = 64, FIT_SCREEN_GRID = 64, FIT_SCREEN_KEEP = 8 };

/* Prefix sums of the weighted least-squares moments. */
typedef struct moments {
  double w, wx, wy, wxx, wxy, wyy;
} moments;

/* Weighted SSE of the least-squares line of points [lo, hi) from the prefix
 * sums, with alpha held at zero or above as fit_range does; -1 when the
 * range cannot be fitted or its slope is not positive. No rejection: this
 * only ranks candidates. */
static double screen_sse(const moments *P, int lo, int hi) {
  double sw = P[hi].w - P[lo].w, sx = P[hi].wx - P[lo].wx, sy = P[hi].wy - P[lo].wy, sxx = P[hi].wxx - P[lo].wxx,
         sxy = P[hi].wxy - P[lo].wxy, syy = P[hi].wyy - P[lo].wyy;
  double d = sw * sxx - sx * sx;
  if (!(d > 0) || !(sxx > 0))
    return -1;
  double c1 = (sw * sxy - sx * sy) / d, c0 = (sy - c1 * sx) / sw;
  if (c0 < 0) {
    c0 = 0;
    c1 = sxy / sxx;
  }
  if (!(c1 > 0))
    return -1;
  double sse = syy - 2 * c0 * sy - 2 * c1 * sxy + c0 * c0 * sw + 2 * c0 * c1 * sx + c1 * c1 * sxx;
  return sse > 0 ? sse : 0;
}

/* The FIT_SCREEN_KEEP best candidates seen, by screened SSE. */
typedef struct keep {
  int n;
  double sse[FIT_SCREEN_KEEP];
  int cut[FIT_SCREEN_KEEP][2];
} keep;

static void keep_offer(keep *k, double sse, int j1, int j2) {
  if (sse < 0)
    return;
  for (int i = 0; i < k->n; i++)
    if (k->cut[i][0] == j1 && k->cut[i][1] == j2)
      return;
  int at;
  if (k->n < FIT_SCREEN_KEEP)
    at = k->n++;
  else if (sse < k->sse[FIT_SCREEN_KEEP - 1])
    at = FIT_SCREEN_KEEP - 1;
  else
    return;
  for (; at > 0 && sse < k->sse[at - 1]; at--) {
    k->sse[at] = k->sse[at - 1];
    k->cut[at][0] = k->cut[at - 1][0];
    k->cut[at][1] = k->cut[at - 1][1];
  }
  k->sse[at] = sse;
  k->cut[at][0] = j1;
  k->cut[at][1] = j2;
}

/* Screened SSE of three regimes cut at j1 < j2, or -1. */
static double screen3(const moments *P, int n, int j1, int j2) {
  double a = screen_sse(P, 0, j1), b = screen_sse(P, j1, j2), c = screen_sse(P, j2, n);
  return a < 0 || b < 0 || c < 0 ? -1 : a + b + c;
}

/* Three regimes: each cut on a grid of FIT_SCREEN_GRID sizes evenly spaced
 * in log size (knees are protocol switches, at sizes on a log scale) with
 * the other cut at any size, then the best pair refined at full resolution.
 * O(FIT_SCREEN_GRID n). */
static void screen_three(const search *s, const moments *P, keep *k3) {
  int n = s->n, grid[FIT_SCREEN_GRID], ng = 0;
  double lx0 = log(s->x[3] > 0 ? s->x[3] : 1), lx1 = log(s->x[n - 3] > 0 ? s->x[n - 3] : 1);
  for (int g = 0, i = 3; g < FIT_SCREEN_GRID; g++) {
    double target = lx0 + (lx1 - lx0) * g / (FIT_SCREEN_GRID - 1);
    while (i < n - 3 && (s->x[i] <= 0 || log(s->x[i]) < target))
      i++;
    if (ng == 0 || grid[ng - 1] != i)
      grid[ng++] = i;
  }
  for (int g = 0; g < ng; g++) {
    for (int j2 = grid[g] + 3; j2 <= n - 3; j2++)
      keep_offer(k3, screen3(P, n, grid[g], j2), grid[g], j2);
    for (int j1 = 3; j1 <= grid[g] - 3; j1++)
      keep_offer(k3, screen3(P, n, j1, grid[g]), j1, grid[g]);
  }
  if (k3->n == 0)
    return;
  int b2 = k3->cut[0][1];
  for (int j1 = 3; j1 <= b2 - 3; j1++)
    keep_offer(k3, screen3(P, n, j1, b2), j1, b2);
  int b1 = k3->cut[0][0];
  for (int j2 = b1 + 3; j2 <= n - 3; j2++)
    keep_offer(k3, screen3(P, n, b1, j2), b1, j2);
}

static int cmp_cut(const void *a, const void *b) {
  const int *p = a, *q = b;
  return p[0] != q[0] ? (p[0] > q[0]) - (p[0] < q[0]) : (p[1] > q[1]) - (p[1] < q[1]);
}

/* Many sizes: the closed-form screen picks the candidates, fit_range scores
 * them in ascending order of their cuts as the exhaustive search does. */
static int search_screened(search *s) {
  int n = s->n;
  moments *P = malloc(sizeof *P * (size_t)(n + 1));
  if (!P)
    return core_err_set(CORE_ENOMEM, "alpha-beta fit failed (out of memory)");
  P[0] = (moments){0, 0, 0, 0, 0, 0};
  for (int i = 0; i < n; i++) {
    double w = weight(s->y, s->se, i), x = s->x[i], y = s->y[i];
    P[i + 1] = (moments){
        P[i].w + w, P[i].wx + w * x, P[i].wy + w * y, P[i].wxx + w * x * x, P[i].wxy + w * x * y, P[i].wyy + w * y * y};
  }
  keep k2 = {0}, k3 = {0};
  for (int j1 = 3; j1 <= n - 3; j1++) {
    double a = screen_sse(P, 0, j1), b = screen_sse(P, j1, n);
    keep_offer(&k2, a < 0 || b < 0 ? -1 : a + b, j1, 0);
  }
  screen_three(s, P, &k3);
  free(P);
  qsort(k2.cut, (size_t)k2.n, sizeof k2.cut[0], cmp_cut);
  qsort(k3.cut, (size_t)k3.n, sizeof k3.cut[0], cmp_cut);
  for (int i = 0; i < k2.n; i++)
    try_two(s, k2.cut[i][0]);
  s->bic2 = s->best_bic;
  s->n2 = s->best_n;
  for (int i = 0; i < k3.n; i++)
    try_three(s, k3.cut[i][0], k3.cut[i][1]);
  return 0;
}

static void search_exhaustive(search *s) {
  int n = s->n;
  for (int j1 = 3; j1 <= n - 3; j1++)
    try_two(s, j1);
  s->bic2 = s->best_bic;
  s->n2 = s->best_n;
  for (int j1 = 3; j1 <= n - 6; j1++)
    for (int j2 = j1 + 3; j2 <= n - 3; j2++)
      try_three(s, j1, j2);
}

int cal_fit_alpha_beta(const double *bytes, const double *t, const double *se, int n, cal_fit *fits, int *n_fits) {
  if (n < 2)
    return core_err_set(CORE_EINVAL, "an alpha-beta fit needs at least 2 sizes (got %d)", n);
  for (int i = 0; i < n; i++)
    if (!(t[i] > 0) || !(bytes[i] >= 0) || (i && !(bytes[i] > bytes[i - 1])))
      return core_err_set(
          CORE_EINVAL, "fit input %d (%g bytes, %g s) is not a positive time at an ascending size", i, bytes[i], t[i]);
  search s = {.x = bytes, .y = t, .se = se, .n = n};
  double sse = fit_range(bytes, t, se, 0, n, &s.best_f[0]);
  if (sse < 0)
    return core_err_set(CORE_ENOMEM, "alpha-beta fit failed (out of memory)");
  s.best_n = 1;
  s.best_bic = s.bic1 = bic(sse, n, 2);
  s.best_cut[0] = 0;
  s.best_cut[1] = n;
  if (n <= FIT_EXACT_MAX)
    search_exhaustive(&s);
  else {
    int rc = search_screened(&s);
    if (rc)
      return rc;
  }
  for (int k = 0; k < s.best_n; k++) {
    fits[k] = s.best_f[k];
    fits[k].min_bytes = k == 0 ? 0 : sqrt(bytes[s.best_cut[k] - 1] * bytes[s.best_cut[k]]);
    fits[k].max_bytes = k == s.best_n - 1 ? 1e15 : sqrt(bytes[s.best_cut[k + 1] - 1] * bytes[s.best_cut[k + 1]]);
  }
  *n_fits = s.best_n;
  for (int i = 0; i < *n_fits; i++) {
    if (!(fits[i].beta_s > 0))
      return core_err_set(CORE_EINVAL,
          "the fitted bandwidth of sizes %g..%g bytes is not positive (times do not grow with size); measure larger "
          "sizes or more iterations",
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

#include "runtime/compress.h"

#include "runtime/compress_gsl.h"

#include "core/clock.h"
#include "core/err.h"

#include "runtime/blas.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- options ------------------------------------------------------------------- */

static const char *const phase_names[RT_COMPRESS_N_PHASES] = {"bucket", "uncompressed", "P", "Q"};

void rt_compress_opts_default(rt_compress_opts *o) {
  memset(o, 0, sizeof *o);
  o->kind = CORE_COMPRESS_NONE;
  o->rank = RT_POWERSGD_DEFAULT_RANK;
  o->start_iter = RT_POWERSGD_DEFAULT_START;
  o->min_rate = RT_POWERSGD_DEFAULT_MIN_RATE;
  o->error_feedback = 1; /* use_error_feedback=True */
  o->warm_start = 1;     /* warm_start=True */
  o->seed = RT_POWERSGD_DEFAULT_SEED;
  o->algo = RT_ALGO_DEFAULT;
}

int rt_compress_parse(const char *spec, rt_compress_opts *o) {
  core_compression c;
  int rc = core_compression_parse(spec, &c);
  if (rc)
    return rc;
  o->kind = c.kind;
  if (c.kind == CORE_COMPRESS_POWERSGD)
    o->rank = c.rank;
  return 0;
}

int rt_compress_should(int64_t n, int64_t m, int rank, double min_rate, int *eff_rank) {
  /* powerSGD_hook: matrix_approximation_rank = min(n, m, rank), then
   * _should_compress: compressed_size * min_compression_rate <
   * uncompressed_size with compressed_size = (n + m) * rank. */
  int64_t r = rank;
  if (n < r)
    r = n;
  if (m < r)
    r = m;
  if (r < 0)
    r = 0;
  if (eff_rank)
    *eff_rank = (int)r;
  return (double)(n + m) * (double)r * min_rate < (double)n * (double)m;
}

/* ---- statistics ---------------------------------------------------------------- */

void rt_compress_stats_add(rt_compress_stats *dst, const rt_compress_stats *src) {
  for (int p = 0; p < RT_COMPRESS_N_PHASES; p++) {
    dst->bytes[p] += src->bytes[p];
    dst->allreduces[p] += src->allreduces[p];
  }
  dst->buckets += src->buckets;
  dst->vanilla += src->vanilla;
  dst->comm_s += src->comm_s;
  dst->cast_s += src->cast_s;
  dst->gemm_s += src->gemm_s;
  dst->ortho_s += src->ortho_s;
  dst->copy_s += src->copy_s;
}

int64_t rt_compress_stats_bytes(const rt_compress_stats *s) {
  int64_t b = 0;
  for (int p = 0; p < RT_COMPRESS_N_PHASES; p++)
    b += s->bytes[p];
  return b;
}

double rt_compress_stats_compute_s(const rt_compress_stats *s) {
  return s->cast_s + s->gemm_s + s->ortho_s + s->copy_s;
}

/* ---- fp16 and bf16, rounded to nearest even as PyTorch's .to() does ------------ */

static uint32_t bits_of(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static float float_of(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* IEEE binary32 -> binary16 as c10::detail::fp16_ieee_from_fp32_value does:
 * round to nearest even, overflow to infinity, subnormal halves kept, NaN to
 * a quiet NaN. Few branches, after F. Giesen's float_to_half_fast3_rtne
 * (public domain): a subnormal half is rounded by the FPU, adding 0.5 so its
 * bits land in the low mantissa. Checked against a plain bit-by-bit
 * conversion on all 2^32 inputs. */
static uint16_t f32_to_f16(float f) {
  uint32_t x = bits_of(f), sign = x & 0x80000000u, o;
  x ^= sign;
  if (x >= (127u + 16u) << 23) { /* |f| >= 65536 (inf after rounding), inf, NaN */
    o = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 113u << 23) { /* |f| < 2^-14: a subnormal half or zero */
    o = bits_of(float_of(x) + float_of(126u << 23)) - (126u << 23);
  } else { /* rebias the exponent, round the 13 dropped bits to nearest even */
    x += ((uint32_t)(15 - 127) << 23) + 0xfffu + ((x >> 13) & 1u);
    o = x >> 13;
  }
  return (uint16_t)(o | (sign >> 16));
}

/* binary16 -> binary32, exact (c10::detail::fp16_ieee_to_fp32_value). */
static float f16_to_f32(uint16_t h) {
  uint32_t o = (uint32_t)(h & 0x7fffu) << 13, e = o & (0x7c00u << 13);
  o += (uint32_t)(127 - 15) << 23;
  if (e == 0x7c00u << 13) /* inf, NaN */
    o += (uint32_t)(128 - 16) << 23;
  else if (e == 0) /* zero, subnormal: renormalize through the FPU, exact */
    o = bits_of(float_of(o + (1u << 23)) - float_of(113u << 23));
  return float_of(o | (uint32_t)(h & 0x8000u) << 16);
}

/* c10::detail::round_to_nearest_even (c10/util/BFloat16.h). */
static uint16_t f32_to_bf16(float f) {
  if (isnan(f))
    return 0x7fc0u;
  uint32_t x = bits_of(f);
  return (uint16_t)((x + ((x >> 16) & 1u) + 0x7fffu) >> 16);
}

static float bf16_to_f32(uint16_t b) { return float_of((uint32_t)b << 16); }

int rt_compress_to_half(enum rt_dtype t, const float *in, uint16_t *out, int64_t n) {
  if (t != RT_FP16 && t != RT_BF16)
    return core_err_set(CORE_EINVAL, "rt_compress_to_half: %s is not a half-precision type", rt_dtype_name(t));
  for (int64_t i = 0; i < n; i++)
    out[i] = t == RT_BF16 ? f32_to_bf16(in[i]) : f32_to_f16(in[i]);
  return 0;
}

/* ---- the compressor ------------------------------------------------------------ */

/* One bucket's state: PowerSGD's (PowerSGDState's dictionaries keyed by the
 * bucket index) and the buffers that carry a bucket from its prepare (on
 * the compute thread) to its finish (on the communication thread), one set
 * per bucket so that the two threads never share one. */
typedef struct bucket_state {
  int n_comp, n_unc;
  int *comp, *unc; /* tensor indices, in bucket order */
  int64_t unc_elems, p_elems, q_elems;
  float *q;   /* all Q of the bucket, kept for warm start */
  float *err; /* error feedback, bucket_elems */
  int have_q, have_err;
  uint16_t *half; /* fp16/bf16: the bucket cast down */
  float *p;       /* PowerSGD: all P of the bucket */
  float *unc_buf; /* PowerSGD: its uncompressed tensors, together */
  float *input;   /* PowerSGD: the input after error feedback */
  long prepared;  /* step prepared and not yet finished, else -1 */
} bucket_state;

struct rt_compressor {
  rt_compress_opts o;
  const core_model *m;
  const core_buckets *bk;
  int *tensor_rank; /* [n_tensors] PowerSGD rank, 0 = uncompressed */
  int64_t max_bucket;
  bucket_state *bs; /* [n_buckets] */
  double *work[2];  /* orthogonalization scratch: prepare's, finish's */
  rt_compress_rng *state_rng, *fill_rng;
};

int rt_compress_tensor_rank(const rt_compressor *c, int t) {
  if (!c || !c->tensor_rank || t < 0 || t >= c->m->n_tensors)
    return 0;
  return c->tensor_rank[t];
}

const float *rt_compress_error(const rt_compressor *c, int b) {
  if (!c || !c->bs || b < 0 || b >= c->bk->n_buckets || !c->bs[b].have_err)
    return NULL;
  return c->bs[b].err;
}

void rt_compress_free(rt_compressor *c) {
  if (!c)
    return;
  if (c->bs)
    for (int b = 0; b < c->bk->n_buckets; b++) {
      free(c->bs[b].comp);
      free(c->bs[b].unc);
      free(c->bs[b].q);
      free(c->bs[b].err);
      free(c->bs[b].half);
      free(c->bs[b].p);
      free(c->bs[b].unc_buf);
      free(c->bs[b].input);
    }
  free(c->bs);
  free(c->tensor_rank);
  free(c->work[0]);
  free(c->work[1]);
  rt_compress_rng_free(c->state_rng);
  rt_compress_rng_free(c->fill_rng);
  free(c);
}

static int check_opts(const rt_compress_opts *o) {
  if ((unsigned)o->kind >= CORE_N_COMPRESS)
    return core_err_set(CORE_EINVAL, "unknown compression kind %d", (int)o->kind);
  if ((unsigned)o->algo >= RT_N_ALGOS)
    return core_err_set(CORE_EINVAL, "compression: unknown allreduce algorithm %d", (int)o->algo);
  if (o->kind != CORE_COMPRESS_POWERSGD)
    return 0;
  if (o->rank < 1)
    return core_err_set(CORE_EINVAL, "PowerSGD rank %d: it must be at least 1", o->rank);
  if (o->start_iter < 0)
    return core_err_set(CORE_EINVAL, "PowerSGD start step %ld: it must be 0 or more", o->start_iter);
  if (!(o->min_rate >= 0) || !isfinite(o->min_rate))
    return core_err_set(CORE_EINVAL,
        "PowerSGD minimum compression rate %g: it must be a finite "
        "number >= 0 (PyTorch's default is 2)",
        o->min_rate);
  return 0;
}

/* The rank PowerSGD gives each tensor, 0 for one it leaves uncompressed. */
static int tensor_ranks(rt_compressor *c) {
  const core_model *m = c->m;
  if (!m->tensor_rows)
    return core_err_set(CORE_EINVAL, "PowerSGD needs the tensor shapes of model %s", m->name);
  if (!(c->tensor_rank = calloc((size_t)m->n_tensors, sizeof *c->tensor_rank)))
    return core_err_set(CORE_ENOMEM, "out of memory planning PowerSGD");
  for (int t = 0; t < m->n_tensors; t++) {
    int64_t n = m->tensor_rows[t], el = m->tensor_elems[t];
    if (n < 1 || el % n != 0 || n > INT_MAX || el / n > INT_MAX)
      return core_err_set(CORE_EINVAL,
          "PowerSGD on model %s: tensor %d has %lld elements and "
          "first dimension %lld, not a matrix it can view",
          m->name, t, (long long)el, (long long)n);
    int r;
    if (rt_compress_should(n, el / n, c->o.rank, c->o.min_rate, &r))
      c->tensor_rank[t] = r;
  }
  return 0;
}

/* Bucket b's plan (its compressed and uncompressed tensors) and buffers;
 * *max_work grows to the orthogonalization scratch its matrices need. */
static int plan_bucket(rt_compressor *c, int b, size_t *max_work) {
  const core_model *m = c->m;
  const core_buckets *bk = c->bk;
  bucket_state *s = &c->bs[b];
  size_t nt = (size_t)(bk->bucket_first[b + 1] - bk->bucket_first[b]) + 1;
  if (!(s->comp = malloc(sizeof *s->comp * nt)) || !(s->unc = malloc(sizeof *s->unc * nt)))
    return core_err_set(CORE_ENOMEM, "out of memory planning PowerSGD");
  for (int i = bk->bucket_first[b]; i < bk->bucket_first[b + 1]; i++) {
    int t = bk->bucket_tensors[i], r = c->tensor_rank[t];
    int64_t n = m->tensor_rows[t], mm = m->tensor_elems[t] / n;
    if (r) {
      s->comp[s->n_comp++] = t;
      s->p_elems += n * r;
      s->q_elems += mm * r;
      size_t w1 = rt_compress_ortho_work((int)n, r), w2 = rt_compress_ortho_work((int)mm, r);
      if (w1 > *max_work)
        *max_work = w1;
      if (w2 > *max_work)
        *max_work = w2;
    } else {
      s->unc[s->n_unc++] = t;
      s->unc_elems += m->tensor_elems[t];
    }
  }
  size_t el = (size_t)bk->bucket_elems[b];
  int ef = c->o.error_feedback && el;
  if ((s->q_elems && !(s->q = malloc(sizeof *s->q * (size_t)s->q_elems))) ||
      (s->p_elems && !(s->p = malloc(sizeof *s->p * (size_t)s->p_elems))) ||
      (s->unc_elems && !(s->unc_buf = malloc(sizeof *s->unc_buf * (size_t)s->unc_elems))) ||
      (ef && !(s->err = malloc(sizeof *s->err * el))) || (ef && !(s->input = malloc(sizeof *s->input * el))))
    return core_err_set(CORE_ENOMEM,
        "out of memory for PowerSGD's state of bucket %d "
        "(%lld elements)",
        b, (long long)bk->bucket_elems[b]);
  return 0;
}

/* PowerSGD's per-bucket plan and buffers. */
static int plan_powersgd(rt_compressor *c) {
  int rc = tensor_ranks(c);
  if (rc)
    return rc;
  size_t max_work = 0;
  for (int b = 0; b < c->bk->n_buckets; b++)
    if ((rc = plan_bucket(c, b, &max_work)) != 0)
      return rc;
  if (max_work &&
      (!(c->work[0] = malloc(sizeof *c->work[0] * max_work)) || !(c->work[1] = malloc(sizeof *c->work[1] * max_work))))
    return core_err_set(CORE_ENOMEM, "out of memory for PowerSGD's scratch buffers");
  rc = rt_compress_rng_create(c->o.seed, &c->state_rng);
  if (rc == 0)
    rc = rt_compress_rng_create(0, &c->fill_rng);
  return rc;
}

int rt_compress_create(const rt_compress_opts *o, const core_model *m, const core_buckets *bk, rt_compressor **out) {
  if (!out)
    return core_err_set(CORE_EINVAL, "rt_compress_create: no output pointer");
  *out = NULL;
  if (!o || !m || !bk)
    return core_err_set(CORE_EINVAL, "rt_compress_create: needs options, a model and buckets");
  int rc = check_opts(o);
  if (rc || (rc = rt_blas_load()) != 0)
    return rc;
  if (bk->n_tensors != m->n_tensors)
    return core_err_set(CORE_EINVAL, "compression: the buckets hold %d tensors but model %s has %d", bk->n_tensors,
        m->name, m->n_tensors);
  if (bk->n_buckets <= 0)
    return core_err_set(CORE_EINVAL, "compression: model %s has no gradient buckets", m->name);
  rt_compressor *c = calloc(1, sizeof *c);
  if (!c)
    return core_err_set(CORE_ENOMEM, "out of memory creating the %s hook", core_compress_kind_name(o->kind));
  c->o = *o;
  c->m = m;
  c->bk = bk;
  for (int b = 0; b < bk->n_buckets; b++)
    if (bk->bucket_elems[b] > c->max_bucket)
      c->max_bucket = bk->bucket_elems[b];
  if (!(c->bs = calloc((size_t)bk->n_buckets, sizeof *c->bs))) {
    rc = core_err_set(CORE_ENOMEM, "out of memory creating the %s hook", core_compress_kind_name(o->kind));
    goto fail_free;
  }
  for (int b = 0; b < bk->n_buckets; b++)
    c->bs[b].prepared = -1;
  if (o->kind == CORE_COMPRESS_FP16 || o->kind == CORE_COMPRESS_BF16) {
    for (int b = 0; b < bk->n_buckets; b++)
      if (bk->bucket_elems[b] && !(c->bs[b].half = malloc(sizeof *c->bs[b].half * (size_t)bk->bucket_elems[b]))) {
        rc = core_err_set(CORE_ENOMEM, "out of memory for the %s hook's buffer of bucket %d (%lld elements)",
            core_compress_kind_name(o->kind), b, (long long)bk->bucket_elems[b]);
        goto fail_free;
      }
  } else if (o->kind == CORE_COMPRESS_POWERSGD) {
    if ((rc = plan_powersgd(c)) != 0)
      goto fail_free;
  }
  *out = c;
  return 0;
fail_free:
  rt_compress_free(c);
  return rc;
}

/* ---- the hooks ------------------------------------------------------------------ */

typedef struct call {
  rt_compressor *c;
  rt_comm *comm;
  int b;
  rt_compress_stats *st;
} call;

/* One allreduce (sum) of the hook; empty ones are skipped, as they move
 * nothing. */
static int reduce(const call *k, void *buf, int64_t n, enum rt_dtype t, enum rt_compress_phase ph) {
  if (n == 0)
    return 0;
  double t0 = core_now();
  int rc = rt_allreduce(k->comm, buf, (size_t)n, t, k->c->o.algo);
  k->st->comm_s += core_now() - t0;
  if (rc) {
    if (k->c->o.kind == CORE_COMPRESS_NONE)
      return rc; /* the plain allreduce keeps the backend's message */
    return core_err_wrap(rc, "%s hook, bucket %d, allreduce of %s (%lld %s elements)",
        core_compress_kind_name(k->c->o.kind), k->b, phase_names[ph], (long long)n, rt_dtype_name(t));
  }
  k->st->bytes[ph] += n * (int64_t)rt_dtype_size(t);
  k->st->allreduces[ph]++;
  return 0;
}

/* fp16_compress_hook / bf16_compress_hook: the cast down in the hook's
 * body, the cast back in its future's callback. */
static void half_prepare(const call *k, const float *buf, int64_t n) {
  uint16_t *h = k->c->bs[k->b].half;
  double t0 = core_now();
  if (k->c->o.kind == CORE_COMPRESS_BF16)
    for (int64_t i = 0; i < n; i++)
      h[i] = f32_to_bf16(buf[i]);
  else
    for (int64_t i = 0; i < n; i++)
      h[i] = f32_to_f16(buf[i]);
  k->st->cast_s += core_now() - t0;
}

static int half_finish(const call *k, float *buf, int64_t n) {
  uint16_t *h = k->c->bs[k->b].half;
  int bf = k->c->o.kind == CORE_COMPRESS_BF16;
  int rc = reduce(k, h, n, bf ? RT_BF16 : RT_FP16, RT_PHASE_BUCKET);
  if (rc)
    return rc;
  double t0 = core_now();
  if (bf)
    for (int64_t i = 0; i < n; i++)
      buf[i] = bf16_to_f32(h[i]);
  else
    for (int64_t i = 0; i < n; i++)
      buf[i] = f16_to_f32(h[i]);
  k->st->cast_s += core_now() - t0;
  return 0;
}

/* Tensor t of the bucket as an n x mm row-major matrix inside buf. */
static float *tensor_in(const call *k, float *buf, int t, int *n, int *mm) {
  const core_model *m = k->c->m;
  *n = (int)m->tensor_rows[t];
  *mm = (int)(m->tensor_elems[t] / m->tensor_rows[t]);
  return buf + k->c->bk->tensor_offset[t];
}

/* The bucket's uncompressed tensors between buf and their contiguous
 * buffer (for one allreduce): into it, or back out into buf. */
static void unc_copy(const call *k, float *buf, int back) {
  const bucket_state *s = &k->c->bs[k->b];
  const core_model *m = k->c->m;
  const core_buckets *bk = k->c->bk;
  int64_t o = 0;
  for (int i = 0; i < s->n_unc; i++) {
    int t = s->unc[i];
    size_t bytes = sizeof *buf * (size_t)m->tensor_elems[t];
    if (back)
      memcpy(buf + bk->tensor_offset[t], s->unc_buf + o, bytes);
    else
      memcpy(s->unc_buf + o, buf + bk->tensor_offset[t], bytes);
    o += m->tensor_elems[t];
  }
}

/* Each compressed tensor's factor in f (Q: mm x r, of_q; else P: n x r),
 * consecutive, orthogonalized in place. */
static int ortho_all(const call *k, float *buf, float *f, int of_q, double *work) {
  const bucket_state *s = &k->c->bs[k->b];
  int n, mm, rc;
  for (int i = 0; i < s->n_comp; i++) {
    int t = s->comp[i], r = k->c->tensor_rank[t];
    tensor_in(k, buf, t, &n, &mm);
    int rows = of_q ? mm : n;
    if ((rc = rt_compress_orthogonalize(f, rows, r, work)) != 0)
      return rc;
    f += (size_t)rows * (size_t)r;
  }
  return 0;
}

/* PowerSGD's three products, for every compressed tensor M (n x mm) of the
 * bucket with its rank r: P = M Q, Q = M^T P, or M = P Q^T (row-major). */
enum psgd_product { PSGD_P_MQ, PSGD_Q_MTP, PSGD_M_PQT };

/* One product over the bucket's tensors, its time into gemm_s. */
static void gemm_all(const call *k, float *buf, enum psgd_product g) {
  rt_compressor *c = k->c;
  bucket_state *s = &c->bs[k->b];
  double t0 = core_now();
  float *p = s->p, *q = s->q;
  for (int i = 0; i < s->n_comp; i++) {
    int t = s->comp[i], r = c->tensor_rank[t], n, mm;
    float *M = tensor_in(k, buf, t, &n, &mm);
    switch (g) {
    case PSGD_P_MQ: rt_blas_sgemm(RT_BLAS_N, RT_BLAS_N, n, r, mm, 1.0f, M, mm, q, r, 0.0f, p, r); break;
    case PSGD_Q_MTP: rt_blas_sgemm(RT_BLAS_T, RT_BLAS_N, mm, r, n, 1.0f, M, mm, p, r, 0.0f, q, r); break;
    case PSGD_M_PQT: rt_blas_sgemm(RT_BLAS_N, RT_BLAS_T, n, mm, r, 1.0f, p, r, q, r, 0.0f, M, mm); break;
    }
    p += (size_t)n * (size_t)r;
    q += (size_t)mm * (size_t)r;
  }
  k->st->gemm_s += core_now() - t0;
}

/* powerSGD_hook from start_powerSGD_iter on, the part in the hook's body
 * (before its first allreduce is waited for): error feedback, the
 * uncompressed tensors gathered, Q initialized or orthogonalized, P = M Q. */
static int powersgd_prepare(const call *k, float *buf, int64_t n_el) {
  rt_compressor *c = k->c;
  bucket_state *s = &c->bs[k->b];
  rt_compress_stats *st = k->st;
  const int ef = c->o.error_feedback;
  int rc;

  /* Error feedback: the input becomes gradient + last error; keep a copy
   * to compute the new error from. */
  double t0 = core_now();
  if (ef && s->have_err) {
    for (int64_t i = 0; i < n_el; i++) {
      float v = buf[i] + s->err[i];
      buf[i] = v;
      s->input[i] = v;
    }
  } else if (ef) {
    memcpy(s->input, buf, sizeof *buf * (size_t)n_el);
  }
  /* The uncompressed tensors, contiguous for one allreduce. */
  unc_copy(k, buf, 0);
  st->copy_s += core_now() - t0;

  /* Q: a fresh random orthonormal start in the first compressed step (and
   * every step without warm start), else last step's Q orthogonalized. */
  t0 = core_now();
  if (!c->o.warm_start || !s->have_q) {
    /* A seed is drawn even for a bucket with nothing to compress, as
     * PyTorch does, so the sequence does not depend on the shapes. */
    rt_compress_rng_reseed(c->fill_rng, rt_compress_rng_draw_seed(c->state_rng));
    rt_compress_rng_normal(c->fill_rng, s->q, (size_t)s->q_elems);
  }
  if ((rc = ortho_all(k, buf, s->q, 1, c->work[0])) != 0)
    return rc;
  st->ortho_s += core_now() - t0;

  /* P = M Q. */
  gemm_all(k, buf, PSGD_P_MQ);
  return 0;
}

/* The rest, in the futures' callbacks: the allreduces, P orthogonalized,
 * Q = M^T P, M = P Q^T and the new error. */
static int powersgd_finish(const call *k, float *buf, int64_t n_el) {
  rt_compressor *c = k->c;
  bucket_state *s = &c->bs[k->b];
  rt_compress_stats *st = k->st;
  int rc;

  /* The uncompressed tensors: their sum is their mean (the inputs are
   * divided by the world size already); back into the bucket. */
  if ((rc = reduce(k, s->unc_buf, s->unc_elems, RT_FP32, RT_PHASE_UNCOMPRESSED)) != 0)
    return rc;
  double t0 = core_now();
  unc_copy(k, buf, 1);
  st->copy_s += core_now() - t0;

  /* All P, summed; orthogonalized, so their scale does not matter. */
  if ((rc = reduce(k, s->p, s->p_elems, RT_FP32, RT_PHASE_P)) != 0)
    return rc;
  t0 = core_now();
  if ((rc = ortho_all(k, buf, s->p, 0, c->work[1])) != 0)
    return rc;
  st->ortho_s += core_now() - t0;

  /* Q = M^T P, summed: the mean of the ranks' M^T P. */
  gemm_all(k, buf, PSGD_Q_MTP);
  if ((rc = reduce(k, s->q, s->q_elems, RT_FP32, RT_PHASE_Q)) != 0)
    return rc;

  /* M = P Q^T: the rank-r approximation of the mean. */
  gemm_all(k, buf, PSGD_M_PQT);
  s->have_q = c->o.warm_start;

  /* The new error, PyTorch's input_tensor_cp - input_tensor in the input's
   * scale: input - approximation / world. */
  if (c->o.error_feedback) {
    t0 = core_now();
    const float w = (float)k->comm->size;
    for (int64_t i = 0; i < n_el; i++)
      s->err[i] = s->input[i] - buf[i] / w;
    s->have_err = 1;
    st->copy_s += core_now() - t0;
  }
  return 0;
}

static int check_call(const rt_compressor *c, const char *fn, int b, const float *buf) {
  if (!c)
    return core_err_set(CORE_EINVAL, "%s: needs a compressor", fn);
  if (b < 0 || b >= c->bk->n_buckets)
    return core_err_set(CORE_EINVAL, "%s: bucket %d of %d", fn, b, c->bk->n_buckets);
  if (!buf && c->bk->bucket_elems[b])
    return core_err_set(CORE_EINVAL, "%s: no buffer for bucket %d", fn, b);
  return 0;
}

/* The caller's stats, or local zeroed when it keeps none. */
static rt_compress_stats *stats_or(rt_compress_stats *st, rt_compress_stats *local) {
  if (st)
    return st;
  memset(local, 0, sizeof *local);
  return local;
}

int rt_compress_prepare(rt_compressor *c, int b, float *buf, long step, rt_compress_stats *st) {
  rt_compress_stats local;
  st = stats_or(st, &local);
  int rc = check_call(c, "rt_compress_prepare", b, buf);
  if (rc)
    return rc;
  bucket_state *s = &c->bs[b];
  if (s->prepared >= 0)
    return core_err_set(
        CORE_EINVAL, "rt_compress_prepare: bucket %d was prepared for step %ld and not finished", b, s->prepared);
  int64_t n = c->bk->bucket_elems[b];
  call k = {.c = c, .b = b, .st = st};
  switch (c->o.kind) {
  case CORE_COMPRESS_FP16:
  case CORE_COMPRESS_BF16: half_prepare(&k, buf, n); break;
  case CORE_COMPRESS_POWERSGD:
    if (step >= c->o.start_iter && (rc = powersgd_prepare(&k, buf, n)) != 0)
      return rc;
    break;
  default: break;
  }
  s->prepared = step;
  return 0;
}

int rt_compress_finish(rt_compressor *c, rt_comm *comm, int b, float *buf, long step, rt_compress_stats *st) {
  rt_compress_stats local;
  st = stats_or(st, &local);
  int rc = check_call(c, "rt_compress_finish", b, buf);
  if (rc)
    return rc;
  if (!comm)
    return core_err_set(CORE_EINVAL, "rt_compress_finish: needs a communicator");
  bucket_state *s = &c->bs[b];
  if (s->prepared != step)
    return core_err_set(CORE_EINVAL, "rt_compress_finish: bucket %d was not prepared for step %ld", b, step);
  s->prepared = -1;
  int64_t n = c->bk->bucket_elems[b];
  call k = {.c = c, .comm = comm, .b = b, .st = st};
  st->buckets++;
  switch (c->o.kind) {
  case CORE_COMPRESS_FP16:
  case CORE_COMPRESS_BF16: return half_finish(&k, buf, n);
  case CORE_COMPRESS_POWERSGD:
    if (step >= c->o.start_iter)
      return powersgd_finish(&k, buf, n);
    /* The vanilla phase: default._allreduce_fut. */
    st->vanilla++;
    return reduce(&k, buf, n, RT_FP32, RT_PHASE_BUCKET);
  default: return reduce(&k, buf, n, RT_FP32, RT_PHASE_BUCKET);
  }
}

int rt_compress_bucket(rt_compressor *c, rt_comm *comm, int b, float *buf, long step, rt_compress_stats *st) {
  rt_compress_stats local;
  st = stats_or(st, &local);
  if (!comm)
    return core_err_set(CORE_EINVAL, "rt_compress_bucket: needs a compressor and a communicator");
  int rc = rt_compress_prepare(c, b, buf, step, st);
  return rc ? rc : rt_compress_finish(c, comm, b, buf, step, st);
}

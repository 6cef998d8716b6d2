#include "kclass.h"

#include "calibrate/gpu_datasheet.h"
#include "core/err.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Substrings of compute-bound kernels' names, and of names that contain
 * one of those but reduce or transform data (lower case). */
static const char *const compute_names[] = {
    "gemm", "scudnn", "hcudnn", "dgrad", "wgrad", "fprop", "convolution", "fmha", "flash", "attention", "xmma", NULL};
static const char *const memory_names[] = {"reduce", "splitk", "transform", NULL};

static void lower(const char *s, char *out, size_t n) {
  size_t i = 0;
  for (; s[i] && i + 1 < n; i++)
    out[i] = (char)tolower((unsigned char)s[i]);
  out[i] = '\0';
}

static int any_of(const char *s, const char *const *subs) {
  for (; *subs; subs++)
    if (strstr(s, *subs))
      return 1;
  return 0;
}

/* The precision a kernel computes in, from its name. */
static enum core_prec kernel_prec(const char *name, int has_tf32) {
  char s[512];
  lower(name, s, sizeof s);
  if (strstr(s, "bf16"))
    return CORE_PREC_BF16;
  static const char *const half[] = {"f16", "h884", "h1688", "h16816", "hgemm", "hcudnn", "half", NULL};
  if (any_of(s, half))
    return CORE_PREC_FP16;
  static const char *const tf32[] = {"tf32", "s1688", "s16816", "tensorop_s", NULL};
  return has_tf32 && any_of(s, tf32) ? CORE_PREC_TF32 : CORE_PREC_FP32;
}

static double prod(const int64_t *d, int n) {
  double p = 1;
  for (int k = 0; k < n; k++)
    p *= (double)d[k];
  return p;
}

/* Input i's shape into d (at most 8 dims); its rank, or -1. */
static int dims(const cal_ktrace *t, const cal_kevent *op, int i, int64_t *d) {
  int r = cal_ktrace_dims(t, op, i, d, 8);
  return r > 8 ? -1 : r;
}

/* A matrix product of a [.., M, K] by b [.., K, N] (b transposed, [N, K], for linear). */
static int matmul_cost(
    const cal_ktrace *t, const cal_kevent *op, int a, int b, int linear, double w, double *F, double *B) {
  int64_t x[8], y[8];
  int ra = dims(t, op, a, x), rb = dims(t, op, b, y);
  if (ra < 2 || rb < 2)
    return 0;
  double K = (double)x[ra - 1], M = prod(x, ra - 1), N = linear ? (double)y[0] : (double)y[rb - 1];
  *F = 2 * M * N * K;
  *B = (M * K + prod(y, rb) + M * N) * w;
  return 1;
}

/* A convolution of input [N, C, spatial..] by weight [O, C/g, kernel..], its
 * output taken as large as its input (stride 1): an upper bound on FLOPs. */
static int conv_cost(const cal_ktrace *t, const cal_kevent *op, int in, int wt, double w, double *F, double *B) {
  int64_t x[8], k[8];
  int rx = dims(t, op, in, x), rk = dims(t, op, wt, k);
  if (rx < 3 || rk != rx)
    return 0;
  double spatial = prod(x + 2, rx - 2), out = (double)x[0] * (double)k[0] * spatial;
  *F = 2 * out * prod(k + 1, rk - 1);
  *B = (prod(x, rx) + prod(k, rk) + out) * w;
  return 1;
}

int cal_op_cost(const cal_ktrace *t, const cal_kevent *op, double *flops, double *bytes) {
  const char *n = cal_ktrace_str(t, op->name);
  double w = 4; /* the shapes do not say the types; fp32's width bounds the bytes */
  if (!strcmp(n, "aten::mm") || !strcmp(n, "aten::bmm") || !strcmp(n, "aten::matmul"))
    return matmul_cost(t, op, 0, 1, 0, w, flops, bytes);
  if (!strcmp(n, "aten::addmm") || !strcmp(n, "aten::baddbmm"))
    return matmul_cost(t, op, 1, 2, 0, w, flops, bytes);
  if (!strcmp(n, "aten::linear"))
    return matmul_cost(t, op, 0, 1, 1, w, flops, bytes);
  if (!strncmp(n, "aten::conv", 10) || !strcmp(n, "aten::_convolution") || !strcmp(n, "aten::cudnn_convolution"))
    return conv_cost(t, op, 0, 1, w, flops, bytes);
  if (!strcmp(n, "aten::convolution_backward") && conv_cost(t, op, 1, 2, w, flops, bytes)) {
    *flops *= 2; /* the input's and the weight's gradients */
    *bytes *= 2;
    return 1;
  }
  return 0;
}

enum cal_kclass cal_kclass_of(const cal_kroofs *r, const char *name, double dur, const cal_ktrace *t,
    const cal_kevent *op, enum core_prec *prec) {
  char s[512];
  double F, B;
  *prec = kernel_prec(name, r->has_tf32);
  if (r->floor_s > 0 && dur <= 2 * r->floor_s)
    return CAL_KC_LAUNCH;
  if (op && r->mem_Bps > 0 && r->flops[*prec] > 0 && cal_op_cost(t, op, &F, &B))
    return F / r->flops[*prec] >= B / r->mem_Bps ? CAL_KC_COMPUTE : CAL_KC_MEMORY;
  lower(name, s, sizeof s);
  return any_of(s, compute_names) && !any_of(s, memory_names) ? CAL_KC_COMPUTE : CAL_KC_MEMORY;
}

/* Is p a profile of the traced GPU, as far as the datasheets tell? Its
 * device name is looked up at its own memory where it gives one (else at the
 * traced memory): boards of one name that differ in memory (an A100 of 40 GB
 * and one of 80) differ in memory bandwidth too, and the profile's would be
 * taken for the traced GPU's roof. */
static int check_profile_gpu(const core_profile *p, const char *path, const char *device_name, int64_t memory_bytes) {
  const char *traced = device_name && device_name[0] ? device_name : "unknown";
  if (!strcmp(p->device_kind, "cpu"))
    return core_err_set(CORE_EINVAL,
        "--profile-base %s is a profile of a CPU (device.kind = \"cpu\"): give a profile of the traced GPU ('%s')",
        path, traced);
  int64_t own = p->memory_GB > 0 ? (int64_t)(p->memory_GB * 1e9) : memory_bytes;
  const cal_gpu_sheet *a = cal_gpu_sheet_find(device_name, memory_bytes), *b = cal_gpu_sheet_find(p->device_name, own);
  if (a && b && a != b)
    return core_err_set(CORE_EINVAL,
        "--profile-base %s is a profile of %s ('%s', %.0f GB), but the trace ran on %s ('%s', %.1f GB): give a "
        "profile of the traced GPU (as scenarios/profiles/%s), or leave --profile-base out for its datasheet",
        path, b->model, p->device_name, own / 1e9, a->model, traced, memory_bytes / 1e9, a->profile);
  return 0;
}

int cal_kroofs_find(
    const char *device_name, int64_t memory_bytes, const char *profile, cal_kroofs *r, char *from, size_t n) {
  from[0] = '\0';
  if (profile) {
    core_profile *p = NULL;
    int rc = core_profile_load(profile, &p);
    if (rc)
      return rc;
    if ((rc = check_profile_gpu(p, profile, device_name, memory_bytes)) != 0) {
      core_profile_free(p);
      return rc;
    }
    for (int k = 0; k < CORE_N_PREC; k++)
      r->flops[k] = core_profile_peak_flops(p, (enum core_prec)k);
    r->mem_Bps = p->peak_memory_GBps * 1e9;
    snprintf(from, n, "the peaks of profile %s", profile);
    core_profile_free(p);
    return 0;
  }
  const cal_gpu_sheet *s = cal_gpu_sheet_find(device_name, memory_bytes);
  if (!s)
    return 0;
  for (int k = 0; k < CORE_N_PREC; k++)
    r->flops[k] = s->peak_tflops[k] * 1e12;
  r->mem_Bps = s->memory_GBps * 1e9;
  snprintf(from, n, "%s", s->source);
  return 0;
}

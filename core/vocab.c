#include "core/vocab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

const char *const core_prec_names[] = {"fp32", "tf32", "fp16", "bf16", NULL};

const char *core_prec_name(enum core_prec p) { return (unsigned)p < CORE_N_PREC ? core_prec_names[p] : "?"; }

int core_prec_parse(const char *s, enum core_prec *out) {
  for (int i = 0; i < CORE_N_PREC; i++)
    if (strcmp(s, core_prec_names[i]) == 0) {
      *out = (enum core_prec)i;
      return 0;
    }
  return CORE_EINVAL;
}

static const char *const compress_names[CORE_N_COMPRESS] = {"none", "fp16", "bf16", "powersgd"};

const char *core_compress_kind_name(enum core_compress k) {
  return (unsigned)k < CORE_N_COMPRESS ? compress_names[k] : "?";
}

int core_compression_parse(const char *s, core_compression *out) {
  static const char forms[] = "none, fp16, bf16, powersgd or powersgd:R (R a whole number from 1 to 1024)";
  if (!s || !*s)
    return core_err_set(CORE_EINVAL, "empty compression: use %s", forms);
  for (int k = CORE_COMPRESS_NONE; k < CORE_N_COMPRESS; k++)
    if (strcmp(s, compress_names[k]) == 0) {
      out->kind = (enum core_compress)k;
      out->rank = k == CORE_COMPRESS_POWERSGD ? 1 : 0;
      return 0;
    }
  if (strncmp(s, "powersgd:", 9) != 0)
    return core_err_set(CORE_EINVAL, "unknown compression '%s': use %s", s, forms);
  const char *r = s + 9;
  char *end = NULL;
  errno = 0;
  long v = (*r >= '0' && *r <= '9') ? strtol(r, &end, 10) : -1;
  if (v < 1 || errno || *end || v > CORE_POWERSGD_MAX_RANK)
    return core_err_set(CORE_EINVAL,
        "compression '%s': the PowerSGD rank must be a whole number from 1 to %d "
        "(PyTorch's matrix_approximation_rank; 1 to 4 is usual)",
        s, CORE_POWERSGD_MAX_RANK);
  out->kind = CORE_COMPRESS_POWERSGD;
  out->rank = (int)v;
  return 0;
}

const char *core_compression_name(const core_compression *c, char *buf, int n) {
  if (c->kind == CORE_COMPRESS_POWERSGD)
    snprintf(buf, (size_t)n, "powersgd:%d", c->rank);
  else
    snprintf(buf, (size_t)n, "%s", core_compress_kind_name(c->kind));
  return buf;
}

const char *const core_coll_names[] = {"allreduce", "allgather", "reducescatter", "broadcast", NULL};

const char *core_coll_name(enum core_coll c) { return (unsigned)c < CORE_N_COLLS ? core_coll_names[c] : "?"; }

int core_coll_parse(const char *s, enum core_coll *out) {
  for (int i = 0; i < CORE_N_COLLS; i++)
    if (strcmp(s, core_coll_names[i]) == 0) {
      *out = (enum core_coll)i;
      return 0;
    }
  return CORE_EINVAL;
}

double core_coll_busbw_factor(enum core_coll c, int p) {
  switch (c) {
  case CORE_COLL_ALLREDUCE: return 2.0 * (p - 1) / p;
  case CORE_COLL_BROADCAST: return 1.0;
  default: return (double)(p - 1) / p;
  }
}

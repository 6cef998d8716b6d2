#include "core/vocab.h"

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

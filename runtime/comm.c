#include "runtime/comm.h"

#include <string.h>

#include "core/err.h"

/* Short names are what options, profiles and CSV columns use; the parser
 * also takes PyTorch's spellings (float32, float16, bfloat16). */
static const char *const dtype_names[] = {"fp32", "fp16", "bf16"};
static const size_t dtype_sizes[] = {4, 2, 2};

static const char *const algo_names[RT_N_ALGOS] = {
    "default", "ring", "ring_chunked", "halving_doubling", "bcube", "tree"};

size_t rt_dtype_size(enum rt_dtype t) {
  return (unsigned)t < sizeof dtype_sizes / sizeof dtype_sizes[0] ? dtype_sizes[t] : 0;
}

const char *rt_dtype_name(enum rt_dtype t) {
  return (unsigned)t < sizeof dtype_names / sizeof dtype_names[0] ? dtype_names[t] : "unknown";
}

int rt_dtype_parse(const char *s, enum rt_dtype *out) {
  static const struct {
    const char *name;
    enum rt_dtype t;
  } aliases[] = {{"fp32", RT_FP32}, {"float32", RT_FP32}, {"float", RT_FP32}, {"fp16", RT_FP16}, {"float16", RT_FP16},
      {"half", RT_FP16}, {"bf16", RT_BF16}, {"bfloat16", RT_BF16}};
  for (size_t i = 0; s && i < sizeof aliases / sizeof aliases[0]; i++) {
    if (strcmp(s, aliases[i].name) == 0) {
      *out = aliases[i].t;
      return 0;
    }
  }
  return core_err_set(CORE_EINVAL, "unknown dtype '%s': use fp32, fp16 or bf16", s ? s : "(null)");
}

const char *rt_algo_name(enum rt_algo a) { return (unsigned)a < RT_N_ALGOS ? algo_names[a] : "unknown"; }

int rt_algo_parse(const char *s, enum rt_algo *out) {
  for (int i = 0; s && i < RT_N_ALGOS; i++) {
    if (strcmp(s, algo_names[i]) == 0) {
      *out = (enum rt_algo)i;
      return 0;
    }
  }
  return core_err_set(CORE_EINVAL,
      "unknown allreduce algorithm '%s': use default, ring, "
      "ring_chunked, halving_doubling, bcube or tree",
      s ? s : "(null)");
}

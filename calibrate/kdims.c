#include "kdims.h"

#include <stdlib.h>
#include <string.h>

static int push(cal_kdims *d, int64_t x) {
  if (d->n == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 16;
    int64_t *v = realloc(d->v, cap * sizeof *v);
    if (!v)
      return -1;
    d->v = v;
    d->cap = cap;
  }
  d->v[d->n++] = x;
  return 0;
}

int cal_kdims_start(cal_kdims *d) {
  d->n = d->cur = 0;
  return push(d, 0);
}

int cal_kdims_input(cal_kdims *d) {
  d->v[0]++;
  d->cur = d->n;
  return push(d, 0);
}

int cal_kdims_size(cal_kdims *d, int64_t size) {
  if (d->cur == 0 || d->v[d->cur] < 0)
    return 0;
  d->v[d->cur]++;
  return push(d, size);
}

void cal_kdims_not_shape(cal_kdims *d) {
  if (d->cur == 0)
    return;
  d->v[d->cur] = -1;
  d->n = d->cur + 1;
}

void cal_kdims_free(cal_kdims *d) {
  free(d->v);
  memset(d, 0, sizeof *d);
}

/* Value i of the sequence (its bytes need not be aligned); -1 past the end. */
static int64_t at(const void *enc, size_t len, size_t i) {
  int64_t x;
  if ((i + 1) * sizeof x > len)
    return -1;
  memcpy(&x, (const char *)enc + i * sizeof x, sizeof x);
  return x;
}

int cal_kdims_count(const void *enc, size_t len) { return enc && len >= sizeof(int64_t) ? (int)at(enc, len, 0) : -1; }

int cal_kdims_rank(const void *enc, size_t len, int input, int64_t *sizes, int max) {
  if (input < 0 || input >= cal_kdims_count(enc, len))
    return -1;
  size_t i = 1;
  for (int k = 0; k < input; k++) {
    int64_t r = at(enc, len, i);
    i += 1 + (size_t)(r > 0 ? r : 0);
  }
  int64_t rank = at(enc, len, i);
  for (int64_t k = 0; k < rank && k < max; k++)
    sizes[k] = at(enc, len, i + 1 + (size_t)k);
  return (int)rank;
}

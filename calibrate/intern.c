#include "intern.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ULL; /* FNV-1a, 64 bits */
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

void cal_intern_init(cal_intern *p, int nul) {
  memset(p, 0, sizeof *p);
  p->nul = nul;
}

void cal_intern_free(cal_intern *p) {
  free(p->data);
  free(p->off);
  free(p->slot);
  memset(p, 0, sizeof *p);
}

const char *cal_intern_get(const cal_intern *p, int32_t id, size_t *len) {
  if (id < 0 || id >= p->n) {
    *len = 0;
    return NULL;
  }
  *len = p->off[id + 1] - p->off[id] - (size_t)p->nul;
  return p->data + p->off[id];
}

/* The slot of b (its id + 1 there) or of the empty one where it would go. */
static size_t slot_of(const cal_intern *p, const void *b, size_t len, uint64_t h) {
  size_t i = (size_t)h & (p->n_slot - 1);
  for (; p->slot[i]; i = (i + 1) & (p->n_slot - 1)) {
    size_t l;
    const char *s = cal_intern_get(p, p->slot[i] - 1, &l);
    if (l == len && !memcmp(s, b, len))
      break;
  }
  return i;
}

int32_t cal_intern_find(const cal_intern *p, const void *b, size_t len) {
  if (!p->n_slot)
    return -1;
  return p->slot[slot_of(p, b, len, hash_bytes(b, len))] - 1;
}

static int rehash(cal_intern *p, size_t n_slot) {
  int32_t *old = p->slot;
  size_t n_old = p->n_slot;
  if (!(p->slot = calloc(n_slot, sizeof *p->slot))) {
    p->slot = old;
    return -1;
  }
  p->n_slot = n_slot;
  for (size_t i = 0; i < n_old; i++)
    if (old[i]) {
      size_t l;
      const char *s = cal_intern_get(p, old[i] - 1, &l);
      p->slot[slot_of(p, s, l, hash_bytes(s, l))] = old[i];
    }
  free(old);
  return 0;
}

int cal_intern_grow(void **v, size_t *cap, size_t need, size_t size) {
  if (need <= *cap)
    return 0;
  size_t c = *cap ? *cap : 64;
  while (c < need)
    c *= 2;
  void *q = realloc(*v, c * size);
  if (!q)
    return -1;
  *v = q;
  *cap = c;
  return 0;
}

int32_t cal_intern_add(cal_intern *p, const void *b, size_t len) {
  if (2 * ((size_t)p->n + 1) > p->n_slot && rehash(p, p->n_slot ? 2 * p->n_slot : 1024))
    return -1;
  size_t i = slot_of(p, b, len, hash_bytes(b, len));
  if (p->slot[i])
    return p->slot[i] - 1;
  if (p->n >= INT32_MAX - 1 || cal_intern_grow((void **)&p->off, &p->n_cap, (size_t)p->n + 2, sizeof *p->off) ||
      cal_intern_grow((void **)&p->data, &p->cap, p->len + len + 1, 1))
    return -1;
  p->off[p->n] = p->len;
  if (len)
    memcpy(p->data + p->len, b, len);
  p->len += len;
  if (p->nul)
    p->data[p->len++] = '\0';
  p->off[p->n + 1] = p->len;
  p->slot[i] = p->n + 1;
  return p->n++;
}

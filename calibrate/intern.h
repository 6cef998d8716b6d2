/*
 * intern — distinct byte strings stored once, each named by a dense id from
 * 0: the trace reader's event names, threads and shapes, repeated millions of
 * times in a long trace, cost their bytes once (calibrate/kineto.h).
 */
#ifndef CALIBRATE_INTERN_H
#define CALIBRATE_INTERN_H

#include <stddef.h>
#include <stdint.h>

typedef struct cal_intern {
  char *data; /* entry i: data[off[i] .. off[i + 1] - nul) */
  size_t len, cap;
  size_t *off;
  size_t n_cap;
  int32_t n;
  int32_t *slot; /* open addressing: entry id + 1, 0 empty */
  size_t n_slot;
  int nul; /* a '\0' after each entry, so that entries are C strings */
} cal_intern;

/* An empty table; nul: entries are C strings (a '\0' kept after each). */
void cal_intern_init(cal_intern *p, int nul);
void cal_intern_free(cal_intern *p);
/* The id of b[0..len), added when new; -1 when out of memory. */
int32_t cal_intern_add(cal_intern *p, const void *b, size_t len);
/* The id of b[0..len), or -1 when it was never added. */
int32_t cal_intern_find(const cal_intern *p, const void *b, size_t len);
/* Entry id and its length (without the '\0'); NULL and length 0 for an id
 * out of range.
 * Valid until the next cal_intern_add or cal_intern_free. */
const char *cal_intern_get(const cal_intern *p, int32_t id, size_t *len);

/* *v with room for need elements of size bytes, its capacity *cap (in
 * elements) doubled from 64 as needed: 0, or -1 out of memory (*v kept).
 * The table's arrays grow so, and the trace reader's (kineto.c) too. */
int cal_intern_grow(void **v, size_t *cap, size_t need, size_t size);

#endif

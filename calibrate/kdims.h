/*
 * kdims — the shapes of a profiled op's inputs ("Input Dims" in a Kineto
 * trace, e.g. [[32, 512], [1024, 512], [1024], []]) as one flat sequence of
 * int64 values: the number of inputs, then per input its rank and its sizes.
 * A rank of -1 marks an input that is not one tensor's shape (a list of
 * tensors, a nested or non-numeric value). The trace reader
 * (calibrate/kineto.h) builds one value at a time as the JSON streams by and
 * stores the bytes interned (calibrate/intern.h): ops of one shape share them.
 */
#ifndef CALIBRATE_KDIMS_H
#define CALIBRATE_KDIMS_H

#include <stddef.h>
#include <stdint.h>

typedef struct cal_kdims {
  int64_t *v; /* the sequence; n values */
  size_t n, cap;
  size_t cur; /* index of the current input's rank */
} cal_kdims;

/* Start an empty list of inputs (0, or -1 out of memory). */
int cal_kdims_start(cal_kdims *d);
/* The next input starts (0, or -1 out of memory). */
int cal_kdims_input(cal_kdims *d);
/* A size of the current input; ignored once that input is not a shape. */
int cal_kdims_size(cal_kdims *d, int64_t size);
/* The current input is not one tensor's shape. */
void cal_kdims_not_shape(cal_kdims *d);
void cal_kdims_free(cal_kdims *d);

/* In an encoded sequence of len bytes: the number of inputs (-1 when
 * empty), and input i's rank with its first min(rank, max) sizes (-1 when
 * out of range or not a shape). */
int cal_kdims_count(const void *enc, size_t len);
int cal_kdims_rank(const void *enc, size_t len, int input, int64_t *sizes, int max);

#endif

/*
 * kineto — a streaming, memory-compact reader of PyTorch profiler (Kineto)
 * traces, the one the trace importers are built on.
 *
 * Input: the Chrome trace-event JSON that torch.profiler writes
 * (export_chrome_trace, tensorboard_trace_handler), plain or gzip (told by
 * the gzip magic bytes, not by the name; a file named .gz that is not gzip is
 * an error): an object whose "traceEvents" array holds the events, with
 * "deviceProperties", "distributedInfo" and "baseTimeNanoseconds" anywhere at
 * its top level, or a bare array of events.
 *
 * The file is parsed as a stream (YAJL, fed through zlib in chunks), never
 * held whole: memory is a small multiple of the events kept (about 100 bytes
 * each plus their distinct strings and shapes), not of the file. Kept are the
 * complete events ("ph": "X") of the categories the importers read (below),
 * in file order, with the args they use; a complete event without "cat" is
 * a CPU op (the legacy autograd profiler's export). Everything else (metadata,
 * flows, instant events, other categories) is skipped.
 *
 * Errors (CORE_EINVAL) name the file and say where: file:line:column for text
 * that is not JSON or ends early, traceEvents[i] for a bad event.
 */
#ifndef CALIBRATE_KINETO_H
#define CALIBRATE_KINETO_H

#include <stdint.h>

/* Categories kept ("cat" as Kineto writes it; libkineto/src/ActivityType.cpp
 * names them). */
enum cal_kcat {
  CAL_K_CPU_OP,          /* cpu_op (also "Operator", and no cat at all) */
  CAL_K_USER_ANNOTATION, /* user_annotation: record_function, ProfilerStep#N */
  CAL_K_GPU_ANNOTATION,  /* gpu_user_annotation */
  CAL_K_RUNTIME,         /* cuda_runtime, cuda_driver */
  CAL_K_KERNEL,          /* kernel */
  CAL_K_MEMCPY,          /* gpu_memcpy */
  CAL_K_MEMSET,          /* gpu_memset */
  CAL_K_PYTHON,          /* python_function */
  CAL_K_N
};

typedef struct cal_kevent {
  int64_t ts_ns, dur_ns;         /* the file's µs (fractional) as integer ns */
  int64_t index;                 /* position in traceEvents, for messages */
  int64_t ext_id, corr, seq;     /* args "External id", "correlation", "Sequence number"; -1 when absent */
  int64_t bytes;                 /* args "bytes" (gpu_memcpy, gpu_memset); -1 */
  int64_t in_nelems, out_nelems; /* args "In msg nelems", "Out msg nelems" (record_param_comms, c10d::*); -1 */
  int32_t name;                  /* interned string id (cal_ktrace_str) */
  int32_t thread;                /* interned "pid/tid" as written: host thread, or GPU device/stream */
  int32_t device, stream;        /* args "device", "stream" (GPU events); -1 */
  int32_t dtype;                 /* args "dtype" interned, or -1 */
  int32_t coll;                  /* args "Collective name" interned, or -1 */
  int32_t dims;                  /* args "Input Dims" interned (equal shapes share it; cal_ktrace_dims), or -1 */
  uint8_t cat;                   /* enum cal_kcat */
} cal_kevent;

typedef struct cal_ktrace {
  char path[4096];
  cal_kevent *ev; /* in file order */
  int64_t n;

  /* The device the traced rank ran on, from deviceProperties: the listed
   * device whose id the most kernels' args.device name (distributedInfo's
   * rank modulo the devices need not be it); the first listed when none
   * does. -1 / "" without deviceProperties. */
  int device_id;
  char device_name[128];
  int n_devices;          /* entries of deviceProperties (devices of the host) */
  int sm_count;           /* numSms */
  int cc_major, cc_minor; /* computeMajor, computeMinor */
  int64_t device_mem;     /* totalGlobalMem, bytes */

  /* distributedInfo; -1 / "" when absent. */
  char backend[16];
  int rank, world_size;
  char nccl_version[32];

  int64_t base_time_ns; /* baseTimeNanoseconds, 0 when absent */

  /* Interned strings and the shapes of "Input Dims", read through the
   * functions below. */
  struct cal_kstore *store;
} cal_ktrace;

/* Reads that run longer than after_s report how far they are on stderr
 * (core/progress.h), lines starting "who: "; who NULL (the default): no
 * report. For a command to set before it reads. */
void cal_ktrace_progress(const char *who, double after_s);

/* Read path into t (zeroed first). 0, or a negative core_err code with the
 * message set; t holds nothing to free on error. */
int cal_ktrace_read(const char *path, cal_ktrace *t);
void cal_ktrace_free(cal_ktrace *t);

/* The string with that id ("" for an id out of range). Valid until
 * cal_ktrace_free. */
const char *cal_ktrace_str(const cal_ktrace *t, int32_t id);
/* The id of s, or -1 when no kept event uses that string. */
int32_t cal_ktrace_find_str(const cal_ktrace *t, const char *s);

/* Input number `input` of e's "Input Dims": its rank (0 for a scalar or a
 * non-tensor argument, written [] by the profiler), the first min(rank, max)
 * sizes into sizes[]. -1 when e has no Input Dims, has fewer inputs, or that
 * input is not one tensor's shape (a list of tensors, a nested value). */
int cal_ktrace_dims(const cal_ktrace *t, const cal_kevent *e, int input, int64_t *sizes, int max);
/* The elements of input `input` of e's Input Dims (a tensor of rank 1 to 8):
 * the product of its sizes, or -1 when cal_ktrace_dims gives no such shape,
 * a size is negative or the product overflows. */
int64_t cal_ktrace_numel(const cal_ktrace *t, const cal_kevent *e, int input);
/* The number of inputs in e's Input Dims, -1 without any. */
int cal_ktrace_n_inputs(const cal_ktrace *t, const cal_kevent *e);

/* The category's name as a trace writes it ("cpu_op", "kernel", ...). */
const char *cal_kcat_name(int cat);

#endif

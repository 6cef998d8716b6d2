/*
 * trace — Chrome / Perfetto trace-event JSON ("JSON Array Format" with a
 * traceEvents object, as chrome://tracing and ui.perfetto.dev load it).
 * Simulated and real steps are written the same way: one process per rank,
 * one thread for compute and one for communication, complete ("X") events in
 * microseconds, so a simulated step and a measured one can be opened side by
 * side like a PyTorch profiler trace. Written atomically through afile.
 */
#ifndef CORE_TRACE_H
#define CORE_TRACE_H

#include "afile.h"

enum { CORE_TRACE_TID_COMPUTE = 0, CORE_TRACE_TID_COMM = 1 };

typedef struct core_trace {
  core_afile a;
  long n_events;
} core_trace;

int core_trace_open(core_trace *t, const char *path);
/* Name a process (rank) and its compute/comm threads. */
void core_trace_process(core_trace *t, int pid, const char *name);
/* A complete event; args_json is NULL or the inside of an object ("\"bytes\": 5"). */
void core_trace_span(core_trace *t, const char *name, const char *cat, int pid, int tid, double ts_us, double dur_us,
    const char *args_json);
int core_trace_commit(core_trace *t);
void core_trace_abort(core_trace *t);

#endif

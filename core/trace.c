#include "trace.h"

#include <string.h>

int core_trace_open(core_trace *t, const char *path) {
  memset(t, 0, sizeof *t);
  int rc = core_afile_open(&t->a, path);
  if (rc)
    return rc;
  fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", t->a.f);
  return 0;
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', f);
    if ((unsigned char)*s < 0x20)
      fprintf(f, "\\u%04x", (unsigned char)*s);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

static void comma(core_trace *t) {
  if (t->n_events++ > 0)
    fputs(",\n", t->a.f);
}

void core_trace_process(core_trace *t, int pid, const char *name) {
  comma(t);
  fprintf(t->a.f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":", pid);
  json_str(t->a.f, name);
  fputs("}},\n", t->a.f);
  fprintf(
      t->a.f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}},\n", pid, pid);
  fprintf(t->a.f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"compute\"}},\n",
      pid, CORE_TRACE_TID_COMPUTE);
  fprintf(t->a.f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"communication\"}}",
      pid, CORE_TRACE_TID_COMM);
}

void core_trace_span(core_trace *t, const char *name, const char *cat, int pid, int tid, double ts_us, double dur_us,
    const char *args_json) {
  comma(t);
  fputs("{\"ph\":\"X\",\"name\":", t->a.f);
  json_str(t->a.f, name);
  fputs(",\"cat\":", t->a.f);
  json_str(t->a.f, cat);
  fprintf(t->a.f, ",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", pid, tid, ts_us, dur_us);
  if (args_json)
    fprintf(t->a.f, ",\"args\":{%s}", args_json);
  fputc('}', t->a.f);
}

int core_trace_commit(core_trace *t) {
  fputs("\n]}\n", t->a.f);
  return core_afile_commit(&t->a);
}

void core_trace_abort(core_trace *t) { core_afile_abort(&t->a); }

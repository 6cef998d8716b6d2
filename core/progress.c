#include "progress.h"

#include "core/clock.h"

#include <math.h>
#include <stdarg.h>
#include <unistd.h>

void core_progress_start(core_progress *p, int on, double after_s) {
  p->on = on;
  p->tty = isatty(2);
  p->printed = 0;
  p->t0 = core_now();
  p->after_s = after_s;
  p->last = -INFINITY;
  p->out = stderr;
}

int core_progress_due(const core_progress *p, double now) {
  return p->on && now - p->t0 >= p->after_s && now - p->last >= (p->tty ? 1.0 : CORE_PROGRESS_LINES_S);
}

void core_progress_line(core_progress *p, double now, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(p->out, p->tty ? "\r%s\033[K" : "%s\n", line);
  fflush(p->out);
  p->printed = 1;
  p->last = now;
}

void core_progress_end(core_progress *p) {
  if (p->printed && p->tty) {
    fputc('\n', p->out);
    fflush(p->out);
  }
  p->printed = 0;
}

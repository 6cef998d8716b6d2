#include "progress.h"

#include "core/clock.h"

#include <math.h>
#include <stdarg.h>
#include <time.h>
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

static void *ticker_main(void *arg) {
  core_progress_ticker *t = arg;
  pthread_mutex_lock(&t->lock);
  while (!t->stop) {
    t->tick(t->arg, core_now());
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)t->poll_s;
    until.tv_nsec += (long)((t->poll_s - (double)(time_t)t->poll_s) * 1e9);
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&t->wake, &t->lock, &until);
  }
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

void core_progress_ticker_start(
    core_progress_ticker *t, void (*tick)(void *arg, double now), void *arg, double poll_s) {
  pthread_condattr_t ca;
  t->tick = tick;
  t->arg = arg;
  t->poll_s = poll_s;
  t->stop = 0;
  t->on = 0;
  if (pthread_condattr_init(&ca) != 0)
    return;
  int made = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&t->wake, &ca) == 0;
  pthread_condattr_destroy(&ca);
  if (!made)
    return;
  if (pthread_mutex_init(&t->lock, NULL) != 0)
    goto undo_cond;
  if (pthread_create(&t->th, NULL, ticker_main, t) != 0)
    goto undo_lock;
  t->on = 1;
  return;
undo_lock:
  pthread_mutex_destroy(&t->lock);
undo_cond:
  pthread_cond_destroy(&t->wake);
}

void core_progress_ticker_stop(core_progress_ticker *t) {
  if (!t->on)
    return;
  pthread_mutex_lock(&t->lock);
  t->stop = 1;
  pthread_cond_signal(&t->wake);
  pthread_mutex_unlock(&t->lock);
  pthread_join(t->th, NULL);
  pthread_mutex_destroy(&t->lock);
  pthread_cond_destroy(&t->wake);
  t->on = 0;
}

/*
 * progress — how a command reports long work on stderr, the same for every
 * command: nothing until the work has run a while (after_s), then on a
 * terminal one line rewritten at most every second, else a line at most
 * every CORE_PROGRESS_LINES_S. The caller asks whether a line is due and
 * says what it is; short work prints nothing, and the outputs are the same
 * with a report or without.
 */
#ifndef CORE_PROGRESS_H
#define CORE_PROGRESS_H

#include <pthread.h>
#include <stdio.h>

/* When commands start to report long work, in seconds. */
#define CORE_PROGRESS_AFTER_S 3.0
/* Between lines when stderr is not a terminal (a log file). */
#define CORE_PROGRESS_LINES_S 10.0

typedef struct core_progress {
  int on;         /* 0: never due */
  int tty;        /* lines rewritten in place */
  int printed;    /* a line is out */
  double t0;      /* core_now() at the start */
  double after_s; /* first line no sooner than this after t0 */
  double last;    /* core_now() of the last line */
  FILE *out;      /* stderr */
} core_progress;

/* Start the clock: on 0 for a report that is never due. */
void core_progress_start(core_progress *p, int on, double after_s);
/* Is a line due at now (core_now())? */
int core_progress_due(const core_progress *p, double now);
/* The line due at now: rewritten in place on a terminal, a line of its own
 * otherwise. */
void core_progress_line(core_progress *p, double now, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The work is over: a terminal's rewritten line ends. */
void core_progress_end(core_progress *p);

/* A thread that calls tick(arg, now) at once and then about every poll_s
 * seconds until stopped; stopping wakes it at once, so the end of the work
 * never waits for the rest of a poll. CORE_PROGRESS_POLL_S is the poll of
 * the commands' progress reports. */
#define CORE_PROGRESS_POLL_S 0.2

typedef struct core_progress_ticker {
  void (*tick)(void *arg, double now);
  void *arg;
  double poll_s;
  pthread_t th;
  pthread_mutex_t lock;
  pthread_cond_t wake; /* on CLOCK_MONOTONIC */
  int stop;            /* under lock */
  int on;              /* the thread runs */
} core_progress_ticker;

/* Start the thread; without one (it could not start) the work runs all the
 * same and nothing is reported: t->on says which. */
void core_progress_ticker_start(core_progress_ticker *t, void (*tick)(void *arg, double now), void *arg, double poll_s);
/* Stop and join the thread, if it runs. */
void core_progress_ticker_stop(core_progress_ticker *t);

#endif

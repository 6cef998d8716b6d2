/* The report of long work on stderr (core/progress.h): nothing before its
 * delay, then lines no closer than a second on a terminal (rewritten in
 * place, ended by core_progress_end) and CORE_PROGRESS_LINES_S in a log;
 * never when off. Times are given, not waited for. */
#include "core/progress.h"

#include "core/clock.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>

/* What a test's progress wrote: a memory stream and its text. */
typedef struct capture {
  char *text;
  size_t len;
  FILE *out;
} capture;

static void capture_open(capture *c) {
  c->text = NULL;
  c->len = 0;
  c->out = open_memstream(&c->text, &c->len);
  CU_ASSERT_FATAL(c->out != NULL);
}

/* Closes the stream and checks what it holds against want. */
static void capture_check(capture *c, const char *want) {
  fclose(c->out);
  CU_ASSERT_STRING_EQUAL(c->text, want);
  free(c->text);
}

/* p started at time 0, writing into a memory stream. */
static void started(core_progress *p, int on, int tty, double after_s, FILE *out) {
  core_progress_start(p, on, after_s);
  p->t0 = 0.0;
  p->tty = tty;
  p->out = out;
}

static void test_log(void) {
  capture c;
  core_progress p;
  capture_open(&c);
  started(&p, 1, 0, 3.0, c.out);
  CU_ASSERT(!core_progress_due(&p, 2.9));
  CU_ASSERT(core_progress_due(&p, 3.0));
  core_progress_line(&p, 3.0, "work: %d of %d", 1, 4);
  CU_ASSERT(!core_progress_due(&p, 3.0 + CORE_PROGRESS_LINES_S - 0.1));
  CU_ASSERT(core_progress_due(&p, 3.0 + CORE_PROGRESS_LINES_S));
  core_progress_line(&p, 13.0, "work: %d of %d", 2, 4);
  core_progress_end(&p);
  capture_check(&c, "work: 1 of 4\nwork: 2 of 4\n");
}

static void test_terminal(void) {
  capture c;
  core_progress p;
  capture_open(&c);
  started(&p, 1, 1, 0.0, c.out);
  CU_ASSERT(core_progress_due(&p, 0.0));
  core_progress_line(&p, 0.0, "a");
  CU_ASSERT(!core_progress_due(&p, 0.9));
  CU_ASSERT(core_progress_due(&p, 1.0));
  core_progress_line(&p, 1.0, "b");
  core_progress_end(&p);
  capture_check(&c, "\ra\033[K\rb\033[K\n");
}

static void test_off_and_short(void) {
  capture c;
  core_progress p;
  capture_open(&c);
  started(&p, 0, 1, 0.0, c.out);
  CU_ASSERT(!core_progress_due(&p, 1e6));
  started(&p, 1, 1, 3.0, c.out);
  CU_ASSERT(!core_progress_due(&p, 2.0));
  core_progress_end(&p); /* nothing printed: nothing to end */
  capture_check(&c, "");
}

static void count_tick(void *arg, double now) {
  (void)now;
  atomic_fetch_add((atomic_int *)arg, 1);
}

/* The ticker calls its tick at once and again each poll; stopping it right
 * after a tick of a 2 s poll does not wait for the rest of that poll (under
 * 1 s: room for a loaded machine, none for the poll's remaining 2 s). */
static void test_ticker(void) {
  core_progress_ticker t;
  atomic_int ticks = 0;
  struct timespec ms = {0, 1000 * 1000};
  core_progress_ticker_start(&t, count_tick, &ticks, 0.01);
  CU_ASSERT_FATAL(t.on);
  while (atomic_load(&ticks) < 3)
    nanosleep(&ms, NULL);
  core_progress_ticker_stop(&t);
  CU_ASSERT(!t.on);
  atomic_store(&ticks, 0);
  core_progress_ticker_start(&t, count_tick, &ticks, 2.0);
  CU_ASSERT_FATAL(t.on);
  while (atomic_load(&ticks) < 1)
    nanosleep(&ms, NULL);
  double t0 = core_now();
  core_progress_ticker_stop(&t);
  CU_ASSERT(core_now() - t0 < 1.0);
  CU_ASSERT(!t.on);
  core_progress_ticker_stop(&t); /* stopped: nothing to do */
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("progress", NULL, NULL);
  CU_add_test(s, "a log: after the delay, then a line every CORE_PROGRESS_LINES_S", test_log);
  CU_add_test(s, "a terminal: one line rewritten every second, ended", test_terminal);
  CU_add_test(s, "off, or shorter than the delay: nothing", test_off_and_short);
  CU_add_test(s, "the ticker: ticks every poll, stops at once", test_ticker);
}

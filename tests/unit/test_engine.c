/* Event engine (sim/engine.h): a differential test against a reference queue
 * kept as a sorted array here, plus the counter invariant, run-until, pushes
 * in the past, cancels of events that are no longer pending, and handlers
 * that schedule new events.
 *
 * The reference: every pushed event gets a record (time, order of push,
 * state); the next event is the pending record with the smallest (time, push
 * order), which is what "ordered by (time, sequence number)" promises. */
#include "sim/engine.h"

#include "core/err.h"

#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* --- a small deterministic generator (splitmix64), independent of GSL ---- */

static uint64_t rng_state;
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static uint64_t rnd_below(uint64_t n) { return rnd() % n; }

/* --- reference queue ------------------------------------------------------ */

enum ref_state { REF_PENDING, REF_RUN, REF_CANCELLED };

typedef struct ref_ev {
  sim_time t;
  uint64_t order; /* push order: the tie-break */
  uint64_t arg;
  sim_event_id id;
  enum ref_state st;
} ref_ev;

typedef struct ref_q {
  ref_ev *all; /* every event ever pushed, by push order */
  size_t n_all, cap_all;
  size_t *pend; /* indices into all, sorted by (t, order) */
  size_t n_pend, cap_pend;
} ref_q;

static void ref_init(ref_q *q) { memset(q, 0, sizeof *q); }
static void ref_free(ref_q *q) {
  free(q->all);
  free(q->pend);
}

static int ref_before(const ref_q *q, size_t a, size_t b) {
  const ref_ev *x = &q->all[a], *y = &q->all[b];
  return x->t < y->t || (x->t == y->t && x->order < y->order);
}

static void ref_push(ref_q *q, sim_time t, uint64_t arg, sim_event_id id) {
  if (q->n_all == q->cap_all) {
    q->cap_all = q->cap_all ? 2 * q->cap_all : 1024;
    q->all = realloc(q->all, sizeof *q->all * q->cap_all);
  }
  if (q->n_pend == q->cap_pend) {
    q->cap_pend = q->cap_pend ? 2 * q->cap_pend : 1024;
    q->pend = realloc(q->pend, sizeof *q->pend * q->cap_pend);
  }
  size_t k = q->n_all++;
  q->all[k] = (ref_ev){t, k, arg, id, REF_PENDING};
  /* Insertion into the sorted array (binary search for the position). */
  size_t lo = 0, hi = q->n_pend;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (ref_before(q, q->pend[mid], k))
      lo = mid + 1;
    else
      hi = mid;
  }
  memmove(q->pend + lo + 1, q->pend + lo, sizeof *q->pend * (q->n_pend - lo));
  q->pend[lo] = k;
  q->n_pend++;
}

static void ref_remove_pending(ref_q *q, size_t k) {
  for (size_t i = 0; i < q->n_pend; i++)
    if (q->pend[i] == k) {
      memmove(q->pend + i, q->pend + i + 1, sizeof *q->pend * (q->n_pend - i - 1));
      q->n_pend--;
      return;
    }
}

/* --- handlers ------------------------------------------------------------- */

static void h_nop(sim_engine *e, void *ctx, uint64_t arg) {
  (void)e;
  (void)ctx;
  (void)arg;
}

/* --- the differential test -------------------------------------------------- */

static int counters_ok(const sim_engine *e, uint64_t sched, uint64_t exec, uint64_t canc, uint64_t pend) {
  sim_counters c = sim_engine_counters(e);
  return sim_engine_check(e) == 0 && c.scheduled == c.executed + c.cancelled + c.pending && c.scheduled == sched &&
         c.executed == exec && c.cancelled == canc && c.pending == pend;
}

/* time_spread 0: each push picks its own spread, from 1 ns to 2^63 ns,
 * so keys differ from the last one taken out in every digit. */
static void differential(uint64_t seed, int n_ops, uint64_t time_spread) {
  sim_engine *e;
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  ref_q q;
  ref_init(&q);
  rng_state = seed;
  uint64_t sched = 0, exec = 0, canc = 0;
  sim_time now = 0;
  int mismatches = 0, counter_errors = 0, cancel_errors = 0, past_errors = 0;
  long n_pops = 0, n_cancel_ok = 0, n_cancel_refused = 0, n_ties = 0;
  sim_time last_t = 0;

  for (int op = 0; op < n_ops; op++) {
    uint64_t r = rnd_below(100);
    if (r < 45) {
      /* Push; times within a narrow window so many are equal. */
      uint64_t spread = time_spread ? time_spread : (UINT64_C(1) << rnd_below(63)) + 1;
      sim_time t = now + rnd_below(spread);
      uint64_t arg = rnd();
      sim_event_id id;
      if (sim_engine_push(e, t, h_nop, &q, arg, &id) != 0) {
        mismatches++;
        continue;
      }
      ref_push(&q, t, arg, id);
      sched++;
    } else if (r < 80) {
      /* Pop: must be the reference's earliest pending event. */
      sim_time t;
      sim_handler h;
      void *ctx;
      uint64_t arg;
      int got = sim_engine_pop(e, &t, &h, &ctx, &arg);
      if (q.n_pend == 0) {
        if (got != 0)
          mismatches++;
      } else {
        size_t k = q.pend[0];
        ref_ev *x = &q.all[k];
        if (got != 1 || t != x->t || arg != x->arg || h != h_nop || ctx != &q)
          mismatches++;
        if (n_pops && t == last_t)
          n_ties++;
        last_t = t;
        x->st = REF_RUN;
        memmove(q.pend, q.pend + 1, sizeof *q.pend * (q.n_pend - 1));
        q.n_pend--;
        exec++;
        n_pops++;
        now = x->t;
        if (sim_engine_now(e) != now)
          mismatches++;
      }
    } else if (r < 97) {
      /* Cancel any event ever pushed: pending ones must succeed, ones that
       * already ran or were cancelled must fail with CORE_EINVAL. */
      if (q.n_all == 0)
        continue;
      size_t k = (size_t)rnd_below(q.n_all);
      /* Bias towards recent events so pending ones are hit often. */
      if (rnd_below(2) && q.n_all > 64)
        k = q.n_all - 1 - (size_t)rnd_below(64);
      ref_ev *x = &q.all[k];
      int rc = sim_engine_cancel(e, x->id);
      if (x->st == REF_PENDING) {
        if (rc != 0)
          cancel_errors++;
        x->st = REF_CANCELLED;
        ref_remove_pending(&q, k);
        canc++;
        n_cancel_ok++;
      } else {
        if (rc != CORE_EINVAL)
          cancel_errors++;
        n_cancel_refused++;
      }
    } else {
      /* Push in the past: refused, nothing changes. */
      if (now == 0)
        continue;
      sim_time t = now - 1 - rnd_below(now < 5 ? now : 5);
      sim_event_id id = 12345;
      if (sim_engine_push(e, t, h_nop, NULL, 0, &id) == 0)
        past_errors++;
    }
    if (!counters_ok(e, sched, exec, canc, q.n_pend))
      counter_errors++;
  }
  /* Drain: the rest must come out in reference order too. */
  while (q.n_pend) {
    sim_time t;
    uint64_t arg;
    size_t k = q.pend[0];
    if (sim_engine_pop(e, &t, NULL, NULL, &arg) != 1 || t != q.all[k].t || arg != q.all[k].arg)
      mismatches++;
    q.all[k].st = REF_RUN;
    memmove(q.pend, q.pend + 1, sizeof *q.pend * (q.n_pend - 1));
    q.n_pend--;
    exec++;
    if (!counters_ok(e, sched, exec, canc, 0 + q.n_pend))
      counter_errors++;
  }
  sim_time t;
  CU_ASSERT(sim_engine_pop(e, &t, NULL, NULL, NULL) == 0);
  CU_ASSERT_EQUAL(mismatches, 0);
  CU_ASSERT_EQUAL(counter_errors, 0);
  CU_ASSERT_EQUAL(cancel_errors, 0);
  CU_ASSERT_EQUAL(past_errors, 0);
  /* The trace must really have exercised what it is meant to. */
  CU_ASSERT(n_pops > n_ops / 5);
  if (time_spread && time_spread <= 4)
    CU_ASSERT(n_ties > n_pops / 10);
  CU_ASSERT(n_cancel_ok > 100);
  CU_ASSERT(n_cancel_refused > 100);
  sim_counters c = sim_engine_counters(e);
  CU_ASSERT_EQUAL(c.pending, 0);
  CU_ASSERT_EQUAL(c.scheduled, sched);
  ref_free(&q);
  sim_engine_free(e);
}

static void test_differential_seeds(void) {
  static const uint64_t seeds[] = {1, 2, 42, 0xdeadbeef, 987654321};
  for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++)
    differential(seeds[i], 40000, 4);        /* very many ties */
  differential(7, 40000, 1);                 /* every push at "now": pure FIFO by sequence */
  differential(8, 30000, 1000);              /* mostly distinct times */
  differential(9, 30000, UINT64_C(1) << 40); /* keys far apart: every level of the wheel */
  differential(10, 30000, 0);                /* spreads of every size mixed */
}

/* The heap grows past its initial capacity and slots are reused many times. */
static void test_large_queue(void) {
  sim_engine *e;
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  ref_q q;
  ref_init(&q);
  rng_state = 99;
  enum { N = 50000 };
  for (int i = 0; i < N; i++) {
    sim_time t = rnd_below(100);
    sim_event_id id;
    CU_ASSERT_FATAL(sim_engine_push(e, t, h_nop, NULL, (uint64_t)i, &id) == 0);
    ref_push(&q, t, (uint64_t)i, id);
  }
  /* Cancel every third event. */
  for (size_t k = 0; k < q.n_all; k += 3) {
    CU_ASSERT(sim_engine_cancel(e, q.all[k].id) == 0);
    ref_remove_pending(&q, k);
  }
  CU_ASSERT(sim_engine_check(e) == 0);
  int bad = 0;
  for (size_t i = 0; i < q.n_pend; i++) {
    sim_time t;
    uint64_t arg;
    const ref_ev *x = &q.all[q.pend[i]];
    if (sim_engine_pop(e, &t, NULL, NULL, &arg) != 1 || t != x->t || arg != x->arg)
      bad++;
  }
  CU_ASSERT_EQUAL(bad, 0);
  sim_counters c = sim_engine_counters(e);
  CU_ASSERT_EQUAL(c.scheduled, (uint64_t)N);
  CU_ASSERT_EQUAL(c.cancelled, (uint64_t)(N + 2) / 3);
  CU_ASSERT_EQUAL(c.executed, (uint64_t)N - (N + 2) / 3);
  CU_ASSERT_EQUAL(c.pending, 0);
  CU_ASSERT(sim_engine_check(e) == 0);
  ref_free(&q);
  sim_engine_free(e);
}

/* --- cancel edge cases ------------------------------------------------------ */

static void test_cancel_twice_and_after_run(void) {
  sim_engine *e;
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  sim_event_id a, b, c;
  CU_ASSERT(sim_engine_push(e, 10, h_nop, NULL, 1, &a) == 0);
  CU_ASSERT(sim_engine_push(e, 20, h_nop, NULL, 2, &b) == 0);
  CU_ASSERT(sim_engine_cancel(e, a) == 0);
  CU_ASSERT(sim_engine_cancel(e, a) == CORE_EINVAL); /* already cancelled */
  sim_time t;
  uint64_t arg;
  CU_ASSERT(sim_engine_pop(e, &t, NULL, NULL, &arg) == 1);
  CU_ASSERT(t == 20 && arg == 2);
  CU_ASSERT(sim_engine_cancel(e, b) == CORE_EINVAL); /* already ran */
  CU_ASSERT(sim_engine_cancel(e, a) == CORE_EINVAL); /* cancelled, and its key gone */
  /* The freed slots are reused: the new event's id differs from the old
   * ones, and the old ids still refer to nothing. */
  CU_ASSERT(sim_engine_push(e, 30, h_nop, NULL, 3, &c) == 0);
  CU_ASSERT(c != a && c != b);
  CU_ASSERT(sim_engine_cancel(e, a) == CORE_EINVAL);
  CU_ASSERT(sim_engine_cancel(e, b) == CORE_EINVAL);
  CU_ASSERT(sim_engine_cancel(e, c) == 0);
  /* Ids that were never handed out. */
  CU_ASSERT(sim_engine_cancel(e, 0) == CORE_EINVAL);
  CU_ASSERT(sim_engine_cancel(e, ~(sim_event_id)0) == CORE_EINVAL);
  sim_counters k = sim_engine_counters(e);
  CU_ASSERT(k.scheduled == 3 && k.executed == 1 && k.cancelled == 2 && k.pending == 0);
  CU_ASSERT(sim_engine_check(e) == 0);
  CU_ASSERT(sim_engine_pop(e, &t, NULL, NULL, NULL) == 0);
  sim_engine_free(e);
}

/* An id of 0 was never issued; cancelling it must fail even when slot 0 is
 * free after its event ran (a free slot's key word is 0). */
static void test_cancel_unissued_id_zero(void) {
  sim_engine *e;
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  sim_event_id a;
  CU_ASSERT(sim_engine_push(e, 1, h_nop, NULL, 0, &a) == 0);
  sim_time t;
  CU_ASSERT(sim_engine_pop(e, &t, NULL, NULL, NULL) == 1);
  CU_ASSERT(sim_engine_cancel(e, 0) == CORE_EINVAL);
  sim_counters k = sim_engine_counters(e);
  CU_ASSERT(k.cancelled == 0 && k.pending == 0 && k.executed == 1);
  CU_ASSERT(sim_engine_check(e) == 0);
  sim_engine_free(e);
}

/* --- run, until, handlers that schedule ------------------------------------ */

typedef struct log_ctx {
  sim_time t[64];
  uint64_t arg[64];
  int n;
  sim_event_id victim;
  int cancel_rc;
  int past_rc;
} log_ctx;

static void h_log(sim_engine *e, void *ctx, uint64_t arg) {
  log_ctx *l = ctx;
  if (l->n < 64) {
    l->t[l->n] = sim_engine_now(e);
    l->arg[l->n] = arg;
  }
  l->n++;
}

static void test_run_until(void) {
  sim_engine *e;
  log_ctx l = {0};
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  static const sim_time ts[] = {50, 10, 30, 30, 20, 40, 10};
  for (int i = 0; i < 7; i++)
    CU_ASSERT(sim_engine_push(e, ts[i], h_log, &l, (uint64_t)i, NULL) == 0);
  /* until is inclusive: events at exactly 30 run. */
  CU_ASSERT_EQUAL(sim_engine_run(e, 30), 5);
  CU_ASSERT_EQUAL(l.n, 5);
  static const uint64_t want1[] = {1, 6, 4, 2, 3}; /* (10,#1) (10,#6) (20) (30,#2) (30,#3) */
  for (int i = 0; i < 5; i++)
    CU_ASSERT_EQUAL(l.arg[i], want1[i]);
  CU_ASSERT_EQUAL(sim_engine_now(e), 30);
  sim_counters c = sim_engine_counters(e);
  CU_ASSERT(c.executed == 5 && c.pending == 2 && sim_engine_check(e) == 0);
  /* Nothing between 31 and 39. */
  CU_ASSERT_EQUAL(sim_engine_run(e, 39), 0);
  CU_ASSERT_EQUAL(l.n, 5);
  /* A cancelled event at the top with a live one after until: the live one
   * must stay pending, not be lost or run early. */
  sim_event_id x;
  CU_ASSERT(sim_engine_push(e, 35, h_log, &l, 100, &x) == 0);
  CU_ASSERT(sim_engine_cancel(e, x) == 0);
  CU_ASSERT_EQUAL(sim_engine_run(e, 39), 0);
  c = sim_engine_counters(e);
  CU_ASSERT(c.pending == 2 && c.cancelled == 1 && sim_engine_check(e) == 0);
  CU_ASSERT_EQUAL(sim_engine_run(e, UINT64_MAX), 2);
  CU_ASSERT_EQUAL(l.n, 7);
  CU_ASSERT(l.arg[5] == 5 && l.t[5] == 40);
  CU_ASSERT(l.arg[6] == 0 && l.t[6] == 50);
  c = sim_engine_counters(e);
  CU_ASSERT(c.scheduled == 8 && c.executed == 7 && c.cancelled == 1 && c.pending == 0);
  CU_ASSERT(sim_engine_check(e) == 0);
  sim_engine_free(e);
}

/* sim_engine_run stops before a key far ahead; a push between now and that
 * key must still come out first (the queue refiles its keys below it). */
static void test_push_below_stopped_run(void) {
  sim_engine *e;
  log_ctx l = {0};
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  CU_ASSERT(sim_engine_push(e, 1000000000, h_log, &l, 0, NULL) == 0);
  CU_ASSERT(sim_engine_push(e, 10, h_log, &l, 1, NULL) == 0);
  CU_ASSERT(sim_engine_push(e, 3000000000, h_log, &l, 2, NULL) == 0);
  CU_ASSERT_EQUAL(sim_engine_run(e, 100), 1);
  CU_ASSERT_EQUAL(sim_engine_now(e), 10);
  CU_ASSERT(sim_engine_push(e, 50, h_log, &l, 3, NULL) == 0);
  CU_ASSERT(sim_engine_push(e, 50, h_log, &l, 4, NULL) == 0);
  CU_ASSERT(sim_engine_push(e, 2000000000, h_log, &l, 5, NULL) == 0);
  CU_ASSERT(sim_engine_push(e, 11, h_log, &l, 6, NULL) == 0);
  CU_ASSERT_EQUAL(sim_engine_run(e, UINT64_MAX), 6);
  static const uint64_t want[] = {1, 6, 3, 4, 0, 5, 2};
  CU_ASSERT_EQUAL_FATAL(l.n, 7);
  for (int i = 0; i < 7; i++)
    CU_ASSERT_EQUAL(l.arg[i], want[i]);
  CU_ASSERT(sim_engine_check(e) == 0);
  sim_engine_free(e);
}

static void test_push_in_past(void) {
  sim_engine *e;
  log_ctx l = {0};
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  CU_ASSERT(sim_engine_push(e, 100, h_log, &l, 0, NULL) == 0);
  CU_ASSERT_EQUAL(sim_engine_run(e, UINT64_MAX), 1);
  CU_ASSERT_EQUAL(sim_engine_now(e), 100);
  sim_counters before = sim_engine_counters(e);
  CU_ASSERT(sim_engine_push(e, 99, h_log, &l, 0, NULL) != 0);
  CU_ASSERT(sim_engine_push(e, 0, h_log, &l, 0, NULL) != 0);
  sim_counters after = sim_engine_counters(e);
  CU_ASSERT(memcmp(&before, &after, sizeof before) == 0);
  /* "now" itself is allowed. */
  CU_ASSERT(sim_engine_push(e, 100, h_log, &l, 1, NULL) == 0);
  CU_ASSERT_EQUAL(sim_engine_run(e, UINT64_MAX), 1);
  CU_ASSERT(sim_engine_check(e) == 0);
  sim_engine_free(e);
}

/* A handler that reschedules itself: a chain of events, each one later. */
typedef struct chain {
  int left;
  sim_time step;
  int n_run;
  sim_time last;
  int order_ok;
} chain;

static void h_log_null(sim_engine *e, void *ctx, uint64_t arg) {
  (void)e;
  (void)ctx;
  (void)arg;
}

static void h_chain(sim_engine *e, void *ctx, uint64_t arg) {
  chain *c = ctx;
  sim_time now = sim_engine_now(e);
  if (c->n_run && now < c->last)
    c->order_ok = 0;
  c->last = now;
  c->n_run++;
  if (c->left-- > 0) {
    /* One at the same time (runs after everything already queued at now),
     * one later. */
    sim_engine_push(e, now, h_chain, ctx, arg + 1, NULL);
    sim_engine_push(e, now + c->step, h_log_null, NULL, 0, NULL);
  }
}

static void h_sched(sim_engine *e, void *ctx, uint64_t arg) {
  log_ctx *l = ctx;
  h_log(e, ctx, arg);
  if (arg == 0) {
    /* Schedule at now: must run after the already-queued event at now. */
    sim_engine_push(e, sim_engine_now(e), h_sched, l, 2, NULL);
    sim_engine_push(e, sim_engine_now(e) + 5, h_sched, l, 3, NULL);
    /* Cancel a pending event from inside a handler. */
    l->cancel_rc = sim_engine_cancel(e, l->victim);
    /* And try the past from inside a handler. */
    l->past_rc = sim_engine_push(e, sim_engine_now(e) - 1, h_sched, l, 9, NULL);
  }
}

static void test_handlers_schedule(void) {
  sim_engine *e;
  log_ctx l = {0};
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  CU_ASSERT(sim_engine_push(e, 10, h_sched, &l, 0, NULL) == 0);
  CU_ASSERT(sim_engine_push(e, 10, h_sched, &l, 1, NULL) == 0);
  CU_ASSERT(sim_engine_push(e, 12, h_sched, &l, 7, &l.victim) == 0);
  CU_ASSERT_EQUAL(sim_engine_run(e, UINT64_MAX), 4);
  CU_ASSERT_EQUAL(l.n, 4);
  CU_ASSERT(l.arg[0] == 0 && l.t[0] == 10);
  CU_ASSERT(l.arg[1] == 1 && l.t[1] == 10);
  CU_ASSERT(l.arg[2] == 2 && l.t[2] == 10);
  CU_ASSERT(l.arg[3] == 3 && l.t[3] == 15);
  CU_ASSERT_EQUAL(l.cancel_rc, 0);
  CU_ASSERT(l.past_rc != 0);
  sim_counters c = sim_engine_counters(e);
  CU_ASSERT(c.scheduled == 5 && c.executed == 4 && c.cancelled == 1 && c.pending == 0);
  CU_ASSERT(sim_engine_check(e) == 0);

  /* A long self-rescheduling chain: time never goes backwards, counters add
   * up, and the chain runs to its end. */
  sim_engine_reset(e);
  CU_ASSERT(sim_engine_now(e) == 0);
  c = sim_engine_counters(e);
  CU_ASSERT(c.scheduled == 0 && c.executed == 0 && c.cancelled == 0 && c.pending == 0);
  chain ch = {.left = 10000, .step = 3, .order_ok = 1};
  CU_ASSERT(sim_engine_push(e, 0, h_chain, &ch, 0, NULL) == 0);
  uint64_t ran = sim_engine_run(e, UINT64_MAX);
  CU_ASSERT_EQUAL(ch.n_run, 10001);
  CU_ASSERT(ch.order_ok);
  /* 10001 chain events and 10000 later ones, all of which ran. */
  CU_ASSERT_EQUAL(ran, 20001);
  c = sim_engine_counters(e);
  CU_ASSERT(c.scheduled == 20001 && c.executed == 20001 && c.pending == 0);
  CU_ASSERT(sim_engine_check(e) == 0);
  sim_engine_free(e);
}

static void h_stopper(sim_engine *e, void *ctx, uint64_t arg) {
  h_log(e, ctx, arg);
  if (arg == 1)
    sim_engine_stop(e);
}

static void test_stop(void) {
  sim_engine *e;
  log_ctx l = {0};
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  for (int i = 0; i < 4; i++)
    CU_ASSERT(sim_engine_push(e, (sim_time)i, h_stopper, &l, (uint64_t)i, NULL) == 0);
  CU_ASSERT_EQUAL(sim_engine_run(e, UINT64_MAX), 2);
  CU_ASSERT_EQUAL(sim_engine_counters(e).pending, 2);
  /* A new run resumes where it stopped. */
  CU_ASSERT_EQUAL(sim_engine_run(e, UINT64_MAX), 2);
  CU_ASSERT_EQUAL(l.n, 4);
  CU_ASSERT(sim_engine_check(e) == 0);
  sim_engine_free(e);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("engine", NULL, NULL);
  CU_add_test(s, "differential vs sorted array, several seeds", test_differential_seeds);
  CU_add_test(s, "large queue with cancels", test_large_queue);
  CU_add_test(s, "cancel twice / after run / unknown ids", test_cancel_twice_and_after_run);
  CU_add_test(s, "cancel of never-issued id 0", test_cancel_unissued_id_zero);
  CU_add_test(s, "run with until", test_run_until);
  CU_add_test(s, "push below a key a stopped run left", test_push_below_stopped_run);
  CU_add_test(s, "push in the past fails", test_push_in_past);
  CU_add_test(s, "handlers schedule and cancel", test_handlers_schedule);
  CU_add_test(s, "stop", test_stop);
}

/* The step simulation's two ways (sim/step.h): where no interference
 * couples the ranks, the step is computed rank by rank without events; it
 * must give the very bytes the events give (step times, compute, the event
 * count), on random steps with every rank and one representative, jitter,
 * overlap on and off, gradient copies, random waits and several steps. Where
 * a factor is not 1 the events run. */
#include "sim/step.h"

#include "core/err.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rs;
static double uni(void) {
  uint64_t z = (rs += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

typedef struct rand_step {
  int L, B;
  double fwd[64], bwd[64], copy[64], comm[32], bytes[32], cpu[32], idle[32];
  int ready[32];
} rand_step;

/* A random step: layers, buckets ready at non-increasing layers. */
static void make(rand_step *x, sim_step_cfg *c, int world, int every, int overlap, int waits) {
  memset(x, 0, sizeof *x);
  x->L = 4 + (int)(uni() * 40);
  x->B = 1 + (int)(uni() * 12);
  for (int l = 0; l < x->L; l++) {
    x->fwd[l] = 1e-4 + uni() * 3e-3;
    x->bwd[l] = 2e-4 + uni() * 6e-3;
    x->copy[l] = uni() * 1e-4;
  }
  int at = x->L - 1;
  for (int b = 0; b < x->B; b++) {
    at -= (int)(uni() * (at + 1) / (x->B - b));
    x->ready[b] = at < 0 ? 0 : at;
    x->comm[b] = uni() * 8e-3;
    x->bytes[b] = 1e6;
    x->idle[b] = waits ? uni() * 0.3 : 0.0;
  }
  memset(c, 0, sizeof *c);
  c->n_layers = x->L;
  c->fwd_s = x->fwd;
  c->bwd_s = x->bwd;
  c->copy_s = x->copy;
  c->n_buckets = x->B;
  c->bucket_ready_layer = x->ready;
  c->bucket_comm_s = x->comm;
  c->bucket_bytes = x->bytes;
  c->bucket_cpu_frac = x->cpu;
  c->bucket_idle_frac = x->idle;
  c->random_idle = waits;
  c->finalize_s = 1e-3;
  c->optimizer_s = 2e-3;
  c->overlap = overlap;
  c->compute_slowdown = c->comm_slowdown = c->cpu_slowdown = 1.0;
  c->world = world;
  c->every_rank = every;
  c->jitter = CORE_JITTER_LOGNORMAL;
  c->jitter_params[0] = 0.0;
  c->jitter_params[1] = 0.05;
  c->steps = 3;
  c->seed = (uint64_t)(uni() * 1e9);
}

static void test_direct_equals_events(void) {
  sim_engine *e;
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  rs = 12345;
  int differ = 0, direct_runs = 0;
  for (int trial = 0; trial < 200; trial++) {
    rand_step x;
    sim_step_cfg c;
    make(&x, &c, 1 + (int)(uni() * 64), trial % 2, trial % 3 != 0, trial % 5 == 0);
    if (trial % 7 == 0)
      c.jitter = CORE_JITTER_NONE; /* every rank at the same times */
    sim_step_result a, b;
    CU_ASSERT_FATAL(sim_step_run(&c, e, &a, NULL) == 0);
    c.events_only = 1;
    CU_ASSERT_FATAL(sim_step_run(&c, e, &b, NULL) == 0);
    direct_runs += a.direct_steps == c.steps;
    CU_ASSERT_EQUAL(b.direct_steps, 0);
    a.direct_steps = b.direct_steps = 0;
    if (memcmp(&a, &b, sizeof a) != 0) {
      differ++;
      if (differ < 4)
        fprintf(stderr, "\ntrial %d: step %.17g vs %.17g, compute %.17g vs %.17g, events %llu vs %llu", trial, a.step_s,
            b.step_s, a.compute_s, b.compute_s, (unsigned long long)a.events, (unsigned long long)b.events);
    }
  }
  CU_ASSERT_EQUAL(differ, 0);
  CU_ASSERT_EQUAL(direct_runs, 200);
  sim_engine_free(e);
}

/* A factor other than 1 couples the ranks: the events run, and the step is
 * longer than without it. */
static void test_interference_runs_events(void) {
  sim_engine *e;
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  rs = 777;
  rand_step x;
  sim_step_cfg c;
  make(&x, &c, 16, 1, 1, 0);
  sim_step_result a, b;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &a, NULL) == 0);
  c.compute_slowdown = 1.5;
  CU_ASSERT_FATAL(sim_step_run(&c, e, &b, NULL) == 0);
  CU_ASSERT_EQUAL(a.direct_steps, c.steps);
  CU_ASSERT_EQUAL(b.direct_steps, 0);
  CU_ASSERT(b.step_s > a.step_s);
  sim_engine_free(e);
}

/* One rank is its own representative: the slowest of one is the typical
 * rank, so its compute is what it computed, never more than its step (to
 * the nanosecond the engine counts in). */
static void test_one_rank_computes_its_step(void) {
  sim_engine *e;
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  rs = 4242;
  int bad = 0;
  for (int trial = 0; trial < 100; trial++) {
    rand_step x;
    sim_step_cfg c;
    make(&x, &c, 1, 0, trial % 2, 0);
    c.jitter_params[1] = 0.3;
    sim_step_result rep, every;
    CU_ASSERT_FATAL(sim_step_run(&c, e, &rep, NULL) == 0);
    c.every_rank = 1;
    CU_ASSERT_FATAL(sim_step_run(&c, e, &every, NULL) == 0);
    if (rep.compute_s > rep.step_s + 1e-9 || rep.compute_s != every.compute_s || rep.step_s != every.step_s) {
      if (bad++ < 3)
        fprintf(stderr, "\ntrial %d: step %.17g, compute %.17g; every rank: %.17g, %.17g", trial, rep.step_s,
            rep.compute_s, every.step_s, every.compute_s);
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
  sim_engine_free(e);
}

/* Ranks with the same draws (no jitter) do the same things at the same
 * times, so the step of every rank is the step of one, only with more
 * events; with interference the ranks' tasks end together and run batched
 * (sim/step.c), and collectives start and end between and at those ends
 * (times in whole microseconds, so that they meet). */
static void test_equal_ranks_step_as_one(void) {
  sim_engine *e;
  CU_ASSERT_FATAL(sim_engine_new(&e) == 0);
  rs = 2029;
  int differ = 0;
  for (int trial = 0; trial < 120; trial++) {
    rand_step x;
    sim_step_cfg c;
    make(&x, &c, 1, 1, trial % 3 != 0, trial % 5 == 0);
    for (int l = 0; l < x.L; l++) {
      x.fwd[l] = (int)(x.fwd[l] * 1e6) * 1e-6;
      x.bwd[l] = (int)(x.bwd[l] * 1e6) * 1e-6;
      x.copy[l] = trial % 2 ? 0 : (int)(x.copy[l] * 1e6) * 1e-6;
    }
    for (int b = 0; b < x.B; b++) {
      x.comm[b] = (int)(x.comm[b] * 1e6) * 1e-6;
      x.cpu[b] = trial % 4 == 1 ? 0.25 : 0.0;
    }
    c.jitter = CORE_JITTER_NONE;
    c.compute_slowdown = 1.0 + (trial % 7) * 0.125;
    c.comm_slowdown = 1.0 + (trial % 3) * 0.25;
    c.cpu_slowdown = 1.5;
    sim_step_result one, many;
    CU_ASSERT_FATAL(sim_step_run(&c, e, &one, NULL) == 0);
    c.world = 2 + (int)(uni() * 300);
    CU_ASSERT_FATAL(sim_step_run(&c, e, &many, NULL) == 0);
    uint64_t coll = (uint64_t)x.B * (uint64_t)c.steps, tasks = one.events - coll;
    /* compute_s is a mean over the ranks: the same up to its sum's rounding. */
    int same = one.step_s == many.step_s && fabs(one.compute_s - many.compute_s) <= 1e-14 * one.compute_s &&
               one.comm_s == many.comm_s && one.step_sd_s == many.step_sd_s && one.step_min_s == many.step_min_s &&
               one.step_max_s == many.step_max_s && many.events == tasks * (uint64_t)c.world + coll &&
               many.ranks_simulated == c.world;
    if (!same && ++differ < 4)
      fprintf(stderr, "\ntrial %d (%d ranks): step %.17g vs %.17g, events %llu vs %llu", trial, c.world, one.step_s,
          many.step_s, (unsigned long long)one.events, (unsigned long long)many.events);
    CU_ASSERT(many.direct_steps == 0 || c.compute_slowdown == 1.0);
  }
  CU_ASSERT_EQUAL(differ, 0);
  sim_engine_free(e);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("step", NULL, NULL);
  CU_add_test(s, "rank by rank gives the events' bytes", test_direct_equals_events);
  CU_add_test(s, "interference runs the events", test_interference_runs_events);
  CU_add_test(s, "equal ranks step as one", test_equal_ranks_step_as_one);
  CU_add_test(s, "one rank's compute is what it computed", test_one_rank_computes_its_step);
}

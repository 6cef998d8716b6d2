/* Job level (sim/job.h): failures, checkpoints, recovery, Monte Carlo.
 * Expected values come from the closed forms of docs/cost-models.md
 * (Young, Daly, the first-order waste) and from bookkeeping identities. */
#include "sim/job.h"

#include "core/err.h"

#include <CUnit/CUnit.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static sim_engine *eng;

static int setup(void) { return sim_engine_new(&eng); }

/* The Monte Carlo's means and intervals; the replications themselves are
 * not kept. */
static int run(const sim_job_params *p, sim_job_result *r) {
  int rc = sim_job_run(p, eng, r);
  if (rc == 0)
    sim_job_result_free(r);
  return rc;
}
static int teardown(void) {
  sim_engine_free(eng);
  return 0;
}

/* A job of 1,000 h on 1,000 nodes with 1 s steps; checkpoints every hour. */
static sim_job_params base(void) {
  return (sim_job_params){.step_s = 1.0,
      .total_steps = 1000 * 3600.0,
      .nodes = 1000,
      .dist = SIM_FAIL_EXPONENTIAL,
      .node_mtbf_s = 1000 * 10 * 3600.0, /* the job is interrupted every 10 h */
      .detect_s = 60,
      .mttr_s = 3600,
      .spares = 1000000,
      .restart_s = 120,
      .load_s = 60,
      .every_steps = 3600,
      .ckpt_block_s = 30,
      .replications = 200,
      .seed = 7};
}

static void test_no_failures_exact(void) {
  /* Without failures: the failure-free time plus every checkpoint taken
   * before the end (none at the very end), exactly. */
  sim_job_params p = base();
  p.dist = SIM_FAIL_NONE;
  p.replications = 3;
  sim_job_result r;
  CU_ASSERT_FATAL(run(&p, &r) == 0);
  double ideal = p.total_steps * p.step_s, n_ck = ceil(p.total_steps / p.every_steps) - 1;
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_TIME_H] * 3600.0, ideal + n_ck * p.ckpt_block_s, 1e-6);
  CU_ASSERT_EQUAL(r.mean[SIM_JOB_FAILURES], 0);
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_WASTE_CKPT_H] * 3600.0, n_ck * p.ckpt_block_s, 1e-6);
  CU_ASSERT_EQUAL(r.mean[SIM_JOB_WASTE_LOST_H], 0);
  /* ETTR leaves out the checkpoint stalls: it is the goodput. */
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_ETTR], ideal / (ideal + n_ck * p.ckpt_block_s), 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_ETTR], r.mean[SIM_JOB_GOODPUT], 1e-12);
  /* Not a multiple: ceil. */
  p.total_steps = 10.5 * 3600;
  CU_ASSERT_FATAL(run(&p, &r) == 0);
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_TIME_H] * 3600.0, 10.5 * 3600 + 10 * 30.0, 1e-6);
}

static void test_identity(void) {
  /* Wall time = failure-free time + checkpoint + lost + down time, in every
   * replication, hence in the means. */
  sim_job_params p = base();
  for (int async = 0; async < 2; async++) {
    p.async = async;
    p.ckpt_write_s = 200;
    sim_job_result r;
    CU_ASSERT_FATAL(run(&p, &r) == 0);
    double sum = p.total_steps * p.step_s / 3600.0 + r.mean[SIM_JOB_WASTE_CKPT_H] + r.mean[SIM_JOB_WASTE_LOST_H] +
                 r.mean[SIM_JOB_WASTE_RESTART_H];
    CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_TIME_H], sum, 1e-6 * sum);
    /* ETTR, the kept training over the wall time, is the goodput. */
    CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_ETTR], r.mean[SIM_JOB_GOODPUT], 1e-9);
    CU_ASSERT(r.lo[SIM_JOB_TIME_H] < r.mean[SIM_JOB_TIME_H] && r.mean[SIM_JOB_TIME_H] < r.hi[SIM_JOB_TIME_H]);
  }
}

static void test_failure_count(void) {
  /* Failures arrive at rate N/MTBF over the whole wall time (spares are
   * plentiful, so failures during recovery count too). */
  sim_job_params p = base();
  sim_job_result r;
  CU_ASSERT_FATAL(run(&p, &r) == 0);
  double expect = r.mean[SIM_JOB_TIME_H] * 3600.0 * p.nodes / p.node_mtbf_s;
  double se = (r.hi[SIM_JOB_FAILURES] - r.lo[SIM_JOB_FAILURES]) / 2 / 1.97;
  CU_ASSERT(fabs(r.mean[SIM_JOB_FAILURES] - expect) < 5 * se + 1);
  CU_ASSERT_DOUBLE_EQUAL(r.mtti_s, 10 * 3600.0, 1e-6);
}

static void test_first_order_waste(void) {
  /* Where the first-order model holds (delta << tau << M), the overhead
   * fraction is delta/tau + (tau/2 + R)/M (docs/cost-models.md), R the
   * restart cost: detection + restart + load, and the lost work per failure
   * is about (tau + delta)/2. */
  sim_job_params p = base();
  p.replications = 400;
  sim_job_result r;
  CU_ASSERT_FATAL(run(&p, &r) == 0);
  double tau = p.every_steps * p.step_s, d = p.ckpt_block_s, M = r.mtti_s;
  double R = p.detect_s + p.restart_s + p.load_s;
  double ideal_h = p.total_steps * p.step_s / 3600.0;
  double overhead = (r.mean[SIM_JOB_TIME_H] - ideal_h) / r.mean[SIM_JOB_TIME_H];
  double first_order = d / (tau + d) + ((tau + d) / 2 + R) / M;
  printf("\n    overhead simulated %.4f, first-order %.4f\n", overhead, first_order);
  CU_ASSERT(fabs(overhead - first_order) < 0.05 * first_order);
  double lost_per_failure = r.mean[SIM_JOB_WASTE_LOST_H] * 3600.0 / r.mean[SIM_JOB_FAILURES];
  CU_ASSERT(fabs(lost_per_failure - (tau + d) / 2) < 0.05 * (tau + d) / 2);
}

static void test_best_interval_is_daly(void) {
  /* Sweep the interval on a grid of ratio 1.25 around Daly's optimum; the
   * simulated best must be Daly's grid neighbour (within the sweep's
   * resolution). Goodput near the optimum is flat, so use many
   * replications with common random numbers (same seed for every interval). */
  sim_job_params p = base();
  p.ckpt_block_s = 60;
  p.replications = 400;
  sim_job_result r;
  double M = p.node_mtbf_s / p.nodes, daly = sim_job_daly(p.ckpt_block_s, M);
  double best = -1, best_tau = 0;
  for (double tau = daly / 4; tau <= daly * 4; tau *= 1.25) {
    p.every_steps = tau / p.step_s;
    CU_ASSERT_FATAL(run(&p, &r) == 0);
    if (r.mean[SIM_JOB_GOODPUT] > best) {
      best = r.mean[SIM_JOB_GOODPUT];
      best_tau = tau;
    }
  }
  printf("\n    best %.0f s, Daly %.0f s, Young %.0f s\n", best_tau, daly, sim_job_young(p.ckpt_block_s, M));
  CU_ASSERT(best_tau >= daly / 1.25 / 1.01 && best_tau <= daly * 1.25 * 1.01);
}

static void test_young_daly_formulas(void) {
  /* Young sqrt(2 d M); Daly reduces to M when d >= 2M. */
  CU_ASSERT_DOUBLE_EQUAL(sim_job_young(50, 3600), sqrt(2.0 * 50 * 3600), 1e-9);
  double x = 50 / (2.0 * 3600);
  CU_ASSERT_DOUBLE_EQUAL(sim_job_daly(50, 3600), sqrt(2.0 * 50 * 3600) * (1 + sqrt(x) / 3 + x / 9) - 50, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(sim_job_daly(10000, 3600), 3600, 1e-12);
}

static void test_spares_and_repair(void) {
  /* Without spares every failure also waits for a repair: more down time,
   * and never less than with spares. */
  sim_job_params p = base();
  sim_job_result with, without;
  CU_ASSERT_FATAL(run(&p, &with) == 0);
  p.spares = 0;
  CU_ASSERT_FATAL(run(&p, &without) == 0);
  CU_ASSERT(without.mean[SIM_JOB_WASTE_RESTART_H] > with.mean[SIM_JOB_WASTE_RESTART_H] * 1.5);
  CU_ASSERT(without.mean[SIM_JOB_GOODPUT] < with.mean[SIM_JOB_GOODPUT]);
}

static void test_async_beats_sync_when_writes_are_slow(void) {
  /* An expensive write, blocking in sync mode, costs async only its
   * snapshot; with the same interval async wastes less on checkpoints. */
  sim_job_params p = base();
  p.ckpt_block_s = 300;
  sim_job_result s, a;
  CU_ASSERT_FATAL(run(&p, &s) == 0);
  p.async = 1;
  p.ckpt_write_s = 300;
  p.ckpt_block_s = 5;
  CU_ASSERT_FATAL(run(&p, &a) == 0);
  CU_ASSERT(a.mean[SIM_JOB_WASTE_CKPT_H] < s.mean[SIM_JOB_WASTE_CKPT_H] / 10);
  CU_ASSERT(a.mean[SIM_JOB_GOODPUT] > s.mean[SIM_JOB_GOODPUT]);
}

static void test_weibull_shape_one_is_exponential(void) {
  /* A Weibull of shape 1 and scale s is an exponential of mean s. */
  sim_job_params p = base();
  sim_job_result e1, w1;
  CU_ASSERT_FATAL(run(&p, &e1) == 0);
  p.dist = SIM_FAIL_WEIBULL;
  p.weibull_shape = 1.0;
  p.weibull_scale_s = p.node_mtbf_s;
  p.replications = 100;
  CU_ASSERT_FATAL(run(&p, &w1) == 0);
  CU_ASSERT_DOUBLE_EQUAL(w1.mtti_s, e1.mtti_s, 1e-6 * e1.mtti_s);
  double tol =
      (e1.hi[SIM_JOB_FAILURES] - e1.lo[SIM_JOB_FAILURES]) + (w1.hi[SIM_JOB_FAILURES] - w1.lo[SIM_JOB_FAILURES]);
  CU_ASSERT(fabs(w1.mean[SIM_JOB_FAILURES] - e1.mean[SIM_JOB_FAILURES]) < 2 * tol);
}

static void test_scheduled_by_hand(void) {
  /* Failures in the middle of steps 15 and 37, 1 s steps, checkpoint every
   * 10 steps costing 2 s; detect 1 s, restart 5 s, load 3 s; 100 steps.
   * By hand: the first failure comes at 15.5 s of training plus one
   * checkpoint = 17.5 s, one checkpoint durable (10 steps), 5.5 s lost; the
   * run resumes at 26.5 s; the second at 27.5 s of training after step 10
   * plus two checkpoints = 58 s, durable up to step 30, 7.5 s lost; resume
   * at 67 s; 70 steps and 6 checkpoints later, 149 s. */
  static const double at[] = {15, 37};
  sim_job_params p = {.step_s = 1,
      .total_steps = 100,
      .nodes = 2,
      .dist = SIM_FAIL_SCHEDULED,
      .at_steps = at,
      .n_at_steps = 2,
      .detect_s = 1,
      .restart_s = 5,
      .load_s = 3,
      .spares = 1000,
      .every_steps = 10,
      .ckpt_block_s = 2,
      .replications = 2};
  sim_job_result r;
  CU_ASSERT_FATAL(run(&p, &r) == 0);
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_TIME_H] * 3600, 149.0, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_FAILURES], 2, 0);
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_WASTE_LOST_H] * 3600, 13.0, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_WASTE_CKPT_H] * 3600, 18.0, 1e-6);
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_WASTE_RESTART_H] * 3600, 18.0, 1e-6);
  /* Every run alike: goodput is the one run's (a measured run's to compare
   * with), 100 s of training over 149 s, and ettr, 149 s less 13 lost, 18
   * of checkpoints and 18 down, the same. */
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_GOODPUT], 100.0 / 149.0, 1e-12);
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_ETTR], 100.0 / 149.0, 1e-12);
  CU_ASSERT_EQUAL(r.lo[SIM_JOB_GOODPUT], r.hi[SIM_JOB_GOODPUT]);
}

static void test_deterministic(void) {
  sim_job_params p = base();
  sim_job_result a, b;
  CU_ASSERT_FATAL(run(&p, &a) == 0);
  CU_ASSERT_FATAL(run(&p, &b) == 0);
  CU_ASSERT(memcmp(a.mean, b.mean, sizeof a.mean) == 0);
  p.seed++;
  CU_ASSERT_FATAL(run(&p, &b) == 0);
  CU_ASSERT(memcmp(a.mean, b.mean, sizeof a.mean) != 0);
}

/* Failures faster than recovery: a 1 h job on 10 nodes interrupted every
 * minute, each failure waiting 1 h for a repair (no spares). */
static sim_job_params hopeless(void) {
  sim_job_params p = base();
  p.total_steps = 3600;
  p.nodes = 10;
  p.node_mtbf_s = 600;
  p.spares = 0;
  p.every_steps = 600;
  p.replications = 10;
  return p;
}

/* The estimate of the work is the events the Monte Carlo runs, within 25%:
 * rare failures (the base job), none, and failures that keep every run
 * from finishing (which the estimate says). */
static void test_estimate_events(void) {
  sim_job_params cases[3] = {base(), base(), hopeless()};
  cases[0].replications = 20;
  cases[1].dist = SIM_FAIL_NONE;
  for (int k = 0; k < 3; k++) {
    sim_job_result r;
    double wall;
    int capped;
    double est = sim_job_estimate_events(&cases[k], &wall, &capped);
    CU_ASSERT_FATAL(run(&cases[k], &r) == 0);
    printf("\n    case %d: estimated %.0f events, ran %llu", k, est, (unsigned long long)r.events);
    CU_ASSERT(fabs(est - (double)r.events) <= 0.25 * (double)r.events);
    CU_ASSERT_EQUAL(capped, k == 2);
    CU_ASSERT_EQUAL(r.unfinished, k == 2 ? cases[k].replications : 0);
    if (k < 2) /* the wall time of the finished runs, within 10% */
      CU_ASSERT(fabs(wall - r.mean[SIM_JOB_TIME_H] * 3600) < 0.1 * r.mean[SIM_JOB_TIME_H] * 3600);
  }
}

/* max_events bounds the work: past it the run stops with CORE_EINVAL and
 * says how far it got; at or above what it takes it changes nothing. */
static void test_max_events(void) {
  sim_job_params p = hopeless();
  sim_job_result r, ref;
  CU_ASSERT_FATAL(run(&p, &ref) == 0);
  p.max_events = ref.events / 4;
  core_err_clear();
  CU_ASSERT_EQUAL(run(&p, &r), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "took more than") != NULL);
  CU_ASSERT(strstr(core_err_msg(), "in 3 of its 10 replications") != NULL);
  p.max_events = ref.events;
  CU_ASSERT_FATAL(run(&p, &r) == 0);
  CU_ASSERT_EQUAL(r.events, ref.events);
  CU_ASSERT(memcmp(r.mean, ref.mean, sizeof r.mean) == 0);
}

static void add_up(void *ctx, uint64_t events) { *(uint64_t *)ctx += events; }

/* The progress hook sees every event, and the result is the same with it. */
static void test_progress_hook(void) {
  sim_job_params p = hopeless();
  sim_job_result r, ref;
  uint64_t seen = 0;
  CU_ASSERT_FATAL(run(&p, &ref) == 0);
  p.progress = add_up;
  p.progress_ctx = &seen;
  CU_ASSERT_FATAL(run(&p, &r) == 0);
  CU_ASSERT_EQUAL(seen, r.events);
  CU_ASSERT(memcmp(r.mean, ref.mean, sizeof r.mean) == 0);
}

/* Runs that cannot finish stop at the cap and say so: their goodput is the
 * progress they saved over the wall time, their totals are projected from
 * it (every metric a number), and a run that saved nothing is counted as
 * stalled with its values at the cap. */
static void test_unfinished_projected(void) {
  sim_job_params p = hopeless();
  /* Interrupted every 200 s, each recovery 1,400 s (detection, restart,
   * load): a run saves progress before its first failure, and later only
   * when a recovery passes without a failure, e^-7 of the time, so it
   * would take far more than the cap to save its hour. */
  p.spares = 1000;
  p.node_mtbf_s = 2000;
  p.restart_s = 1280;
  p.every_steps = 20;
  p.ckpt_block_s = 1;
  sim_job_result r;
  CU_ASSERT_FATAL(sim_job_run(&p, eng, &r) == 0);
  double ideal = p.total_steps * p.step_s;
  CU_ASSERT_EQUAL(r.unfinished, p.replications);
  CU_ASSERT_EQUAL(r.stalled, 0);
  CU_ASSERT_DOUBLE_EQUAL(r.cap_h, (ideal * SIM_JOB_WALL_CAP_FACTOR + 3600) / 3600, 1e-9);
  for (int k = 0; k < SIM_JOB_N_METRICS; k++)
    CU_ASSERT(isfinite(r.mean[k]) && isfinite(r.lo[k]) && isfinite(r.hi[k]));
  for (int i = 0; i < r.replications; i++) {
    const double *m = r.reps + (size_t)i * SIM_JOB_N_COLS;
    /* Projected: the time to train is the failure-free time at the rate of
     * progress, beyond the cap. */
    CU_ASSERT_DOUBLE_EQUAL(m[SIM_JOB_TIME_H] * 3600, ideal / m[SIM_JOB_GOODPUT], 1e-6 * ideal / m[SIM_JOB_GOODPUT]);
    CU_ASSERT(m[SIM_JOB_TIME_H] > r.cap_h);
  }
  sim_job_result_free(&r);

  /* Recovery 25 times the time between interrupts, and a first checkpoint
   * after 15 times it: nothing is ever saved. */
  p.restart_s = 5000;
  p.every_steps = 3000;
  CU_ASSERT_FATAL(sim_job_run(&p, eng, &r) == 0);
  CU_ASSERT_EQUAL(r.unfinished, p.replications);
  CU_ASSERT_EQUAL(r.stalled, p.replications);
  CU_ASSERT_EQUAL(r.mean[SIM_JOB_GOODPUT], 0);
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_TIME_H], r.cap_h, 1e-9);
  sim_job_result_free(&r);
}

/* Replications added later are the ones a longer run would have made: 50
 * then 50 more from replication 50 merge into the run of 100. */
static void test_merge(void) {
  sim_job_params p = base();
  p.replications = 100;
  sim_job_result all, a, b;
  CU_ASSERT_FATAL(sim_job_run(&p, eng, &all) == 0);
  p.replications = 50;
  CU_ASSERT_FATAL(sim_job_run(&p, eng, &a) == 0);
  p.first_rep = 50;
  CU_ASSERT_FATAL(sim_job_run(&p, eng, &b) == 0);
  CU_ASSERT_FATAL(sim_job_merge(&a, &b) == 0);
  CU_ASSERT_EQUAL(a.replications, 100);
  CU_ASSERT_EQUAL(a.events, all.events);
  CU_ASSERT(memcmp(a.reps, all.reps, sizeof *a.reps * 100 * SIM_JOB_N_COLS) == 0);
  for (int k = 0; k < SIM_JOB_N_METRICS; k++) {
    CU_ASSERT_DOUBLE_EQUAL(a.mean[k], all.mean[k], 1e-12 * fabs(all.mean[k]));
    CU_ASSERT_DOUBLE_EQUAL(a.hi[k], all.hi[k], 1e-12 * fabs(all.hi[k]));
  }
  sim_job_result_free(&a);
  sim_job_result_free(&all);
}

/* Two intervals compared replication by replication on the same failures:
 * the paired interval of the difference is narrower than even one mean's
 * (that of two independent means is sqrt(2) times wider), and it is
 * centred on the difference of the means. */
static void test_paired(void) {
  sim_job_params p = base();
  sim_job_result a, b;
  CU_ASSERT_FATAL(sim_job_run(&p, eng, &a) == 0);
  p.every_steps *= 1.5;
  CU_ASSERT_FATAL(sim_job_run(&p, eng, &b) == 0);
  double d, h;
  CU_ASSERT_FATAL(sim_job_paired(&a, &b, SIM_JOB_GOODPUT, &d, &h) == 0);
  CU_ASSERT_DOUBLE_EQUAL(d, a.mean[SIM_JOB_GOODPUT] - b.mean[SIM_JOB_GOODPUT], 1e-12);
  double ha = (a.hi[SIM_JOB_GOODPUT] - a.lo[SIM_JOB_GOODPUT]) / 2;
  printf("\n    paired half-width %.2g, one mean's %.2g", h, ha);
  CU_ASSERT(h < ha);
  p.replications = 10;
  sim_job_result c;
  CU_ASSERT_FATAL(sim_job_run(&p, eng, &c) == 0);
  CU_ASSERT_EQUAL(sim_job_paired(&a, &c, SIM_JOB_GOODPUT, &d, &h), -1);
  sim_job_result_free(&a);
  sim_job_result_free(&b);
  sim_job_result_free(&c);
}

/* A small job whose runs are heavy-tailed: 16 nodes failing every 100 h
 * each, no spares and a day's repair, so most 1.6 h runs finish at once and
 * a few wait days for a node. */
static sim_job_params heavy_tail(int replications) {
  sim_job_params p = base();
  p.total_steps = 1.6 * 3600;
  p.nodes = 16;
  p.node_mtbf_s = 100 * 3600.0;
  p.mttr_s = 24 * 3600.0;
  p.spares = 0;
  p.every_steps = 600;
  p.ckpt_block_s = 4;
  p.replications = replications;
  return p;
}

/* Half-width of the delta method's 95% interval of the ratio of column u's
 * mean to the wall time's, computed here from its formula. */
static double delta_half(const sim_job_result *r, int u) {
  int n = r->replications;
  double su = 0, sw = 0, d[4000];
  CU_ASSERT_FATAL(n <= 4000);
  for (int i = 0; i < n; i++) {
    su += r->reps[(size_t)i * SIM_JOB_N_COLS + u];
    sw += r->reps[(size_t)i * SIM_JOB_N_COLS + SIM_JOB_WALL_S];
  }
  double ratio = su / sw, mw = sw / n;
  for (int i = 0; i < n; i++)
    d[i] = r->reps[(size_t)i * SIM_JOB_N_COLS + u] - ratio * r->reps[(size_t)i * SIM_JOB_N_COLS + SIM_JOB_WALL_S];
  return gsl_cdf_tdist_Pinv(0.975, n - 1) * gsl_stats_sd(d, 1, (size_t)n) / sqrt(n) / mw;
}

/* Goodput is the failure-free time trained over the wall time, totalled
 * over the runs: times the time to train it gives the mean failure-free
 * time trained, where the mean of the runs' own ratios (which a run of days
 * weighs as little as one of hours) is far above it. ettr alike with the
 * kept training time. Their intervals are the delta method's, hold the
 * estimate and narrow with more replications. */
static void test_ratio_of_means(void) {
  sim_job_params p = heavy_tail(500);
  sim_job_result r, big;
  CU_ASSERT_FATAL(sim_job_run(&p, eng, &r) == 0);
  int n = r.replications;
  double ideal_h = p.total_steps * p.step_s / 3600, useful_h = 0, kept_h = 0, mean_of_ratios = 0;
  for (int i = 0; i < n; i++) {
    const double *m = r.reps + (size_t)i * SIM_JOB_N_COLS;
    useful_h += m[SIM_JOB_USEFUL_S] / 3600 / n;
    kept_h += m[SIM_JOB_KEPT_S] / 3600 / n;
    mean_of_ratios += m[SIM_JOB_GOODPUT] / n;
    CU_ASSERT_DOUBLE_EQUAL(m[SIM_JOB_WALL_S] / 3600, m[SIM_JOB_TIME_H], 1e-9 * m[SIM_JOB_TIME_H]);
  }
  double g = r.mean[SIM_JOB_GOODPUT], t = r.mean[SIM_JOB_TIME_H];
  printf("\n    goodput %.4f [%.4f, %.4f], mean of ratios %.4f, time to train %.1f h, %d stalled", g,
      r.lo[SIM_JOB_GOODPUT], r.hi[SIM_JOB_GOODPUT], mean_of_ratios, t, r.stalled);
  CU_ASSERT(mean_of_ratios > 2 * g); /* the case tells them apart */
  CU_ASSERT(fabs(ideal_h / mean_of_ratios - t) > 0.5 * t);
  CU_ASSERT_DOUBLE_EQUAL(g * t, useful_h, 1e-9 * useful_h);
  CU_ASSERT_DOUBLE_EQUAL(useful_h, ideal_h * (n - r.stalled) / n, 1e-9 * ideal_h);
  CU_ASSERT_DOUBLE_EQUAL(r.mean[SIM_JOB_ETTR] * t, kept_h, 1e-9 * kept_h);
  for (int k = SIM_JOB_GOODPUT; k <= SIM_JOB_ETTR; k++) {
    double h = (r.hi[k] - r.lo[k]) / 2;
    CU_ASSERT(r.lo[k] < r.mean[k] && r.mean[k] < r.hi[k]);
    CU_ASSERT_DOUBLE_EQUAL(h, delta_half(&r, k == SIM_JOB_GOODPUT ? SIM_JOB_USEFUL_S : SIM_JOB_KEPT_S), 1e-9 * h);
  }
  /* 8 times the replications: the interval about sqrt(8) = 2.8 times
   * narrower, and the smaller study's interval holds the larger's estimate. */
  p.replications = 4000;
  CU_ASSERT_FATAL(sim_job_run(&p, eng, &big) == 0);
  double h_small = r.hi[SIM_JOB_GOODPUT] - r.lo[SIM_JOB_GOODPUT],
         h_big = big.hi[SIM_JOB_GOODPUT] - big.lo[SIM_JOB_GOODPUT];
  printf(", with %d replications %.4f [%.4f, %.4f]", big.replications, big.mean[SIM_JOB_GOODPUT],
      big.lo[SIM_JOB_GOODPUT], big.hi[SIM_JOB_GOODPUT]);
  CU_ASSERT(h_big < h_small / 2);
  CU_ASSERT(r.lo[SIM_JOB_GOODPUT] < big.mean[SIM_JOB_GOODPUT] && big.mean[SIM_JOB_GOODPUT] < r.hi[SIM_JOB_GOODPUT]);
  sim_job_result_free(&r);
  sim_job_result_free(&big);
}

/* Without failures every run is the same: the ratio of means is the runs'
 * ratio and its interval has no width, exactly. */
static void test_ratio_without_failures(void) {
  sim_job_params p = base();
  p.dist = SIM_FAIL_NONE;
  p.replications = 5;
  sim_job_result r;
  CU_ASSERT_FATAL(sim_job_run(&p, eng, &r) == 0);
  CU_ASSERT_EQUAL(r.mean[SIM_JOB_GOODPUT], r.reps[SIM_JOB_GOODPUT]);
  CU_ASSERT_EQUAL(r.mean[SIM_JOB_ETTR], r.reps[SIM_JOB_ETTR]);
  CU_ASSERT_EQUAL(r.lo[SIM_JOB_GOODPUT], r.mean[SIM_JOB_GOODPUT]);
  CU_ASSERT_EQUAL(r.hi[SIM_JOB_ETTR], r.mean[SIM_JOB_ETTR]);
  sim_job_result_free(&r);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("job", setup, teardown);
  CU_add_test(s, "no failures: failure-free time plus checkpoints, exactly", test_no_failures_exact);
  CU_add_test(s, "wall time = ideal + checkpoint + lost + down", test_identity);
  CU_add_test(s, "unfinished runs: projected from their progress, or stalled at the cap", test_unfinished_projected);
  CU_add_test(s, "more replications merge into the longer run", test_merge);
  CU_add_test(s, "paired comparison on common random numbers", test_paired);
  CU_add_test(s, "goodput and ettr: ratios of means, delta-method intervals", test_ratio_of_means);
  CU_add_test(s, "without failures the ratio is the runs' and exact", test_ratio_without_failures);
  CU_add_test(s, "failure count = wall time x N / MTBF", test_failure_count);
  CU_add_test(s, "waste agrees with the first-order formula", test_first_order_waste);
  CU_add_test(s, "best simulated interval is Daly's, within the sweep", test_best_interval_is_daly);
  CU_add_test(s, "Young and Daly formulas", test_young_daly_formulas);
  CU_add_test(s, "spares vs waiting for repair", test_spares_and_repair);
  CU_add_test(s, "async checkpoints hide slow writes", test_async_beats_sync_when_writes_are_slow);
  CU_add_test(s, "Weibull of shape 1 = exponential", test_weibull_shape_one_is_exponential);
  CU_add_test(s, "scheduled failures, worked by hand", test_scheduled_by_hand);
  CU_add_test(s, "same seed, same result", test_deterministic);
  CU_add_test(s, "the estimate of the work is the events run", test_estimate_events);
  CU_add_test(s, "max_events bounds the work", test_max_events);
  CU_add_test(s, "the progress hook sees every event", test_progress_hook);
}

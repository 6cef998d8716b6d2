/* A point's whole run (sim/jobpoint.h) and what a study of them writes
 * (sim/sweep.h, sim/summary.h): sharded checkpoints read per node and
 * exchanged as an allgather, costs set directly, the price per hour, the
 * failure numbers as sweep dimensions, more replications until the best
 * interval is told apart with its ties named, the cost columns, a job
 * without failures (Young's and Daly's intervals empty cells), and a summary that shows every swept dimension. */
#include "sim/jobpoint.h"
#include "sim/summary.h"
#include "sim/sweep.h"

#include "core/csv.h"
#include "core/err.h"

#include "simutil.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char scratch[4096];

static int suite_init(void) { return tu_mkdtemp(scratch, sizeof scratch, "jobpoint"); }
static int suite_clean(void) {
  tu_rmdir(scratch);
  return 0;
}

/* 4 DGX H100 nodes over IB; EXTRA adds or overrides groups. */
#define BASE                                                                                                           \
  "name = \"t\";\n"                                                                                                    \
  "profile = \"../../scenarios/profiles/dgx-h100.cfg\";\n"                                                             \
  "model = \"../../scenarios/models/gpt2-xl.cfg\";\n"                                                                  \
  "training = { batch = 8; precision = \"amp_bf16\"; optimizer = \"adam\"; };\n"                                       \
  "cluster = { nodes = 4; devices_per_node = 8; };\n"                                                                  \
  "networks = ( { name = \"IB\"; gbps = 400.0; latency_us = 14.0; nics_per_node = 8; efficiency = 0.96;\n"             \
  "               node_hour_usd = 10.0; } );\n"
#define SIM "simulation = { steps = 3; replications = 50; };\n"

static sim_scenario *load(const char *text) { return tu_load_string(text, TU_DATA("jobpoint.cfg")); }

/* One point's job parameters, its step level simulated first. */
static int params(const sim_scenario *s, long index, sim_job_params *jp, double load[2], sim_point_result *r) {
  sim_engine *e;
  sim_point p;
  int rc = sim_engine_new(&e);
  if (rc)
    return rc;
  sim_scenario_point(s, index, &p);
  if ((rc = sim_predict_point(s, &p, e, NULL, 0, r)) == 0)
    rc = sim_jobpoint_params(s, &p, r, jp, load);
  sim_engine_free(e);
  return rc;
}

/* Sharded: each node reads its share at its share of the storage, then an
 * allgather of the whole state; unsharded: every node reads all of it. */
static void test_sharded_load(void) {
  const char *ck[] = {"checkpoint = { every_s = 600.0; sharded = true; storage_GBps = 100.0; };\n",
      "checkpoint = { every_s = 600.0; sharded = false; storage_GBps = 100.0; };\n"};
  for (int k = 0; k < 2; k++) {
    char text[4096];
    snprintf(text, sizeof text,
        BASE SIM "job = { hours = 10.0; };\nfailures = { mtbf_h = 100.0; restart_s = 1.0; };\n"
                 "cost = { gpu_hour_usd = 1.0; };\n%s",
        ck[k]);
    sim_scenario *s = load(text);
    CU_ASSERT_FATAL(s != NULL);
    sim_job_params jp;
    sim_point_result r;
    double load[2];
    CU_ASSERT_FATAL(params(s, 0, &jp, load, &r) == 0);
    double bytes = sim_jobpoint_ckpt_bytes(s, &r.pt), nodes = 4, rbw = s->profile->read_GBps * 1e9, cap = 100e9;
    CU_ASSERT_DOUBLE_EQUAL(bytes, 1557611200.0 * 12, 1);
    if (k == 0) {
      sim_topo t;
      CU_ASSERT_FATAL(sim_predict_topo(s, &r.pt, &t) == 0);
      CU_ASSERT_DOUBLE_EQUAL(load[0], bytes / nodes / fmin(rbw, cap / nodes), 1e-9 * load[0]);
      CU_ASSERT_DOUBLE_EQUAL(
          load[1], sim_coll_time(SIM_BACKEND_NCCL, CORE_COLL_ALLGATHER, SIM_ALGO_RING, &t, bytes), 1e-12);
      CU_ASSERT(load[1] > 0);
    } else {
      CU_ASSERT_DOUBLE_EQUAL(load[0], bytes * nodes / fmin(rbw * nodes, cap), 1e-9 * load[0]);
      CU_ASSERT_EQUAL(load[1], 0);
    }
    CU_ASSERT_DOUBLE_EQUAL(jp.load_s, load[0] + load[1], 1e-12);
    sim_scenario_free(s);
  }
}

/* checkpoint.cost_s, failures.load_s and restart_s set the costs; a sync
 * checkpoint blocks for cost_s, an async one writes it in the background;
 * state_GB sets the checkpoint's size. */
static void test_costs_set(void) {
  const char *text =
      BASE SIM "job = { hours = 10.0; };\ncost = { gpu_hour_usd = 1.0; };\n"
               "failures = { mtbf_h = 100.0; restart_s = 0.0; load_s = 0.0; };\n"
               "checkpoint = { every_s = 600.0; cost_s = 42.0; mode = [\"sync\", \"async\"]; state_GB = 500.0; };\n";
  sim_scenario *s = load(text);
  CU_ASSERT_FATAL(s != NULL);
  sim_job_params jp;
  sim_point_result r;
  CU_ASSERT_FATAL(params(s, 0, &jp, NULL, &r) == 0);
  CU_ASSERT_EQUAL(jp.restart_s, 0);
  CU_ASSERT_EQUAL(jp.load_s, 0);
  CU_ASSERT_EQUAL(jp.ckpt_block_s, 42.0);
  CU_ASSERT_FATAL(params(s, 1, &jp, NULL, &r) == 0);
  CU_ASSERT(jp.async);
  CU_ASSERT_EQUAL(jp.ckpt_write_s, 42.0);
  CU_ASSERT_DOUBLE_EQUAL(jp.ckpt_block_s, 500e9 / (s->profile->host_link_GBps * 1e9), 1e-9);
  CU_ASSERT_EQUAL(sim_jobpoint_ckpt_bytes(s, &r.pt), 500e9);
  sim_scenario_free(s);
}

/* Price per hour: job and spare nodes at their GPUs' and network's price,
 * the storage per hour and per GB-month of the checkpoints kept; the
 * profile's price when the scenario has none. */
static void test_price(void) {
  sim_scenario *s = load(BASE SIM
      "job = { hours = 10.0; };\nfailures = { mtbf_h = 100.0; restart_s = 1.0; spares = [0, 2]; };\n"
      "checkpoint = { every_s = 600.0; };\n"
      "cost = { gpu_hour_usd = 3.0; storage_hour_usd = 5.0; storage_GB_month_usd = 0.1; checkpoints_kept = 3; };\n");
  CU_ASSERT_FATAL(s != NULL);
  sim_point p;
  sim_scenario_point(s, 1, &p);
  CU_ASSERT_EQUAL(p.spares, 2);
  double gb = sim_jobpoint_ckpt_bytes(s, &p) / 1e9;
  CU_ASSERT_DOUBLE_EQUAL(sim_jobpoint_usd_per_hour(s, &p), 6 * (8 * 3.0 + 10.0) + 5.0 + gb * 3 * 0.1 / 730.0, 1e-9);
  sim_scenario_free(s);
  /* No cost group: the profile's price, here none: unpriced. */
  s = load(BASE SIM "job = { hours = 10.0; };\n");
  CU_ASSERT_FATAL(s == NULL);
  CU_ASSERT(strstr(core_err_msg(), "network 'IB' has a price but compute has none") != NULL);
}

/* Every number of failures is a dimension; the CSV names them. */
static void test_failures_swept(void) {
  sim_scenario *s =
      load(BASE SIM "job = { hours = 10.0; };\n"
                    "failures = { mtbf_h = [100.0, 200.0]; detect_s = [10.0, 60.0]; mttr_h = [1.0, 2.0];\n"
                    "             spares = 10;\n"
                    "             restart_s = [5.0, 50.0]; load_s = [1.0, 2.0]; };\n"
                    "checkpoint = { every_s = 600.0; cost_s = [1.0, 3.0]; };\n"
                    "cost = { gpu_hour_usd = 1.0; };\n");
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL(sim_scenario_points(s), 64);
  sim_point p;
  sim_scenario_point(s, 63, &p);
  CU_ASSERT(p.fail_rate_h == 200 && p.detect_s == 60 && p.mttr_h == 2 && p.restart_s == 50 && p.load_s == 2 &&
            p.ckpt_cost_s == 3);
  sim_scenario_point(s, 0, &p);
  CU_ASSERT(p.fail_rate_h == 100 && p.detect_s == 10 && p.mttr_h == 1 && p.restart_s == 5 && p.load_s == 1 &&
            p.ckpt_cost_s == 1);
  char path[4200];
  snprintf(path, sizeof path, "%s/swept.csv", scratch);
  sim_sweep_opts o = {.jobs = 2, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
  CU_ASSERT_FATAL(sim_sweep_write_csv(s, &w, path, 1, NULL) == 0);
  core_csv_table t;
  CU_ASSERT_FATAL(core_csv_read(path, &t) == 0);
  int cd = core_csv_col(&t, "detect_s"), cm = core_csv_col(&t, "mttr_h"), cr = core_csv_col(&t, "restart_s"),
      cl = core_csv_col(&t, "load_s"), ck = core_csv_col(&t, "ckpt_s"), cc = core_csv_col(&t, "cost_usd"),
      ct = core_csv_col(&t, "time_to_train_h"), cu = core_csv_col(&t, "usd_per_hour");
  CU_ASSERT_FATAL(cd >= 0 && cm >= 0 && cr >= 0 && cl >= 0 && ck >= 0 && cc >= 0 && ct >= 0 && cu >= 0);
  CU_ASSERT_STRING_EQUAL(t.rows[63][cd], "60");
  CU_ASSERT_STRING_EQUAL(t.rows[63][cm], "2");
  CU_ASSERT_STRING_EQUAL(t.rows[63][cr], "50");
  CU_ASSERT_STRING_EQUAL(t.rows[63][cl], "2");
  CU_ASSERT_STRING_EQUAL(t.rows[63][ck], "3");
  /* The failure rate too: a row of each mtbf_h says which; no Weibull. */
  int cf = core_csv_col(&t, "mtbf_h"), cw = core_csv_col(&t, "weibull_shape");
  CU_ASSERT_FATAL(cf >= 0 && cw >= 0);
  CU_ASSERT_STRING_EQUAL(t.rows[0][cf], "100");
  CU_ASSERT_STRING_EQUAL(t.rows[63][cf], "200");
  CU_ASSERT_STRING_EQUAL(t.rows[63][cw], "");
  CU_ASSERT_DOUBLE_EQUAL(atof(t.rows[5][cc]), atof(t.rows[5][cu]) * atof(t.rows[5][ct]), 1e-6 * atof(t.rows[5][cc]));
  /* A longer detection costs time, all else equal (a spare replaces the
   * node once the failure is detected). */
  printf("\n    down %g h with 10 s detection, %g h with 60 s", w.res[4].job.mean[SIM_JOB_WASTE_RESTART_H],
      w.res[4 + 16].job.mean[SIM_JOB_WASTE_RESTART_H]);
  CU_ASSERT(w.res[4].job.mean[SIM_JOB_WASTE_RESTART_H] < w.res[4 + 16].job.mean[SIM_JOB_WASTE_RESTART_H]);
  core_csv_table_free(&t);
  sim_sweep_free(&w);
  sim_scenario_free(s);
}

/* A Weibull's scale and shape are columns of the CSV (mtbf_h holds the
 * scale): rows of two shapes are told apart. */
static void test_weibull_columns(void) {
  sim_scenario *s =
      load(BASE SIM "job = { hours = 10.0; };\n"
                    "failures = { distribution = \"weibull\"; weibull_scale_h = 300.0;\n"
                    "             weibull_shape = [0.7, 1.5]; spares = 10; restart_s = 5.0; load_s = 1.0; };\n"
                    "checkpoint = { every_s = 600.0; cost_s = 1.0; };\n"
                    "cost = { gpu_hour_usd = 1.0; };\n");
  CU_ASSERT_FATAL(s != NULL);
  char path[4200];
  snprintf(path, sizeof path, "%s/weibull.csv", scratch);
  sim_sweep_opts o = {.jobs = 1, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
  CU_ASSERT_FATAL(sim_sweep_write_csv(s, &w, path, 1, NULL) == 0);
  core_csv_table t;
  CU_ASSERT_FATAL(core_csv_read(path, &t) == 0);
  int cf = core_csv_col(&t, "mtbf_h"), cw = core_csv_col(&t, "weibull_shape");
  CU_ASSERT_FATAL(cf >= 0 && cw >= 0 && t.nrows == 2);
  CU_ASSERT_STRING_EQUAL(t.rows[0][cf], "300");
  CU_ASSERT_STRING_EQUAL(t.rows[0][cw], "0.7");
  CU_ASSERT_STRING_EQUAL(t.rows[1][cw], "1.5");
  core_csv_table_free(&t);
  sim_sweep_free(&w);
  sim_scenario_free(s);
}

/* Two intervals the Monte Carlo cannot tell apart at 20 replications: more
 * are run, up to max_replications, and the other is named a tie. With a
 * tolerance wider than any difference, none are added. */
#define TIES(TOL)                                                                                                      \
  BASE "job = { hours = 100.0; };\n"                                                                                   \
       "failures = { mtbf_h = 40.0; restart_s = 60.0; load_s = 10.0; spares = 10; };\n"                                \
       "checkpoint = { every_s = [1000.0, 1001.0, 4000.0]; cost_s = 5.0; };\n"                                         \
       "cost = { gpu_hour_usd = 1.0; };\n"                                                                             \
       "simulation = { steps = 3; replications = 20; max_replications = 160; tie_goodput = " TOL "; };\n"

static void test_ties(void) {
  sim_scenario *s = load(TIES("1e-9"));
  CU_ASSERT_FATAL(s != NULL);
  sim_sweep_opts o = {.jobs = 2, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
  CU_ASSERT_EQUAL(w.res[0].job.replications, 160);
  CU_ASSERT_EQUAL(w.res[2].job.replications, 160);
  int best = fabs(w.res[0].best_every_s - 1000) < 1e-6 ? 0 : 1;
  printf("\n    goodput %.6f %.6f %.6f, best %g, ties '%s'", w.res[0].job.mean[SIM_JOB_GOODPUT],
      w.res[1].job.mean[SIM_JOB_GOODPUT], w.res[2].job.mean[SIM_JOB_GOODPUT], w.res[0].best_every_s, w.res[0].ties);
  CU_ASSERT(fabs(w.res[0].best_every_s - 1000) < 1e-6 || fabs(w.res[0].best_every_s - 1001) < 1e-6);
  CU_ASSERT_STRING_EQUAL(w.res[0].ties, best == 0 ? "1001" : "1000");
  CU_ASSERT_EQUAL(w.res[0].best_goodput_lo, w.res[best].job.lo[SIM_JOB_GOODPUT]);
  sim_sweep_free(&w);
  sim_scenario_free(s);
  CU_ASSERT_FATAL((s = load(TIES("0.5"))) != NULL);
  CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
  CU_ASSERT_EQUAL(w.res[0].job.replications, 20);
  sim_sweep_free(&w);
  sim_scenario_free(s);
}

/* A job group alone: the time to train without failures or checkpoints is
 * its steps at the step time, its samples over the global batch. */
static void test_job_alone(void) {
  sim_scenario *s = load(BASE SIM "job = { samples = 1e7; };\ncost = { node_hour_usd = 50.0; };\n");
  CU_ASSERT_FATAL(s != NULL);
  sim_sweep_opts o = {.jobs = 1, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
  const sim_point_result *r = &w.res[0];
  double steps = ceil(1e7 / (4 * 8 * 8));
  CU_ASSERT_DOUBLE_EQUAL(r->job.mean[SIM_JOB_TIME_H], steps * r->step_s / 3600, 1e-9);
  CU_ASSERT_EQUAL(r->job.mean[SIM_JOB_GOODPUT], 1.0);
  CU_ASSERT_EQUAL(r->job.mean[SIM_JOB_FAILURES], 0);
  CU_ASSERT_DOUBLE_EQUAL(r->usd_per_hour, 4 * (50.0 + 10.0), 1e-12);
  /* Without failures, Young's and Daly's intervals do not exist: empty cells. */
  CU_ASSERT(isnan(r->job.young_s) && isnan(r->job.daly_s));
  char path[4200];
  snprintf(path, sizeof path, "%s/alone.csv", scratch);
  CU_ASSERT_FATAL(sim_sweep_write_csv(s, &w, path, 1, NULL) == 0);
  char *text = tu_read_file(path, NULL);
  CU_ASSERT_FATAL(text != NULL);
  CU_ASSERT(strstr(text, "nan") == NULL && strstr(text, "inf") == NULL);
  free(text);
  core_csv_table t;
  CU_ASSERT_FATAL(core_csv_read(path, &t) == 0);
  int cy = core_csv_col(&t, "young_s"), cd = core_csv_col(&t, "daly_s");
  CU_ASSERT_FATAL(cy >= 0 && cd >= 0 && t.nrows == 1);
  CU_ASSERT_STRING_EQUAL(t.rows[0][cy], "");
  CU_ASSERT_STRING_EQUAL(t.rows[0][cd], "");
  core_csv_table_free(&t);
  sim_sweep_free(&w);
  sim_scenario_free(s);
}

/* The summary of scenario text's sweep (one worker), malloc'd. */
static char *summary_of(const char *text) {
  sim_scenario *s = load(text);
  CU_ASSERT_FATAL(s != NULL);
  sim_sweep_opts o = {.jobs = 1, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CU_ASSERT_FATAL(f != NULL);
  sim_summary_print(s, &w, f);
  fclose(f);
  sim_sweep_free(&w);
  sim_scenario_free(s);
  return buf;
}

/* Checkpoints without failures: the summary says there is no Young or Daly
 * interval rather than printing nan. */
static void test_summary_no_failures(void) {
  char *buf = summary_of(BASE SIM "job = { hours = 10.0; };\n"
                                  "checkpoint = { every_s = [600.0, 1200.0]; storage_GBps = 100.0; };\n"
                                  "cost = { gpu_hour_usd = 2.0; };\n");
  CU_ASSERT(strstr(buf, "best interval") != NULL);
  CU_ASSERT(strstr(buf, "no interruptions, so no Young or Daly interval") != NULL);
  CU_ASSERT(strstr(buf, "nan") == NULL && strstr(buf, "inf ") == NULL);
  free(buf);
}

/* Intervals given in steps: the best is named in steps, the table's unit,
 * with its seconds beside it. */
static void test_summary_best_in_steps(void) {
  char *buf = summary_of(BASE SIM "job = { hours = 10.0; };\n"
                                  "checkpoint = { every_steps = [1000, 5000]; storage_GBps = 100.0; };\n"
                                  "cost = { gpu_hour_usd = 2.0; };\n");
  const char *best = strstr(buf, "best interval ");
  CU_ASSERT_FATAL(best != NULL);
  CU_ASSERT(strncmp(best, "best interval 5000 steps (", 26) == 0);
  free(buf);
}

/* A point whose bucket allreduce outlasts the timeout aborts at its first
 * step: it has no run, so no goodput or time to train (empty cells), and
 * the summary says so instead of figures for a run that cannot happen. */
static void test_timeout_no_run(void) {
  static const char *const text = BASE SIM "ddp = { timeout_s = 0.001; };\n"
                                           "job = { hours = 10.0; };\n"
                                           "failures = { mtbf_h = 1000.0; restart_s = 30.0; };\n"
                                           "checkpoint = { every_s = [600.0, 1200.0]; storage_GBps = 100.0; };\n"
                                           "cost = { gpu_hour_usd = 2.0; };\n";
  sim_scenario *s = load(text);
  CU_ASSERT_FATAL(s != NULL);
  sim_sweep_opts o = {.jobs = 1, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  CU_ASSERT_FATAL(sim_sweep_run(s, &o, &w) == 0);
  CU_ASSERT_FATAL(w.n == 2);
  CU_ASSERT_STRING_EQUAL(w.res[0].status, "timeout");
  CU_ASSERT_EQUAL(w.res[0].has_job, 0);
  CU_ASSERT(isnan(w.res[0].job.mean[SIM_JOB_GOODPUT]) && isnan(w.res[0].best_every_s));
  char path[4200];
  snprintf(path, sizeof path, "%s/timeout.csv", scratch);
  CU_ASSERT_FATAL(sim_sweep_write_csv(s, &w, path, 1, NULL) == 0);
  core_csv_table t;
  CU_ASSERT_FATAL(core_csv_read(path, &t) == 0);
  int cg = core_csv_col(&t, "goodput"), ct = core_csv_col(&t, "time_to_train_h"), cc = core_csv_col(&t, "cost_usd");
  CU_ASSERT_FATAL(cg >= 0 && ct >= 0 && cc >= 0 && t.nrows == 2);
  CU_ASSERT_STRING_EQUAL(t.rows[0][cg], "");
  CU_ASSERT_STRING_EQUAL(t.rows[0][ct], "");
  CU_ASSERT_STRING_EQUAL(t.rows[1][cc], "");
  core_csv_table_free(&t);
  sim_sweep_free(&w);
  sim_scenario_free(s);
  char *buf = summary_of(text);
  CU_ASSERT(strstr(buf, "no run (status timeout): a bucket's allreduce outlasts the timeout") != NULL);
  CU_ASSERT(strstr(buf, "no best interval: no point of the group can run") != NULL);
  free(buf);
}

/* The summary has a column for every swept dimension: rows that differ
 * only in compression or bucket cap say so. */
static void test_summary_columns(void) {
  char *buf = summary_of(BASE SIM "ddp = { compression = [\"none\", \"fp16\"]; bucket_cap_mb = [10.0, 50.0]; };\n"
                                  "cost = { gpu_hour_usd = 2.0; };\n");
  const char *head = strchr(buf, '\n') + 1;
  CU_ASSERT(strstr(head, "bucket_cap_mb") && strstr(head, "compression") && strstr(head, "usd/Msample"));
  /* Four rows, no two alike. */
  const char *rows[4];
  const char *line = strchr(head, '\n') + 1;
  for (int i = 0; i < 4; i++) {
    rows[i] = line;
    line = strchr(line, '\n') + 1;
  }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < i; j++)
      CU_ASSERT(strncmp(rows[i], rows[j], 40) != 0);
  CU_ASSERT(strstr(rows[1], "fp16") != NULL);
  free(buf);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("jobpoint", suite_init, suite_clean);
  CU_add_test(s, "sharded checkpoints: a share read per node, the rest exchanged", test_sharded_load);
  CU_add_test(s, "checkpoint, restart and load costs set directly", test_costs_set);
  CU_add_test(s, "price per hour of nodes, spares, network and storage", test_price);
  CU_add_test(s, "every number of failures is a sweep dimension", test_failures_swept);
  CU_add_test(s, "a Weibull's scale and shape are columns", test_weibull_columns);
  CU_add_test(s, "more replications until the best interval is told apart; ties named", test_ties);
  CU_add_test(s, "a best interval in steps is named in steps", test_summary_best_in_steps);
  CU_add_test(s, "a point that times out has no run", test_timeout_no_run);
  CU_add_test(s, "a job group alone: the failure-free time to train", test_job_alone);
  CU_add_test(s, "the summary shows every swept dimension", test_summary_columns);
  CU_add_test(s, "checkpoints without failures: no Young or Daly interval, no nan", test_summary_no_failures);
}

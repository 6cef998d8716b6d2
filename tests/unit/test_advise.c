/* advise (sim/advise.h, sim/advice.h): the search finds what simulating
 * every point finds, the front of time against cost whole and the same
 * best point under each objective, with fewer points simulated; the same
 * advice with any number of workers; each recommendation's reason; and the
 * studies it refuses, with file:line and what to do. */
#include "sim/advice.h"
#include "sim/advise.h"
#include "sim/memfit.h"

#include "core/clock.h"
#include "core/err.h"

#include "simutil.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char scratch[4096];

static int suite_init(void) { return tu_mkdtemp(scratch, sizeof scratch, "advise"); }
static int suite_clean(void) {
  tu_rmdir(scratch);
  return 0;
}

/* 5 node counts x 2 networks x 2 bucket caps x 2 overlap settings, then 4
 * intervals x 2 modes x 2 spare pools: 640 points. ADVISE is the advise
 * group's body. */
#define STUDY(ADVISE)                                                                                                  \
  "name = \"tiny-plan\";\n"                                                                                            \
  "profile = \"../../scenarios/profiles/dgx-h100.cfg\";\n"                                                             \
  "model = \"../../scenarios/models/mlp.cfg\";\n"                                                                      \
  "training = { batch = 64; precision = \"bf16\"; };\n"                                                                \
  "cluster = { nodes = [1, 2, 4, 8, 16]; devices_per_node = 8; };\n"                                                   \
  "networks = ( { name = \"1GbE\"; gbps = 1.0; latency_us = 14.0; },\n"                                                \
  "             { name = \"IB\"; gbps = 200.0; latency_us = 14.0; nics_per_node = 8; efficiency = 0.96;\n"             \
  "               node_hour_usd = 20.0; } );\n"                                                                        \
  "cost = { gpu_hour_usd = 2.0; };\n"                                                                                  \
  "ddp = { bucket_cap_mb = [1.0, 25.0]; overlap = [true, false]; };\n"                                                 \
  "job = { samples = 2e10; };\n"                                                                                       \
  "failures = { mtbf_h = 20.0; restart_s = 60.0; mttr_h = 2.0; spares = [0, 1]; };\n"                                  \
  "checkpoint = { every_s = [60.0, 300.0, 900.0, 1800.0]; mode = [\"sync\", \"async\"]; };\n"                          \
  "simulation = { steps = 3; replications = 40; };\n"                                                                  \
  "advise = { " ADVISE " };\n"

static sim_scenario *load(const char *text) { return tu_load_string(text, TU_DATA("tiny-plan.cfg")); }

static int run(const char *advise, int exhaustive, int jobs, sim_scenario **s, sim_advice *a) {
  char text[4096];
  snprintf(text, sizeof text, STUDY("%s"), advise);
  *s = load(text);
  if (!*s)
    return -1;
  sim_advise_opts o = {.jobs = jobs, .exhaustive = exhaustive};
  int rc = sim_advise_run(*s, &o, a);
  if (rc == 0)
    rc = sim_advice_rank(*s, a);
  if (rc)
    fprintf(stderr, "\n  %s", core_err_msg());
  return rc;
}

static const sim_advised *find(const sim_advice *a, long index) {
  for (long i = 0; i < a->n; i++)
    if (a->pts[i].r.pt.index == index)
      return &a->pts[i];
  return NULL;
}

static const sim_advised *top(const sim_advice *a) {
  for (long i = 0; i < a->n; i++)
    if (a->pts[i].rank == 1)
      return &a->pts[i];
  return NULL;
}

/* Under each objective: every point of the exhaustive run's front is among
 * those the search simulated, with the same numbers, and the search's best
 * is the exhaustive run's, with far fewer points simulated. */
static void test_same_as_exhaustive(void) {
  const char *objectives[] = {"minimize = \"time_to_train_h\";", "minimize = \"cost_usd\";",
      "minimize = \"cost_usd\"; deadline_h = 30.0;", "minimize = \"time_to_train_h\"; budget_usd = 3000.0;"};
  for (int k = 0; k < 4; k++) {
    sim_scenario *s, *sx;
    sim_advice a, x;
    CU_ASSERT_FATAL(run(objectives[k], 0, 2, &s, &a) == 0);
    CU_ASSERT_FATAL(run(objectives[k], 1, 2, &sx, &x) == 0);
    CU_ASSERT(a.pruned_search && !x.pruned_search);
    CU_ASSERT_EQUAL(x.n, x.full_points - x.groups_collapsed * (x.full_points / x.groups));
    CU_ASSERT(a.n * 4 < x.n);
    printf("\n    %-50s searched %ld of %ld points, step level %ld of %ld", objectives[k], a.n, x.n, a.step_simulated,
        a.step_configs);
    int missing = 0;
    for (long i = 0; i < x.n; i++) {
      if (!x.pts[i].pareto)
        continue;
      const sim_advised *p = find(&a, x.pts[i].r.pt.index);
      missing += !p || !p->pareto || p->r.job.mean[SIM_JOB_TIME_H] != x.pts[i].r.job.mean[SIM_JOB_TIME_H];
    }
    CU_ASSERT_EQUAL(missing, 0);
    CU_ASSERT_FATAL(top(&a) && top(&x));
    CU_ASSERT_EQUAL(top(&a)->r.pt.index, top(&x)->r.pt.index);
    sim_advice_free(&a);
    sim_advice_free(&x);
    sim_scenario_free(s);
    sim_scenario_free(sx);
  }
}

/* The advice CSV is the same bytes with one worker and with three. */
static void test_any_workers(void) {
  char p1[4200], p3[4200];
  snprintf(p1, sizeof p1, "%s/one.csv", scratch);
  snprintf(p3, sizeof p3, "%s/three.csv", scratch);
  for (int k = 0; k < 2; k++) {
    sim_scenario *s;
    sim_advice a;
    CU_ASSERT_FATAL(run("minimize = \"cost_usd\";", 0, k ? 3 : 1, &s, &a) == 0);
    CU_ASSERT_FATAL(sim_advice_write_csv(s, &a, k ? p3 : p1) == 0);
    sim_advice_free(&a);
    sim_scenario_free(s);
  }
  char *one = tu_read_file(p1, NULL), *three = tu_read_file(p3, NULL);
  CU_ASSERT_FATAL(one && three);
  CU_ASSERT_STRING_EQUAL(one, three);
  CU_ASSERT(strncmp(one, "rank,feasible,pareto,nodes,", 27) == 0);
  CU_ASSERT(strstr(one, ",time_to_train_h,") && strstr(one, ",cost_usd,") && strstr(one, ",goodput,"));
  free(one);
  free(three);
}

/* The scenario as given (1GbE, one node) is compared with itself; the
 * fastest point, on InfiniBand over several nodes, removes exposed
 * communication, by the hours the parts say. */
static void test_reasons(void) {
  sim_scenario *s;
  sim_advice a;
  CU_ASSERT_FATAL(run("", 0, 2, &s, &a) == 0);
  CU_ASSERT_FATAL(a.baseline >= 0);
  const sim_advised *b = &a.pts[a.baseline], *t = top(&a);
  CU_ASSERT_STRING_EQUAL(b->why, "the scenario as given");
  CU_ASSERT_FATAL(t != NULL);
  CU_ASSERT_STRING_EQUAL(t->r.pt.network->name, "IB");
  CU_ASSERT(t->bottleneck >= 0);
  double removed = b->parts_h[t->bottleneck] - t->parts_h[t->bottleneck];
  for (int k = 0; k < SIM_N_PARTS; k++)
    CU_ASSERT(b->parts_h[k] - t->parts_h[k] <= removed);
  CU_ASSERT(strstr(t->why, "network 1GbE -> IB") != NULL);
  /* The parts add up to the time to train. */
  double sum = 0;
  for (int k = 0; k < SIM_N_PARTS; k++)
    sum += t->parts_h[k];
  CU_ASSERT(fabs(sum - t->r.job.mean[SIM_JOB_TIME_H]) < 1e-6 * sum);
  sim_advice_free(&a);
  sim_scenario_free(s);
}

/* At one node the network carries nothing: one network is advised there,
 * the cheaper (1GbE, unpriced, against IB's 20 USD a node-hour), in the
 * search and in the exhaustive run, and the header says so. Other nodes
 * keep both. */
static void test_one_node_one_network(void) {
  for (int exhaustive = 0; exhaustive < 2; exhaustive++) {
    sim_scenario *s;
    sim_advice a;
    CU_ASSERT_FATAL(run("minimize = \"time_to_train_h\";", exhaustive, 2, &s, &a) == 0);
    CU_ASSERT_EQUAL(a.groups_collapsed, 1);
    CU_ASSERT_STRING_EQUAL(s->networks[a.net_one].name, "1GbE");
    long one_node = 0, elsewhere_ib = 0, other_net = 0;
    for (long i = 0; i < a.n; i++) {
      const sim_point *p = &a.pts[i].r.pt;
      one_node += p->nodes == 1;
      other_net += p->nodes == 1 && strcmp(p->network->name, "1GbE") != 0;
      elsewhere_ib += p->nodes > 1 && strcmp(p->network->name, "IB") == 0;
    }
    CU_ASSERT(one_node > 0);
    CU_ASSERT_EQUAL(other_net, 0);
    CU_ASSERT(elsewhere_ib > 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/collapsed.txt", scratch);
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    sim_advice_print(s, &a, 0.0, f);
    fclose(f);
    char *text = tu_read_file(path, NULL);
    CU_ASSERT(text && strstr(text, "at 1 node the network carries nothing: its 1 configurations on other networks "
                                   "are collapsed into 1GbE's") != NULL);
    free(text);
    sim_advice_free(&a);
    sim_scenario_free(s);
  }
}

/* An objective that is neither the time nor the cost: every point that can
 * run is simulated, but one node's on the network not advised there. */
static void test_other_objective(void) {
  sim_scenario *s;
  sim_advice a;
  CU_ASSERT_FATAL(run("maximize = \"goodput\";", 0, 2, &s, &a) == 0);
  CU_ASSERT(!a.pruned_search);
  CU_ASSERT_EQUAL(a.n, a.full_points - a.groups_collapsed * (a.full_points / a.groups));
  const sim_advised *t = top(&a);
  for (long i = 0; i < a.n; i++)
    CU_ASSERT(a.pts[i].r.job.mean[SIM_JOB_GOODPUT] <= t->r.job.mean[SIM_JOB_GOODPUT]);
  sim_advice_free(&a);
  sim_scenario_free(s);
}

/* A deadline no point meets: an error at its line naming the closest. */
static void test_deadline_unmet(void) {
  sim_scenario *s;
  sim_advice a;
  char text[4096];
  snprintf(text, sizeof text, STUDY("%s"), "deadline_h = 0.001;");
  CU_ASSERT_FATAL((s = load(text)) != NULL);
  sim_advise_opts o = {.jobs = 2};
  CU_ASSERT_FATAL(sim_advise_run(s, &o, &a) == 0);
  core_err_clear();
  CU_ASSERT_EQUAL(sim_advice_rank(s, &a), CORE_EINVAL);
  const char *msg = core_err_msg();
  char where[4200];
  snprintf(where, sizeof where, "%s:15: no point meets the deadline of 0.001 h; the closest of the ",
      TU_DATA("tiny-plan.cfg"));
  CU_ASSERT(strncmp(msg, where, strlen(where)) == 0);
  CU_ASSERT(strstr(msg, "relax the deadline") != NULL);
  if (strncmp(msg, where, strlen(where)))
    fprintf(stderr, "\n    %s", msg);
  sim_advice_free(&a);
  sim_scenario_free(s);
}

/* advise.objective's words are shorthands: "cost" under a deadline is
 * minimize cost_usd within it, "time" under a budget minimize
 * time_to_train_h within it. */
static void test_objective_words(void) {
  static const struct {
    const char *word, *same;
  } cases[] = {
      {"objective = \"cost\"; deadline_h = 30.0;", "minimize = \"cost_usd\"; deadline_h = 30.0;"},
      {"objective = \"time\"; budget_usd = 3000.0;", "minimize = \"time_to_train_h\"; budget_usd = 3000.0;"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    char text[4096], same[4096], a[200], b[200];
    snprintf(text, sizeof text, STUDY("%s"), cases[k].word);
    snprintf(same, sizeof same, STUDY("%s"), cases[k].same);
    sim_scenario *s = load(text), *t = load(same);
    CU_ASSERT_FATAL(s && t);
    CU_ASSERT_STRING_EQUAL(
        sim_objective_text(&s->objective, a, sizeof a), sim_objective_text(&t->objective, b, sizeof b));
    CU_ASSERT_EQUAL(s->objective.col, t->objective.col);
    CU_ASSERT(!s->objective.maximize);
    sim_scenario_free(s);
    sim_scenario_free(t);
  }
}

/* Studies advise refuses before simulating anything. */
static void test_refused(void) {
  static const struct {
    const char *from, *to, *expect;
  } cases[] = {
      {"nodes = [1, 2, 4, 8, 16]", "nodes = 4", NULL}, /* still something to choose */
      {"mtbf_h = 20.0;", "mtbf_h = [20.0, 40.0];",
          ":12: failures.mtbf_h has 2 values, and advise chooses among what you may change"},
      {"job = { samples = 2e10; };", "job = { steps = 1e6; };",
          ":11: the points advise compares differ in their global batch"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    char text[4096], edited[4096];
    snprintf(text, sizeof text, STUDY("%s"), "");
    const char *at = strstr(text, cases[k].from);
    CU_ASSERT_FATAL(at != NULL);
    snprintf(edited, sizeof edited, "%.*s%s%s", (int)(at - text), text, cases[k].to, at + strlen(cases[k].from));
    sim_scenario *s = load(edited);
    CU_ASSERT_FATAL(s != NULL);
    core_err_clear();
    int rc = sim_advise_check(s);
    if (!cases[k].expect) {
      CU_ASSERT_EQUAL(rc, 0);
    } else {
      CU_ASSERT_EQUAL(rc, CORE_EINVAL);
      CU_ASSERT(strstr(core_err_msg(), cases[k].expect) != NULL);
      if (!strstr(core_err_msg(), cases[k].expect))
        fprintf(stderr, "\n    %s", core_err_msg());
    }
    sim_scenario_free(s);
  }
  /* Nothing to choose: the search space is empty. */
  const char *one =
      "profile = \"../../scenarios/profiles/dgx-h100.cfg\"; model = \"../../scenarios/models/mlp.cfg\";\n"
      "training = { batch = 64; precision = \"bf16\"; }; cluster = { nodes = 2; devices_per_node = 8; };\n"
      "networks = ( { name = \"IB\"; gbps = 200.0; latency_us = 14.0; } ); job = { samples = 1e9; };\n";
  sim_scenario *s = load(one);
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL(sim_advise_check(s), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "the search space is empty") != NULL);
  sim_scenario_free(s);
  /* No job: no time to train. */
  s = load("profile = \"../../scenarios/profiles/dgx-h100.cfg\"; model = \"../../scenarios/models/mlp.cfg\";\n"
           "training = { batch = 64; precision = \"bf16\"; }; cluster = { nodes = [1, 2]; devices_per_node = 8; };\n"
           "networks = ( { name = \"IB\"; gbps = 200.0; latency_us = 14.0; } );\n");
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL(sim_advise_check(s), CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "add job = { samples = N; }") != NULL);
  sim_scenario_free(s);
}

/* Two batches, the larger one past a capacity set between their estimates. */
static const char *const two_batches =
    "name = \"fit\";\n"
    "profile = \"../../scenarios/profiles/dgx-h100.cfg\";\n"
    "model = \"../../scenarios/models/mlp.cfg\";\n"
    "training = { batch = [64, 4096]; precision = \"bf16\"; };\n"
    "cluster = { nodes = [1, 2]; devices_per_node = 8; };\n"
    "networks = ( { name = \"IB\"; gbps = 200.0; latency_us = 14.0; nics_per_node = 8; } );\n"
    "job = { samples = 2e10; };\n"
    "failures = { mtbf_h = 20.0; restart_s = 60.0; mttr_h = 2.0; };\n"
    "checkpoint = { every_s = [300.0, 900.0]; };\n"
    "simulation = { steps = 3; replications = 20; };\n"
    "advise = { minimize = \"time_to_train_h\"; };\n";

/* Advice from two_batches with device.memory_GB = gb (0: unchecked). */
static int run_fit(double gb, int exhaustive, sim_scenario **s, sim_advice *a) {
  if (!(*s = load(two_batches)))
    return -1;
  (*s)->profile->memory_GB = gb;
  sim_advise_opts o = {.jobs = 2, .exhaustive = exhaustive};
  int rc = sim_advise_run(*s, &o, a);
  return rc ? rc : sim_advice_rank(*s, a);
}

/* A point that does not fit in the GPUs' memory is never advised, though
 * it would be the fastest; with every point too large, advise says so. */
static void test_no_fit_not_advised(void) {
  sim_scenario *s = load(two_batches);
  CU_ASSERT_FATAL(s != NULL);
  sim_memfit small, large;
  sim_memfit_estimate(s->models[0], SIM_PREC_BF16, 64, s->optimizer, 0, 1, &small);
  sim_memfit_estimate(s->models[0], SIM_PREC_BF16, 4096, s->optimizer, 0, 1, &large);
  CU_ASSERT_FATAL(large.total > small.total);
  double between = (small.total + large.total) / 2 / 1e9;
  sim_scenario_free(s);

  sim_advice a;
  CU_ASSERT_FATAL(run_fit(0, 0, &s, &a) == 0);
  CU_ASSERT_FATAL(top(&a) != NULL);
  CU_ASSERT_EQUAL(top(&a)->r.pt.batch, 4096); /* the fastest, where memory is not checked */
  CU_ASSERT_EQUAL(a.ooms, 0);
  sim_advice_free(&a);
  sim_scenario_free(s);

  for (int exhaustive = 0; exhaustive < 2; exhaustive++) {
    CU_ASSERT_FATAL(run_fit(between, exhaustive, &s, &a) == 0);
    CU_ASSERT(a.ooms > 0);
    long large_batch = 0;
    for (long i = 0; i < a.n; i++)
      large_batch += a.pts[i].r.pt.batch == 4096 || strcmp(a.pts[i].r.status, "ok") != 0;
    CU_ASSERT_EQUAL(large_batch, 0);
    CU_ASSERT_FATAL(top(&a) != NULL);
    CU_ASSERT_EQUAL(top(&a)->r.pt.batch, 64);
    sim_advice_free(&a);
    sim_scenario_free(s);
  }

  CU_ASSERT(run_fit(small.total / 2 / 1e9, 0, &s, &a) == CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "do not fit in the GPUs' memory") != NULL);
  CU_ASSERT(strstr(core_err_msg(), "device.memory_GB") != NULL);
  sim_advice_free(&a);
  sim_scenario_free(s);
}

/* With progress reported from the start: a line on stderr that counts the
 * configurations, and the same advice CSV as without. */
static void test_progress(void) {
  char quiet[4200], loud[4200], err[4200], text[4096];
  snprintf(quiet, sizeof quiet, "%s/quiet.csv", scratch);
  snprintf(loud, sizeof loud, "%s/loud.csv", scratch);
  snprintf(err, sizeof err, "%s/stderr.txt", scratch);
  snprintf(text, sizeof text, STUDY("%s"), "minimize = \"cost_usd\";");
  for (int k = 0; k < 2; k++) {
    sim_scenario *s = load(text);
    CU_ASSERT_FATAL(s != NULL);
    sim_advise_opts o = {.jobs = 2, .progress = k, .progress_after_s = 0};
    sim_advice a;
    fflush(stderr);
    int saved = dup(2), fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_FATAL(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    int rc = sim_advise_run(s, &o, &a);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CU_ASSERT_FATAL(rc == 0 && sim_advice_rank(s, &a) == 0);
    CU_ASSERT_FATAL(sim_advice_write_csv(s, &a, k ? loud : quiet) == 0);
    sim_advice_free(&a);
    sim_scenario_free(s);
    char *said = tu_read_file(err, NULL);
    CU_ASSERT_FATAL(said != NULL);
    CU_ASSERT_EQUAL(strstr(said, "advise: ") != NULL && strstr(said, " of 10 configurations, ") != NULL, k);
    free(said);
  }
  char *a = tu_read_file(quiet, NULL), *b = tu_read_file(loud, NULL);
  CU_ASSERT(a && b && strcmp(a, b) == 0);
  free(a);
  free(b);
}

/* Two configurations of one point each, their failures replicated enough
 * that the progress thread has ticked and gone to sleep when the search
 * ends (a shorter search may end before its first tick). */
#define SMALL                                                                                                          \
  "name = \"small-plan\";\n"                                                                                           \
  "profile = \"../../scenarios/profiles/dgx-h100.cfg\";\n"                                                             \
  "model = \"../../scenarios/models/mlp.cfg\";\n"                                                                      \
  "training = { batch = 64; precision = \"bf16\"; };\n"                                                                \
  "cluster = { nodes = [1, 2]; devices_per_node = 8; };\n"                                                             \
  "networks = ( { name = \"IB\"; gbps = 200.0; latency_us = 14.0; nics_per_node = 8; } );\n"                           \
  "cost = { gpu_hour_usd = 2.0; };\n"                                                                                  \
  "job = { samples = 2e8; };\n"                                                                                        \
  "failures = { mtbf_h = 20.0; restart_s = 60.0; mttr_h = 2.0; };\n"                                                   \
  "checkpoint = { every_s = 600.0; };\n"                                                                               \
  "simulation = { steps = 2; replications = 2000; };\n"                                                                \
  "advise = { minimize = \"cost_usd\"; };\n"

/* The fastest of three searches with progress on (k = 1) or off, in s. */
static double fastest_search(int k) {
  double best = INFINITY;
  for (int i = 0; i < 3; i++) {
    sim_scenario *s = load(SMALL);
    CU_ASSERT_FATAL(s != NULL);
    sim_advise_opts o = {.jobs = 1, .progress = k, .progress_after_s = 1e9};
    sim_advice a;
    double t0 = core_now();
    CU_ASSERT_FATAL(sim_advise_run(s, &o, &a) == 0);
    best = fmin(best, core_now() - t0);
    sim_advice_free(&a);
    sim_scenario_free(s);
  }
  return best;
}

/* The end of the search wakes the progress thread at once: with progress
 * on, the search takes under 150 ms longer than without (the fastest of
 * three each, so a loaded machine's delays mostly pass), where a thread
 * that slept out its poll would make it end at the poll, 200 ms. */
static void test_progress_ends_at_once(void) {
  double off = fastest_search(0), on = fastest_search(1);
  if (!(on < off + 0.15))
    fprintf(stderr, "\n  %.3f s with progress, %.3f s without", on, off);
  CU_ASSERT(on < off + 0.15);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("advise", suite_init, suite_clean);
  CU_add_test(s, "the search finds the exhaustive run's front and best", test_same_as_exhaustive);
  CU_add_test(s, "the same advice with any number of workers", test_any_workers);
  CU_add_test(s, "each recommendation's reason against the scenario as given", test_reasons);
  CU_add_test(s, "one network at one node, where it carries nothing", test_one_node_one_network);
  CU_add_test(s, "any other objective simulates every point", test_other_objective);
  CU_add_test(s, "a deadline no point meets names the closest", test_deadline_unmet);
  CU_add_test(s, "studies advise cannot search are refused", test_refused);
  CU_add_test(s, "objective = \"time\" or \"cost\" is minimize of its column", test_objective_words);
  CU_add_test(s, "points that do not fit in memory are not advised", test_no_fit_not_advised);
  CU_add_test(s, "progress on stderr changes nothing in the advice", test_progress);
  CU_add_test(s, "the progress thread ends with the search, not a poll later", test_progress_ends_at_once);
}

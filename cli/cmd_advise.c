/* ddpsim advise: search what a scenario lets the user change for the points
 * that best meet its objective (sim/advise.h), rank them with the reason
 * for each (sim/advice.h), write DIR/NAME-advice.csv and the Pareto plot of
 * cost against time to train. */
#include "cli.h"

#include "sim/advice.h"
#include "sim/advise.h"
#include "sim/scenario.h"

#include "core/afile.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/progress.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char cli_advise_help[] = "Usage: ddpsim advise SCENARIO [-o DIR] [--profile P] [--seed N] [-j N] [--exhaustive]\n"
                               "                    [--no-plot] [-q]\n"
                               "\n"
                               "Search what the scenario lets you change (its arrays of nodes, devices per\n"
                               "node, networks, backends, precisions, batches, bucket caps, overlap,\n"
                               "compression, checkpoint intervals and modes, spares) for the points that\n"
                               "best meet its objective (the advise group: objective = \"time\" or \"cost\",\n"
                               "or minimize or maximize any column; time to train by default; within\n"
                               "deadline_h and budget_usd), and print\n"
                               "them ranked, each with the part of the run it shortens against the scenario\n"
                               "as given (exposed communication, checkpoint stalls, lost work, time down,\n"
                               "compute spread over more devices) and what it changes. The scenario needs\n"
                               "job = { samples = N; } (or steps or hours when the global batch is fixed).\n"
                               "For the time to train or the cost, the search skips what bounds show cannot\n"
                               "be on the front of time against cost, and says how many points it\n"
                               "simulated; any other objective simulates every point that can run.\n"
                               "Points that time out or do not fit in the GPUs' memory are not advised.\n"
                               "Writes DIR/NAME-advice.csv (every simulated point in rank order: rank, the\n"
                               "settings, time_to_train_h, cost_usd, goodput, pareto, ...) and, with prices,\n"
                               "DIR/NAME-advice-pareto.png and .svg (gnuplot). Nothing is written when no\n"
                               "point meets the deadline or the budget: the error names the closest ones.\n"
                               "\n"
                               "Options:\n"
                               "  -o, --out DIR      directory for the CSV and the plot (default: results)\n"
                               "      --profile FILE use this profile instead of the scenario's\n"
                               "      --seed N       override simulation.seed\n"
                               "  -j, --jobs N       worker threads (default: one per CPU; the advice is the\n"
                               "                     same whatever N)\n"
                               "      --exhaustive   simulate every point of the product (to check the search)\n"
                               "      --no-plot      no Pareto plot\n"
                               "  -q, --quiet        no table\n"
                               "      --progress on|off  progress on stderr when the search runs longer than a\n"
                               "                     few seconds (default: on when stderr is a terminal)\n"
                               "\n"
                               "Example:\n"
                               "  ddpsim advise scenarios/plan.cfg -o results\n";

typedef struct opts {
  const char *out, *profile;
  long seed, jobs;
  int exhaustive, plot, quiet, progress;
} opts;

/* 0, 1 after --help, or an exit status for a usage error. */
static int parse_args(int argc, char **argv, opts *o) {
  static const struct option lo[] = {{"out", required_argument, NULL, 'o'}, {"profile", required_argument, NULL, 'F'},
      {"seed", required_argument, NULL, 's'}, {"jobs", required_argument, NULL, 'j'},
      {"exhaustive", no_argument, NULL, 'E'}, {"no-plot", no_argument, NULL, 'P'}, {"quiet", no_argument, NULL, 'q'},
      {"progress", required_argument, NULL, 'G'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:j:qh", lo, NULL)) != -1) {
    switch (c) {
    case 'o': o->out = optarg; break;
    case 'F': o->profile = optarg; break;
    case 's':
      if (cli_parse_long("advise", "--seed", optarg, 0, 0x7fffffffffffffffL, &o->seed))
        return CLI_EXIT_USAGE;
      break;
    case 'j':
      if (cli_parse_long("advise", "--jobs", optarg, 1, 1024, &o->jobs))
        return CLI_EXIT_USAGE;
      break;
    case 'E': o->exhaustive = 1; break;
    case 'P': o->plot = 0; break;
    case 'q': o->quiet = 1; break;
    case 'G':
      if (strcmp(optarg, "on") && strcmp(optarg, "off"))
        return cli_usage("advise", "--progress expects on or off, got '%s'", optarg);
      o->progress = !strcmp(optarg, "on");
      break;
    case 'h': fputs(cli_advise_help, stdout); return 1;
    case ':': return cli_usage("advise", "option %s needs a value", argv[optind - 1]);
    default: return cli_usage("advise", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cli_usage("advise",
        optind >= argc ? "missing SCENARIO file" : "expected one SCENARIO file, got %d arguments", argc - optind);
  return 0;
}

/* The plot, when the study has prices (its y axis is the cost). */
static int plot(const sim_scenario *s, const char *csv, const char *out, int quiet) {
  char title[512], obj[256];
  if (!s->prices.priced) {
    if (!quiet)
      printf("no Pareto plot: the study has no prices (add a cost group, scenarios/README.md)\n");
    return 0;
  }
  snprintf(title, sizeof title, "%s: cost against time to train (%s)", s->name,
      sim_objective_text(&s->objective, obj, sizeof obj));
  return cli_plot_pareto(csv, out, title, s->objective.deadline_h, s->objective.budget_usd);
}

int cli_cmd_advise(int argc, char **argv) {
  opts o = {.out = "results", .seed = -1, .plot = 1, .progress = isatty(2)};
  int rc = parse_args(argc, argv, &o);
  if (rc)
    return rc == 1 ? CLI_EXIT_OK : rc;
  sim_scenario *s;
  if ((rc = sim_scenario_load_with(argv[optind], o.profile, &s)) != 0)
    return cli_fail("advise", rc);
  if (o.seed >= 0)
    s->seed = (uint64_t)o.seed;
  char csv[8192];
  snprintf(csv, sizeof csv, "%s/%s-advice.csv", o.out, s->name);
  sim_advise_opts ao = {.jobs = (int)o.jobs,
      .exhaustive = o.exhaustive,
      .progress = o.progress,
      .progress_after_s = CORE_PROGRESS_AFTER_S};
  sim_advice a;
  core_made_dirs made = {0}; /* -o's directories, taken back if the run fails while they are empty */
  double t0 = core_now();
  if ((rc = sim_advise_check(s)) != 0 || (o.plot && s->prices.priced && (rc = cli_plot_check_paths(csv, o.out)) != 0) ||
      (rc = core_mkdirs_made(o.out, &made)) != 0 || (rc = core_afile_check(csv)) != 0 ||
      (o.plot && s->prices.priced && (rc = cli_plot_check_pareto(csv, o.out)) != 0))
    goto fail_scenario;
  cli_warn_traced("advise", s);
  if ((rc = sim_advise_run(s, &ao, &a)) != 0)
    goto fail_scenario;
  if ((rc = sim_advice_rank(s, &a)) != 0 || (rc = sim_advice_write_csv(s, &a, csv)) != 0)
    goto fail_advice;
  if (!o.quiet) {
    sim_advice_print(s, &a, core_now() - t0, stdout);
    printf("wrote %s\n", csv);
  }
  fflush(stdout);
  if (o.plot && (rc = plot(s, csv, o.out, o.quiet)) != 0)
    goto fail_advice;
  sim_advice_free(&a);
  sim_scenario_free(s);
  return CLI_EXIT_OK;
fail_advice:
  sim_advice_free(&a);
fail_scenario:
  sim_scenario_free(s);
  core_made_dirs_undo(&made);
  return cli_fail("advise", rc);
}

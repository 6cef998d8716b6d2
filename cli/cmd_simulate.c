/* ddpsim simulate: run a scenario's sweep, write its CSV, print a summary. */
#include "cli.h"

#include "sim/scenario.h"
#include "sim/shard.h"
#include "sim/summary.h"
#include "sim/sweep.h"
#include "sim/tb.h"

#include "core/afile.h"
#include "core/err.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cli_simulate_help[] =
    "Usage: ddpsim simulate SCENARIO [options]\n"
    "\n"
    "Predict step time, compute, communication, exposed communication,\n"
    "throughput and scaling efficiency for every point of the scenario's sweep\n"
    "(the Cartesian product of its arrays and lists), write one CSV row per\n"
    "point and print a summary table with a column for every swept dimension.\n"
    "With a job group, also the whole run (time to train, goodput, ETTR,\n"
    "failures and waste, with 95% intervals; more replications where the best\n"
    "checkpoint interval is not told apart yet, ties named); with prices, the\n"
    "cost. Nothing is written if the scenario is invalid or any point fails.\n"
    "\n"
    "Options:\n"
    "  -o, --out DIR        directory for the CSV (default: results)\n"
    "      --profile FILE   use this profile instead of the scenario's (e.g. one\n"
    "                       `ddpsim calibrate` made of your machines; a traced\n"
    "                       GPU job on another GPU's profile is retargeted)\n"
    "      --seed N         override simulation.seed (same seed, same bytes)\n"
    "  -j, --jobs N         worker threads (default: one per CPU)\n"
    "      --shard I/N      run only shard I of N (a Slurm array task): the\n"
    "                       step-level configurations c with c % N == I; writes\n"
    "                       DIR/NAME.shard-I-of-N.csv, and `ddpsim merge` puts\n"
    "                       the shards together into the unsharded CSV\n"
    "      --trace FILE     write a Chrome/Perfetto trace-event JSON of one step\n"
    "      --trace-point K  with --trace: the point to trace (default 0, the first\n"
    "                       row)\n"
    "      --trace-ranks R  with --trace: ranks to include (default 8)\n"
    "      --plot           also draw the plots into the same directory: scaling,\n"
    "                       compression (when swept), goodput (with failures);\n"
    "                       not with --shard\n"
    "      --tensorboard DIR  also each point's predicted figures as TensorBoard\n"
    "                       scalars (Predicted/StepTime, ExposedComm,\n"
    "                       SamplesPerSec, Goodput, ...) against the innermost\n"
    "                       swept dimension, one run per combination of the\n"
    "                       others, in DIR/NAME/...; not with --shard\n"
    "  -q, --quiet          no summary table\n"
    "      --progress on|off  progress on stderr when the study runs longer than a\n"
    "                       few seconds (default: on when stderr is a terminal)\n"
    "\n"
    "Example:\n"
    "  ddpsim simulate scenarios/gigabit-vs-ib.cfg -o results --plot\n";

/* "I/N" with 0 <= I < N <= 1000000; 0 or -1. */
static int parse_shard(const char *s, int *shard, int *n_shards) {
  char *slash, *end;
  errno = 0;
  long i = strtol(s, &slash, 10), n = *slash == '/' ? strtol(slash + 1, &end, 10) : -1;
  if (errno || slash == s || *slash != '/' || end == slash + 1 || *end || n < 1 || n > 1000000 || i < 0 || i >= n)
    return -1;
  *shard = (int)i;
  *n_shards = (int)n;
  return 0;
}

int cli_cmd_simulate(int argc, char **argv) {
  static const struct option opts[] = {
      {"out", required_argument, NULL, 'o'},   {"seed", required_argument, NULL, 's'},
      {"jobs", required_argument, NULL, 'j'},  {"shard", required_argument, NULL, 'S'},
      {"trace", required_argument, NULL, 't'}, {"trace-point", required_argument, NULL, 'P'},
      {"trace-ranks", required_argument, NULL, 'R'}, {"plot", no_argument, NULL, 'p'},
      {"quiet", no_argument, NULL, 'q'},       {"help", no_argument, NULL, 'h'},
      {"profile", required_argument, NULL, 'F'}, {"progress", required_argument, NULL, 'G'},
      {"tensorboard", required_argument, NULL, 'T'},
      {NULL, 0, NULL, 0}};
  const char *out_dir = "results", *trace = NULL, *profile = NULL, *tensorboard = NULL;
  long seed = -1, jobs = 0, trace_point = 0, trace_ranks = 8;
  int shard = 0, n_shards = 1, plot = 0, quiet = 0, progress = isatty(2), trace_opts = 0, c, rc;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:j:qh", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out_dir = optarg; break;
    case 's':
      if (cli_parse_long("simulate", "--seed", optarg, 0, 0x7fffffffffffffffL, &seed))
        return CLI_EXIT_USAGE;
      break;
    case 'j':
      if (cli_parse_long("simulate", "--jobs", optarg, 1, 1024, &jobs))
        return CLI_EXIT_USAGE;
      break;
    case 'S':
      if (parse_shard(optarg, &shard, &n_shards) != 0)
        return cli_usage("simulate", "--shard expects I/N with 0 <= I < N <= 1000000, e.g. --shard 0/4, got '%s'", optarg);
      break;
    case 't': trace = optarg; break;
    case 'P':
      if (cli_parse_long("simulate", "--trace-point", optarg, 0, 0x7fffffffL, &trace_point))
        return CLI_EXIT_USAGE;
      trace_opts = 1;
      break;
    case 'R':
      if (cli_parse_long("simulate", "--trace-ranks", optarg, 1, 4096, &trace_ranks))
        return CLI_EXIT_USAGE;
      trace_opts = 1;
      break;
    case 'p': plot = 1; break;
    case 'F': profile = optarg; break;
    case 'T': tensorboard = optarg; break;
    case 'G':
      if (strcmp(optarg, "on") && strcmp(optarg, "off"))
        return cli_usage("simulate", "--progress expects on or off, got '%s'", optarg);
      progress = !strcmp(optarg, "on");
      break;
    case 'q': quiet = 1; break;
    case 'h': fputs(cli_simulate_help, stdout); return CLI_EXIT_OK;
    case ':': return cli_usage("simulate", "option %s needs a value", argv[optind - 1]);
    default: return cli_usage("simulate", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cli_usage("simulate", optind >= argc ? "missing SCENARIO file" : "expected one SCENARIO file, got %d arguments",
                     argc - optind);
  if (trace_opts && !trace)
    return cli_usage("simulate", "--trace-point and --trace-ranks choose what --trace FILE writes; give --trace FILE too");
  if (plot && n_shards > 1)
    return cli_usage("simulate", "--plot draws the whole study, which one shard does not hold; merge the shards with `ddpsim merge SCENARIO --shards N --plot`");
  if (tensorboard && n_shards > 1)
    return cli_usage("simulate", "--tensorboard writes the whole study's curves, which one shard does not hold; run it without --shard");

  sim_scenario *s;
  if ((rc = sim_scenario_load_with(argv[optind], profile, &s)) != 0)
    return cli_fail("simulate", rc);
  if (seed >= 0)
    s->seed = (uint64_t)seed;

  sim_sweep_opts o = {.jobs = (int)jobs, .shard = shard, .n_shards = n_shards,
                      .trace_point = trace ? trace_point : -1, .trace_path = trace,
                      .trace_ranks = (int)trace_ranks, .progress = progress,
                      .progress_after_s = SIM_SWEEP_PROGRESS_AFTER_S};
  sim_sweep w;
  char csv[8192];
  if (n_shards > 1)
    sim_shard_csv_path(s, out_dir, shard, n_shards, csv, sizeof csv);
  else
    snprintf(csv, sizeof csv, "%s/%s", out_dir, s->csv_name);
  /* -o's directory is made now: the trace may go into it. */
  if ((rc = core_mkdirs(out_dir)) != 0)
    goto fail_scenario;
  if (trace && (rc = core_afile_check(trace)) != 0) {
    rc = core_err_wrap(rc, "--trace");
    goto fail_scenario;
  }
  if (tensorboard && (rc = sim_tb_check(s, tensorboard)) != 0)
    goto fail_scenario;
  if ((rc = sim_sweep_run(s, &o, &w)) != 0)
    goto fail_scenario;
  if ((rc = core_mkdirs(out_dir)) != 0 || (rc = sim_sweep_write_csv(s, &w, csv, shard == 0)) != 0)
    goto fail_sweep;
  if (tensorboard && (rc = sim_tb_write(s, &w, tensorboard)) != 0)
    goto fail_sweep;
  if (!quiet) {
    sim_summary_print(s, &w, stdout);
    printf("wrote %s%s%s\n", csv, trace ? " and " : "", trace ? trace : "");
    if (tensorboard)
      printf("wrote TensorBoard event files under %s/%s\n", tensorboard, s->name);
  }
  sim_sweep_free(&w);
  sim_scenario_free(s);
  if (plot && n_shards == 1) {
    if ((rc = cli_plot_auto(csv, out_dir)) != 0)
      return cli_fail("simulate", rc);
  }
  return CLI_EXIT_OK;
fail_sweep:
  sim_sweep_free(&w);
fail_scenario:
  sim_scenario_free(s);
  return cli_fail("simulate", rc);
}

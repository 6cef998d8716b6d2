/* ddpsim simulate: run a scenario's sweep, write its CSV, print a summary. */
#include "cli.h"

#include "sim/scenario.h"
#include "sim/shard.h"
#include "sim/summary.h"
#include "sim/sweep.h"
#include "sim/tb.h"

#include "core/afile.h"
#include "core/err.h"
#include "core/path.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cli_simulate_help[] = "Usage: ddpsim simulate SCENARIO [options]\n"
                                 "\n"
                                 "Predict step time, compute, communication, exposed communication,\n"
                                 "throughput and scaling efficiency for every point of the scenario's sweep\n"
                                 "(the Cartesian product of its arrays and lists), write one CSV row per\n"
                                 "point and print a summary table with a column for every swept dimension.\n"
                                 "With a job group, also the whole run (time to train, goodput, ETTR,\n"
                                 "failures and waste, with 95% intervals; more replications where the best\n"
                                 "checkpoint interval is not told apart yet, ties named); with prices, the\n"
                                 "cost. Each point's memory per GPU is estimated (mem_GB); where it exceeds\n"
                                 "the profile's device.memory_GB the point's status is oom, with a note.\n"
                                 "Nothing is written if the scenario is invalid or any point fails.\n"
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

typedef struct opts {
  const char *out_dir, *trace, *profile, *tensorboard;
  long seed, jobs, trace_point, trace_ranks;
  int shard, n_shards, sharded, plot, quiet, progress, trace_opts; /* sharded: --shard given, even 0/1 */
} opts;

/* One option c with argument arg: 0, 1 after --help, or an exit status for
 * a usage error. */
static int parse_opt(int c, const char *arg, char **argv, opts *o) {
  switch (c) {
  case 'o': o->out_dir = arg; return 0;
  case 's': return cli_parse_long("simulate", "--seed", arg, 0, 0x7fffffffffffffffL, &o->seed) ? CLI_EXIT_USAGE : 0;
  case 'j': return cli_parse_long("simulate", "--jobs", arg, 1, 1024, &o->jobs) ? CLI_EXIT_USAGE : 0;
  case 'S':
    if (parse_shard(arg, &o->shard, &o->n_shards) != 0)
      return cli_usage("simulate", "--shard expects I/N with 0 <= I < N <= 1000000, e.g. --shard 0/4, got '%s'", arg);
    o->sharded = 1;
    return 0;
  case 't': o->trace = arg; return 0;
  case 'P':
    o->trace_opts = 1;
    return cli_parse_long("simulate", "--trace-point", arg, 0, 0x7fffffffL, &o->trace_point) ? CLI_EXIT_USAGE : 0;
  case 'R':
    o->trace_opts = 1;
    return cli_parse_long("simulate", "--trace-ranks", arg, 1, 4096, &o->trace_ranks) ? CLI_EXIT_USAGE : 0;
  case 'p': o->plot = 1; return 0;
  case 'F': o->profile = arg; return 0;
  case 'T': o->tensorboard = arg; return 0;
  case 'G':
    if (strcmp(arg, "on") && strcmp(arg, "off"))
      return cli_usage("simulate", "--progress expects on or off, got '%s'", arg);
    o->progress = !strcmp(arg, "on");
    return 0;
  case 'q': o->quiet = 1; return 0;
  case 'h': fputs(cli_simulate_help, stdout); return 1;
  case ':': return cli_usage("simulate", "option %s needs a value", argv[optind - 1]);
  default: return cli_usage("simulate", "unknown option '%s'", argv[optind - 1]);
  }
}

/* 0, 1 after --help, or an exit status for a usage error. */
static int parse_args(int argc, char **argv, opts *o) {
  static const struct option lo[] = {{"out", required_argument, NULL, 'o'}, {"seed", required_argument, NULL, 's'},
      {"jobs", required_argument, NULL, 'j'}, {"shard", required_argument, NULL, 'S'},
      {"trace", required_argument, NULL, 't'}, {"trace-point", required_argument, NULL, 'P'},
      {"trace-ranks", required_argument, NULL, 'R'}, {"plot", no_argument, NULL, 'p'},
      {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'}, {"profile", required_argument, NULL, 'F'},
      {"progress", required_argument, NULL, 'G'}, {"tensorboard", required_argument, NULL, 'T'}, {NULL, 0, NULL, 0}};
  int c, rc;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:j:qh", lo, NULL)) != -1)
    if ((rc = parse_opt(c, optarg, argv, o)) != 0)
      return rc;
  if (optind != argc - 1)
    return cli_usage("simulate",
        optind >= argc ? "missing SCENARIO file" : "expected one SCENARIO file, got %d arguments", argc - optind);
  if (o->trace_opts && !o->trace)
    return cli_usage(
        "simulate", "--trace-point and --trace-ranks choose what --trace FILE writes; give --trace FILE too");
  if (o->plot && o->sharded)
    return cli_usage("simulate", "--plot draws the whole study, which one shard does not hold; merge the shards with "
                                 "`ddpsim merge SCENARIO --shards N --plot`");
  if (o->tensorboard && o->sharded)
    return cli_usage("simulate",
        "--tensorboard writes the whole study's curves, which one shard does not hold; run it without --shard");
  return 0;
}

/* Does path name a file that --plot writes for the CSV csv in dir: a
 * model's plot of any kind, or the data file drawn beside them? */
static int plot_writes(const sim_scenario *s, const char *dir, const char *csv, const char *path) {
  static const char *const kinds[] = {"scaling", "compression", "goodput", "fabric"};
  static const char *const data[] = {"scaling.csv", "speedup.csv", "breakeven.csv"};
  const char *base = core_path_base(csv);
  int stem = core_path_stem_len(base, ".csv");
  char p[8400];
  for (int m = 0; m < s->n_models; m++)
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
      for (int svg = 0; svg < 2; svg++) {
        snprintf(p, sizeof p, "%s/%.*s-%s-%s.%s", dir, stem, base, s->models[m]->name, kinds[k], svg ? "svg" : "png");
        if (core_path_same_file(path, p))
          return 1;
      }
  for (size_t k = 0; k < sizeof data / sizeof *data; k++) {
    snprintf(p, sizeof p, "%s/.%.*s-%s", dir, stem, base, data[k]);
    if (core_path_same_file(path, p))
      return 1;
  }
  return 0;
}

/* Outputs of one run that would replace one another (the trace, the CSV,
 * the TensorBoard directory, the plots) are refused before the work. */
static int check_apart(const sim_scenario *s, const opts *o, const char *csv) {
  if (o->trace && core_path_same_file(o->trace, csv))
    return core_err_set(
        CORE_EUSAGE, "--trace %s is the CSV this run writes (%s); name another file for the trace", o->trace, csv);
  const char *file = !o->tensorboard                                             ? NULL
                     : core_path_same_file(o->tensorboard, csv)                  ? csv
                     : o->trace && core_path_same_file(o->tensorboard, o->trace) ? o->trace
                                                                                 : NULL;
  if (file)
    return core_err_set(CORE_EUSAGE, "--tensorboard %s is a file this run writes (%s); name a directory of its own",
        o->tensorboard, file);
  if (o->plot && o->trace && plot_writes(s, o->out_dir, csv, o->trace))
    return core_err_set(CORE_EUSAGE,
        "--trace %s is named like a file --plot draws into %s; name another file for the trace", o->trace, o->out_dir);
  if (o->plot && o->tensorboard && plot_writes(s, o->out_dir, csv, o->tensorboard))
    return core_err_set(CORE_EUSAGE,
        "--tensorboard %s is named like a file --plot draws into %s; name another directory", o->tensorboard,
        o->out_dir);
  return 0;
}

/* Runs the study and writes its CSV (path csv), trace and TensorBoard
 * files, and the summary; notes in made the directories it makes. */
static int run_made(sim_scenario *s, const opts *o, const char *csv, core_made_dirs made[2]) {
  sim_sweep_opts so = {.jobs = (int)o->jobs,
      .shard = o->shard,
      .n_shards = o->n_shards,
      .trace_point = o->trace ? o->trace_point : -1,
      .trace_path = o->trace,
      .trace_ranks = (int)o->trace_ranks,
      .progress = o->progress,
      .progress_after_s = SIM_SWEEP_PROGRESS_AFTER_S};
  sim_sweep w;
  int rc;
  /* -o's directory is made now: the trace may go into it. */
  if ((rc = core_mkdirs_made(o->out_dir, &made[0])) != 0)
    return rc;
  /* Refused outputs are refused before the work, not after it. */
  if ((rc = core_afile_check(csv)) != 0)
    return rc;
  if (o->trace && (rc = core_afile_check(o->trace)) != 0)
    return core_err_wrap(rc, "--trace");
  if ((rc = check_apart(s, o, csv)) != 0 || (o->plot && ((rc = cli_plot_check_paths(csv, o->out_dir)) != 0 ||
                                                            (rc = cli_plot_check_outputs(s, csv, o->out_dir)) != 0)))
    return rc;
  if (o->tensorboard && (rc = sim_tb_check(s, o->tensorboard, &made[1])) != 0)
    return rc;
  /* A shard is stamped with the files as they were when it started. */
  char stamp[256];
  if (o->sharded && (rc = sim_shard_stamp(s, o->shard, o->n_shards, stamp, sizeof stamp)) != 0)
    return rc;
  if ((rc = sim_sweep_run(s, &so, &w)) != 0)
    return rc;
  if ((rc = core_mkdirs(o->out_dir)) != 0 ||
      (rc = sim_sweep_write_csv(s, &w, csv, o->shard == 0, o->sharded ? stamp : NULL)) != 0)
    goto out_sweep;
  if (o->tensorboard && (rc = sim_tb_write(s, &w, o->tensorboard)) != 0)
    goto out_sweep;
  if (!o->quiet) {
    sim_summary_print(s, &w, stdout);
    printf("wrote %s%s%s\n", csv, o->trace ? " and " : "", o->trace ? o->trace : "");
    if (o->tensorboard)
      printf("wrote TensorBoard event files under %s/%s\n", o->tensorboard, s->name);
  }
out_sweep:
  sim_sweep_free(&w);
  return rc;
}

/* run_made, and a run that fails takes back the directories it made while
 * they are empty: bad input leaves nothing behind. */
static int run(sim_scenario *s, const opts *o, const char *csv) {
  core_made_dirs made[2] = {0};
  int rc = run_made(s, o, csv, made);
  if (rc) {
    core_made_dirs_undo(&made[1]);
    core_made_dirs_undo(&made[0]);
  }
  return rc;
}

int cli_cmd_simulate(int argc, char **argv) {
  opts o = {.out_dir = "results", .seed = -1, .trace_ranks = 8, .n_shards = 1, .progress = isatty(2)};
  int rc = parse_args(argc, argv, &o);
  if (rc)
    return rc == 1 ? CLI_EXIT_OK : rc;
  sim_scenario *s;
  if ((rc = sim_scenario_load_with(argv[optind], o.profile, &s)) != 0)
    return cli_fail("simulate", rc);
  if (o.seed >= 0)
    s->seed = (uint64_t)o.seed;
  cli_warn_traced("simulate", s);
  /* Every task of an array may be given --trace: the shard that holds the
   * point writes it, the others say so. */
  if (o.trace && o.sharded && o.trace_point < sim_scenario_points(s) &&
      !sim_shard_owns(s, o.shard, o.n_shards, o.trace_point))
    fprintf(stderr,
        "ddpsim simulate: note: point %ld is in shard %d of %d, not this shard (%d): this shard writes no trace "
        "%s\n",
        o.trace_point, sim_shard_of(s, o.n_shards, o.trace_point), o.n_shards, o.shard, o.trace);
  char csv[8192];
  if (o.sharded)
    sim_shard_csv_path(s, o.out_dir, o.shard, o.n_shards, csv, sizeof csv);
  else
    snprintf(csv, sizeof csv, "%s/%s", o.out_dir, s->csv_name);
  rc = run(s, &o, csv);
  int cpu = strcmp(s->profile->device_kind, "cpu") == 0;
  sim_scenario_free(s);
  if (rc)
    return cli_fail("simulate", rc);
  if (o.plot && !o.sharded && (rc = cli_plot_auto(csv, o.out_dir, cpu)) != 0)
    return cli_fail("simulate", rc);
  return CLI_EXIT_OK;
}

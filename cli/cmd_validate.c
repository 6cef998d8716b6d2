/* ddpsim validate: a prediction against a measured run. */
#include "cli.h"

#include "calibrate/import_gpu.h"
#include "calibrate/kineto.h"
#include "calibrate/validate.h"

#include "core/afile.h"
#include "core/csv.h"
#include "core/err.h"
#include "core/progress.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char cli_validate_help[] = "Usage: ddpsim validate SCENARIO --measured CSV|TRACE [options]\n"
                                 "\n"
                                 "Simulate one point of SCENARIO and compare it with a measured run's\n"
                                 "per-step metrics (the steps.csv of `ddpsim train`, or the same columns\n"
                                 "from PyTorch: rank, step, step_s, compute_s, comm_s, exposed_comm_s; comm_s\n"
                                 "may be empty in every row when communication was not timed), or a\n"
                                 "PyTorch profiler trace of the run (TRACE.json or .json.gz: its\n"
                                 "ProfilerStep spans; step time and throughput only).\n"
                                 "Prints predicted and measured step time, compute, exposed communication,\n"
                                 "communication and throughput with the relative error of each.\n"
                                 "\n"
                                 "Options:\n"
                                 "      --measured FILE    the measured run, CSV or trace (required)\n"
                                 "      --point K          the scenario point (row of `simulate`'s CSV; default 0)\n"
                                 "      --skip N           ignore steps before N (warm-up; default 3; in a\n"
                                 "                         trace, its first N steps, by default its leading\n"
                                 "                         steps more than 10% from the median of its later\n"
                                 "                         half, as `import torch-trace` leaves them out)\n"
                                 "      --tolerance X      exit with status 6 when the step-time error exceeds\n"
                                 "                         X (a fraction: 0.05 = 5%; default: report only)\n"
                                 "      --append CSV       also append one row (label, predicted and measured\n"
                                 "                         metrics, errors; empty where not measured) to CSV,\n"
                                 "                         for collecting many runs; the file is replaced\n"
                                 "                         whole with the row added, never left half-written;\n"
                                 "                         runs appending at once take turns (an flock on\n"
                                 "                         the directory; without one, as on some network\n"
                                 "                         file systems, a row can be lost)\n"
                                 "      --label TEXT       with --append: the row's label (default: the measured\n"
                                 "                         file)\n"
                                 "\n"
                                 "Exit status: 0 within tolerance (or none set); 6 beyond it; 2 and 3 as\n"
                                 "for every command (bad usage, bad input).\n";

typedef struct opts {
  const char *measured, *append, *label;
  long point, skip;
  double tol; /* < 0: none */
} opts;

enum { O_MEAS = 1000, O_POINT, O_SKIP, O_TOL, O_APPEND, O_LABEL };

/* One option c with argument arg: 0, 1 after --help, or an exit status for
 * a usage error. */
static int parse_opt(int c, const char *arg, char **argv, opts *o) {
  char *end;
  switch (c) {
  case O_MEAS: o->measured = arg; return 0;
  case O_POINT: return cli_parse_long("validate", "--point", arg, 0, 0x7fffffffL, &o->point) ? CLI_EXIT_USAGE : 0;
  case O_SKIP: return cli_parse_long("validate", "--skip", arg, 0, 1L << 40, &o->skip) ? CLI_EXIT_USAGE : 0;
  case O_TOL:
    o->tol = strtod(arg, &end) + 0.0; /* "-0" is 0: printed without a sign */
    if (end == arg || *end || !(o->tol >= 0 && o->tol <= 100))
      return cli_usage("validate", "--tolerance expects a fraction like 0.05, got '%s'", arg);
    return 0;
  case O_APPEND: o->append = arg; return 0;
  case O_LABEL: o->label = arg; return 0;
  case 'h': fputs(cli_validate_help, stdout); return 1;
  case ':': return cli_usage("validate", "option %s needs a value", argv[optind - 1]);
  default: return cli_usage("validate", "unknown option '%s'", argv[optind - 1]);
  }
}

/* 0, 1 after --help, or an exit status for a usage error. */
static int parse_args(int argc, char **argv, opts *o) {
  static const struct option lo[] = {{"measured", required_argument, NULL, O_MEAS},
      {"point", required_argument, NULL, O_POINT}, {"skip", required_argument, NULL, O_SKIP},
      {"tolerance", required_argument, NULL, O_TOL}, {"append", required_argument, NULL, O_APPEND},
      {"label", required_argument, NULL, O_LABEL}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int c, rc;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1)
    if ((rc = parse_opt(c, optarg, argv, o)) != 0)
      return rc;
  if (optind != argc - 1)
    return cli_usage("validate", "expected one SCENARIO file");
  if (!o->measured)
    return cli_usage("validate", "missing --measured CSV");
  if (o->label && !o->append)
    return cli_usage("validate", "--label names the row --append CSV writes; give --append CSV too");
  return 0;
}

/* The comparison's table, and against --tolerance its exit status. */
static int report(const sim_scenario *s, const opts *o, const cal_validation *v) {
  const sim_point *p = &v->pred.pt;
  printf("point %ld of %s: %s, %d x %d ranks, network %s, bucket %g MB, overlap %s\n", o->point, s->path,
      p->model->name, p->nodes, p->per_node, p->network->name, p->bucket_cap_mb, p->overlap ? "on" : "off");
  printf("measured: %s, %ld step%s of %d rank%s from step %ld", o->measured, v->steps_used,
      v->steps_used == 1 ? "" : "s", v->ranks_seen, v->ranks_seen == 1 ? "" : "s", v->skip);
  if (v->rows_used != v->steps_used)
    printf(" (%ld rows)", v->rows_used);
  printf("\n");
  if (v->skip_found && v->skip > 0)
    printf("  %ld leading step%s left out as warm-up: more than %g%% from the median of the later half of the "
           "trace's steps (the rule of `import torch-trace`; --skip N to choose)\n",
        v->skip, v->skip == 1 ? "" : "s", 100 * CAL_GIMPORT_WARMUP_SHARE);
  else if (v->skip_found)
    printf("  no leading step left out: none is more than %g%% from the median of the later half of the trace's "
           "steps (the warm-up rule of `import torch-trace`; --skip N to choose)\n",
        100 * CAL_GIMPORT_WARMUP_SHARE);
  printf("\n");
  printf("%-16s %14s %14s %9s\n", "metric", "predicted", "measured", "error");
  for (int k = 0; k < CAL_N_METRICS; k++) {
    if (isnan(v->m[k].measured))
      printf("%-16s %14.6g %14s %9s\n", v->m[k].name, v->m[k].predicted, "not measured", "-");
    else
      printf(
          "%-16s %14.6g %14.6g %+8.2f%%\n", v->m[k].name, v->m[k].predicted, v->m[k].measured, v->m[k].rel_err * 100);
  }
  double err = fabs(v->m[CAL_M_STEP].rel_err);
  if (o->tol < 0)
    return CLI_EXIT_OK;
  printf("\nstep time error %.2f%% %s the tolerance of %.2f%%\n", err * 100, err <= o->tol ? "is within" : "EXCEEDS",
      o->tol * 100);
  return err <= o->tol ? CLI_EXIT_OK : CLI_EXIT_TOLERANCE; /* an error that is not a number is not within */
}

/* One row for --append CSV (its header first when the file is new):
 * CLI_EXIT_OK, or the exit status of the failure with the message printed.
 * A metric not measured, and its error, are empty cells. */
static int append_row(const opts *o, const cal_validation *v) {
  static const char *const cols[] = {"label", "model", "nodes", "gpus_per_node", "network", "bucket_cap_mb", "overlap",
      "pred_step_s", "meas_step_s", "err_step", "pred_compute_s", "meas_compute_s", "err_compute", "pred_exposed_s",
      "meas_exposed_s", "err_exposed", "pred_samples_per_s", "meas_samples_per_s", "err_samples_per_s"};
  static const int order[] = {CAL_M_STEP, CAL_M_COMPUTE, CAL_M_EXPOSED, CAL_M_THROUGHPUT};
  const sim_point *p = &v->pred.pt;
  core_csv c;
  int rc = core_csv_open_append(&c, o->append, cols, (int)(sizeof cols / sizeof *cols));
  if (rc)
    return cli_fail("validate", rc);
  core_csv_str(&c, o->label ? o->label : o->measured);
  core_csv_str(&c, p->model->name);
  core_csv_int(&c, p->nodes);
  core_csv_int(&c, p->per_node);
  core_csv_str(&c, p->network->name);
  core_csv_num(&c, p->bucket_cap_mb);
  core_csv_int(&c, p->overlap);
  for (int k = 0; k < 4; k++) {
    core_csv_num(&c, v->m[order[k]].predicted);
    core_csv_num(&c, v->m[order[k]].measured);
    core_csv_fixed(&c, v->m[order[k]].rel_err, 6);
  }
  core_csv_end_row(&c);
  return (rc = core_csv_commit(&c)) != 0 ? cli_fail("validate", rc) : CLI_EXIT_OK;
}

int cli_cmd_validate(int argc, char **argv) {
  opts o = {.skip = -1, .tol = -1}; /* skip -1: cal_validate's default */
  int rc = parse_args(argc, argv, &o);
  if (rc)
    return rc == 1 ? CLI_EXIT_OK : rc;
  sim_scenario *s;
  /* --append is checked against every input (the scenario, the files it
   * names, the measured run) before any work, so a refusal prints nothing. */
  if ((rc = sim_scenario_load(argv[optind], &s)) != 0)
    return cli_fail("validate", rc);
  core_afile_note_input(o.measured);
  if (o.append && (rc = core_afile_check(o.append)) != 0) {
    sim_scenario_free(s);
    return cli_fail("validate", rc);
  }
  cal_validation v;
  cal_ktrace_progress("validate", CORE_PROGRESS_AFTER_S); /* a measured trace of a GB reads for a minute */
  if ((rc = cal_validate(s, o.point, o.measured, o.skip, &v)) != 0) {
    sim_scenario_free(s);
    return cli_fail("validate", rc);
  }
  int code = report(s, &o, &v), arc = o.append ? append_row(&o, &v) : CLI_EXIT_OK;
  if (arc != CLI_EXIT_OK)
    code = arc;
  sim_scenario_free(s);
  return code;
}

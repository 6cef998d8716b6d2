/* ddpsim validate: a prediction against a measured run. */
#include "cli.h"

#include "calibrate/validate.h"

#include "core/err.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char cli_validate_help[] =
    "Usage: ddpsim validate SCENARIO --measured CSV|TRACE [options]\n"
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
    "                         trace, its first N steps)\n"
    "      --tolerance X      exit with status 6 when the step-time error exceeds\n"
    "                         X (a fraction: 0.05 = 5%; default: report only)\n"
    "      --append CSV       also append one row (label, predicted and measured\n"
    "                         metrics, errors) to CSV, for collecting many runs\n"
    "      --label TEXT       with --append: the row's label (default: the measured\n"
    "                         file)\n"
    "\n"
    "Exit status: 0 within tolerance (or none set); 6 beyond it; 2 and 3 as\n"
    "for every command (bad usage, bad input).\n";

int cli_cmd_validate(int argc, char **argv) {
  enum { O_MEAS = 1000, O_POINT, O_SKIP, O_TOL, O_APPEND, O_LABEL };
  static const struct option opts[] = {
      {"measured", required_argument, NULL, O_MEAS}, {"point", required_argument, NULL, O_POINT},
      {"skip", required_argument, NULL, O_SKIP}, {"tolerance", required_argument, NULL, O_TOL},
      {"append", required_argument, NULL, O_APPEND}, {"label", required_argument, NULL, O_LABEL},
      {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  const char *measured = NULL, *append = NULL, *label = NULL;
  long point = 0, skip = 3;
  double tol = -1;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    char *end;
    switch (c) {
    case O_MEAS: measured = optarg; break;
    case O_POINT:
      if (cli_parse_long("validate", "--point", optarg, 0, 0x7fffffffL, &point))
        return CLI_EXIT_USAGE;
      break;
    case O_SKIP:
      if (cli_parse_long("validate", "--skip", optarg, 0, 1L << 40, &skip))
        return CLI_EXIT_USAGE;
      break;
    case O_TOL:
      tol = strtod(optarg, &end);
      if (end == optarg || *end || !(tol >= 0 && tol <= 100))
        return cli_usage("validate", "--tolerance expects a fraction like 0.05, got '%s'", optarg);
      break;
    case O_APPEND: append = optarg; break;
    case O_LABEL: label = optarg; break;
    case 'h': fputs(cli_validate_help, stdout); return CLI_EXIT_OK;
    case ':': return cli_usage("validate", "option %s needs a value", argv[optind - 1]);
    default: return cli_usage("validate", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cli_usage("validate", "expected one SCENARIO file");
  if (!measured)
    return cli_usage("validate", "missing --measured CSV");
  if (label && !append)
    return cli_usage("validate", "--label names the row --append CSV writes; give --append CSV too");
  sim_scenario *s;
  int rc = sim_scenario_load(argv[optind], &s);
  if (rc)
    return cli_fail("validate", rc);
  cal_validation v;
  rc = cal_validate(s, point, measured, skip, &v);
  if (rc) {
    sim_scenario_free(s);
    return cli_fail("validate", rc);
  }
  const sim_point *p = &v.pred.pt;
  printf("point %ld of %s: %s, %d x %d ranks, network %s, bucket %g MB, overlap %s\n", point, s->path,
         p->model->name, p->nodes, p->per_node, p->network->name, p->bucket_cap_mb, p->overlap ? "on" : "off");
  printf("measured: %s, %ld steps of %d ranks from step %ld\n\n", measured, v.steps_used, v.ranks_seen, skip);
  printf("%-16s %14s %14s %9s\n", "metric", "predicted", "measured", "error");
  for (int k = 0; k < CAL_N_METRICS; k++) {
    if (isnan(v.m[k].measured))
      printf("%-16s %14.6g %14s %9s\n", v.m[k].name, v.m[k].predicted, "not measured", "-");
    else
      printf("%-16s %14.6g %14.6g %+8.2f%%\n", v.m[k].name, v.m[k].predicted, v.m[k].measured,
             v.m[k].rel_err * 100);
  }
  int code = CLI_EXIT_OK;
  double err = fabs(v.m[CAL_M_STEP].rel_err);
  if (tol >= 0) {
    printf("\nstep time error %.2f%% %s the tolerance of %.2f%%\n", err * 100, err <= tol ? "is within" : "EXCEEDS",
           tol * 100);
    if (err > tol)
      code = CLI_EXIT_TOLERANCE;
  }
  if (append) {
    FILE *f = fopen(append, "a");
    if (!f) {
      fprintf(stderr, "ddpsim validate: error: cannot append to '%s': %s\n", append, strerror(errno));
      sim_scenario_free(s);
      return CLI_EXIT_FAIL;
    }
    if (ftell(f) == 0)
      fprintf(f, "label,model,nodes,gpus_per_node,network,bucket_cap_mb,overlap,pred_step_s,meas_step_s,err_step,"
                 "pred_compute_s,meas_compute_s,err_compute,pred_exposed_s,meas_exposed_s,err_exposed,"
                 "pred_samples_per_s,meas_samples_per_s,err_samples_per_s\n");
    fprintf(f, "%s,%s,%d,%d,%s,%g,%d", label ? label : measured, p->model->name, p->nodes, p->per_node,
            p->network->name, p->bucket_cap_mb, p->overlap);
    static const int order[] = {CAL_M_STEP, CAL_M_COMPUTE, CAL_M_EXPOSED, CAL_M_THROUGHPUT};
    for (int k = 0; k < 4; k++)
      fprintf(f, ",%.9g,%.9g,%.6f", v.m[order[k]].predicted, v.m[order[k]].measured, v.m[order[k]].rel_err);
    fputc('\n', f);
    if (fclose(f) != 0) {
      fprintf(stderr, "ddpsim validate: error: writing '%s' failed: %s\n", append, strerror(errno));
      code = CLI_EXIT_FAIL;
    }
  }
  sim_scenario_free(s);
  return code;
}

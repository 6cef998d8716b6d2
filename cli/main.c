/* ddpsim: entry point and subcommand dispatch. */
#include "cli.h"

#include "core/afile.h"
#include "core/err.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef DDPSIM_VERSION
#define DDPSIM_VERSION "0.0.0"
#endif

static const cli_cmd commands[] = {
    {"simulate", "predict step time, throughput and scaling for every point of a scenario", cli_simulate_help,
        cli_cmd_simulate},
    {"merge", "merge the shards of a study (simulate --shard I/N) into its CSV", cli_merge_help, cli_cmd_merge},
    {"plot", "draw capacity-planning plots (PNG and SVG) from a results CSV", cli_plot_help, cli_cmd_plot},
    {"model", "print a model's DDP gradient buckets as CSV, to compare with PyTorch's", cli_model_help, cli_cmd_model},
    {"advise", "search what a scenario lets you change for the fastest or cheapest way to train", cli_advise_help,
        cli_cmd_advise},
    {"collective", "predict one collective over a range of sizes, as nccl-tests prints it", cli_collective_help,
        cli_cmd_collective},
    {"import", "build a profile from nccl-tests output, or a measured model from a PyTorch trace", cli_import_help,
        cli_cmd_import},
#ifdef DDPSIM_HAVE_RUNTIME
    {"train", "run one rank of real data-parallel training (Gloo on CPUs)", cli_train_help, cli_cmd_train},
    {"launch", "start, watch and restart the ranks of a job, like torchrun", cli_launch_help, cli_cmd_launch},
    {"calibrate", "measure this cluster into a profile (run under ddpsim launch)", cli_calibrate_help,
        cli_cmd_calibrate},
    {"validate", "compare a prediction with a measured run", cli_validate_help, cli_cmd_validate},
#endif
};
static const int n_commands = (int)(sizeof commands / sizeof *commands);

int cli_exit_code(int rc) {
  switch (rc) {
  case CORE_OK: return CLI_EXIT_OK;
  case CORE_EUSAGE: return CLI_EXIT_USAGE;
  case CORE_EINVAL:
  case CORE_ECORRUPT: return CLI_EXIT_INPUT;
  case CORE_EPEER:
  case CORE_ETIMEDOUT: return CLI_EXIT_PEER;
  case CORE_EUNSUPPORTED: return CLI_EXIT_UNSUPPORTED;
  default: return CLI_EXIT_FAIL;
  }
}

int cli_fail(const char *cmd, int rc) {
  fprintf(stderr, "ddpsim %s: error: %s\n", cmd, core_err_msg());
  return cli_exit_code(rc);
}

int cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "ddpsim %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nRun 'ddpsim help %s' for usage.\n", cmd);
  return CLI_EXIT_USAGE;
}

int cli_parse_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    cli_usage(cmd, "%s expects an integer in [%ld, %ld], got '%s'", opt, lo, hi, s);
    return CORE_EUSAGE;
  }
  *out = v;
  return 0;
}

int cli_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) {
    cli_usage(cmd, "%s expects a number in [%g, %g], got '%s'", opt, lo, hi, s);
    return CORE_EUSAGE;
  }
  *out = v + 0.0; /* "-0" is 0: printed without a sign */
  return 0;
}

const char *cli_plots_dir(void) {
  const char *d = getenv("DDPSIM_PLOTS_DIR");
  if (d && *d)
    return d;
#ifdef DDPSIM_SOURCE_DIR
  return DDPSIM_SOURCE_DIR "/plots";
#else
  return "plots";
#endif
}

static void print_help(FILE *f) {
  fprintf(f,
      "ddpsim %s — predict and measure distributed data-parallel training\n\n"
      "Usage: ddpsim COMMAND [OPTIONS] [ARGS]\n"
      "       ddpsim help COMMAND | --help | --version\n\nCommands:\n",
      DDPSIM_VERSION);
  for (int i = 0; i < n_commands; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\nExit status:\n"
             "  0  success\n"
             "  1  failure while running (I/O error, backend error)\n"
             "  2  wrong usage (unknown command or option, bad option value)\n"
             "  3  invalid input file (scenario, profile, model, checkpoint, CSV)\n"
             "  4  a peer rank died or timed out\n"
             "  5  not supported by this build (e.g. NCCL without CUDA)\n"
             "  6  validate: the prediction error exceeds --tolerance\n");
}

/* What went to stdout must have reached it: a full disk under
 * `ddpsim collective > file` is a failure (exit 1), not a success with the
 * table lost. stdout closed from the start (EBADF) with nothing
 * written to it is no loss (gnulib's close_stdout rule); a command that failed already has said why. */
static int close_stdout(int status) {
  int bad = ferror(stdout), pending = __fpending(stdout) != 0, e = 0;
  errno = 0;
  if (fclose(stdout) != 0 && !(errno == EBADF && !bad && !pending)) {
    bad = 1;
    e = errno;
  }
  if (!bad || status != CLI_EXIT_OK)
    return status;
  fprintf(stderr, "ddpsim: error: writing to standard output failed%s%s\n", e ? ": " : "", e ? strerror(e) : "");
  return CLI_EXIT_FAIL;
}

static const cli_cmd *find(const char *name) {
  for (int i = 0; i < n_commands; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

static int run_cli(int argc, char **argv) {
  if (argc < 2) {
    print_help(stderr);
    return CLI_EXIT_USAGE;
  }
  const char *c = argv[1];
  if (!strcmp(c, "--help") || !strcmp(c, "-h")) {
    print_help(stdout);
    return CLI_EXIT_OK;
  }
  if (!strcmp(c, "--version") || !strcmp(c, "-V")) {
    printf("ddpsim %s\n", DDPSIM_VERSION);
    return CLI_EXIT_OK;
  }
  if (!strcmp(c, "help")) {
    if (argc < 3) {
      print_help(stdout);
      return CLI_EXIT_OK;
    }
    const cli_cmd *cmd = find(argv[2]);
    if (!cmd) {
      fprintf(stderr, "ddpsim: no command '%s'; run 'ddpsim --help' for the list\n", argv[2]);
      return CLI_EXIT_USAGE;
    }
    fputs(cmd->help, stdout);
    return CLI_EXIT_OK;
  }
  const cli_cmd *cmd = find(c);
  if (!cmd) {
    fprintf(stderr, "ddpsim: no command '%s'; run 'ddpsim --help' for the list\n", c);
    return CLI_EXIT_USAGE;
  }
  return cmd->run(argc - 1, argv + 1);
}

/* Standard output is one of the command's inputs (`ddpsim model m.cfg >>
 * m.cfg`): refused at once, before anything printed reaches that file. What
 * stdio holds for it is dropped (_exit), the temp files of open outputs
 * removed. */
static void stdout_is_input(const char *path) {
  fprintf(stderr,
      "ddpsim: error: standard output is the input '%s' of this command: what it prints would be added to that "
      "input; redirect the output to another file\n",
      path);
  core_afile_remove_temps();
  _exit(CLI_EXIT_USAGE);
}

int main(int argc, char **argv) {
  core_afile_track_inputs(1); /* no output of a command may be one of its inputs */
  core_afile_on_stdout_input(stdout_is_input);
  return close_stdout(run_cli(argc, argv));
}

/*
 * cli — the ddpsim command: a table of subcommands (cli/main.c), each a
 * function taking its own argv, and the helpers they share for errors and
 * exit codes. Adding a subcommand is one entry in that table.
 *
 * Exit codes (documented in `ddpsim --help` and README.md):
 *   0 success; 1 failure while running (I/O, a backend error); 2 wrong usage;
 *   3 invalid input file (scenario, profile, model, checkpoint, CSV);
 *   4 a peer rank died or timed out; 5 not supported by this build;
 *   6 validate: the prediction error exceeds the tolerance.
 */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stdio.h>

enum {
  CLI_EXIT_OK = 0,
  CLI_EXIT_FAIL = 1,
  CLI_EXIT_USAGE = 2,
  CLI_EXIT_INPUT = 3,
  CLI_EXIT_PEER = 4,
  CLI_EXIT_UNSUPPORTED = 5,
  CLI_EXIT_TOLERANCE = 6
};

typedef struct cli_cmd {
  const char *name;
  const char *summary;               /* one line for `ddpsim --help` */
  const char *help;                  /* full text for `ddpsim help NAME` */
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
} cli_cmd;

/* Print "ddpsim CMD: error: <message>" for the current error; return the
 * exit code for rc. */
int cli_fail(const char *cmd, int rc);
int cli_exit_code(int rc);
/* Usage error: message plus a pointer to `ddpsim help CMD`. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Strict number parsing for options; 0 or CORE_EUSAGE with a message. */
int cli_parse_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int cli_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out);

/* Directory of the plots/ scripts: $DDPSIM_PLOTS_DIR, else the source tree's. */
const char *cli_plots_dir(void);

/* Render one plot kind from a CSV into out_dir (PNG and SVG); used by
 * `ddpsim plot` and `ddpsim simulate --plot`. cpu: the study's ranks are
 * CPU ranks (a profile of device kind cpu), and the axes say so, not GPUs. */
int cli_plot_render(const char *kind, const char *csv, const char *out_dir, int cpu);
/* The paths a plot of csv into out_dir is drawn with can be passed to
 * gnuplot (no spaces or quotes); CORE_EUSAGE if not: for commands that plot
 * after long work, so that they refuse before it. */
int cli_plot_check_paths(const char *csv, const char *out_dir);
/* The files cli_plot_auto may write for the study s's csv into out_dir
 * (every kind, for each of its models), and the Pareto plot's: those there
 * already are checked as core_afile_check checks an output (CORE_EUSAGE for
 * one of the command's inputs or a directory), and a csv that is a FIFO or
 * a character device (written through, so not there to read back) is
 * refused, so that a command that plots after long work refuses before it
 * (and does not wait forever on the FIFO). */
struct sim_scenario;
int cli_plot_check_outputs(const struct sim_scenario *s, const char *csv, const char *out_dir);
int cli_plot_check_pareto(const char *csv, const char *out_dir);
/* The plots a `simulate` CSV calls for (scaling, compression, goodput). */
int cli_plot_auto(const char *csv, const char *out_dir, int cpu);

/* Names gnuplot takes in its string literals and word lists: no quotes,
 * backslashes or blanks. */
int cli_plot_plain_name(const char *s);
/* Is cell a finite number (not empty, as a value that does not exist is)? */
int cli_plot_cell_num(const char *cell, double *v);
/* The columns a Pareto plot reads from an advice CSV (NULL-ended). */
extern const char *const cli_plot_pareto_cols[];

/* The Pareto plot of an advice CSV into out_dir (title NULL: from the
 * file's name; deadline and budget 0: none drawn). */
int cli_plot_pareto(const char *csv, const char *out_dir, const char *title, double deadline_h, double budget_usd);

/* Run gnuplot on script with `-e vars` to draw out.png and out.svg (out: a
 * path without extension). The script writes the files its variables png and
 * svg name: temp files (core/afile) renamed into place once gnuplot succeeds
 * and removed when it fails, so no half-drawn plot is left. Errors say
 * whether gnuplot is missing or failed (gnuplot.c). */
int cli_run_gnuplot(const char *script, const char *vars, const char *out);
/* `ddpsim plot fit PROFILE`: the measured points of each collective entry
 * over its fitted α–β curve, drawn by script (cmd_plot_fit.c). */
int cli_plot_fit(const char *script, const char *profile, const char *out_dir);

struct sim_scenario;
/* Warn on stderr, once per model, where the scenario takes a traced model
 * where its replay is not a prediction: its own communication at another
 * world than the traced one, a batch above the traced one (its memory check
 * leaves out activations). cmd names the command (warn_traced.c). */
void cli_warn_traced(const char *cmd, const struct sim_scenario *s);

extern const char cli_simulate_help[];
extern const char cli_plot_help[];
int cli_cmd_simulate(int argc, char **argv);
extern const char cli_merge_help[];
int cli_cmd_merge(int argc, char **argv);
int cli_cmd_plot(int argc, char **argv);
extern const char cli_model_help[];
int cli_cmd_model(int argc, char **argv);
extern const char cli_advise_help[];
int cli_cmd_advise(int argc, char **argv);
extern const char cli_collective_help[];
int cli_cmd_collective(int argc, char **argv);
extern const char cli_import_help[];
int cli_cmd_import(int argc, char **argv);
extern const char cli_train_help[];
extern const char cli_launch_help[];
int cli_cmd_train(int argc, char **argv);
int cli_cmd_launch(int argc, char **argv);
extern const char cli_calibrate_help[];
int cli_cmd_calibrate(int argc, char **argv);
extern const char cli_validate_help[];
int cli_cmd_validate(int argc, char **argv);

#endif

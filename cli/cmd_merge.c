/* ddpsim merge: put the shards of a study (simulate --shard I/N) back into
 * the CSV an unsharded run writes, byte for byte. */
#include "cli.h"

#include "sim/scenario.h"
#include "sim/shard.h"

#include "core/afile.h"
#include "core/err.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const char cli_merge_help[] = "Usage: ddpsim merge SCENARIO --shards N [-o DIR] [--profile FILE] [--plot]\n"
                              "\n"
                              "Merge the CSVs that `ddpsim simulate SCENARIO --shard I/N -o DIR` wrote\n"
                              "for I = 0 .. N-1 (DIR/NAME.shard-I-of-N.csv) into DIR/NAME.csv, the same\n"
                              "bytes as one unsharded run. Every shard must be there and complete, and\n"
                              "its stamp (its first line) must say it ran with shard 0's seed, on the\n"
                              "profile and the scenario and model files this merge loads; otherwise\n"
                              "nothing is written and the message names the shard to run again.\n"
                              "scripts/slurm/simulate-array.sbatch runs the shards as a Slurm job\n"
                              "array and this merge after them.\n"
                              "\n"
                              "Options:\n"
                              "  -o, --out DIR        directory of the shards and of the merged CSV\n"
                              "                       (default: results)\n"
                              "      --shards N       the N the shards were run with\n"
                              "      --profile FILE   the profile the shards were run with, if not the\n"
                              "                       scenario's (simulate --profile)\n"
                              "      --plot           draw the study's plots from the merged CSV\n"
                              "\n"
                              "Example:\n"
                              "  ddpsim merge scenarios/fabric.cfg --shards 8 -o results --plot\n";

int cli_cmd_merge(int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, NULL, 'o'}, {"shards", required_argument, NULL, 'n'},
      {"profile", required_argument, NULL, 'F'}, {"plot", no_argument, NULL, 'p'}, {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *out_dir = "results", *profile = NULL;
  long n_shards = 0;
  int plot = 0, c, rc;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out_dir = optarg; break;
    case 'n':
      if (cli_parse_long("merge", "--shards", optarg, 1, 1000000, &n_shards))
        return CLI_EXIT_USAGE;
      break;
    case 'F': profile = optarg; break;
    case 'p': plot = 1; break;
    case 'h': fputs(cli_merge_help, stdout); return CLI_EXIT_OK;
    case ':': return cli_usage("merge", "option %s needs a value", argv[optind - 1]);
    default: return cli_usage("merge", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return cli_usage("merge", optind >= argc ? "missing SCENARIO file" : "expected one SCENARIO file, got %d arguments",
        argc - optind);
  if (!n_shards)
    return cli_usage("merge", "--shards N is required: the N of the shards' --shard I/N");
  if (!*out_dir) /* "" would name the shards "/NAME.shard-I-of-N.csv", in the root directory */
    return cli_usage("merge", "-o is empty: give the directory the shards were written into");
  struct stat st;
  if (stat(out_dir, &st) == 0 && !S_ISDIR(st.st_mode))
    return cli_fail("merge", core_err_set(CORE_EUSAGE,
                                 "-o %s is not a directory; give the directory the shards were written into (their "
                                 "simulate --shard I/N -o DIR)",
                                 out_dir));
  sim_scenario *s;
  if ((rc = sim_scenario_load_with(argv[optind], profile, &s)) != 0)
    return cli_fail("merge", rc);
  char csv[8192];
  snprintf(csv, sizeof csv, "%s/%s", out_dir, s->csv_name);
  int cpu = strcmp(s->profile->device_kind, "cpu") == 0;
  /* The shards are inputs before they are read: no plot may be drawn over one. */
  for (long k = 0; plot && k < n_shards; k++) {
    char shard[8192];
    sim_shard_csv_path(s, out_dir, (int)k, (int)n_shards, shard, sizeof shard);
    core_afile_note_input(shard);
  }
  rc = plot ? cli_plot_check_paths(csv, out_dir) : 0;
  if (!rc && plot)
    rc = cli_plot_check_outputs(s, csv, out_dir);
  if (!rc)
    rc = sim_shard_merge(s, out_dir, (int)n_shards, csv);
  sim_scenario_free(s);
  if (rc)
    return cli_fail("merge", rc);
  printf("merged %ld shard%s into %s\n", n_shards, n_shards == 1 ? "" : "s", csv);
  if (plot && (rc = cli_plot_auto(csv, out_dir, cpu)) != 0)
    return cli_fail("merge", rc);
  return CLI_EXIT_OK;
}

/* ddpsim launch: start, watch and restart the ranks of a job, like torchrun. */
#include "cli.h"

#include "runtime/launch.h"

#include "core/err.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char cli_launch_help[] =
    "Usage: ddpsim launch --nproc N [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Start N ranks of COMMAND (usually `ddpsim train ...`) with torchrun's\n"
    "environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,\n"
    "MASTER_PORT) plus DDPSIM_RDZV (a fresh rendezvous directory per attempt),\n"
    "DDPSIM_BIND_ADDR and DDPSIM_RESTART_COUNT. SIGINT and SIGTERM are forwarded.\n"
    "When a rank dies, the others are stopped (SIGTERM, then SIGKILL after the\n"
    "grace period) and the launcher reports which rank died and how; with\n"
    "restarts left it starts the group again, and `ddpsim train` resumes from its\n"
    "newest valid checkpoint.\n"
    "\n"
    "Options:\n"
    "      --nproc N            ranks to start\n"
    "      --hosts NS1,NS2,...  network namespaces of the testbed (scripts/testbed.sh);\n"
    "                           ranks go to them in equal contiguous blocks\n"
    "      --max-restarts R     restart the group up to R times (default 0)\n"
    "      --grace S            seconds between SIGTERM and SIGKILL (default 5)\n"
    "      --rdzv-dir DIR       where rendezvous directories go (default: a new\n"
    "                           directory under /tmp, removed afterwards)\n"
    "      --master-port P      MASTER_PORT for the ranks (default 29500)\n"
    "      --cpu-quota C        limit each rank to C CPUs (cgroup cpu quota, root):\n"
    "                           the same per-rank compute rate whatever the rank\n"
    "                           count, for calibration and validation runs; the\n"
    "                           quota is 1.25 ms a period (2.5 ms at C = 0.5)\n"
    "      --cpu-bind           bind each rank to CPUs of its own: this launcher's\n"
    "                           CPUs in contiguous blocks, one per rank, so that\n"
    "                           testbed hosts do not share cores (as Slurm's\n"
    "                           --cpu-bind); at most one rank per CPU, and a rank\n"
    "                           of one CPU shares it with Gloo's threads (small\n"
    "                           collectives then take milliseconds)\n"
    "      --fail-mtbf S        inject failures: SIGKILL a random rank after an\n"
    "                           exponential time of mean S seconds, in each attempt\n"
    "                           that has a restart left (measures recovery; needs\n"
    "                           --max-restarts R >= 1)\n"
    "      --fail-seed N        with --fail-mtbf: seed of those draws (default 1)\n"
    "  -q, --quiet              no progress messages\n"
    "\n"
    "Exit status: 0 when every rank of the last attempt succeeded; 4 when a rank\n"
    "died and no restart was left; 2 or 3 when a rank failed on bad usage or\n"
    "input (never retried).\n"
    "\n"
    "Example (2 hosts of the testbed, one rank each):\n"
    "  scripts/testbed.sh up 2 --rate 1gbit\n"
    "  ddpsim launch --nproc 2 --hosts ddpsim-h1,ddpsim-h2 -- \\\n"
    "      ddpsim train --model scenarios/models/mlp.cfg --steps 20 -o run\n";

static int rm_rf(const char *dir) {
  pid_t pid = fork();
  if (pid == 0) {
    execlp("rm", "rm", "-rf", "--", dir, (char *)NULL);
    _exit(127);
  }
  int st;
  return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int cli_cmd_launch(int argc, char **argv) {
  enum { O_NPROC = 1000, O_HOSTS, O_RESTARTS, O_GRACE, O_RDZV, O_PORT, O_QUOTA, O_BIND, O_MTBF, O_FSEED };
  static const struct option opts[] = {
      {"nproc", required_argument, NULL, O_NPROC}, {"hosts", required_argument, NULL, O_HOSTS},
      {"max-restarts", required_argument, NULL, O_RESTARTS}, {"grace", required_argument, NULL, O_GRACE},
      {"rdzv-dir", required_argument, NULL, O_RDZV}, {"master-port", required_argument, NULL, O_PORT},
      {"cpu-quota", required_argument, NULL, O_QUOTA}, {"cpu-bind", no_argument, NULL, O_BIND},
      {"fail-mtbf", required_argument, NULL, O_MTBF}, {"fail-seed", required_argument, NULL, O_FSEED},
      {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  long nproc = 0, restarts = 0, port = 29500;
  double grace = 5, quota = 0, mtbf = 0;
  int bind = 0;
  long fseed = 1;
  int fseed_set = 0;
  char *hosts_arg = NULL;
  const char *rdzv = NULL;
  int quiet = 0, c;
  optind = 1;
  opterr = 0;
  /* '+': stop at the first non-option, so COMMAND's options stay its own. */
  while ((c = getopt_long(argc, argv, "+:qh", opts, NULL)) != -1) {
    switch (c) {
    case O_NPROC:
      if (cli_parse_long("launch", "--nproc", optarg, 1, 4096, &nproc))
        return CLI_EXIT_USAGE;
      break;
    case O_RESTARTS:
      if (cli_parse_long("launch", "--max-restarts", optarg, 0, 1000, &restarts))
        return CLI_EXIT_USAGE;
      break;
    case O_PORT:
      if (cli_parse_long("launch", "--master-port", optarg, 1, 65535, &port))
        return CLI_EXIT_USAGE;
      break;
    case O_GRACE: {
      char *end;
      grace = strtod(optarg, &end);
      if (end == optarg || *end || !(grace >= 0 && grace <= 3600))
        return cli_usage("launch", "--grace expects seconds in [0, 3600], got '%s'", optarg);
      break;
    }
    case O_QUOTA: {
      char *end;
      quota = strtod(optarg, &end);
      if (end == optarg || *end || !(quota > 0 && quota <= 1024))
        return cli_usage("launch", "--cpu-quota expects a number of CPUs in (0, 1024], got '%s'", optarg);
      break;
    }
    case O_BIND: bind = 1; break;
    case O_MTBF: {
      char *end;
      mtbf = strtod(optarg, &end);
      if (end == optarg || *end || !(mtbf > 0 && mtbf <= 1e9))
        return cli_usage("launch", "--fail-mtbf expects a mean time in seconds > 0, got '%s'", optarg);
      break;
    }
    case O_FSEED:
      if (cli_parse_long("launch", "--fail-seed", optarg, 0, 0x7fffffffL, &fseed))
        return CLI_EXIT_USAGE;
      fseed_set = 1;
      break;
    case O_HOSTS: hosts_arg = optarg; break;
    case O_RDZV: rdzv = optarg; break;
    case 'q': quiet = 1; break;
    case 'h': fputs(cli_launch_help, stdout); return CLI_EXIT_OK;
    case ':': return cli_usage("launch", "option %s needs a value", argv[optind - 1]);
    default: return cli_usage("launch", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc && !strcmp(argv[optind], "--"))
    optind++;
  if (!nproc)
    return cli_usage("launch", "missing --nproc N");
  if (fseed_set && mtbf <= 0)
    return cli_usage("launch", "--fail-seed seeds the failures --fail-mtbf S injects; give --fail-mtbf S too");
  if (mtbf > 0 && restarts == 0)
    return cli_usage("launch", "--fail-mtbf injects failures only in attempts that have a restart left; give --max-restarts R (R >= 1)");
  if (optind >= argc)
    return cli_usage("launch", "missing the command to run after --, e.g. -- ddpsim train --model FILE");

  const char *hosts[4096];
  int n_hosts = 0;
  char *hcopy = hosts_arg ? strdup(hosts_arg) : NULL;
  if (hosts_arg) {
    char *save = NULL;
    for (char *h = strtok_r(hcopy, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
      if (n_hosts == 4096 || !*h) {
        free(hcopy);
        return cli_usage("launch", "--hosts expects up to 4096 comma-separated namespace names");
      }
      hosts[n_hosts++] = h;
    }
    if (!n_hosts) {
      free(hcopy);
      return cli_usage("launch", "--hosts is empty");
    }
  }

  /* The command: "ddpsim" means this very binary, wherever it was run from. */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0)
    self[n] = '\0';
  if (n > 0 && !strcmp(argv[optind], "ddpsim"))
    argv[optind] = self;

  char tmp[64] = "";
  if (!rdzv) {
    snprintf(tmp, sizeof tmp, "/tmp/ddpsim-launch-XXXXXX");
    if (!mkdtemp(tmp)) {
      free(hcopy);
      fprintf(stderr, "ddpsim launch: error: cannot create a rendezvous directory: %s\n", strerror(errno));
      return CLI_EXIT_FAIL;
    }
    rdzv = tmp;
  }
  rt_launch_opts o = {.nproc = (int)nproc, .hosts = n_hosts ? hosts : NULL, .n_hosts = n_hosts,
                      .max_restarts = (int)restarts, .grace_s = grace, .rdzv_dir = rdzv,
                      .master_port = (int)port, .argv = argv + optind, .quiet = quiet,
                      .cpu_quota = quota, .cpu_bind = bind, .fail_mtbf_s = mtbf, .fail_seed = (unsigned long)fseed};
  rt_launch_result res;
  int rc = rt_launch_run(&o, &res);
  if (tmp[0])
    rm_rf(tmp);
  free(hcopy);
  if (rc) {
    fprintf(stderr, "ddpsim launch: error: %s\n", core_err_msg());
    return res.exit_code ? res.exit_code : cli_exit_code(rc);
  }
  if (!quiet && res.attempts > 1)
    fprintf(stderr, "ddpsim launch: done after %d attempts\n", res.attempts);
  return CLI_EXIT_OK;
}

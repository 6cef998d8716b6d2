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

const char cli_launch_help[] = "Usage: ddpsim launch --nproc N [options] -- COMMAND [ARGS...]\n"
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

/* What the command line asks for. */
typedef struct launch_args {
  long nproc, restarts, port, fseed;
  double grace, quota, mtbf;
  int bind, quiet, fseed_set, help;
  const char *hosts, *rdzv;
  int cmd; /* argv[cmd]: COMMAND */
} launch_args;

enum { O_NPROC = 1000, O_HOSTS, O_RESTARTS, O_GRACE, O_RDZV, O_PORT, O_QUOTA, O_BIND, O_MTBF, O_FSEED };

static const struct option launch_opts[] = {{"nproc", required_argument, NULL, O_NPROC},
    {"hosts", required_argument, NULL, O_HOSTS}, {"max-restarts", required_argument, NULL, O_RESTARTS},
    {"grace", required_argument, NULL, O_GRACE}, {"rdzv-dir", required_argument, NULL, O_RDZV},
    {"master-port", required_argument, NULL, O_PORT}, {"cpu-quota", required_argument, NULL, O_QUOTA},
    {"cpu-bind", no_argument, NULL, O_BIND}, {"fail-mtbf", required_argument, NULL, O_MTBF},
    {"fail-seed", required_argument, NULL, O_FSEED}, {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};

/* All of s as a number; -1 when it is not one. */
static int parse_real(const char *s, double *v) {
  char *end;
  *v = strtod(s, &end);
  return end == s || *end ? -1 : 0;
}

/* One option c with its value arg; 0 or the exit code of a usage error. */
static int parse_opt(int c, const char *arg, launch_args *a) {
  switch (c) {
  case O_NPROC: return cli_parse_long("launch", "--nproc", arg, 1, 4096, &a->nproc) ? CLI_EXIT_USAGE : 0;
  case O_RESTARTS: return cli_parse_long("launch", "--max-restarts", arg, 0, 1000, &a->restarts) ? CLI_EXIT_USAGE : 0;
  case O_PORT: return cli_parse_long("launch", "--master-port", arg, 1, 65535, &a->port) ? CLI_EXIT_USAGE : 0;
  case O_GRACE:
    if (parse_real(arg, &a->grace) || !(a->grace >= 0 && a->grace <= 3600))
      return cli_usage("launch", "--grace expects seconds in [0, 3600], got '%s'", arg);
    return 0;
  case O_QUOTA:
    if (parse_real(arg, &a->quota) || !(a->quota > 0 && a->quota <= 1024))
      return cli_usage("launch", "--cpu-quota expects a number of CPUs in (0, 1024], got '%s'", arg);
    return 0;
  case O_MTBF:
    if (parse_real(arg, &a->mtbf) || !(a->mtbf > 0 && a->mtbf <= 1e9))
      return cli_usage("launch", "--fail-mtbf expects a mean time in seconds > 0, got '%s'", arg);
    return 0;
  case O_FSEED:
    a->fseed_set = 1;
    return cli_parse_long("launch", "--fail-seed", arg, 0, 0x7fffffffL, &a->fseed) ? CLI_EXIT_USAGE : 0;
  case O_BIND: a->bind = 1; return 0;
  case O_HOSTS: a->hosts = arg; return 0;
  case O_RDZV: a->rdzv = arg; return 0;
  case 'q': a->quiet = 1; return 0;
  default: return CLI_EXIT_USAGE;
  }
}

/* The options, checked together; 0 or the exit code of a usage error. */
static int parse_args(int argc, char **argv, launch_args *a) {
  int c, rc;
  optind = 1;
  opterr = 0;
  /* '+': stop at the first non-option, so COMMAND's options stay its own. */
  while ((c = getopt_long(argc, argv, "+:qh", launch_opts, NULL)) != -1) {
    if (c == 'h')
      return a->help = 1, 0;
    if (c == ':')
      return cli_usage("launch", "option %s needs a value", argv[optind - 1]);
    if (c == '?')
      return cli_usage("launch", "unknown option '%s'", argv[optind - 1]);
    if ((rc = parse_opt(c, optarg, a)) != 0)
      return rc;
  }
  if (optind < argc && !strcmp(argv[optind], "--"))
    optind++;
  a->cmd = optind;
  if (!a->nproc)
    return cli_usage("launch", "missing --nproc N");
  if (a->fseed_set && a->mtbf <= 0)
    return cli_usage("launch", "--fail-seed seeds the failures --fail-mtbf S injects; give --fail-mtbf S too");
  if (a->mtbf > 0 && a->restarts == 0)
    return cli_usage("launch",
        "--fail-mtbf injects failures only in attempts that have a restart left; give --max-restarts R (R >= 1)");
  if (a->cmd >= argc)
    return cli_usage("launch", "missing the command to run after --, e.g. -- ddpsim train --model FILE");
  return 0;
}

/* --hosts split at commas into hosts[] (pointing into copy, which the
 * caller frees); 0 or the exit code of a usage error. */
static int split_hosts(const char *arg, char *copy, const char **hosts, int max, int *n) {
  char *save = NULL;
  *n = 0;
  if (!arg)
    return 0;
  for (char *h = strtok_r(copy, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
    if (*n == max || !*h)
      return cli_usage("launch", "--hosts expects up to %d comma-separated namespace names", max);
    hosts[(*n)++] = h;
  }
  if (!*n)
    return cli_usage("launch", "--hosts is empty");
  return 0;
}

int cli_cmd_launch(int argc, char **argv) {
  launch_args a = {.port = 29500, .grace = 5, .fseed = 1};
  const char *hosts[4096];
  int n_hosts, rc;
  if ((rc = parse_args(argc, argv, &a)) != 0)
    return rc;
  if (a.help) {
    fputs(cli_launch_help, stdout);
    return CLI_EXIT_OK;
  }
  char *hcopy = a.hosts ? strdup(a.hosts) : NULL;
  if ((rc = split_hosts(a.hosts, hcopy, hosts, 4096, &n_hosts)) != 0) {
    free(hcopy);
    return rc;
  }
  /* The command: "ddpsim" means this very binary, wherever it was run from. */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0)
    self[n] = '\0';
  if (n > 0 && !strcmp(argv[a.cmd], "ddpsim"))
    argv[a.cmd] = self;
  char tmp[64] = "";
  if (!a.rdzv) {
    snprintf(tmp, sizeof tmp, "/tmp/ddpsim-launch-XXXXXX");
    if (!mkdtemp(tmp)) {
      free(hcopy);
      fprintf(stderr, "ddpsim launch: error: cannot create a rendezvous directory: %s\n", strerror(errno));
      return CLI_EXIT_FAIL;
    }
    a.rdzv = tmp;
  }
  rt_launch_opts o = {.nproc = (int)a.nproc,
      .hosts = n_hosts ? hosts : NULL,
      .n_hosts = n_hosts,
      .max_restarts = (int)a.restarts,
      .grace_s = a.grace,
      .rdzv_dir = a.rdzv,
      .master_port = (int)a.port,
      .argv = argv + a.cmd,
      .quiet = a.quiet,
      .cpu_quota = a.quota,
      .cpu_bind = a.bind,
      .fail_mtbf_s = a.mtbf,
      .fail_seed = (unsigned long)a.fseed};
  rt_launch_result res;
  rc = rt_launch_run(&o, &res);
  if (tmp[0])
    rm_rf(tmp);
  free(hcopy);
  if (rc) {
    fprintf(stderr, "ddpsim launch: error: %s\n", core_err_msg());
    return res.exit_code ? res.exit_code : cli_exit_code(rc);
  }
  if (!a.quiet && res.attempts > 1)
    fprintf(stderr, "ddpsim launch: done after %d attempts\n", res.attempts);
  return CLI_EXIT_OK;
}

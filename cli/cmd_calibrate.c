/* ddpsim calibrate: measure this cluster into a profile. */
#include "cli.h"

#include "calibrate/calibrate.h"

#include "core/err.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char cli_calibrate_help[] = "Usage: ddpsim calibrate [options]\n"
                                  "\n"
                                  "Measure the machines of a launch into a profile the simulator reads: start-up\n"
                                  "and rendezvous time; collective sweeps (nccl-tests style, 8 B to 256 MiB)\n"
                                  "inside a node and across nodes, with alpha-beta fits; GEMM rates; memory\n"
                                  "bandwidth and per-layer times of the models (written as measured model\n"
                                  "files beside the profile), on every rank at once as training runs them,\n"
                                  "rank 0's kept; step-time jitter with a fitted distribution;\n"
                                  "compute slowdown under communication; checkpoint write/read bandwidth.\n"
                                  "Run every rank under the launcher; rank 0 writes the profile. Progress goes\n"
                                  "to stderr when it is a terminal.\n"
                                  "\n"
                                  "With --backend nccl (a CUDA build, one GPU per rank: device LOCAL_RANK) it\n"
                                  "measures the GPUs and NCCL instead:\n"
                                  "  - NCCL sweeps on device buffers, 8 B to 256 MiB, inside a node and across\n"
                                  "    nodes: allreduce with ring and with tree (a communicator created for\n"
                                  "    each, NCCL_ALGO), allgather, reduce-scatter and broadcast (NCCL's own\n"
                                  "    choice, recorded as ring); data checked on every rank, every iteration;\n"
                                  "    --quick: allreduce only, to 32 MiB. A one-rank job checks every\n"
                                  "    operation on the device and records none.\n"
                                  "  - cuBLAS GEMM TFLOP/s for fp32, tf32, fp16 and bf16 at 512..8192 (tf32 and\n"
                                  "    bf16 need compute capability 8.0); device memory bandwidth\n"
                                  "    (device-to-device copies); host link (pinned copies both ways); the\n"
                                  "    host's reduction rate.\n"
                                  "  - jitter from bursts of 50 fp32 GEMMs of 2048 on every rank at once;\n"
                                  "    interference as the GEMM rate alone vs with NCCL allreduces running on\n"
                                  "    another thread (and the allreduces' time alone vs beside the GEMMs);\n"
                                  "    start-up, rendezvous and communicator creation;\n"
                                  "    checkpoint I/O, as with Gloo.\n"
                                  "  - not measured: per-layer times of the models (the runtime trains on\n"
                                  "    CPUs) and the communication hooks (CPU code).\n"
                                  "NCCL, the CUDA runtime and cuBLAS are loaded then, under the names the\n"
                                  "build found (e.g. libnccl.so.2); DDPSIM_NCCL, DDPSIM_CUDART and DDPSIM_CUBLAS\n"
                                  "name the files to load instead. Without a GPU, without those libraries, or\n"
                                  "in a build without CUDA/NCCL, it fails at once (exit 5) and writes nothing.\n"
                                  "\n"
                                  "Options:\n"
                                  "      --backend B      gloo (CPUs; default) or nccl (GPUs, CUDA builds)\n"
                                  "      --out PROFILE    where to write it (default calibrated.cfg); the\n"
                                  "                       measured models go beside it, PROFILE.MODEL.cfg\n"
                                  "                       (none for a device or FIFO)\n"
                                  "      --name NAME      the profile's name (default: the host name)\n"
                                  "      --quick          fewer sizes, iterations and samples (about 20 s)\n"
                                  "      --link-gbps G    nominal line rate of the links between nodes, recorded\n"
                                  "                       so scenarios can rescale the measured link\n"
                                  "      --model FILE     model to time per layer and to draw jitter from\n"
                                  "                       (repeatable; default scenarios/models/mlp.cfg)\n"
                                  "      --batch N        batch for the per-layer times (default 32)\n"
                                  "      --threads N      BLAS threads per rank, as `ddpsim train` will use\n"
                                  "                       (default 1)\n"
                                  "      --timeout S      collective timeout (default 120)\n"
                                  "      --scratch DIR    existing directory for the checkpoint I/O test\n"
                                  "                       (default /tmp)\n"
                                  "      --rdzv SPEC      rendezvous (default $DDPSIM_RDZV, set by the launcher)\n"
                                  "      --progress on|off   override the terminal check\n"
                                  "\n"
                                  "Example, 2 hosts of the testbed at 1 Gb/s, 2 ranks each:\n"
                                  "  ddpsim launch --nproc 4 --hosts ddpsim-h1,ddpsim-h2 -- \\\n"
                                  "      ddpsim calibrate --link-gbps 1 --out profiles/testbed.cfg\n";

/* The checkpoint I/O test comes late in a calibration: a --scratch that
 * cannot take it is refused before any measurement, and never created. */
static int check_scratch(const char *dir) {
  struct stat st;
  if (!*dir)
    return cli_usage("calibrate", "--scratch needs a directory, got ''");
  if (stat(dir, &st) != 0)
    return cli_usage("calibrate", "--scratch %s: %s; name an existing directory to write the test checkpoint in", dir,
        strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return cli_usage(
        "calibrate", "--scratch %s is not a directory; name a directory to write the test checkpoint in", dir);
  if (access(dir, W_OK | X_OK) != 0)
    return cli_usage("calibrate", "--scratch %s: cannot write there (%s); name a directory this user can write", dir,
        strerror(errno));
  return 0;
}

enum {
  O_BACKEND = 1000,
  O_OUT,
  O_QUICK,
  O_LINK,
  O_MODEL,
  O_BATCH,
  O_TIMEOUT,
  O_SCRATCH,
  O_RDZV,
  O_PROGRESS,
  O_THREADS,
  O_NAME
};

/* One option c with argument arg: 0, 1 after --help, or an exit status for
 * a usage error. */
static int parse_opt(int c, char *arg, char **argv, cal_opts *o) {
  char *end;
  long v;
  switch (c) {
  case O_BACKEND:
    if (strcmp(arg, "gloo") && strcmp(arg, "nccl"))
      return cli_usage("calibrate", "--backend expects gloo or nccl, got '%s'", arg);
    o->backend = arg;
    return 0;
  case O_OUT: o->out = arg; return 0;
  case O_NAME:
    /* A profile's name may not be empty (core/profile.c): refused now, not by the reader of the profile. */
    if (!*arg)
      return cli_usage("calibrate", "--name expects the profile's name, got an empty one");
    o->name = arg;
    return 0;
  case O_QUICK: o->quick = 1; return 0;
  case O_LINK:
    o->link_gbps = strtod(arg, &end);
    if (end == arg || *end || !(o->link_gbps > 0 && o->link_gbps <= 1e5))
      return cli_usage("calibrate", "--link-gbps expects a line rate in Gb/s, got '%s'", arg);
    return 0;
  case O_MODEL:
    if (o->n_models == CAL_MAX_MODELS)
      return cli_usage("calibrate", "at most %d --model files", CAL_MAX_MODELS);
    o->models[o->n_models++] = arg;
    return 0;
  case O_BATCH:
    if (cli_parse_long("calibrate", "--batch", arg, 1, 1 << 20, &v))
      return CLI_EXIT_USAGE;
    o->batch = (int)v;
    return 0;
  case O_THREADS:
    if (cli_parse_long("calibrate", "--threads", arg, 1, 256, &v))
      return CLI_EXIT_USAGE;
    o->threads = (int)v;
    return 0;
  case O_TIMEOUT:
    o->timeout_s = strtod(arg, &end);
    if (end == arg || *end || !(o->timeout_s >= 1 && o->timeout_s <= 1e5))
      return cli_usage("calibrate", "--timeout expects seconds in [1, 100000], got '%s'", arg);
    return 0;
  case O_SCRATCH: o->scratch_dir = arg; return 0;
  case O_RDZV: o->rdzv = arg; return 0;
  case O_PROGRESS:
    if (strcmp(arg, "on") && strcmp(arg, "off"))
      return cli_usage("calibrate", "--progress expects on or off, got '%s'", arg);
    o->progress = !strcmp(arg, "on");
    return 0;
  case 'h': fputs(cli_calibrate_help, stdout); return 1;
  case ':': return cli_usage("calibrate", "option %s needs a value", argv[optind - 1]);
  default: return cli_usage("calibrate", "unknown option '%s'", argv[optind - 1]);
  }
}

int cli_cmd_calibrate(int argc, char **argv) {
  static const struct option opts[] = {{"backend", required_argument, NULL, O_BACKEND},
      {"out", required_argument, NULL, O_OUT}, {"quick", no_argument, NULL, O_QUICK},
      {"link-gbps", required_argument, NULL, O_LINK}, {"model", required_argument, NULL, O_MODEL},
      {"batch", required_argument, NULL, O_BATCH}, {"timeout", required_argument, NULL, O_TIMEOUT},
      {"scratch", required_argument, NULL, O_SCRATCH}, {"rdzv", required_argument, NULL, O_RDZV},
      {"progress", required_argument, NULL, O_PROGRESS}, {"threads", required_argument, NULL, O_THREADS},
      {"name", required_argument, NULL, O_NAME}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  static const char *models[CAL_MAX_MODELS];
  static char default_model[4200];
  cal_opts o = {.out = "calibrated.cfg",
      .backend = "gloo",
      .batch = 32,
      .threads = 1,
      .timeout_s = 120,
      .scratch_dir = "/tmp",
      .progress = -1,
      .models = models};
  int c, rc;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1)
    if ((rc = parse_opt(c, optarg, argv, &o)) != 0)
      return rc == 1 ? CLI_EXIT_OK : rc;
  if (optind != argc)
    return cli_usage("calibrate", "unexpected argument '%s'", argv[optind]);
  if (check_scratch(o.scratch_dir) != 0)
    return CLI_EXIT_USAGE;
  if (!o.n_models) {
    snprintf(default_model, sizeof default_model, "%s/scenarios/models/mlp.cfg", DDPSIM_SOURCE_DIR);
    models[o.n_models++] = default_model;
  }
  rc = cal_run(&o);
  return rc ? cli_fail("calibrate", rc) : CLI_EXIT_OK;
}

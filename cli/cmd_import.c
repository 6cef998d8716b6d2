/* ddpsim import: build a profile from nccl-tests output, or a model with
 * measured per-layer times from a PyTorch profiler trace
 * (calibrate/import_nccl.h, calibrate/import_trace.h). */
#include "cli.h"

#include "calibrate/import_gpu.h"
#include "calibrate/import_nccl.h"
#include "calibrate/import_trace.h"
#include "calibrate/kineto.h"
#include "calibrate/trace_scenario.h"

#include "core/afile.h"

#include "core/err.h"
#include "core/path.h"
#include "core/progress.h"
#include "core/profile.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char cli_import_help[] =
    "Usage: ddpsim import nccl-tests --base PROFILE [--out PROFILE] [--name NAME]\n"
    "                                [--link-gbps G] [--device gpu|cpu] FILE...\n"
    "       ddpsim import torch-trace [--out MODEL] [--batch B] [--base MODEL] [--name NAME]\n"
    "                                 [--scenario FILE [--profile-base PROFILE]] TRACE.json[.gz]...\n"
    "\n"
    "nccl-tests: a profile from the stdout of nccl-tests (all_reduce_perf,\n"
    "all_gather_perf, reduce_scatter_perf, broadcast_perf), one file per\n"
    "collective and scope (one node: intra, several: inter). Each becomes an\n"
    "entry of backend nccl, algorithm ring (nccl-tests does not report which\n"
    "algorithm NCCL picked; run it with NCCL_ALGO=Ring to make that true), with\n"
    "alpha-beta fits of the out-of-place times and the raw points. Ranks and\n"
    "nodes come from the '#  Rank N ... on HOST' lines. nccl-tests measures no\n"
    "compute, memory or host figures: they come from --base (required), e.g.\n"
    "scenarios/profiles/dgx-h100.cfg, whose other collective entries are kept.\n"
    "  --out PROFILE    output (default nccl-tests.cfg)\n"
    "  --name NAME      profile name (default: the output's file name)\n"
    "  --link-gbps G    nominal line rate of the inter-node link measured\n"
    "  --device KIND    gpu (default) or cpu\n"
    "\n"
    "torch-trace: a model file from the Chrome trace torch.profiler exports\n"
    "(plain or gzip; one or more steps, ProfilerStep#N spans; several TRACE files\n"
    "of one job, a profiler schedule's cycles, are read as one run).\n"
    "\n"
    "A GPU trace (kernels on their streams): the layers are recovered from the\n"
    "operators (convolution, batch/layer/group norm, linear, embedding, with\n"
    "the activations and pooling after them), each with its parameter tensors\n"
    "in the order their gradients arrived (AccumulateGrad) and its kernel time;\n"
    "the step as the trace ran it (the host's dispatch of every piece, the\n"
    "compute stream's work, DDP's copies, launches and bucket allreduces kept\n"
    "apart, other streams' work and syncs) goes into the model's `traced`\n"
    "group, which `simulate` replays on other clusters. Medians over the\n"
    "steps; warm-up steps are left out and the notes say which and the spread.\n"
    "Tensor sizes come from DDP's copies, recorded shapes, or --base. Each\n"
    "piece's kernel time is split into compute-, memory- and launch-bound\n"
    "against the traced GPU's roofs, so that `simulate --profile` of another\n"
    "GPU can retarget the step.\n"
    "  --scenario FILE  also write a scenario of the traced job (its world,\n"
    "                   device, batch, bucket caps and, for an Adam, optimizer;\n"
    "                   a profile FILE's-stem.profile.cfg beside it with an\n"
    "                   allreduce fit to the trace's own kernels), which\n"
    "                   simulated replays the traced step\n"
    "  --profile-base P with --scenario: the profile the traced GPU's figures\n"
    "                   and roofs (peak_tflops, peak_memory_GBps) come from, of\n"
    "                   the traced board (its device.memory_GB tells an A100's)\n"
    "                   (default: its datasheet, known GPUs only)\n"
    "\n"
    "A CPU trace (record_shapes=True) of a model built of nn.Linear layers\n"
    "(bench/pytorch/trace_mlp.py writes one): measured fwd_ms/bwd_ms per layer.\n"
    "With --base MODEL the output keeps that model's layers and adds the times\n"
    "(the layer counts must match); without it the layers come from the\n"
    "trace's shapes. DDP's copies of the gradients into its buckets are taken\n"
    "out of the layers' times, as the simulator adds them itself. Several steps\n"
    "give per-layer medians, with a warning when they differ by more than a\n"
    "quarter.\n"
    "  --out MODEL      output (default: TRACE's file name with .cfg; needed for a pipe)\n"
    "  --batch B        batch the trace was taken at (default: from its shapes;\n"
    "                   needed where it has none, refused where they disagree)\n"
    "  --base MODEL     the model the trace was taken of (GPU: its tensors' sizes)\n"
    "  --name NAME      model name (default: the base's, or the output's file name)\n"
    "\n"
    "Several TRACE files must be of one job: the same GPU, world size and model\n"
    "(a step's layers); a GPU trace must hold kernels, not copies alone. A read\n"
    "longer than 3 s reports how far it is on stderr.\n"
    "\n"
    "Bad input (a malformed table or trace, a row with #wrong > 0, a size that is\n"
    "not count x type size (x ranks for allgather and reduce-scatter) as\n"
    "nccl-tests prints it) is an error naming FILE:LINE or the trace event, and\n"
    "nothing is written. Before any input is read, an output that is one of the\n"
    "inputs (--base included, used or not) or another output is refused, and so\n"
    "is an output whose file name is an extension alone (--out .cfg,\n"
    "--scenario .cfg): what it writes is named after the part before it.\n";

/* The file name of path without directory and extension (".cfg", ".json",
 * ".json.gz", ".pt.trace"). */
static void stem_of(const char *path, char *out, size_t n) {
  snprintf(out, n, "%s", core_path_base(path));
  static const char *const exts[] = {".gz", ".json", ".pt.trace", ".trace", ".cfg", NULL};
  for (const char *const *e = exts; *e; e++) {
    size_t len = strlen(out), el = strlen(*e);
    if (len > el && !strcmp(out + len - el, *e))
      out[len - el] = '\0';
  }
}

/* An output whose file name is an extension alone (".cfg", "dir/.cfg") has
 * no stem for the profile, model, scenario or CSV named after it (and would
 * be a hidden file): a usage error naming the option. */
static int check_stem(const char *opt, const char *path) {
  const char *base = core_path_base(path), *dot = strrchr(base, '.');
  if (*base && dot != base)
    return 0;
  return cli_usage("import",
      "%s '%s': the file name has nothing before its extension, and what it writes is named after that; give it a "
      "name, e.g. %s",
      opt, path, strcmp(opt, "--scenario") == 0 ? "myjob.cfg" : "mymodel.cfg");
}

/* import nccl-tests' options into *o and *out: 0, 1 after --help, or an
 * exit status for a usage error. */
static int nccl_args(int argc, char **argv, cal_nccl_opts *o, const char **out) {
  static const struct option opts[] = {{"out", required_argument, NULL, 'o'}, {"base", required_argument, NULL, 'b'},
      {"name", required_argument, NULL, 'n'}, {"link-gbps", required_argument, NULL, 'l'},
      {"device", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:b:n:l:d:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': *out = optarg; break;
    case 'b': o->base = optarg; break;
    case 'n':
      /* A profile's name may not be empty (core/profile.c): refused now, not by the reader of the profile. */
      if (!*optarg)
        return cli_usage("import", "--name expects the profile's name, got an empty one");
      o->name = optarg;
      break;
    case 'l':
      /* The profile's meta.link_gbps range (core/profile.c). */
      if (cli_parse_double("import", "--link-gbps", optarg, 1e-3, 1e5, &o->link_gbps) != 0)
        return CLI_EXIT_USAGE;
      break;
    case 'd':
      if (strcmp(optarg, "gpu") != 0 && strcmp(optarg, "cpu") != 0)
        return cli_usage("import", "--device expects gpu or cpu, got '%s'", optarg);
      o->device_kind = optarg;
      break;
    case 'h': fputs(cli_import_help, stdout); return 1;
    case ':': return cli_usage("import", "option %s needs a value", argv[optind - 1]);
    default: return cli_usage("import", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind >= argc)
    return cli_usage("import", "nccl-tests: give the nccl-tests output files, e.g. ddpsim import nccl-tests --base "
                               "scenarios/profiles/dgx-h100.cfg all_reduce_perf.txt");
  if (!o->base)
    return cli_usage("import",
        "nccl-tests measures collectives only: pass --base PROFILE (e.g. scenarios/profiles/dgx-h100.cfg) "
        "for the compute rates, memory and host bandwidth a profile needs too");
  return 0;
}

static int import_nccl(int argc, char **argv) {
  cal_nccl_opts o = {.device_kind = "gpu"};
  const char *out = "nccl-tests.cfg";
  int rc = nccl_args(argc, argv, &o, &out);
  if (rc)
    return rc == 1 ? CLI_EXIT_OK : rc;
  if ((rc = check_stem("--out", out)) != 0)
    return rc;
  char name[128];
  if (!o.name) {
    stem_of(out, name, sizeof name);
    o.name = name;
  }
  for (int k = optind; k < argc; k++)
    core_afile_note_input(argv[k]);
  core_afile_note_input(o.base);
  if ((rc = core_afile_check(out)) != 0)
    return cli_fail("import", core_err_wrap(rc, "--out"));
  core_profile *p;
  char notes[8192];
  rc = cal_import_nccl((const char *const *)argv + optind, argc - optind, &o, &p, notes, sizeof notes);
  if (rc)
    return cli_fail("import", rc);
  fputs(notes, stderr);
  rc = core_profile_write(p, out);
  core_profile_free(p);
  if (rc)
    return cli_fail("import", rc);
  fprintf(stderr, "import: wrote %s\n", out);
  return CLI_EXIT_OK;
}

/* A CPU job's traces are read a second time (the GPU reading found no GPU
 * work): one that is a pipe has nothing left to give, and is named. */
static int rereadable(const char *const *traces, int n) {
  struct stat st;
  for (int k = 0; k < n; k++)
    if (stat(traces[k], &st) == 0 && !S_ISREG(st.st_mode))
      return core_err_set(CORE_EUSAGE,
          "%s is not a regular file (a pipe?), and a CPU job's trace is read twice: save it to a file and import that",
          traces[k]);
  return 0;
}

/* The traces, their outputs checked first: a GPU job's model (and with
 * scenario its traced job), else a CPU job's measured layers. */
static int import_traces(const char *const *traces, int n, const cal_trace_opts *o, const char *out,
    const char *scenario, const char *profile_base) {
  char notes[16384];
  int rc;
  cal_gpu_opts go = {
      .name = o->name, .batch = o->batch, .base = o->base, .profile = profile_base, .scenario = scenario != NULL};
  if ((rc = cal_trace_check_io(traces, n, o->base, profile_base, out, scenario)) != 0)
    return cli_fail("import", rc);
  cal_ktrace_progress("import", CORE_PROGRESS_AFTER_S); /* a trace of a GB reads for a minute */
  rc = cal_import_gpu(traces, n, &go, out, notes, sizeof notes);
  if (rc == CORE_EUNSUPPORTED) { /* no GPU work: a CPU trace */
    if (scenario)
      return cli_usage("import", "--scenario writes the traced job of a GPU trace; %s holds no GPU work", traces[0]);
    if ((rc = rereadable(traces, n)) == 0)
      rc = cal_import_traces(traces, n, o, out, notes, sizeof notes);
  } else if (rc == 0 && scenario) {
    fputs(notes, stderr);
    notes[0] = '\0';
    rc = cal_trace_scenario(out, scenario, profile_base, notes, sizeof notes);
  }
  if (rc)
    return cli_fail("import", rc);
  fputs(notes, stderr);
  fprintf(stderr, "import: wrote %s\n", out);
  return CLI_EXIT_OK;
}

static int import_trace(int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, NULL, 'o'}, {"base", required_argument, NULL, 'b'},
      {"batch", required_argument, NULL, 'B'}, {"name", required_argument, NULL, 'n'},
      {"scenario", required_argument, NULL, 's'}, {"profile-base", required_argument, NULL, 'p'},
      {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  cal_trace_opts o = {0};
  const char *scenario = NULL, *profile_base = NULL;
  const char *out = NULL;
  long v;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:b:B:n:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 'b': o.base = optarg; break;
    case 'n': o.name = optarg; break;
    case 's': scenario = optarg; break;
    case 'p': profile_base = optarg; break;
    case 'B':
      if (cli_parse_long("import", "--batch", optarg, 1, 1000000000L, &v) != 0)
        return CLI_EXIT_USAGE;
      o.batch = (int)v;
      break;
    case 'h': fputs(cli_import_help, stdout); return CLI_EXIT_OK;
    case ':': return cli_usage("import", "option %s needs a value", argv[optind - 1]);
    default: return cli_usage("import", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (argc - optind < 1)
    return cli_usage("import",
        "torch-trace: give a trace, e.g. ddpsim import torch-trace --base scenarios/models/mlp-small.cfg trace.json");
  if (argc - optind > 10000)
    return cli_usage("import", "torch-trace: %d traces; give at most 10000", argc - optind);
  const char *trace = argv[optind];
  char def[4200];
  struct stat st;
  if (!out && stat(trace, &st) == 0 && !S_ISREG(st.st_mode))
    return cli_usage("import",
        "torch-trace: %s is not a file (a pipe?) whose name the model can take, as it does by default; name the model "
        "with --out MODEL",
        trace);
  if (!out) {
    char stem[4096];
    stem_of(trace, stem, sizeof stem);
    snprintf(def, sizeof def, "%s.cfg", stem);
    out = def;
  }
  if (profile_base && !scenario)
    return cli_usage("import", "--profile-base goes with --scenario FILE");
  int rc = check_stem("--out", out);
  if (rc == 0 && scenario)
    rc = check_stem("--scenario", scenario);
  if (rc)
    return rc;
  return import_traces((const char *const *)(argv + optind), argc - optind, &o, out, scenario, profile_base);
}

int cli_cmd_import(int argc, char **argv) {
  if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    fputs(cli_import_help, stdout);
    return CLI_EXIT_OK;
  }
  if (argc < 2)
    return cli_usage("import", "expected what to import: nccl-tests or torch-trace");
  if (!strcmp(argv[1], "nccl-tests"))
    return import_nccl(argc - 1, argv + 1);
  if (!strcmp(argv[1], "torch-trace"))
    return import_trace(argc - 1, argv + 1);
  return cli_usage("import", "cannot import '%s'; the kinds are nccl-tests and torch-trace", argv[1]);
}

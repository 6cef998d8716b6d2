/* ddpsim model: a model file's DDP gradient buckets as CSV, to compare
 * with a real job's. */
#include "cli.h"

#include "core/bucket.h"
#include "core/csv.h"
#include "core/err.h"
#include "core/model.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_model_help[] = "Usage: ddpsim model MODEL [options]\n"
                              "\n"
                              "Print the gradient buckets PyTorch's DistributedDataParallel makes of\n"
                              "MODEL's parameters (fp32 gradients), as CSV: bucket,bytes,params, one row\n"
                              "per bucket in the order DDP launches them, params the tensors' names as\n"
                              "named_parameters() gives them, space-separated, in the bucket's order.\n"
                              "Compare with your job's: a communication hook sees the same through\n"
                              "bucket.index(), bucket.buffer() and bucket.parameters()\n"
                              "(bench/pytorch/buckets.py does it).\n"
                              "\n"
                              "Default DDP puts every gradient into one bucket in its first iteration,\n"
                              "then rebuilds the buckets once in the order the gradients became ready\n"
                              "(the model's ready_order, or the rule for its layer kinds; see\n"
                              "scenarios/README.md). With find_unused_parameters=True the buckets are\n"
                              "filled in parameter order from the start, launched last first, and never\n"
                              "rebuilt.\n"
                              "\n"
                              "Options:\n"
                              "      --bucket-cap-mb X         DDP's bucket_cap_mb (default 25)\n"
                              "      --first-bucket-mb Y       the first bucket's cap: 1 when\n"
                              "                                --bucket-cap-mb is not given, else X, as in\n"
                              "                                PyTorch\n"
                              "      --iteration first|rebuilt the first iteration, or every later one\n"
                              "                                (default rebuilt)\n"
                              "      --find-unused-parameters  DDP(find_unused_parameters=True)\n"
                              "  -o, --out FILE                write the CSV there (default: stdout)\n"
                              "\n"
                              "Example:\n"
                              "  ddpsim model scenarios/models/resnet50.cfg --bucket-cap-mb 25\n";

static int parse_mb(const char *opt, const char *s, double lo, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || !(v >= lo && v <= 1e6))
    return cli_usage("model", "%s expects MiB in [%g, 1e6], got '%s'", opt, lo, s);
  *out = v;
  return 0;
}

/* Bucket k's tensor names, space-separated (malloc'd), or NULL. */
static char *bucket_names(const core_model *m, const core_buckets *b, int k) {
  char name[sizeof m->layers[0].name + CORE_PNAME_MAX + 1];
  size_t len = 1, pos = 0;
  for (int i = b->bucket_first[k]; i < b->bucket_first[k + 1]; i++)
    len += strlen(core_model_tensor_name(m, b->bucket_tensors[i], name, sizeof name)) + 1;
  char *s = malloc(len);
  if (!s)
    return NULL;
  s[0] = '\0';
  for (int i = b->bucket_first[k]; i < b->bucket_first[k + 1]; i++)
    pos += (size_t)snprintf(
        s + pos, len - pos, "%s%s", pos ? " " : "", core_model_tensor_name(m, b->bucket_tensors[i], name, sizeof name));
  return s;
}

/* To path, or to stdout when path is NULL. */
static int write_csv(const core_model *m, const core_buckets *b, const char *path) {
  static const char *const cols[] = {"bucket", "bytes", "params"};
  core_csv c;
  int rc = 0;
  if (path)
    rc = core_csv_open(&c, path, cols, 3);
  else
    core_csv_stream(&c, stdout, "stdout", cols, 3);
  if (rc)
    return rc;
  for (int k = 0; k < b->n_buckets; k++) {
    char *names = bucket_names(m, b, k);
    if (!names) {
      if (path)
        core_csv_abort(&c);
      return core_err_set(CORE_ENOMEM, "out of memory listing the buckets of %s", m->path);
    }
    core_csv_int(&c, k);
    core_csv_int(&c, (long long)b->bucket_elems[k] * 4);
    core_csv_str(&c, names);
    core_csv_end_row(&c);
    free(names);
  }
  return path ? core_csv_commit(&c) : core_csv_stream_end(&c);
}

enum { O_CAP = 1000, O_FIRST, O_ITER, O_UNUSED };

typedef struct opts {
  double cap_mb, first_mb; /* first_mb < 0: not given */
  int cap_given, first_iter, unused;
  const char *out;
} opts;

/* One option c with argument arg: 0, 1 after --help, or an exit status for
 * a usage error. */
static int parse_opt(int c, const char *arg, char **argv, opts *o) {
  switch (c) {
  case O_CAP:
    if (parse_mb("--bucket-cap-mb", arg, 1e-6, &o->cap_mb))
      return CLI_EXIT_USAGE;
    o->cap_given = 1;
    return 0;
  case O_FIRST: return parse_mb("--first-bucket-mb", arg, 0, &o->first_mb) ? CLI_EXIT_USAGE : 0;
  case O_ITER:
    if (strcmp(arg, "first") && strcmp(arg, "rebuilt"))
      return cli_usage("model", "--iteration expects first or rebuilt, got '%s'", arg);
    o->first_iter = strcmp(arg, "first") == 0;
    return 0;
  case O_UNUSED: o->unused = 1; return 0;
  case 'o': o->out = arg; return 0;
  case 'h': fputs(cli_model_help, stdout); return 1;
  case ':': return cli_usage("model", "option %s needs a value", argv[optind - 1]);
  default: return cli_usage("model", "unknown option '%s'", argv[optind - 1]);
  }
}

/* 0, 1 after --help, or an exit status for a usage error. */
static int parse_args(int argc, char **argv, opts *o) {
  static const struct option lo[] = {{"bucket-cap-mb", required_argument, NULL, O_CAP},
      {"first-bucket-mb", required_argument, NULL, O_FIRST}, {"iteration", required_argument, NULL, O_ITER},
      {"find-unused-parameters", no_argument, NULL, O_UNUSED}, {"out", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int c, rc;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1)
    if ((rc = parse_opt(c, optarg, argv, o)) != 0)
      return rc;
  if (optind != argc - 1)
    return cli_usage(
        "model", optind >= argc ? "missing MODEL file" : "expected one MODEL file, got %d arguments", argc - optind);
  return 0;
}

/* Load the model at path; one without parameter tensors is an error, as
 * DDP would have nothing to put in buckets. */
static int load_model(const char *path, core_model **out) {
  core_model *m = NULL;
  int rc = core_model_load(path, &m);
  if (rc)
    return rc;
  if (m->n_tensors == 0) { /* a traced step whose trace did not say its parameters' sizes */
    rc = core_err_set(CORE_EINVAL,
        "%s has no parameter tensors, so DDP has nothing to put in buckets (imported from a trace that does not say "
        "their sizes? import it again with --base MODEL)",
        path);
    core_model_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

int cli_cmd_model(int argc, char **argv) {
  opts o = {.cap_mb = CORE_BUCKET_DEFAULT_CAP_MB, .first_mb = -1};
  int rc = parse_args(argc, argv, &o);
  if (rc)
    return rc == 1 ? CLI_EXIT_OK : rc;
  /* _BucketCapacityConfig.create (torch 2.15.0): bytes = int(MiB * 2^20);
   * the first bucket is 1 MiB only while bucket_cap_mb is left unset. */
  size_t cap = (size_t)(o.cap_mb * 1048576.0);
  size_t first = o.first_mb >= 0 ? (size_t)(o.first_mb * 1048576.0) : o.cap_given ? cap : CORE_BUCKET_FIRST_BYTES;
  if (cap == 0)
    return cli_usage("model", "--bucket-cap-mb %g is under one byte", o.cap_mb);
  core_model *m = NULL;
  if ((rc = load_model(argv[optind], &m)) != 0)
    return cli_fail("model", rc);
  core_buckets b;
  rc = core_bucket_assign(
      m->tensor_elems, m->n_tensors, m->ready_order, 4, first, cap, core_bucket_ddp_order(o.unused, o.first_iter), &b);
  if (rc == 0) {
    rc = write_csv(m, &b, o.out);
    core_bucket_free(&b);
  }
  core_model_free(m);
  return rc ? cli_fail("model", rc) : CLI_EXIT_OK;
}

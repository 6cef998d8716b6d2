/* ddpsim collective: one collective's predicted time, algbw and busbw over
 * a range of sizes, printed as nccl-tests prints its tables (so that a row
 * can be compared with a real run line by line, and the output imported),
 * with a warning when a DDP bucket's allreduce would outlast the backend's
 * timeout. The times come from sim/colltime.h. */
#include "cli.h"

#include "sim/colltime.h"
#include "sim/scenario.h"

#include "core/cfg.h"
#include "core/err.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char cli_collective_help[] =
    "Usage: ddpsim collective --profile FILE [--op OP] [-g GPUS_PER_NODE] [--nodes N]\n"
    "                         [--network SPEC] [--backend nccl|gloo] [--algo ALGO]\n"
    "                         [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-d TYPE] [-r ROOT]\n"
    "                         [--bucket-cap-mb X] [--timeout S]\n"
    "       ddpsim collective --scenario FILE [--point K] [options above]\n"
    "\n"
    "Predict one collective over a range of sizes and print the table nccl-tests\n"
    "prints (size, count, type, redop, root, then time in us, algbw and busbw in\n"
    "GB/s out of place and in place; #wrong is N/A: nothing ran), so that each row\n"
    "compares with a real run's, and `ddpsim import nccl-tests` reads it back.\n"
    "The table is that of `mpirun -np NODES all_reduce_perf -g G`: one process\n"
    "per node driving its G GPUs, so its header says nGpus G (nccl-tests' GPUs\n"
    "per thread) and a node's ranks share a Pid. As there, a value too wide for\n"
    "its column in fixed point (a time of 10 s, 1e7 us, or more) prints in\n"
    "e-notation with two digits (3.6e+07), the columns staying aligned.\n"
    "Where the profile measured this collective on exactly this many ranks and\n"
    "nodes, its fit is the prediction; elsewhere the cost models run on links\n"
    "derived from the profile and the network, and on a datasheet profile NCCL\n"
    "takes the fastest of its LL, LL128 and Simple protocols for each size.\n"
    "\n"
    "Options (those of nccl-tests mean what they mean there):\n"
    "  --profile FILE     the profile (with --scenario: instead of the scenario's)\n"
    "  --scenario FILE    take the profile, network, backend, GPUs per node, nodes,\n"
    "                     bucket cap and timeout from a point of a scenario\n"
    "  --point K          that point (default 0, the first row of its CSV)\n"
    "  --op OP            allreduce (default), allgather, reducescatter, broadcast\n"
    "  -g, --ngpus G      GPUs (ranks) per node (default, and most: the profile's ranks per node)\n"
    "  --nodes N          nodes (default 1)\n"
    "  --network SPEC     the inter-node network, as a scenario's network group:\n"
    "                     'gbps = 400.0; latency_us = 14.0; nics_per_node = 8;'\n"
    "                     (efficiency, oversubscription too), or 'from_profile = true;'\n"
    "                     (the default: the profile's measured link); with\n"
    "                     --scenario, the name of one of its networks\n"
    "  --backend B        nccl or gloo (default: nccl on GPU profiles)\n"
    "  --algo A           auto (default: NCCL's faster of ring and tree), ring, tree,\n"
    "                     hierarchical, or a Gloo algorithm (like NCCL_ALGO)\n"
    "  -b, --minbytes S   smallest size (default 32M); K, M, G suffixes (x1024)\n"
    "  -e, --maxbytes S   largest size (default 32M)\n"
    "  -f, --stepfactor F multiply the size by F (above 1) each row\n"
    "  -i, --stepbytes S  or add S each row (default 1M, when -f is not given);\n"
    "                     one of -f and -i\n"
    "  -d, --datatype T   float (default), half, bfloat16, double, int32, int8\n"
    "  -r, --root R       broadcast's root, one of the ranks (default 0)\n"
    "  --bucket-cap-mb X  DDP's bucket cap the timeout warning checks (default 25)\n"
    "  --timeout S        the backend's collective timeout (default NCCL 600 s,\n"
    "                     Gloo 30 s)\n"
    "\n"
    "A size counts whole elements (of each rank, for allgather and reducescatter),\n"
    "so sizes that round to the same row print it once; a table of more than\n"
    "100000 rows is refused (narrow -b..-e or step further).\n"
    "\n"
    "A warning on stderr says when a bucket's allreduce, or a size of the table,\n"
    "would take longer than the timeout: the job would abort there.\n"
    "\n"
    "Example:\n"
    "  ddpsim collective --profile scenarios/profiles/dgx-h100.cfg -g 8 --nodes 2 \\\n"
    "    --network 'gbps = 400.0; latency_us = 14.0; nics_per_node = 8; efficiency = 0.96;' \\\n"
    "    -b 8 -e 128M -f 2\n";

typedef struct opts {
  const char *profile, *scenario, *network, *backend, *algo;
  long point, per_node, nodes, root;
  enum core_coll op;
  double min_b, max_b, factor, step_b, bucket_mb, timeout;
  int step_given; /* -i given (so it must not be ignored for -f) */
  const char *type;
  int type_size;
} opts;

/* The most rows one table prints: a range and step that would print more
 * (an unbounded run, for -e 99999999G at the default -i 1M) is refused,
 * before any row, with what to narrow. The cli_collective_help names it. */
enum { COLL_MAX_ROWS = 100000 };

/* "32M", "8", "1G": bytes, with nccl-tests' binary suffixes. */
static int parse_size(const char *opt, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  double mult = *end == 'K' || *end == 'k'   ? 1024.0
                : *end == 'M' || *end == 'm' ? 1048576.0
                : *end == 'G' || *end == 'g' ? 1073741824.0
                                             : 1.0;
  if (mult > 1)
    end++;
  if (errno || end == s || *end || !(v >= 0) || v * mult > 1e18)
    return cli_usage("collective", "%s expects a size in bytes (K, M, G suffixes), got '%s'", opt, s) ? CORE_EUSAGE : 0;
  *out = floor(v * mult) + 0.0; /* "-0" is 0: +0.0 turns -0.0 into 0.0, printed without its sign */
  return 0;
}

/* nccl-tests' type names and sizes (src/common.cu test_typenames). */
static int type_size(const char *t) {
  static const struct {
    const char *name;
    int size;
  } types[] = {{"float", 4}, {"half", 2}, {"bfloat16", 2}, {"double", 8}, {"int32", 4}, {"int8", 1}};
  for (size_t i = 0; i < sizeof types / sizeof *types; i++)
    if (!strcmp(t, types[i].name))
      return types[i].size;
  return 0;
}

static int parse_op(const char *s, enum core_coll *op) {
  if (core_coll_parse(s, op) == 0)
    return 0;
  return cli_usage("collective", "--op expects allreduce, allgather, reducescatter or broadcast, got '%s'", s)
             ? CORE_EUSAGE
             : 0;
}

/* -b, -e and one step that goes from one to the other, as nccl-tests
 * steps (by -f when above 1, else by -i), with nothing given that it would
 * ignore. */
static int check_steps(const opts *o) {
  if (o->max_b < o->min_b)
    return cli_usage("collective", "-e %.0f is below -b %.0f", o->max_b, o->min_b);
  if (o->factor == 1)
    return cli_usage("collective",
        "-f 1 would not grow the size (nccl-tests takes a factor of 1 as none and steps by -i); give -f above 1, "
        "or -i STEP");
  if (o->factor > 1 && o->step_given)
    return cli_usage("collective", "-f and -i both set the step, and -f would win (as in nccl-tests); give one");
  if (o->factor > 1 && o->min_b <= 0 && o->max_b > o->min_b)
    return cli_usage("collective", "-f multiplies the size, which from -b 0 stays 0; give -b above 0");
  if (o->factor <= 1 && o->step_b <= 0 && o->max_b > o->min_b)
    return cli_usage("collective", "-i must be above 0 to step from -b to -e");
  return 0;
}

static int parse_args(int argc, char **argv, opts *o) {
  static const struct option lo[] = {{"profile", required_argument, NULL, 'P'},
      {"scenario", required_argument, NULL, 'S'}, {"point", required_argument, NULL, 'K'},
      {"op", required_argument, NULL, 'O'}, {"ngpus", required_argument, NULL, 'g'},
      {"nodes", required_argument, NULL, 'N'}, {"network", required_argument, NULL, 'W'},
      {"backend", required_argument, NULL, 'B'}, {"algo", required_argument, NULL, 'A'},
      {"minbytes", required_argument, NULL, 'b'}, {"maxbytes", required_argument, NULL, 'e'},
      {"stepfactor", required_argument, NULL, 'f'}, {"stepbytes", required_argument, NULL, 'i'},
      {"datatype", required_argument, NULL, 'd'}, {"root", required_argument, NULL, 'r'},
      {"bucket-cap-mb", required_argument, NULL, 'C'}, {"timeout", required_argument, NULL, 'T'},
      {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int c, rc = 0;
  optind = 1;
  opterr = 0;
  while (rc == 0 && (c = getopt_long(argc, argv, ":g:b:e:f:i:d:r:h", lo, NULL)) != -1) {
    switch (c) {
    case 'P': o->profile = optarg; break;
    case 'S': o->scenario = optarg; break;
    case 'K': rc = cli_parse_long("collective", "--point", optarg, 0, 0x7fffffffL, &o->point); break;
    case 'O': rc = parse_op(optarg, &o->op); break;
    case 'g': rc = cli_parse_long("collective", "-g", optarg, 1, 1024, &o->per_node); break;
    case 'N': rc = cli_parse_long("collective", "--nodes", optarg, 1, 1 << 20, &o->nodes); break;
    case 'W': o->network = optarg; break;
    case 'B': o->backend = optarg; break;
    case 'A': o->algo = optarg; break;
    case 'b': rc = parse_size("-b", optarg, &o->min_b); break;
    case 'e': rc = parse_size("-e", optarg, &o->max_b); break;
    case 'f': rc = cli_parse_double("collective", "-f", optarg, 1, 1e6, &o->factor); break;
    case 'i':
      rc = parse_size("-i", optarg, &o->step_b);
      o->step_given = 1;
      break;
    case 'd': o->type = optarg; break;
    case 'r': rc = cli_parse_long("collective", "-r", optarg, 0, 1 << 24, &o->root); break;
    case 'C': rc = cli_parse_double("collective", "--bucket-cap-mb", optarg, 1e-3, 1e6, &o->bucket_mb); break;
    case 'T': rc = cli_parse_double("collective", "--timeout", optarg, 1e-3, 1e7, &o->timeout); break;
    case 'h': fputs(cli_collective_help, stdout); return 1;
    case ':': return cli_usage("collective", "option %s needs a value", argv[optind - 1]);
    default: return cli_usage("collective", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (rc)
    return CLI_EXIT_USAGE;
  if (optind != argc)
    return cli_usage("collective", "unexpected argument '%s'", argv[optind]);
  if (!o->profile && !o->scenario)
    return cli_usage("collective", "give --profile FILE (and the shape), or --scenario FILE");
  if (o->point > 0 && !o->scenario)
    return cli_usage("collective", "--point chooses a point of --scenario; give --scenario FILE too");
  if (!(o->type_size = type_size(o->type)))
    return cli_usage("collective", "-d expects float, half, bfloat16, double, int32 or int8, got '%s'", o->type);
  return check_steps(o);
}

/* What the command predicts: the profile and the shape. */
typedef struct setup {
  sim_scenario *s;   /* with --scenario */
  core_profile *own; /* with --profile alone */
  const core_profile *pr;
  const char *pr_path;
  sim_network net;
  enum sim_backend backend;
  int algo, nodes, per_node;
  double bucket_mb, timeout;
} setup;

/* A --network given by its keys, named by what it is. */
static void name_inline(sim_network *n) {
  if (n->from_profile && !(n->gbps > 0))
    snprintf(n->name, sizeof n->name, "the profile's link");
  else if (n->nics_per_node > 1)
    snprintf(n->name, sizeof n->name, "%dx%g Gb/s", n->nics_per_node, n->gbps);
  else
    snprintf(n->name, sizeof n->name, "%g Gb/s", n->gbps);
}

/* --network: a name of the scenario's networks, or a group's keys. */
static int network_of(const opts *o, setup *u) {
  if (!o->network && u->s)
    return 0; /* the point's */
  if (u->s)
    for (int i = 0; i < u->s->n_networks; i++)
      if (!strcmp(u->s->networks[i].name, o->network)) {
        u->net = u->s->networks[i];
        return 0;
      }
  char text[4096];
  snprintf(text, sizeof text, "network = { %s };\n", o->network ? o->network : "from_profile = true;");
  core_cfg cfg;
  int rc = core_cfg_load_string(&cfg, text, "--network", "network");
  if (rc == 0) {
    const config_setting_t *g = config_setting_get_member(core_cfg_root(&cfg), "network");
    rc = g && config_setting_is_group(g)
             ? sim_network_parse(g, u->pr, u->pr_path, 1, &u->net)
             : core_err_set(CORE_EUSAGE, "--network expects a network's keys, e.g. 'gbps = 400.0; latency_us = 14.0;'");
    if (rc == 0 && !config_setting_get_member(g, "name")) /* named for the table's header by what it is */
      name_inline(&u->net);
    core_cfg_free(&cfg);
  }
  if (rc == CORE_EINVAL && u->s)
    return core_err_wrap(rc, "--network '%s' is neither a network of %s nor a network group", o->network, u->s->path);
  return rc;
}

/* The profile and shape from --scenario's point, then the options over it. */
static int load(const opts *o, setup *u) {
  int rc;
  if (o->scenario) {
    if ((rc = sim_scenario_load_with(o->scenario, o->profile, &u->s)) != 0)
      return rc;
    if (o->point >= sim_scenario_points(u->s))
      return core_err_set(CORE_EUSAGE, "--point %ld: %s has %ld points (0 to %ld)", o->point, o->scenario,
          sim_scenario_points(u->s), sim_scenario_points(u->s) - 1);
    sim_point p;
    sim_scenario_point(u->s, o->point, &p);
    u->pr = u->s->profile;
    u->pr_path = u->s->profile_path;
    u->net = *p.network;
    u->backend = p.backend;
    u->algo = p.algorithm;
    u->nodes = p.nodes;
    u->per_node = p.per_node;
    u->bucket_mb = p.bucket_cap_mb;
    u->timeout = sim_scenario_timeout(u->s, p.backend);
    if (p.fabric)
      fprintf(stderr,
          "ddpsim collective: note: %s's fabric (its tiers, oversubscription, neighbours and in-network reduction) is "
          "not in this table, which costs the network's links alone; `ddpsim simulate` gives the fabric's allreduce "
          "of a full bucket in its CSV (busbw_GBps)\n",
          o->scenario);
  } else {
    if ((rc = core_profile_load(o->profile, &u->own)) != 0)
      return rc;
    u->pr = u->own;
    u->pr_path = o->profile;
    u->backend = strcmp(u->pr->device_kind, "gpu") == 0 ? SIM_BACKEND_NCCL : SIM_BACKEND_GLOO;
    u->algo = -1;
    u->nodes = 1;
    u->per_node = u->pr->ranks_per_node;
    u->bucket_mb = 25.0;
  }
  if (o->per_node)
    u->per_node = (int)o->per_node;
  if (o->nodes)
    u->nodes = (int)o->nodes;
  if (o->bucket_mb > 0)
    u->bucket_mb = o->bucket_mb;
  return network_of(o, u);
}

/* The algorithm is the backend's, and not one that reduces in the
 * network: the table is costed on links alone, with no fabric to say which
 * switches reduce. */
static int check_algo(const setup *u) {
  if (u->algo < 0)
    return 0;
  enum sim_algo a = (enum sim_algo)u->algo;
  if (!sim_algo_valid(u->backend, a))
    return core_err_set(CORE_EUSAGE, "--algo %s is not one of %s's allreduce algorithms (%s); give one of them or auto",
        sim_algo_name(a), sim_backend_name(u->backend), sim_algo_link_names(u->backend));
  if (sim_algo_in_network(a))
    return core_err_set(CORE_EUSAGE,
        "algorithm %s reduces in the network, and `ddpsim collective` costs links without switches; give --algo "
        "%s or auto, or simulate a scenario whose fabric offers it (its CSV has busbw_GBps)",
        sim_algo_name(a), sim_algo_link_names(u->backend));
  return 0;
}

/* -g within the profile's node, where the profile measured one (without an
 * intra-node measurement the cost model says so itself). */
static int check_node(const setup *u) {
  int most = core_profile_node_devices(u->pr), gpu = strcmp(u->pr->device_kind, "gpu") == 0;
  if (u->per_node <= most || !core_profile_allreduce(u->pr, sim_backend_name(u->backend), "intra"))
    return 0;
  return core_err_set(CORE_EUSAGE,
      "-g %d: profile '%s' describes nodes of %d %s%s (meta.ranks_per_node and its one-node collectives); give -g %d "
      "or fewer, and more nodes with --nodes",
      u->per_node, u->pr_path, most, gpu ? "GPU" : "CPU rank", most == 1 ? "" : "s", most);
}

/* --backend, --algo and --timeout over what load() chose. */
static int choose(const opts *o, setup *u) {
  if (o->backend) {
    if (strcmp(o->backend, "nccl") && strcmp(o->backend, "gloo"))
      return core_err_set(CORE_EUSAGE, "--backend expects nccl or gloo, got '%s'", o->backend);
    u->backend = !strcmp(o->backend, "nccl") ? SIM_BACKEND_NCCL : SIM_BACKEND_GLOO;
  }
  if (o->algo) {
    enum sim_algo a;
    if (strcmp(o->algo, "auto") && sim_algo_parse(o->algo, &a) != 0)
      return core_err_set(CORE_EUSAGE,
          "--algo expects auto, ring, tree, hierarchical, halving_doubling, ring_chunked, bcube, gloo_ring or "
          "segmented_ring, got '%s'",
          o->algo);
    u->algo = strcmp(o->algo, "auto") ? (int)a : -1;
  }
  if (o->timeout > 0 || !u->s)
    u->timeout = o->timeout > 0 ? o->timeout : u->backend == SIM_BACKEND_NCCL ? SIM_NCCL_TIMEOUT_S : SIM_GLOO_TIMEOUT_S;
  long world = (long)u->nodes * u->per_node;
  if (o->op == CORE_COLL_BROADCAST && o->root >= world)
    return core_err_set(CORE_EUSAGE, "-r %ld is not one of the %ld ranks (0 to %ld); give a root among them", o->root,
        world, world - 1);
  if (u->backend == SIM_BACKEND_NCCL && strcmp(u->pr->device_kind, "gpu") != 0)
    return core_err_set(CORE_EUSAGE,
        "backend nccl needs GPUs, and profile '%s' describes %s devices; use --backend gloo", u->pr_path,
        u->pr->device_kind);
  int rc = check_algo(u);
  return rc ? rc : check_node(u);
}

/* nccl-tests' getFloatStr: the most decimals (2, 1, 0) that fit the width. */
static const char *ffloat(double v, int width, char *buf, size_t n) {
  for (int dec = 2; dec >= 0; dec--) {
    snprintf(buf, n, "%*.*f", width, dec, v);
    if ((int)strlen(buf) <= width)
      return buf;
  }
  snprintf(buf, n, "%*.1e", width, v);
  return buf;
}

static const char *const binaries[] = {"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "broadcast_perf"};

static void print_head(const opts *o, const setup *u, const sim_colltime *c) {
  int p = u->nodes * u->per_node;
  printf("# ddpsim collective: PREDICTED, not measured (%s; profile %s; network %s; %s)\n",
      c->measured ? "the profile's fit at this shape" : "cost models on the profile's links", u->pr_path,
      u->nodes > 1 ? u->net.name : "none (one node)", sim_backend_name(u->backend));
  printf("# Collective test starting: %s\n", binaries[o->op]);
  /* As `mpirun -np NODES all_reduce_perf -g G` prints it: one process of
   * one thread per node, whose nGpus is the GPUs of that thread (nccl-tests'
   * README), so the ranks of a node share its Pid. */
  printf("# nThread 1 nGpus %d minBytes %.0f maxBytes %.0f step: %g(%s) warmup iters: 0 iters: 0 agg iters: 1 "
         "validation: 0 graph: 0\n",
      u->per_node, o->min_b, o->max_b, o->factor > 1 ? o->factor : o->step_b, o->factor > 1 ? "factor" : "bytes");
  printf("#\n# Using devices\n");
  for (int r = 0; r < p && r < 1024; r++)
    printf("#  Rank %2d Group  0 Pid %6d on %10s%d device %2d [predicted] %s\n", r, r / u->per_node, "node",
        r / u->per_node, r % u->per_node, u->pr->device_name[0] ? u->pr->device_name : u->pr->device_kind);
  if (p > 1024)
    printf("#  ... %d ranks on %d nodes in all (rank lines after the first 1024 left out)\n", p, u->nodes);
  printf("#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "",
      "", "");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "size", "count", "type", "redop",
      "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "(B)", "(elements)", "", "", "",
      "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

/* What one row's size rounds down to: whole elements, and for allgather
 * and reduce-scatter whole elements on every rank (nccl-tests' count =
 * size / wordSize, split over the ranks). */
static double row_unit(const opts *o, const setup *u) {
  int gathered = o->op == CORE_COLL_ALLGATHER || o->op == CORE_COLL_REDUCESCATTER;
  return (double)o->type_size * (gathered ? (double)u->nodes * u->per_node : 1.0);
}

/* The first size of nccl-tests' sequence after size (times -f, or plus -i)
 * whose row differs from size's: the sizes between round to the same row.
 * Not above size when the sequence stops growing. */
static double next_size(const opts *o, double size, double unit) {
  double boundary = (floor(size / unit) + 1) * unit, next;
  if (o->factor > 1) {
    next = size * o->factor;
    if (next < boundary && next > 0) /* skip ahead, one step short, then step */
      next *= pow(o->factor, fmax(floor(log(boundary / next) / log(o->factor)) - 1, 0));
    while (next < boundary && next > size)
      next *= o->factor;
  } else {
    next = size + o->step_b;
    if (next < boundary && o->step_b > 0)
      next += o->step_b * fmax(floor((boundary - next) / o->step_b) - 1, 0);
    while (next < boundary && next > size)
      next += o->step_b;
  }
  return next;
}

/* The rows from -b to -e, or COLL_MAX_ROWS + 1 if there are more. */
static long count_rows(const opts *o, double unit) {
  long n = 0;
  for (double size = o->min_b; size <= o->max_b && n <= COLL_MAX_ROWS; n++) {
    double next = next_size(o, size, unit);
    if (next <= size)
      return n + 1;
    size = next;
  }
  return n;
}

/* The rows; returns the mean busbw, and in *late the smallest size past
 * the timeout (0 if none). */
static double print_rows(const opts *o, const setup *u, const sim_colltime *c, double *late) {
  int p = u->nodes * u->per_node, gathered = o->op == CORE_COLL_ALLGATHER || o->op == CORE_COLL_REDUCESCATTER;
  double sum = 0, unit = row_unit(o, u);
  long n = 0;
  *late = 0;
  for (double size = o->min_b; size <= o->max_b;) {
    double bytes = floor(size / unit) * unit, per = bytes / o->type_size / (gathered ? p : 1);
    double t = bytes > 0 ? sim_colltime_at(c, bytes) : 0, algbw = t > 0 ? bytes / 1e9 / t : 0;
    double busbw = algbw * core_coll_busbw_factor(o->op, p);
    char tb[32], ab[32], bb[32];
    long root = o->op == CORE_COLL_BROADCAST ? o->root : -1;
    printf("%12.0f  %12.0f  %8s  %6s  %6ld", bytes, per, o->type,
        o->op == CORE_COLL_ALLREDUCE || o->op == CORE_COLL_REDUCESCATTER ? "sum" : "none", root);
    for (int h = 0; h < 2; h++)
      printf("  %7s  %6s  %6s  %6s", ffloat(t * 1e6, 7, tb, sizeof tb), ffloat(algbw, 6, ab, sizeof ab),
          ffloat(busbw, 6, bb, sizeof bb), "N/A");
    putchar('\n');
    sum += 2 * busbw;
    n += 2;
    if (t > u->timeout && *late == 0)
      *late = bytes;
    double next = next_size(o, size, unit);
    if (next <= size)
      break;
    size = next;
  }
  return n ? sum / n : 0;
}

/* A bucket's allreduce past the timeout aborts the job (NCCL's watchdog,
 * Gloo's timeout): say so, with what would avoid it. */
static void warn_timeout(const setup *u, double late) {
  sim_colltime ar;
  if (sim_colltime_setup(
          u->pr, u->pr_path, &u->net, u->backend, CORE_COLL_ALLREDUCE, u->algo, u->nodes, u->per_node, &ar) == 0) {
    double bucket = u->bucket_mb * 1048576.0, t = sim_colltime_at(&ar, bucket);
    if (t > u->timeout)
      fprintf(stderr,
          "ddpsim collective: warning: an allreduce of one %g MiB bucket (bucket_cap_mb) takes %.3g s on %d x %d ranks "
          "over %s, past %s's %g s timeout: the job would abort at its first step; use a faster network, lower "
          "bucket_cap_mb, or raise the timeout above %.0f s\n",
          u->bucket_mb, t, u->nodes, u->per_node, u->nodes > 1 ? u->net.name : "one node", sim_backend_name(u->backend),
          u->timeout, ceil(t * 1.5));
  }
  if (late > 0)
    fprintf(stderr,
        "ddpsim collective: warning: from %.0f bytes on, the table's sizes take longer than the %g s timeout of %s\n",
        late, u->timeout, sim_backend_name(u->backend));
}

static void setup_free(setup *u) {
  sim_scenario_free(u->s);
  core_profile_free(u->own);
}

int cli_cmd_collective(int argc, char **argv) {
  opts o = {.op = CORE_COLL_ALLREDUCE,
      .min_b = 32 * 1048576.0,
      .max_b = 32 * 1048576.0,
      .step_b = 1048576.0,
      .type = "float"};
  int rc = parse_args(argc, argv, &o);
  if (rc)
    return rc > 0 && rc != CLI_EXIT_USAGE ? CLI_EXIT_OK : rc;
  setup u = {0};
  sim_colltime c;
  if ((rc = load(&o, &u)) != 0 || (rc = choose(&o, &u)) != 0 ||
      (rc = sim_colltime_setup(u.pr, u.pr_path, &u.net, u.backend, o.op, u.algo, u.nodes, u.per_node, &c)) != 0) {
    if (rc == CORE_EINVAL && u.pr && u.nodes > 1 && !o.network && !o.scenario) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", core_err_msg());
      rc = core_err_set(CORE_EINVAL,
          "%s; give the network between the nodes with --network 'gbps = G; latency_us = L; nics_per_node = K;'", msg);
    }
    setup_free(&u);
    return cli_fail("collective", rc);
  }
  long rows = count_rows(&o, row_unit(&o, &u));
  if (rows > COLL_MAX_ROWS) {
    setup_free(&u);
    return cli_usage("collective",
        "-b %.0f to -e %.0f by %s %.*f makes more than %d rows; narrow the range (-b, -e) or step further (a "
        "larger -i, or -f 2)",
        o.min_b, o.max_b, o.factor > 1 ? "-f" : "-i", o.factor > 1 ? 6 : 0, o.factor > 1 ? o.factor : o.step_b,
        COLL_MAX_ROWS);
  }
  double late;
  print_head(&o, &u, &c);
  double avg = print_rows(&o, &u, &c, &late);
  printf("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %g \n#\n# Collective test concluded: %s\n\n", avg,
      binaries[o.op]);
  fflush(stdout);
  warn_timeout(&u, late);
  setup_free(&u);
  return CLI_EXIT_OK;
}

/* ddpsim train: one rank of a real data-parallel training run. */
#include "cli.h"

#include "runtime/data.h"
#include "runtime/ddp.h"
#include "runtime/train.h"

#include "core/bucket.h"
#include "core/clock.h"
#include "core/err.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char cli_train_help[] = "Usage: ddpsim train --model FILE [options]\n"
                              "\n"
                              "Run one rank of a data-parallel training job with PyTorch DDP's mechanics on\n"
                              "CPUs (Gloo over TCP, OpenBLAS): forward, backward layer by layer, gradients\n"
                              "in buckets allreduced on a communication thread as soon as each is ready,\n"
                              "averaged, SGD. Rank and world come from the environment (torchrun's RANK,\n"
                              "WORLD_SIZE, LOCAL_RANK, MASTER_ADDR; Slurm; Open MPI); run it under\n"
                              "`ddpsim launch` to start several ranks. Alone, it is rank 0 of 1.\n"
                              "\n"
                              "Model and data:\n"
                              "      --model FILE         model file of linear layers (scenarios/models/mlp.cfg)\n"
                              "      --batch N            samples per rank per step (default 32)\n"
                              "      --steps N            train until N steps are done (default 20)\n"
                              "      --dataset N          synthetic samples (default 65536), sharded like\n"
                              "                           DistributedSampler; --no-shuffle keeps index order\n"
                              "      --seed N             data and initial parameters (default 1)\n"
                              "      --lr X               SGD learning rate (default 0.01)\n"
                              "      --momentum X         SGD momentum (default 0.9)\n"
                              "      --threads N          OpenBLAS threads of this rank (default 1)\n"
                              "DDP:\n"
                              "      --bucket-cap-mb X    bucket size (default 25, PyTorch's)\n"
                              "      --first-bucket-mb X  first bucket (default 1, PyTorch's)\n"
                              "      --overlap on|off     allreduce during backward (default on)\n"
                              "      --algorithm A        default (gloo::allreduce, as PyTorch), ring,\n"
                              "                           ring_chunked, halving_doubling, bcube\n"
                              "      --compress H         communication hook of every bucket (PyTorch's\n"
                              "                           ddp_comm_hooks): none (default: fp32 allreduce),\n"
                              "                           fp16 or bf16 (cast, allreduce, cast back; bf16\n"
                              "                           needs --algorithm default), powersgd:R (PowerSGD\n"
                              "                           of rank R >= 1 as powerSGD_hook, with error\n"
                              "                           feedback and warm start)\n"
                              "      --powersgd-start N   plain allreduce for steps before N (default 1000,\n"
                              "                           PyTorch's start_powerSGD_iter)\n"
                              "      --powersgd-min-rate X\n"
                              "                           compress an n x m gradient at rank r only when\n"
                              "                           (n + m) r X < n m (default 2, PyTorch's\n"
                              "                           min_compression_rate)\n"
                              "Rendezvous:\n"
                              "      --rdzv SPEC          DIR or file://DIR (Gloo FileStore) or\n"
                              "                           redis://HOST:PORT (default $DDPSIM_RDZV)\n"
                              "      --bind ADDR          address to listen on (default $DDPSIM_BIND_ADDR, or\n"
                              "                           the address routed to MASTER_ADDR)\n"
                              "      --timeout S          rendezvous and collective timeout (default 30)\n"
                              "Output:\n"
                              "  -o, --out DIR            per-step metrics (DIR/rank-R.attempt-A.csv; rank 0\n"
                              "                           merges them into DIR/steps.csv) (default run);\n"
                              "                           with --resume, added after the rows of the run\n"
                              "                           it continues\n"
                              "      --trace              also DIR/trace-rank-R.json (Chrome/Perfetto)\n"
                              "      --params-out FILE    rank 0 writes the final parameters (raw fp32)\n"
                              "      --tensorboard DIR    TensorBoard event files, one per rank in DIR/rank_R/:\n"
                              "                           Train/ (Loss, LR, SamplesPerSec, StepTime, Attempt),\n"
                              "                           Dist/ (SyncTime, ExposedComm, CommRatio,\n"
                              "                           BucketAllreduce/K), System/ (CPUUtil, MemoryRSS,\n"
                              "                           NetRxGbps, NetTxGbps), Logger/Dropped; written by a\n"
                              "                           logger thread that never holds up a step (what it\n"
                              "                           cannot write is dropped and counted); after a\n"
                              "                           restart or with --resume each rank's file goes on\n"
                              "Checkpoints:\n"
                              "      --ckpt-dir DIR       where checkpoints go (rank 0 writes them; one run\n"
                              "                           at a time)\n"
                              "      --ckpt-every N       every N steps (default 0: never)\n"
                              "      --ckpt-keep N        keep the newest N (default 2; with --ckpt-every)\n"
                              "      --resume             continue from the newest valid checkpoint; implied\n"
                              "                           when the launcher restarts the group; none there:\n"
                              "                           step 0; only rejected ones (damaged, another\n"
                              "                           model's): exit 3, the files left as they are\n"
                              "Fault injection:\n"
                              "      --fail-at-step S[,S2,...] --fail-rank R\n"
                              "                           rank R SIGKILLs itself in the middle of step S's\n"
                              "                           allreduces in the first attempt, at S2 in the second\n"
                              "                           (after a restart), and so on\n"
                              "\n"
                              "After restarts, rank 0 writes DIR/recovery.csv: per failure, the time to\n"
                              "detect it, stop the other ranks, start again, rendezvous, load the\n"
                              "checkpoint and replay the lost steps.\n";

/* Rank 0's summary of the run and of its communication hook. */
static void report(const rt_train_opts *o, const char *hook, const rt_train_result *r) {
  if (r->steps_run <= 0) {
    printf("ddpsim train: %d rank(s), no step to train: %ld of --steps %ld already done, rendezvous %.3f s\n",
        r->world_size, r->first_step, o->steps, r->rdzv_s);
    return;
  }
  printf("ddpsim train: %d rank(s), steps %ld..%ld, mean step %.4f s, final loss %.6g, rendezvous %.3f s\n",
      r->world_size, r->first_step, o->steps - 1, r->mean_step_s, r->final_loss, r->rdzv_s);
  if (o->compress.kind == CORE_COMPRESS_NONE)
    return;
  /* Per step: allreduce payload (fp32 would be n_params * 4) and the
   * compute the hook added. */
  const rt_compress_stats *h = &r->hook;
  double per = 1.0 / (double)r->steps_run;
  int64_t n_ar = 0;
  for (int ph = 0; ph < RT_COMPRESS_N_PHASES; ph++)
    n_ar += h->allreduces[ph];
  printf("ddpsim train: hook %s: %.0f bytes allreduced a step (fp32: %lld), %.1f allreduces a "
         "step taking %.3f ms, hook compute %.3f ms a step (casts %.3f, GEMMs %.3f, QR %.3f, "
         "copies %.3f); %ld of %ld steps in PowerSGD's vanilla phase\n",
      hook, (double)rt_compress_stats_bytes(h) * per, (long long)r->n_params * 4, (double)n_ar * per,
      h->comm_s * per * 1e3, rt_compress_stats_compute_s(h) * per * 1e3, h->cast_s * per * 1e3, h->gemm_s * per * 1e3,
      h->ortho_s * per * 1e3, h->copy_s * per * 1e3, r->vanilla_steps, r->steps_run);
}

/* What the command line asks for: the run's options, and which were given. */
typedef struct train_args {
  rt_train_opts o;
  const char *compress_spec; /* --compress as given, for the report */
  int fail_step_set, fail_rank_set, psgd_set, ckpt_keep_set, help;
} train_args;

enum {
  O_BATCH = 1000,
  O_STEPS,
  O_DATASET,
  O_SEED,
  O_LR,
  O_MOM,
  O_THREADS,
  O_CAP,
  O_FIRST,
  O_OVERLAP,
  O_ALGO,
  O_RDZV,
  O_BIND,
  O_TIMEOUT,
  O_TRACE,
  O_PARAMS,
  O_CKDIR,
  O_CKEVERY,
  O_CKKEEP,
  O_RESUME,
  O_FAILSTEP,
  O_FAILRANK,
  O_NOSHUF,
  O_MODEL,
  O_COMPRESS,
  O_PSGD_START,
  O_PSGD_RATE,
  O_TB
};

static const struct option train_opts[] = {{"model", required_argument, NULL, O_MODEL},
    {"batch", required_argument, NULL, O_BATCH}, {"steps", required_argument, NULL, O_STEPS},
    {"dataset", required_argument, NULL, O_DATASET}, {"seed", required_argument, NULL, O_SEED},
    {"lr", required_argument, NULL, O_LR}, {"momentum", required_argument, NULL, O_MOM},
    {"threads", required_argument, NULL, O_THREADS}, {"bucket-cap-mb", required_argument, NULL, O_CAP},
    {"first-bucket-mb", required_argument, NULL, O_FIRST}, {"overlap", required_argument, NULL, O_OVERLAP},
    {"algorithm", required_argument, NULL, O_ALGO}, {"rdzv", required_argument, NULL, O_RDZV},
    {"bind", required_argument, NULL, O_BIND}, {"timeout", required_argument, NULL, O_TIMEOUT},
    {"out", required_argument, NULL, 'o'}, {"trace", no_argument, NULL, O_TRACE},
    {"params-out", required_argument, NULL, O_PARAMS}, {"ckpt-dir", required_argument, NULL, O_CKDIR},
    {"ckpt-every", required_argument, NULL, O_CKEVERY}, {"ckpt-keep", required_argument, NULL, O_CKKEEP},
    {"resume", no_argument, NULL, O_RESUME}, {"fail-at-step", required_argument, NULL, O_FAILSTEP},
    {"fail-rank", required_argument, NULL, O_FAILRANK}, {"no-shuffle", no_argument, NULL, O_NOSHUF},
    {"help", no_argument, NULL, 'h'}, {"compress", required_argument, NULL, O_COMPRESS},
    {"powersgd-start", required_argument, NULL, O_PSGD_START},
    {"powersgd-min-rate", required_argument, NULL, O_PSGD_RATE}, {"tensorboard", required_argument, NULL, O_TB},
    {NULL, 0, NULL, 0}};

/* --fail-at-step S[,S2,...]; 0 or nonzero after a usage message. */
static int parse_fail_steps(const char *arg, rt_train_opts *o) {
  char *save = NULL, *copy = strdup(arg);
  int bad = 0;
  o->n_fail_steps = 0;
  for (char *t = strtok_r(copy, ",", &save); t && !bad; t = strtok_r(NULL, ",", &save)) {
    if (o->n_fail_steps == RT_TRAIN_MAX_FAILS)
      bad = cli_usage("train", "--fail-at-step takes at most %d steps", RT_TRAIN_MAX_FAILS);
    else
      bad = cli_parse_long("train", "--fail-at-step", t, 0, 1L << 40, &o->fail_steps[o->n_fail_steps++]);
  }
  free(copy);
  if (!o->n_fail_steps && !bad)
    bad = cli_usage("train", "--fail-at-step expects S or S1,S2,...");
  return bad;
}

/* An option that takes a word: --overlap, --algorithm, --compress, --tensorboard. */
static int parse_word(int c, const char *arg, train_args *a) {
  rt_train_opts *o = &a->o;
  switch (c) {
  case O_OVERLAP:
    if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0)
      return cli_usage("train", "--overlap expects on or off, got '%s'", arg);
    o->overlap = !strcmp(arg, "on");
    return 0;
  case O_ALGO:
    if (rt_algo_parse(arg, &o->algo) != 0 || o->algo == RT_ALGO_TREE)
      return cli_usage(
          "train", "--algorithm expects default, ring, ring_chunked, halving_doubling or bcube, got '%s'", arg);
    return 0;
  case O_COMPRESS:
    if (rt_compress_parse(arg, &o->compress) != 0)
      return cli_usage("train", "--compress: %s", core_err_msg());
    a->compress_spec = arg;
    return 0;
  default: /* O_TB */
    if (!*arg)
      return cli_usage("train", "--tensorboard expects a directory, got an empty one");
    o->tensorboard = arg;
    return 0;
  }
}

/* One option c with its value arg; 0 or nonzero after a usage message. */
static int parse_opt(int c, const char *arg, train_args *a) {
  rt_train_opts *o = &a->o;
  switch (c) {
  case O_MODEL: o->model = arg; return 0;
  case O_BATCH: return cli_parse_long("train", "--batch", arg, 1, 1 << 20, &o->batch);
  case O_STEPS: return cli_parse_long("train", "--steps", arg, 0, 1L << 40, &o->steps);
  case O_DATASET: return cli_parse_long("train", "--dataset", arg, 1, 1L << 32, &o->dataset);
  case O_SEED: return cli_parse_long("train", "--seed", arg, 0, 0x7fffffffffffffffL, &o->seed);
  case O_THREADS: return cli_parse_long("train", "--threads", arg, 1, 256, &o->threads);
  case O_CKEVERY: return cli_parse_long("train", "--ckpt-every", arg, 0, 1L << 40, &o->ckpt_every);
  case O_CKKEEP: a->ckpt_keep_set = 1; return cli_parse_long("train", "--ckpt-keep", arg, 1, 1000, &o->ckpt_keep);
  case O_FAILSTEP: a->fail_step_set = 1; return parse_fail_steps(arg, o);
  case O_FAILRANK: a->fail_rank_set = 1; return cli_parse_long("train", "--fail-rank", arg, 0, 1 << 24, &o->fail_rank);
  case O_LR: return cli_parse_double("train", "--lr", arg, 0, 1e6, &o->lr);
  case O_MOM: return cli_parse_double("train", "--momentum", arg, 0, 1, &o->momentum);
  case O_CAP: return cli_parse_double("train", "--bucket-cap-mb", arg, 1e-3, 1e6, &o->bucket_cap_mb);
  case O_FIRST: return cli_parse_double("train", "--first-bucket-mb", arg, 0, 1e6, &o->first_bucket_mb);
  case O_TIMEOUT: return cli_parse_double("train", "--timeout", arg, 0.1, 1e6, &o->timeout_s);
  case O_PSGD_START:
    a->psgd_set = 1;
    return cli_parse_long("train", "--powersgd-start", arg, 0, 1L << 40, &o->compress.start_iter);
  case O_PSGD_RATE:
    a->psgd_set = 1;
    return cli_parse_double("train", "--powersgd-min-rate", arg, 0, 1e9, &o->compress.min_rate);
  case O_OVERLAP:
  case O_ALGO:
  case O_COMPRESS:
  case O_TB: return parse_word(c, arg, a);
  case O_RDZV: o->rdzv = arg; return 0;
  case O_BIND: o->bind = arg; return 0;
  case 'o': o->out = arg; return 0;
  case O_TRACE: o->trace = 1; return 0;
  case O_PARAMS: o->params_out = arg; return 0;
  case O_CKDIR: o->ckpt_dir = arg; return 0;
  case O_RESUME: o->resume = 1; return 0;
  case O_NOSHUF: o->shuffle = 0; return 0;
  default: return CLI_EXIT_USAGE;
  }
}

/* The options that go together; 0 or the exit code of a usage error. */
static int check_args(const train_args *a) {
  const rt_train_opts *o = &a->o;
  if (!o->model)
    return cli_usage("train", "missing --model FILE (e.g. --model scenarios/models/mlp.cfg)");
  if (a->fail_step_set != a->fail_rank_set)
    return cli_usage("train", "--fail-at-step and --fail-rank go together");
  if (o->resume && !o->ckpt_dir)
    return cli_usage("train", "--resume needs --ckpt-dir DIR");
  if (o->ckpt_every > 0 && !o->ckpt_dir)
    return cli_usage("train", "--ckpt-every needs --ckpt-dir DIR: without it no checkpoint is written");
  if (o->ckpt_dir && o->ckpt_every == 0 && !o->resume)
    return cli_usage("train", "--ckpt-dir needs --ckpt-every N (to write checkpoints) or --resume (to continue from "
                              "them): alone it does nothing");
  if (a->ckpt_keep_set && o->ckpt_every == 0)
    return cli_usage("train", "--ckpt-keep says how many checkpoints --ckpt-every N keeps; give --ckpt-every N too");
  for (int i = 0; i < o->n_fail_steps; i++)
    if (o->fail_steps[i] >= o->steps)
      return cli_usage("train", "--fail-at-step %ld: the run has steps 0 to %ld, so that failure would never happen",
          o->fail_steps[i], o->steps - 1);
  if (a->psgd_set && o->compress.kind != CORE_COMPRESS_POWERSGD)
    return cli_usage("train", "--powersgd-start and --powersgd-min-rate go with --compress powersgd:R");
  if (o->compress.kind == CORE_COMPRESS_BF16 && o->algo != RT_ALGO_DEFAULT)
    return cli_usage("train",
        "--compress bf16 needs --algorithm default: Gloo's %s algorithm has no "
        "bf16 arithmetic (use fp16 with it)",
        rt_algo_name(o->algo));
  return 0;
}

/* The command line into a; 0 or the exit code of a usage error. */
static int parse_args(int argc, char **argv, train_args *a) {
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:h", train_opts, NULL)) != -1) {
    if (c == 'h')
      return a->help = 1, 0;
    if (c == ':')
      return cli_usage("train", "option %s needs a value", argv[optind - 1]);
    if (c == '?')
      return cli_usage("train", "unknown option '%s'", argv[optind - 1]);
    if (parse_opt(c, optarg, a) != 0)
      return CLI_EXIT_USAGE;
  }
  if (optind != argc)
    return cli_usage("train", "unexpected argument '%s'", argv[optind]);
  return check_args(a);
}

int cli_cmd_train(int argc, char **argv) {
  train_args a = {.compress_spec = "none",
      .o = {.process_start_rt = core_wall_now(),
          .batch = 32,
          .steps = 20,
          .dataset = RT_DATA_DEFAULT_SIZE,
          .seed = RT_DATA_DEFAULT_SEED,
          .threads = 1,
          .ckpt_keep = 2,
          .fail_rank = -1,
          .lr = RT_DDP_DEFAULT_LR,
          .momentum = RT_DDP_DEFAULT_MOMENTUM,
          .bucket_cap_mb = CORE_BUCKET_DEFAULT_CAP_MB,
          .first_bucket_mb = 1,
          .timeout_s = 30,
          .overlap = 1,
          .shuffle = 1,
          .out = "run",
          .algo = RT_ALGO_DEFAULT}};
  rt_compress_opts_default(&a.o.compress);
  int rc = parse_args(argc, argv, &a);
  if (rc)
    return rc;
  if (a.help) {
    fputs(cli_train_help, stdout);
    return CLI_EXIT_OK;
  }
  rt_train_result res;
  if ((rc = rt_train_run(&a.o, &res)) != 0)
    return cli_fail("train", rc);
  if (res.rank == 0)
    report(&a.o, a.compress_spec, &res);
  return CLI_EXIT_OK;
}

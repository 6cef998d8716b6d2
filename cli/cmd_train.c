/* ddpsim train: one rank of a real data-parallel training run. */
#include "cli.h"

#include "runtime/data.h"
#include "runtime/ddp.h"
#include "runtime/train.h"

#include "core/bucket.h"
#include "core/clock.h"
#include "core/err.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char cli_train_help[] =
    "Usage: ddpsim train --model FILE [options]\n"
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
    "                           merges them into DIR/steps.csv) (default run)\n"
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
    "      --ckpt-dir DIR       where checkpoints go (rank 0 writes them)\n"
    "      --ckpt-every N       every N steps (default 0: never)\n"
    "      --ckpt-keep N        keep the newest N (default 2; with --ckpt-every)\n"
    "      --resume             continue from the newest valid checkpoint; implied\n"
    "                           when the launcher restarts the group\n"
    "Fault injection:\n"
    "      --fail-at-step S[,S2,...] --fail-rank R\n"
    "                           rank R SIGKILLs itself in the middle of step S's\n"
    "                           allreduces in the first attempt, at S2 in the second\n"
    "                           (after a restart), and so on\n"
    "\n"
    "After restarts, rank 0 writes DIR/recovery.csv: per failure, the time to\n"
    "detect it, stop the other ranks, start again, rendezvous, load the\n"
    "checkpoint and replay the lost steps.\n";

static int parse_double(const char *opt, const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) {
    cli_usage("train", "%s expects a number in [%g, %g], got '%s'", opt, lo, hi, s);
    return CORE_EUSAGE;
  }
  *out = v;
  return 0;
}

/* Rank 0's summary of the run and of its communication hook. */
static void report(const rt_train_opts *o, const char *hook, const rt_train_result *r) {
  printf("ddpsim train: %d rank(s), steps %ld..%ld, mean step %.4f s, final loss %.6g, rendezvous %.3f s\n",
         r->world_size, r->first_step, o->steps - 1, r->mean_step_s, r->final_loss, r->rdzv_s);
  if (o->compress.kind == CORE_COMPRESS_NONE || r->steps_run <= 0)
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
         h->comm_s * per * 1e3, rt_compress_stats_compute_s(h) * per * 1e3, h->cast_s * per * 1e3,
         h->gemm_s * per * 1e3, h->ortho_s * per * 1e3, h->copy_s * per * 1e3, r->vanilla_steps, r->steps_run);
}

int cli_cmd_train(int argc, char **argv) {
  enum { O_BATCH = 1000, O_STEPS, O_DATASET, O_SEED, O_LR, O_MOM, O_THREADS, O_CAP, O_FIRST,
         O_OVERLAP, O_ALGO, O_RDZV, O_BIND, O_TIMEOUT, O_TRACE, O_PARAMS, O_CKDIR, O_CKEVERY,
         O_CKKEEP, O_RESUME, O_FAILSTEP, O_FAILRANK, O_NOSHUF, O_MODEL, O_COMPRESS, O_PSGD_START,
         O_PSGD_RATE, O_TB };
  static const struct option opts[] = {
      {"model", required_argument, NULL, O_MODEL}, {"batch", required_argument, NULL, O_BATCH},
      {"steps", required_argument, NULL, O_STEPS}, {"dataset", required_argument, NULL, O_DATASET},
      {"seed", required_argument, NULL, O_SEED}, {"lr", required_argument, NULL, O_LR},
      {"momentum", required_argument, NULL, O_MOM}, {"threads", required_argument, NULL, O_THREADS},
      {"bucket-cap-mb", required_argument, NULL, O_CAP}, {"first-bucket-mb", required_argument, NULL, O_FIRST},
      {"overlap", required_argument, NULL, O_OVERLAP}, {"algorithm", required_argument, NULL, O_ALGO},
      {"rdzv", required_argument, NULL, O_RDZV}, {"bind", required_argument, NULL, O_BIND},
      {"timeout", required_argument, NULL, O_TIMEOUT}, {"out", required_argument, NULL, 'o'},
      {"trace", no_argument, NULL, O_TRACE}, {"params-out", required_argument, NULL, O_PARAMS},
      {"ckpt-dir", required_argument, NULL, O_CKDIR}, {"ckpt-every", required_argument, NULL, O_CKEVERY},
      {"ckpt-keep", required_argument, NULL, O_CKKEEP}, {"resume", no_argument, NULL, O_RESUME},
      {"fail-at-step", required_argument, NULL, O_FAILSTEP}, {"fail-rank", required_argument, NULL, O_FAILRANK},
      {"no-shuffle", no_argument, NULL, O_NOSHUF}, {"help", no_argument, NULL, 'h'},
      {"compress", required_argument, NULL, O_COMPRESS},
      {"powersgd-start", required_argument, NULL, O_PSGD_START},
      {"powersgd-min-rate", required_argument, NULL, O_PSGD_RATE},
      {"tensorboard", required_argument, NULL, O_TB},
      {NULL, 0, NULL, 0}};
  rt_train_opts o = {.process_start_rt = core_wall_now(), .batch = 32, .steps = 20, .dataset = RT_DATA_DEFAULT_SIZE, .seed = RT_DATA_DEFAULT_SEED, .threads = 1, .ckpt_keep = 2,
                  .fail_rank = -1, .lr = RT_DDP_DEFAULT_LR, .momentum = RT_DDP_DEFAULT_MOMENTUM,
                  .bucket_cap_mb = CORE_BUCKET_DEFAULT_CAP_MB, .first_bucket_mb = 1, .timeout_s = 30, .overlap = 1, .shuffle = 1, .out = "run",
                  .algo = RT_ALGO_DEFAULT};
  rt_compress_opts_default(&o.compress);
  const char *compress_spec = "none";
  int c, fail_step_set = 0, fail_rank_set = 0, psgd_set = 0, ckpt_keep_set = 0;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    int bad = 0;
    switch (c) {
    case O_MODEL: o.model = optarg; break;
    case O_BATCH: bad = cli_parse_long("train", "--batch", optarg, 1, 1 << 20, &o.batch); break;
    case O_STEPS: bad = cli_parse_long("train", "--steps", optarg, 0, 1L << 40, &o.steps); break;
    case O_DATASET: bad = cli_parse_long("train", "--dataset", optarg, 1, 1L << 32, &o.dataset); break;
    case O_SEED: bad = cli_parse_long("train", "--seed", optarg, 0, 0x7fffffffffffffffL, &o.seed); break;
    case O_THREADS: bad = cli_parse_long("train", "--threads", optarg, 1, 256, &o.threads); break;
    case O_CKEVERY: bad = cli_parse_long("train", "--ckpt-every", optarg, 0, 1L << 40, &o.ckpt_every); break;
    case O_CKKEEP:
      bad = cli_parse_long("train", "--ckpt-keep", optarg, 1, 1000, &o.ckpt_keep);
      ckpt_keep_set = 1;
      break;
    case O_FAILSTEP: {
      char *save = NULL, *copy = strdup(optarg);
      o.n_fail_steps = 0;
      for (char *t = strtok_r(copy, ",", &save); t && !bad; t = strtok_r(NULL, ",", &save)) {
        if (o.n_fail_steps == RT_TRAIN_MAX_FAILS)
          bad = cli_usage("train", "--fail-at-step takes at most %d steps", RT_TRAIN_MAX_FAILS);
        else
          bad = cli_parse_long("train", "--fail-at-step", t, 0, 1L << 40, &o.fail_steps[o.n_fail_steps++]);
      }
      free(copy);
      if (!o.n_fail_steps && !bad)
        bad = cli_usage("train", "--fail-at-step expects S or S1,S2,...");
      fail_step_set = 1;
      break;
    }
    case O_FAILRANK: bad = cli_parse_long("train", "--fail-rank", optarg, 0, 1 << 24, &o.fail_rank); fail_rank_set = 1; break;
    case O_LR: bad = parse_double("--lr", optarg, 0, 1e6, &o.lr); break;
    case O_MOM: bad = parse_double("--momentum", optarg, 0, 1, &o.momentum); break;
    case O_CAP: bad = parse_double("--bucket-cap-mb", optarg, 1e-3, 1e6, &o.bucket_cap_mb); break;
    case O_FIRST: bad = parse_double("--first-bucket-mb", optarg, 0, 1e6, &o.first_bucket_mb); break;
    case O_TIMEOUT: bad = parse_double("--timeout", optarg, 0.1, 1e6, &o.timeout_s); break;
    case O_OVERLAP:
      if (!strcmp(optarg, "on"))
        o.overlap = 1;
      else if (!strcmp(optarg, "off"))
        o.overlap = 0;
      else
        return cli_usage("train", "--overlap expects on or off, got '%s'", optarg);
      break;
    case O_ALGO:
      if (rt_algo_parse(optarg, &o.algo) != 0 || o.algo == RT_ALGO_TREE)
        return cli_usage("train", "--algorithm expects default, ring, ring_chunked, halving_doubling or bcube, got '%s'", optarg);
      break;
    case O_COMPRESS:
      if (rt_compress_parse(optarg, &o.compress) != 0)
        return cli_usage("train", "--compress: %s", core_err_msg());
      compress_spec = optarg;
      break;
    case O_PSGD_START: bad = cli_parse_long("train", "--powersgd-start", optarg, 0, 1L << 40, &o.compress.start_iter); psgd_set = 1; break;
    case O_PSGD_RATE: bad = parse_double("--powersgd-min-rate", optarg, 0, 1e9, &o.compress.min_rate); psgd_set = 1; break;
    case O_RDZV: o.rdzv = optarg; break;
    case O_BIND: o.bind = optarg; break;
    case 'o': o.out = optarg; break;
    case O_TRACE: o.trace = 1; break;
    case O_TB:
      if (!*optarg)
        return cli_usage("train", "--tensorboard expects a directory, got an empty one");
      o.tensorboard = optarg;
      break;
    case O_PARAMS: o.params_out = optarg; break;
    case O_CKDIR: o.ckpt_dir = optarg; break;
    case O_RESUME: o.resume = 1; break;
    case O_NOSHUF: o.shuffle = 0; break;
    case 'h': fputs(cli_train_help, stdout); return CLI_EXIT_OK;
    case ':': return cli_usage("train", "option %s needs a value", argv[optind - 1]);
    default: return cli_usage("train", "unknown option '%s'", argv[optind - 1]);
    }
    if (bad)
      return CLI_EXIT_USAGE;
  }
  if (optind != argc)
    return cli_usage("train", "unexpected argument '%s'", argv[optind]);
  if (!o.model)
    return cli_usage("train", "missing --model FILE (e.g. --model scenarios/models/mlp.cfg)");
  if (fail_step_set != fail_rank_set)
    return cli_usage("train", "--fail-at-step and --fail-rank go together");
  if (o.resume && !o.ckpt_dir)
    return cli_usage("train", "--resume needs --ckpt-dir DIR");
  if (o.ckpt_every > 0 && !o.ckpt_dir)
    return cli_usage("train", "--ckpt-every needs --ckpt-dir DIR: without it no checkpoint is written");
  if (o.ckpt_dir && o.ckpt_every == 0 && !o.resume)
    return cli_usage("train", "--ckpt-dir needs --ckpt-every N (to write checkpoints) or --resume (to continue from them): alone it does nothing");
  if (ckpt_keep_set && o.ckpt_every == 0)
    return cli_usage("train", "--ckpt-keep says how many checkpoints --ckpt-every N keeps; give --ckpt-every N too");
  for (int i = 0; i < o.n_fail_steps; i++)
    if (o.fail_steps[i] >= o.steps)
      return cli_usage("train", "--fail-at-step %ld: the run has steps 0 to %ld, so that failure would never happen",
                       o.fail_steps[i], o.steps - 1);
  if (psgd_set && o.compress.kind != CORE_COMPRESS_POWERSGD)
    return cli_usage("train", "--powersgd-start and --powersgd-min-rate go with --compress powersgd:R");
  if (o.compress.kind == CORE_COMPRESS_BF16 && o.algo != RT_ALGO_DEFAULT)
    return cli_usage("train", "--compress bf16 needs --algorithm default: Gloo's %s algorithm has no "
                              "bf16 arithmetic (use fp16 with it)", rt_algo_name(o.algo));
  rt_train_result res;
  int rc = rt_train_run(&o, &res);
  if (rc)
    return cli_fail("train", rc);
  if (res.rank == 0)
    report(&o, compress_spec, &res);
  return CLI_EXIT_OK;
}

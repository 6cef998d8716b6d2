/* ddpsim train: one rank of a real data-parallel training run. */
#include "cli.h"

#include "runtime/ckpt.h"
#include "runtime/data.h"
#include "runtime/ddp.h"
#include "runtime/launch.h"
#include "runtime/pg.h"
#include "runtime/tblog.h"

#include "core/afile.h"
#include "core/csv.h"
#include "core/err.h"
#include "core/model.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

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

typedef struct train_opts {
  const char *model, *rdzv, *bind, *out, *params_out, *ckpt_dir, *tensorboard;
  long batch, steps, dataset, seed, threads, ckpt_every, ckpt_keep, fail_rank;
  long fail_steps[64];
  int n_fail_steps;
  double t_main_rt;           /* wall clock when the process started */
  double lr, momentum, bucket_cap_mb, first_bucket_mb, timeout;
  int overlap, shuffle, trace, resume;
  enum rt_algo algo;
  rt_compress_opts compress;
  const char *compress_spec;
} train_opts;

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

/* Merge every rank's attempt files into DIR/steps.csv (rank 0, at the end). */
static int merge_metrics(const char *dir, int world, int attempts) {
  static const char *const cols[] = {"rank", "attempt", "step", "step_s", "compute_s", "comm_s",
                                     "exposed_comm_s", "loss"};
  char path[4400];
  core_csv out;
  snprintf(path, sizeof path, "%s/steps.csv", dir);
  int rc = core_csv_open(&out, path, cols, 8);
  if (rc)
    return rc;
  for (int r = 0; r < world; r++)
    for (int a = 0; a < attempts; a++) {
      char in[4400];
      snprintf(in, sizeof in, "%s/rank-%d.attempt-%d.csv", dir, r, a);
      if (access(in, R_OK) != 0)
        continue;
      core_csv_table t;
      if ((rc = core_csv_read(in, &t)) != 0)
        goto fail_abort;
      for (long i = 0; i < t.nrows; i++) {
        if (t.ncols != 8)
          break;
        for (int j = 0; j < 8; j++)
          core_csv_str(&out, t.rows[i][j]);
        core_csv_end_row(&out);
      }
      core_csv_table_free(&t);
    }
  return core_csv_commit(&out);
fail_abort:
  core_csv_abort(&out);
  return rc;
}

static int write_params(const char *path, const float *p, int64_t n) {
  core_afile a;
  int rc = core_afile_open(&a, path);
  if (rc)
    return rc;
  if (fwrite(p, sizeof *p, (size_t)n, a.f) != (size_t)n) {
    int e = errno ? errno : EIO;
    core_afile_abort(&a);
    return core_err_errno(e, "writing parameters to '%s'", path);
  }
  return core_afile_commit(&a);
}

static double realtime(void) {
  struct timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  return (double)rt.tv_sec + rt.tv_nsec * 1e-9;
}

/* What rank 0 knows about the failure that ended the previous attempt. */
typedef struct recovery {
  int active;                 /* this attempt follows a failure */
  long prev_last;             /* last step the previous attempt completed */
  long fail_step;
  double death_rt, seen_rt, stop_s, rdzv_s, load_s, loaded_rt;
  long resume_step;
} recovery;

static void recovery_begin(const train_opts *o, int attempt, recovery *rec) {
  char path[4400];
  memset(rec, 0, sizeof *rec);
  rec->prev_last = -1;
  const char *ft = getenv("DDPSIM_FAIL_TIME"), *st = getenv("DDPSIM_STOP_S");
  if (attempt == 0 || !ft)
    return;
  rec->active = 1;
  rec->seen_rt = atof(ft);
  rec->stop_s = st ? atof(st) : 0;
  rec->death_rt = rec->seen_rt;
  snprintf(path, sizeof path, "%s/rank-0.attempt-%d.csv", o->out, attempt - 1);
  core_csv_table t;
  if (core_csv_read(path, &t) == 0) {
    int c = core_csv_col(&t, "step");
    for (long i = 0; c >= 0 && i < t.nrows; i++)
      if (atol(t.rows[i][c]) > rec->prev_last)
        rec->prev_last = atol(t.rows[i][c]);
    core_csv_table_free(&t);
  }
  rec->fail_step = rec->prev_last + 1;
  /* The dying rank wrote when it died (injected failures only). */
  snprintf(path, sizeof path, "%s/fail-attempt-%d.time", o->out, attempt - 1);
  FILE *f = fopen(path, "r");
  if (f) {
    double d;
    long stp;
    if (fscanf(f, "%lf %ld", &d, &stp) == 2) {
      rec->death_rt = d;
      rec->fail_step = stp;
    }
    fclose(f);
  }
}

static const char *const recovery_cols[] = {"attempt", "fail_step", "detect_s", "stop_s", "restart_s",
                                            "rendezvous_s", "ckpt_load_s", "resume_step", "replay_steps",
                                            "replay_s", "recovery_s"};
enum { N_RECOVERY_COLS = 11 };

/* The previous failure's recovery is complete: record it. */
static int recovery_done(const train_opts *o, int attempt, const recovery *rec) {
  char path[4400];
  double now = realtime();
  core_csv c;
  snprintf(path, sizeof path, "%s/recovery-attempt-%d.csv", o->out, attempt);
  int rc = core_csv_open(&c, path, recovery_cols, N_RECOVERY_COLS);
  if (rc)
    return rc;
  long replay = rec->prev_last + 1 - rec->resume_step;
  core_csv_int(&c, attempt);
  core_csv_int(&c, rec->fail_step);
  core_csv_num(&c, rec->seen_rt - rec->death_rt);
  core_csv_num(&c, rec->stop_s);
  core_csv_num(&c, o->t_main_rt - (rec->seen_rt + rec->stop_s));
  core_csv_num(&c, rec->rdzv_s);
  core_csv_num(&c, rec->load_s);
  core_csv_int(&c, rec->resume_step);
  core_csv_int(&c, replay > 0 ? replay : 0);
  core_csv_num(&c, now - rec->loaded_rt);
  core_csv_num(&c, now - rec->death_rt);
  core_csv_end_row(&c);
  return core_csv_commit(&c);
}

/* Every attempt's recovery row into DIR/recovery.csv. */
static int merge_recovery(const char *dir, int attempts) {
  char path[4400];
  core_csv out;
  int rc, any = 0;
  for (int a = 1; a < attempts; a++) {
    snprintf(path, sizeof path, "%s/recovery-attempt-%d.csv", dir, a);
    any |= access(path, R_OK) == 0;
  }
  if (!any)
    return 0;
  snprintf(path, sizeof path, "%s/recovery.csv", dir);
  if ((rc = core_csv_open(&out, path, recovery_cols, N_RECOVERY_COLS)) != 0)
    return rc;
  for (int a = 1; a < attempts; a++) {
    core_csv_table t;
    snprintf(path, sizeof path, "%s/recovery-attempt-%d.csv", dir, a);
    if (access(path, R_OK) != 0)
      continue;
    if ((rc = core_csv_read(path, &t)) != 0) {
      core_csv_abort(&out);
      return rc;
    }
    for (long i = 0; i < t.nrows && t.ncols == N_RECOVERY_COLS; i++) {
      for (int j = 0; j < N_RECOVERY_COLS; j++)
        core_csv_str(&out, t.rows[i][j]);
      core_csv_end_row(&out);
    }
    core_csv_table_free(&t);
  }
  return core_csv_commit(&out);
}

/* --tensorboard: the rank's logger, opened before the rendezvous so that an
 * unusable DIR stops the run before any training. */
static int tb_open(const train_opts *o, const rt_pg_info *pg, int attempt, rt_tblog **tb) {
  *tb = NULL;
  if (!o->tensorboard)
    return 0;
  /* gpu -1: train runs on CPUs (Gloo), so there are no GPU figures. */
  rt_tblog_opts to = {.dir = o->tensorboard, .rank = pg->rank, .attempt = attempt, .resume = o->resume,
                      .gpu = -1, .sys_every_s = -1};
  return rt_tblog_open(&to, tb);
}

static int tb_start(const train_opts *o, const rt_pg_info *pg, rt_ddp *ddp, long start, rt_tblog *tb,
                    double **bucket_s) {
  int nb = rt_ddp_buckets(ddp)->n_buckets;
  if (!(*bucket_s = calloc((size_t)(nb > 0 ? nb : 1), sizeof **bucket_s)))
    return core_err_set(CORE_ENOMEM, "out of memory for %d buckets' times", nb);
  rt_tblog_run r = {.world = pg->world_size, .batch = (int)o->batch, .n_buckets = nb, .lr = o->lr,
                    .first_step = start};
  return rt_tblog_start(tb, &r);
}

static void tb_step(rt_tblog *tb, const rt_ddp *ddp, double *bucket_s, long step, const rt_step_metrics *sm) {
  rt_ddp_bucket_comm_s(ddp, bucket_s);
  rt_tblog_figures f = {.step = step, .step_s = sm->step_s, .compute_s = sm->compute_s, .comm_s = sm->comm_s,
                        .exposed_comm_s = sm->exposed_comm_s, .loss = sm->loss, .bucket_s = bucket_s};
  rt_tblog_step(tb, &f);
}

/* Stop the logger (what it holds is written) and say what it dropped; its
 * troubles never fail the training. */
static void tb_close(rt_tblog *tb, int rank) {
  rt_tblog_stats st;
  if (!tb)
    return;
  if (rt_tblog_close(tb, &st) != 0)
    fprintf(stderr, "ddpsim train: rank %d: TensorBoard: %s\n", rank, core_err_msg());
  if (st.cut_bytes > 0)
    fprintf(stderr, "ddpsim train: rank %d: TensorBoard: cut a torn record (%lld bytes) from the end of %s: "
            "the previous attempt died writing it\n", rank, (long long)st.cut_bytes, st.path);
  long dropped = st.dropped_queue + st.dropped_write;
  if (dropped > 0)
    fprintf(stderr, "ddpsim train: rank %d: TensorBoard: dropped %ld of %ld steps (%ld with the logger's "
            "queue full, %ld in failed writes%s%s); %s holds the other %ld\n", rank, dropped,
            dropped + st.logged, st.dropped_queue, st.dropped_write, st.write_error[0] ? ": " : "",
            st.write_error, st.path, st.logged);
}

static int run(const train_opts *o) {
  rt_pg_info pg;
  core_model *m = NULL;
  rt_comm *comm = NULL;
  rt_ddp *ddp = NULL;
  rt_data *data = NULL;
  float *x = NULL, *target = NULL;
  FILE *metrics = NULL;
  rt_tblog *tb = NULL;
  double *bucket_s = NULL;
  core_trace trace;
  int tracing = 0, rc;
  const char *env;
  int attempt = (env = getenv("DDPSIM_RESTART_COUNT")) ? atoi(env) : 0;

  if ((rc = rt_pg_from_env(&pg)) != 0)
    return rc;
  if (o->fail_rank >= pg.world_size)
    return core_err_set(CORE_EUSAGE, "--fail-rank %ld: the job has ranks 0 to %d, so that failure would never happen",
                        o->fail_rank, pg.world_size - 1);
  if ((rc = core_model_load(o->model, &m)) != 0)
    return rc;
  if ((rc = core_model_check_runnable(m)) != 0)
    goto out;
  /* Refuse now, not after the training, an output that would destroy an
   * input or that cannot be written. */
  if (pg.rank == 0 && o->params_out && (rc = core_afile_check(o->params_out)) != 0) {
    rc = core_err_wrap(rc, "--params-out");
    goto out;
  }
  if ((rc = tb_open(o, &pg, attempt, &tb)) != 0)
    goto out;
  rt_blas_threads((int)o->threads);
  const char *spec = o->rdzv ? o->rdzv : getenv("DDPSIM_RDZV");
  if (!spec && pg.world_size > 1) {
    rc = core_err_set(CORE_EUSAGE, "%d ranks need a rendezvous: pass --rdzv DIR|redis://HOST:PORT or run under `ddpsim launch`",
                      pg.world_size);
    goto out;
  }
  char single_dir[64] = "";
  if (!spec) {
    /* A single rank still rendezvouses with itself through a private dir. */
    snprintf(single_dir, sizeof single_dir, "/tmp/ddpsim-rdzv-XXXXXX");
    if (!mkdtemp(single_dir)) {
      rc = core_err_errno(errno, "cannot create a rendezvous directory");
      goto out;
    }
    spec = single_dir;
  }
  const char *bind = o->bind ? o->bind : getenv("DDPSIM_BIND_ADDR");
  char prefix[64];
  snprintf(prefix, sizeof prefix, "ddpsim-train-%d", attempt);
  double t_rdzv = rt_now();
  rc = rt_pg_connect(&pg, spec, bind, o->timeout, prefix, &comm);
  if (single_dir[0]) {
    /* The store is closed: remove its files (one per key), then the dir. */
    DIR *dd = opendir(single_dir);
    struct dirent *e;
    while (dd && (e = readdir(dd))) {
      char f[512];
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        snprintf(f, sizeof f, "%s/%s", single_dir, e->d_name);
        unlink(f);
      }
    }
    if (dd)
      closedir(dd);
    rmdir(single_dir);
  }
  if (rc)
    goto out;
  t_rdzv = rt_now() - t_rdzv;

  char fail_mark[4400];
  snprintf(fail_mark, sizeof fail_mark, "%s/fail-attempt-%d.time", o->out, attempt);
  if ((rc = core_mkdirs(o->out)) != 0)
    goto out;
  rt_ddp_opts dop = {.bucket_cap_mb = o->bucket_cap_mb, .first_bucket_mb = o->first_bucket_mb,
                     .overlap = o->overlap, .algo = o->algo, .lr = o->lr, .momentum = o->momentum,
                     .fail_step = (attempt < o->n_fail_steps && o->fail_rank == pg.rank)
                                      ? (int)o->fail_steps[attempt] : -1,
                     .fail_mark = fail_mark, .compress = o->compress};
  if ((rc = rt_ddp_create(m, comm, (int)o->batch, &dop, (uint64_t)o->seed, &ddp)) != 0)
    goto out;
  rt_mlp *net = rt_ddp_mlp(ddp);
  int in = m->layers[0].in, outw = m->layers[m->n_layers - 1].out;
  if ((rc = rt_data_create(o->dataset, in, outw, (uint64_t)o->seed, pg.rank, pg.world_size, o->shuffle, &data)) != 0)
    goto out;
  x = malloc(sizeof *x * (size_t)o->batch * (size_t)in);
  target = malloc(sizeof *target * (size_t)o->batch * (size_t)outw);
  if (!x || !target) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for a batch of %ld", o->batch);
    goto out;
  }

  recovery rec;
  if (pg.rank == 0)
    recovery_begin(o, attempt, &rec);
  else
    memset(&rec, 0, sizeof rec);
  rec.rdzv_s = t_rdzv;

  /* A fresh run must not share its checkpoint directory with an earlier
   * one: a restart would resume from that run's checkpoints. */
  if (o->ckpt_dir && (rc = rt_ckpt_sweep(o->ckpt_dir)) != 0)
    goto out;
  if (o->ckpt_dir && !o->resume && attempt == 0) {
    DIR *cd = opendir(o->ckpt_dir);
    struct dirent *de;
    int found = 0;
    while (cd && (de = readdir(cd)))
      found |= strncmp(de->d_name, "ckpt-", 5) == 0;
    if (cd)
      closedir(cd);
    if (found) {
      rc = core_err_set(CORE_EUSAGE, "--ckpt-dir %s already holds checkpoints of an earlier run; pass --resume to continue it, or use an empty directory",
                        o->ckpt_dir);
      goto out;
    }
  }

  /* Resume: every rank loads the same newest valid checkpoint. */
  long start = 0;
  double t_load = 0;
  if (o->ckpt_dir && (o->resume || attempt > 0)) {
    rt_ckpt c = {.params = net->params, .momentum = rt_ddp_momentum(ddp)};
    char used[4400];
    double t0 = rt_now();
    rc = rt_ckpt_load_latest(o->ckpt_dir, m, &c, used, sizeof used);
    if (rc == 0) {
      t_load = rt_now() - t0;
      rt_ddp_set_has_momentum(ddp, c.has_momentum);
      if ((rc = rt_data_seek(data, c.epoch, c.pos)) != 0)
        goto out;
      start = (long)c.step;
      if (pg.rank == 0)
        fprintf(stderr, "ddpsim train: resumed from %s at step %ld (load %.3f s)\n", used, start, t_load);
    } else if (rc == CORE_EINVAL) {
      if (pg.rank == 0)
        fprintf(stderr, "ddpsim train: %s; starting from step 0\n", core_err_msg());
      rc = 0;
    } else {
      goto out;
    }
  }

  rec.load_s = t_load;
  rec.loaded_rt = realtime();
  rec.resume_step = start;
  if (rec.active && rec.prev_last < start && (rc = recovery_done(o, attempt, &rec)) != 0)
    goto out;
  if (tb && (rc = tb_start(o, &pg, ddp, start, tb, &bucket_s)) != 0)
    goto out;

  char path[4400];
  snprintf(path, sizeof path, "%s/rank-%d.attempt-%d.csv", o->out, pg.rank, attempt);
  /* Appended row by row and flushed, so a killed rank keeps what it measured. */
  if ((rc = core_afile_check(path)) != 0)
    goto out;
  if (!(metrics = fopen(path, "w"))) {
    rc = core_err_errno(errno, "cannot create metrics file '%s'", path);
    goto out;
  }
  fprintf(metrics, "rank,attempt,step,step_s,compute_s,comm_s,exposed_comm_s,loss\n");
  fflush(metrics);
  if (o->trace) {
    snprintf(path, sizeof path, "%s/trace-rank-%d.json", o->out, pg.rank);
    if ((rc = core_trace_open(&trace, path)) != 0)
      goto out;
    tracing = 1;
    char pname[64];
    snprintf(pname, sizeof pname, "rank %d", pg.rank);
    core_trace_process(&trace, pg.rank, pname);
  }

  double t_run = rt_now(), sum_step = 0;
  rt_compress_stats hook_total;
  long vanilla_steps = 0;
  memset(&hook_total, 0, sizeof hook_total);
  for (long s = start; s < o->steps; s++) {
    if ((rc = rt_data_next(data, (int)o->batch, x, target)) != 0)
      goto out;
    rt_step_metrics sm;
    double base_us = (rt_now() - t_run) * 1e6;
    if ((rc = rt_ddp_step(ddp, s, x, target, &sm, tracing ? &trace : NULL, base_us)) != 0)
      goto out;
    sum_step += sm.step_s;
    rt_compress_stats_add(&hook_total, &sm.compress);
    vanilla_steps += sm.compress.vanilla > 0;
    fprintf(metrics, "%d,%d,%ld,%.9f,%.9f,%.9f,%.9f,%.9g\n", pg.rank, attempt, s, sm.step_s, sm.compute_s,
            sm.comm_s, sm.exposed_comm_s, sm.loss);
    fflush(metrics);
    if (tb)
      tb_step(tb, ddp, bucket_s, s, &sm);
    if (rec.active && s == rec.prev_last && (rc = recovery_done(o, attempt, &rec)) != 0)
      goto out;
    long done = s + 1;
    if (o->ckpt_dir && o->ckpt_every > 0 && done % o->ckpt_every == 0) {
      if (pg.rank == 0) {
        rt_ckpt c = {.step = done, .epoch = data->epoch, .pos = data->pos, .n_params = net->n_params,
                     .has_momentum = rt_ddp_has_momentum(ddp), .params = net->params,
                     .momentum = rt_ddp_momentum(ddp)};
        if ((rc = rt_ckpt_write(o->ckpt_dir, m, &c, (int)o->ckpt_keep)) != 0)
          goto out;
      }
      /* Nobody goes on until the checkpoint is durable: a restart must find
       * the step every rank believes was saved. */
      if ((rc = rt_barrier(comm)) != 0)
        goto out;
    }
  }
  if (tracing) {
    tracing = 0;
    if ((rc = core_trace_commit(&trace)) != 0)
      goto out;
  }
  fclose(metrics);
  metrics = NULL;
  if ((rc = rt_barrier(comm)) != 0)
    goto out;
  if (pg.rank == 0) {
    if ((rc = merge_metrics(o->out, pg.world_size, attempt + 1)) != 0 ||
        (rc = merge_recovery(o->out, attempt + 1)) != 0)
      goto out;
    if (o->params_out && (rc = write_params(o->params_out, net->params, net->n_params)) != 0)
      goto out;
    long ran = o->steps - start;
    printf("ddpsim train: %d rank(s), steps %ld..%ld, mean step %.4f s, final loss %.6g, rendezvous %.3f s\n",
           pg.world_size, start, o->steps - 1, ran > 0 ? sum_step / (double)ran : 0.0, net->loss, t_rdzv);
    if (o->compress.kind != RT_COMPRESS_NONE && ran > 0) {
      /* Rank 0's hook, per step: allreduce payload (fp32 would be
       * n_params * 4) and the compute it added. */
      const rt_compress_stats *h = &hook_total;
      double per = 1.0 / (double)ran;
      int64_t n_ar = 0;
      for (int ph = 0; ph < RT_COMPRESS_N_PHASES; ph++)
        n_ar += h->allreduces[ph];
      printf("ddpsim train: hook %s: %.0f bytes allreduced a step (fp32: %lld), %.1f allreduces a "
             "step taking %.3f ms, hook compute %.3f ms a step (casts %.3f, GEMMs %.3f, QR %.3f, "
             "copies %.3f); %ld of %ld steps in PowerSGD's vanilla phase\n",
             o->compress_spec, (double)rt_compress_stats_bytes(h) * per, (long long)net->n_params * 4,
             (double)n_ar * per, h->comm_s * per * 1e3, rt_compress_stats_compute_s(h) * per * 1e3, h->cast_s * per * 1e3,
             h->gemm_s * per * 1e3, h->ortho_s * per * 1e3, h->copy_s * per * 1e3, vanilla_steps, ran);
    }
  }
out:
  tb_close(tb, pg.rank);
  free(bucket_s);
  if (tracing)
    core_trace_abort(&trace);
  if (metrics)
    fclose(metrics);
  free(x);
  free(target);
  rt_data_free(data);
  rt_ddp_free(ddp);
  rt_comm_finish(comm, rc);
  core_model_free(m);
  return rc;
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
  struct timespec now_rt;
  clock_gettime(CLOCK_REALTIME, &now_rt);
  train_opts o = {.t_main_rt = (double)now_rt.tv_sec + now_rt.tv_nsec * 1e-9, .batch = 32, .steps = 20, .dataset = RT_DATA_DEFAULT_SIZE, .seed = RT_DATA_DEFAULT_SEED, .threads = 1, .ckpt_keep = 2,
                  .fail_rank = -1, .lr = RT_DDP_DEFAULT_LR, .momentum = RT_DDP_DEFAULT_MOMENTUM,
                  .bucket_cap_mb = CORE_BUCKET_DEFAULT_CAP_MB, .first_bucket_mb = 1, .timeout = 30, .overlap = 1, .shuffle = 1, .out = "run",
                  .algo = RT_ALGO_DEFAULT};
  rt_compress_opts_default(&o.compress);
  o.compress_spec = "none";
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
        if (o.n_fail_steps == 64)
          bad = cli_usage("train", "--fail-at-step takes at most 64 steps");
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
    case O_TIMEOUT: bad = parse_double("--timeout", optarg, 0.1, 1e6, &o.timeout); break;
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
      o.compress_spec = optarg;
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
  if (psgd_set && o.compress.kind != RT_COMPRESS_POWERSGD)
    return cli_usage("train", "--powersgd-start and --powersgd-min-rate go with --compress powersgd:R");
  if (o.compress.kind == RT_COMPRESS_BF16 && o.algo != RT_ALGO_DEFAULT)
    return cli_usage("train", "--compress bf16 needs --algorithm default: Gloo's %s algorithm has no "
                              "bf16 arithmetic (use fp16 with it)", rt_algo_name(o.algo));
  int rc = run(&o);
  return rc ? cli_fail("train", rc) : CLI_EXIT_OK;
}

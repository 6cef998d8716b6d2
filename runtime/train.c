#include "runtime/train.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/afile.h"
#include "core/csv.h"
#include "core/err.h"
#include "core/model.h"
#include "core/path.h"
#include "core/trace.h"
#include "runtime/blas.h"
#include "runtime/ckpt.h"
#include "runtime/data.h"
#include "runtime/ddp.h"
#include "runtime/pg.h"
#include "runtime/recovery.h"
#include "runtime/tblog.h"

/* Everything one rank's run holds, released by release(). */
typedef struct train_ctx {
  const rt_train_opts *o;
  rt_pg_info pg;
  int attempt;
  core_model *m;
  rt_comm *comm;
  rt_ddp *ddp;
  rt_data *data;
  float *x, *target;
  FILE *metrics;
  char metrics_path[4400];
  core_csv mcsv; /* rows to metrics */
  rt_tblog *tb;
  int ckpt_lock; /* rank 0's hold on --ckpt-dir; -1 if none */
  double *bucket_s;
  core_trace trace;
  int tracing;
  rt_recovery rec;
  char fail_mark[4400];                        /* where an injected failure records itself; rt_ddp keeps the pointer */
  core_made_dirs made_out, made_ckpt, made_tb; /* what a refused run takes back */
  long start;
  double rdzv_s;
} train_ctx;

/* ---- outputs ------------------------------------------------------------ */

static const char *const metric_cols[] = {
    "rank", "attempt", "step", "step_s", "compute_s", "comm_s", "exposed_comm_s", "loss"};
enum { N_METRIC_COLS = sizeof metric_cols / sizeof *metric_cols };

/* Merge every rank's attempt files into DIR/steps.csv (rank 0, at the end). */
static int merge_metrics(const char *dir, int world, int attempts) {
  char path[4400];
  core_csv out;
  snprintf(path, sizeof path, "%s/steps.csv", dir);
  int rc = core_csv_open(&out, path, metric_cols, N_METRIC_COLS);
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
      for (long i = 0; i < t.nrows && t.ncols == 8; i++) {
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

/* With --resume, the rank's metrics file of the run being continued keeps
 * its rows and the resumed steps go after them (the steps between the
 * checkpoint and the failure then appear twice, each as measured). *keep: 1
 * when path is such a file, whose torn last row (a full disk) is cut; a
 * file by that name that is not one is refused, not overwritten. */
static int continued_metrics(const char *path, int *keep) {
  char want[128] = "", got[128];
  struct stat st;
  *keep = 0;
  int fd = open(path, O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
    close(fd);
    return 0;
  }
  for (int i = 0; i < N_METRIC_COLS; i++)
    snprintf(
        want + strlen(want), sizeof want - strlen(want), "%s%s", metric_cols[i], i + 1 < N_METRIC_COLS ? "," : "\n");
  off_t hlen = (off_t)strlen(want), end = st.st_size;
  if (pread(fd, got, (size_t)hlen, 0) != (ssize_t)hlen || memcmp(got, want, (size_t)hlen) != 0) {
    close(fd);
    return core_err_set(CORE_EUSAGE,
        "'%s' is not a metrics file of ddpsim train, and --resume would add to it; move it away or choose another -o",
        path);
  }
  char ch = '\n';
  while (end > hlen && pread(fd, &ch, 1, end - 1) == 1 && ch != '\n')
    end--;
  if (end < st.st_size && ftruncate(fd, end) == 0)
    fprintf(
        stderr, "ddpsim train: cut a torn row (%lld bytes) from the end of %s\n", (long long)(st.st_size - end), path);
  close(fd);
  *keep = 1;
  return 0;
}

/* Open the rank's metrics file for writing as it goes (keep: after the rows
 * it has): a FIFO that nobody reads is refused now (opening it for writing
 * would block forever). */
static int open_metrics(const char *path, int keep, FILE **f) {
  int fd = open(path, O_WRONLY | O_CREAT | (keep ? O_APPEND : O_TRUNC) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
  if (fd < 0 && errno == ENXIO)
    return core_err_set(CORE_EUSAGE, "nothing reads the FIFO '%s': start its reader first or choose another -o", path);
  if (fd < 0)
    return core_err_errno(errno, "cannot create metrics file '%s'", path);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (!(*f = fdopen(fd, "w"))) {
    int e = errno;
    close(fd);
    return core_err_errno(e, "cannot create metrics file '%s'", path);
  }
  return 0;
}

/* Remove the temp files that a killed run left in DIR for the outputs this
 * rank writes (its trace; rank 0's merged metrics and recovery files), each
 * rank its own, so that none removes another's while it is being made. */
static int sweep_outputs(const char *dir, int rank) {
  char name[64];
  snprintf(name, sizeof name, "trace-rank-%d.json", rank);
  int rc = core_afile_sweep_stale(dir, name);
  if (rc >= 0 && rank == 0 && (rc = core_afile_sweep_stale(dir, "steps.csv")) >= 0)
    rc = core_afile_sweep_stale(dir, "recovery");
  return rc < 0 ? rc : 0;
}

/* The rank's metrics file (appended row by row and flushed, so a killed rank
 * keeps what it measured) and its trace; rank 0 checks the file it merges
 * the metrics into now, so that it refuses before the training, not after. */
static int open_outputs(train_ctx *c) {
  const rt_train_opts *o = c->o;
  char path[4400];
  int rc;
  if ((rc = sweep_outputs(o->out, c->pg.rank)) != 0)
    return rc;
  snprintf(path, sizeof path, "%s/steps.csv", o->out);
  if (c->pg.rank == 0 && (rc = core_afile_check(path)) != 0)
    return rc;
  /* The trace, and the mark an injected failure leaves, are refused before
   * the metrics file is made, which a refusal would leave. */
  snprintf(path, sizeof path, "%s/trace-rank-%d.json", o->out, c->pg.rank);
  if (o->trace && (rc = core_afile_check(path)) != 0)
    return rc;
  snprintf(path, sizeof path, "%s/fail-attempt-%d.time", o->out, c->attempt);
  if (c->attempt < o->n_fail_steps && o->fail_rank == c->pg.rank && (rc = core_afile_check(path)) != 0)
    return rc;
  snprintf(path, sizeof path, "%s/rank-%d.attempt-%d.csv", o->out, c->pg.rank, c->attempt);
  int keep = 0;
  if ((rc = core_afile_check(path)) != 0 || (o->resume && (rc = continued_metrics(path, &keep)) != 0) ||
      (rc = open_metrics(path, keep, &c->metrics)) != 0)
    return rc;
  snprintf(c->metrics_path, sizeof c->metrics_path, "%s", path);
  core_csv_stream(&c->mcsv, c->metrics, path, keep ? NULL : metric_cols, N_METRIC_COLS);
  fflush(c->metrics);
  if (!o->trace)
    return 0;
  snprintf(path, sizeof path, "%s/trace-rank-%d.json", o->out, c->pg.rank);
  if ((rc = core_trace_open(&c->trace, path)) != 0)
    return rc;
  c->tracing = 1;
  char pname[64];
  snprintf(pname, sizeof pname, "rank %d", c->pg.rank);
  core_trace_process(&c->trace, c->pg.rank, pname);
  return 0;
}

/* ---- TensorBoard -------------------------------------------------------- */

/* The rank's logger, opened before the rendezvous so that an unusable
 * directory stops the run before any training. */
static int tb_open(train_ctx *c) {
  if (!c->o->tensorboard)
    return 0;
  /* gpu -1: training runs on CPUs (Gloo), so there are no GPU figures. */
  rt_tblog_opts to = {.dir = c->o->tensorboard,
      .rank = c->pg.rank,
      .attempt = c->attempt,
      .resume = c->o->resume,
      .gpu = -1,
      .sys_every_s = -1,
      .made = &c->made_tb};
  return rt_tblog_open(&to, &c->tb);
}

static int tb_start(train_ctx *c) {
  if (!c->tb)
    return 0;
  int nb = rt_ddp_buckets(c->ddp)->n_buckets;
  if (!(c->bucket_s = calloc((size_t)(nb > 0 ? nb : 1), sizeof *c->bucket_s)))
    return core_err_set(CORE_ENOMEM, "out of memory for %d buckets' times", nb);
  rt_tblog_run r = {
      .world = c->pg.world_size, .batch = (int)c->o->batch, .n_buckets = nb, .lr = c->o->lr, .first_step = c->start};
  return rt_tblog_start(c->tb, &r);
}

static void tb_step(train_ctx *c, long step, const rt_step_metrics *sm) {
  rt_ddp_bucket_comm_s(c->ddp, c->bucket_s);
  rt_tblog_figures f = {.step = step,
      .step_s = sm->step_s,
      .compute_s = sm->compute_s,
      .comm_s = sm->comm_s,
      .exposed_comm_s = sm->exposed_comm_s,
      .loss = sm->loss,
      .bucket_s = c->bucket_s};
  rt_tblog_step(c->tb, &f);
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
    fprintf(stderr,
        "ddpsim train: rank %d: TensorBoard: cut a torn record (%lld bytes) from the end of %s: "
        "the previous attempt died writing it\n",
        rank, (long long)st.cut_bytes, st.path);
  long dropped = st.dropped_queue + st.dropped_write;
  if (dropped > 0)
    fprintf(stderr,
        "ddpsim train: rank %d: TensorBoard: dropped %ld of %ld steps (%ld with the logger's "
        "queue full, %ld in failed writes%s%s); %s holds the other %ld\n",
        rank, dropped, dropped + st.logged, st.dropped_queue, st.dropped_write, st.write_error[0] ? ": " : "",
        st.write_error, st.path, st.logged);
}

/* ---- setting up --------------------------------------------------------- */

/* A directory this rank writes into, made and checked now: one it cannot
 * write would otherwise fail the run late (the checkpoint directory at the
 * first checkpoint, after the steps before it). */
static int writable_dir(const char *opt, const char *dir, core_made_dirs *made) {
  struct stat st;
  char why[512];
  if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
    return core_err_set(CORE_EUSAGE, "%s %s is not a directory; name a directory (a missing one is made)", opt, dir);
  int rc = core_mkdirs_made(dir, made);
  if (rc != 0) {
    snprintf(why, sizeof why, "%s", core_err_msg());
    return core_err_set(CORE_EUSAGE, "%s %s: %s%s", opt, dir, why,
        rc == CORE_EUSAGE ? "" : "; choose a directory this rank can write"); /* a refusal says what to do */
  }
  if (access(dir, W_OK | X_OK) != 0)
    return core_err_set(CORE_EUSAGE, "%s %s: cannot write there (%s); choose a directory this rank can write", opt, dir,
        strerror(errno));
  return 0;
}

static int same_dir(const struct stat *a, const char *dir) {
  struct stat b;
  return dir && stat(dir, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/* --params-out onto a file the run writes itself (DIR/steps.csv, a rank's
 * metrics or trace, a checkpoint) would leave one of the two, not both. */
static int params_clash(const rt_train_opts *o) {
  static const char *const ours[] = {"steps.csv", "recovery", "rank-", "trace-rank-", "fail-attempt-"};
  char dir[4400];
  struct stat pd;
  const char *base = core_path_base(o->params_out);
  if (core_path_dir(o->params_out, dir, sizeof dir) != 0 || stat(dir, &pd) != 0)
    return 0;
  int in_out = same_dir(&pd, o->out);
  for (size_t i = 0; in_out && i < sizeof ours / sizeof *ours; i++)
    if (strncmp(base, ours[i], strlen(ours[i])) == 0)
      return core_err_set(CORE_EUSAGE,
          "--params-out %s is a name this run writes in -o %s (%s...); name a file of its own", o->params_out, o->out,
          ours[i]);
  if (same_dir(&pd, o->ckpt_dir) && strncmp(base, "ckpt-", 5) == 0)
    return core_err_set(CORE_EUSAGE,
        "--params-out %s is named like a checkpoint in --ckpt-dir %s; name a file of its own", o->params_out,
        o->ckpt_dir);
  return 0;
}

/* Who this rank is and what it trains; refuse now, not after the training,
 * an output that would destroy an input or that cannot be written. */
static int prepare(train_ctx *c) {
  const rt_train_opts *o = c->o;
  int rc;
  if ((rc = rt_pg_from_env(&c->pg)) != 0)
    return rc;
  if (o->fail_rank >= c->pg.world_size)
    return core_err_set(CORE_EUSAGE, "--fail-rank %ld: the job has ranks 0 to %d, so that failure would never happen",
        o->fail_rank, c->pg.world_size - 1);
  if ((rc = core_model_load(o->model, &c->m)) != 0 || (rc = core_model_check_runnable(c->m)) != 0)
    return rc;
  struct stat st;
  if (o->ckpt_dir && stat(o->ckpt_dir, &st) == 0 && !S_ISDIR(st.st_mode))
    return core_err_set(
        CORE_EUSAGE, "--ckpt-dir %s is not a directory; name the directory of the checkpoints", o->ckpt_dir);
  if ((rc = tb_open(c)) != 0 || (rc = writable_dir("-o", o->out, &c->made_out)) != 0)
    return rc;
  if (c->pg.rank == 0 && o->ckpt_every > 0 &&
      ((rc = writable_dir("--ckpt-dir", o->ckpt_dir, &c->made_ckpt)) != 0 ||
          (rc = rt_ckpt_claim(o->ckpt_dir, &c->ckpt_lock)) != 0))
    return rc;
  /* After -o and --ckpt-dir are made: --params-out may go into them. */
  if (c->pg.rank == 0 && o->params_out) {
    if ((rc = core_afile_check(o->params_out)) != 0)
      return core_err_wrap(rc, "--params-out");
    if ((rc = params_clash(o)) != 0)
      return rc;
  }
  return rt_blas_threads((int)o->threads);
}

/* Meet the other ranks under this attempt's prefix. A lone rank without a
 * rendezvous meets itself through a directory of its own. */
static int meet(train_ctx *c) {
  const rt_train_opts *o = c->o;
  const char *spec = o->rdzv ? o->rdzv : getenv("DDPSIM_RDZV");
  char own[RT_PG_PRIVATE_DIR_MAX] = "", prefix[64];
  int rc;
  if (!spec && c->pg.world_size > 1)
    return core_err_set(CORE_EUSAGE,
        "%d ranks need a rendezvous: pass --rdzv DIR|redis://HOST:PORT or run under "
        "`ddpsim launch`",
        c->pg.world_size);
  if (!spec) {
    if ((rc = rt_pg_private_dir(own)) != 0)
      return rc;
    spec = own;
  }
  const char *bind = o->bind ? o->bind : getenv("DDPSIM_BIND_ADDR");
  snprintf(prefix, sizeof prefix, "ddpsim-train-%d", c->attempt);
  double t0 = core_now();
  rc = rt_pg_connect(&c->pg, spec, bind, o->timeout_s, prefix, &c->comm);
  rt_pg_private_dir_remove(own);
  c->rdzv_s = core_now() - t0;
  return rc;
}

/* The model under DDP, the rank's shard of the data and a batch's buffers. */
static int build(train_ctx *c) {
  const rt_train_opts *o = c->o;
  int rc;
  snprintf(c->fail_mark, sizeof c->fail_mark, "%s/fail-attempt-%d.time", o->out, c->attempt);
  int fails_here = c->attempt < o->n_fail_steps && o->fail_rank == c->pg.rank;
  rt_ddp_opts dop = {.bucket_cap_mb = o->bucket_cap_mb,
      .first_bucket_mb = o->first_bucket_mb,
      .overlap = o->overlap,
      .algo = o->algo,
      .lr = o->lr,
      .momentum = o->momentum,
      .fail_step = fails_here ? (int)o->fail_steps[c->attempt] : -1,
      .fail_mark = c->fail_mark,
      .compress = o->compress};
  if ((rc = rt_ddp_create(c->m, c->comm, (int)o->batch, &dop, (uint64_t)o->seed, &c->ddp)) != 0)
    return rc;
  const core_model *m = c->m;
  int in = m->layers[0].in, outw = m->layers[m->n_layers - 1].out;
  if ((rc = rt_data_create(
           o->dataset, in, outw, (uint64_t)o->seed, c->pg.rank, c->pg.world_size, o->shuffle, &c->data)) != 0)
    return rc;
  /* The options' fault, told before any output is made (not at the first step, after the metrics file). */
  if (o->batch > c->data->num_samples)
    return core_err_set(CORE_EUSAGE,
        "--batch %ld is larger than this rank's %lld samples per epoch (--dataset %lld over %d ranks); use a bigger "
        "--dataset or a smaller --batch",
        o->batch, (long long)c->data->num_samples, (long long)o->dataset, c->pg.world_size);
  c->x = malloc(sizeof *c->x * (size_t)o->batch * (size_t)in);
  c->target = malloc(sizeof *c->target * (size_t)o->batch * (size_t)outw);
  if (!c->x || !c->target)
    return core_err_set(CORE_ENOMEM, "out of memory for a batch of %ld", o->batch);
  return 0;
}

/* A fresh run must not share its checkpoint directory with an earlier one:
 * a restart would resume from that run's checkpoints. */
static int check_ckpt_dir(const train_ctx *c) {
  const rt_train_opts *o = c->o;
  int rc;
  if (!o->ckpt_dir)
    return 0;
  if ((rc = rt_ckpt_sweep(o->ckpt_dir)) != 0 || o->resume || c->attempt > 0)
    return rc;
  DIR *cd = opendir(o->ckpt_dir);
  struct dirent *de;
  int found = 0;
  while (cd && (de = readdir(cd)))
    found |= strncmp(de->d_name, "ckpt-", 5) == 0;
  if (cd)
    closedir(cd);
  if (found)
    return core_err_set(CORE_EUSAGE,
        "--ckpt-dir %s already holds checkpoints of an earlier run; pass --resume to "
        "continue it, or use an empty directory",
        o->ckpt_dir);
  return 0;
}

/* Every rank loads the same newest valid checkpoint; none at all starts
 * from step 0, but checkpoints that were all rejected stop the run: it would
 * write its own over them. Sets c->start and the recovery's load figures. */
static int resume(train_ctx *c) {
  const rt_train_opts *o = c->o;
  double t_load = 0;
  c->start = 0;
  if (o->ckpt_dir && (o->resume || c->attempt > 0)) {
    rt_mlp *net = rt_ddp_mlp(c->ddp);
    rt_ckpt k = {.params = net->params, .momentum = rt_ddp_momentum(c->ddp)};
    char used[4400];
    double t0 = core_now();
    int rc = rt_ckpt_load_latest(o->ckpt_dir, c->m, &k, used, sizeof used);
    if (rc == CORE_EINVAL) {
      if (c->pg.rank == 0)
        fprintf(stderr, "ddpsim train: %s; starting from step 0\n", core_err_msg());
    } else if (rc) {
      return rc;
    } else if (k.step > o->steps) {
      /* Going on would train nothing and write its metrics and parameters as
       * those of a run of --steps. */
      return core_err_set(CORE_EUSAGE,
          "--steps %ld: the newest checkpoint, %s, is already at step %lld; ask for more steps than that, or use "
          "another --ckpt-dir",
          o->steps, used, (long long)k.step);
    } else {
      t_load = core_now() - t0;
      rt_ddp_set_has_momentum(c->ddp, k.has_momentum);
      if ((rc = rt_data_seek(c->data, k.epoch, k.pos)) != 0)
        return rc;
      c->start = (long)k.step;
      if (c->pg.rank == 0)
        fprintf(stderr, "ddpsim train: resumed from %s at step %ld (load %.3f s)\n", used, c->start, t_load);
    }
  }
  c->rec.load_s = t_load;
  c->rec.loaded_rt = core_wall_now();
  c->rec.resume_step = c->start;
  if (c->rec.active && c->rec.fail_step <= c->start)
    return rt_recovery_done(o->out, c->attempt, o->process_start_rt, &c->rec);
  return 0;
}

/* ---- training ----------------------------------------------------------- */

/* After step `done` steps: rank 0 saves, and nobody goes on until the
 * checkpoint is durable: a restart must find the step every rank believes
 * was saved. */
static int checkpoint(train_ctx *c, long done) {
  const rt_train_opts *o = c->o;
  if (!o->ckpt_dir || o->ckpt_every <= 0 || done % o->ckpt_every != 0)
    return 0;
  if (c->pg.rank == 0) {
    rt_mlp *net = rt_ddp_mlp(c->ddp);
    rt_ckpt k = {.step = done,
        .epoch = c->data->epoch,
        .pos = c->data->pos,
        .n_params = net->n_params,
        .has_momentum = rt_ddp_has_momentum(c->ddp),
        .params = net->params,
        .momentum = rt_ddp_momentum(c->ddp)};
    int rc = rt_ckpt_write(o->ckpt_dir, c->m, &k, (int)o->ckpt_keep);
    if (rc)
      return rc;
  }
  return rt_barrier(c->comm);
}

/* One step's row of the rank's metrics file, flushed at once; a loss that
 * is not finite (a diverged run) is an empty cell. A row the disk does not
 * take stops the run: the file would lack steps, or end in half a row. */
static int metrics_row(train_ctx *c, long step, const rt_step_metrics *sm) {
  core_csv_int(&c->mcsv, c->pg.rank);
  core_csv_int(&c->mcsv, c->attempt);
  core_csv_int(&c->mcsv, step);
  const double t[] = {sm->step_s, sm->compute_s, sm->comm_s, sm->exposed_comm_s};
  for (int k = 0; k < 4; k++)
    core_csv_fixed(&c->mcsv, t[k], 9);
  core_csv_num(&c->mcsv, sm->loss);
  core_csv_end_row(&c->mcsv);
  errno = 0;
  if (fflush(c->metrics) != 0 || ferror(c->metrics))
    return core_err_errno(errno ? errno : EIO, "writing step %ld's metrics to '%s'", step, c->metrics_path);
  return 0;
}

static int train(train_ctx *c, rt_train_result *res) {
  const rt_train_opts *o = c->o;
  double t_run = core_now(), sum_step = 0;
  int rc;
  for (long s = c->start; s < o->steps; s++) {
    rt_step_metrics sm;
    if ((rc = rt_data_next(c->data, (int)o->batch, c->x, c->target)) != 0 ||
        (rc = rt_ddp_step(
             c->ddp, s, c->x, c->target, &sm, c->tracing ? &c->trace : NULL, (core_now() - t_run) * 1e6)) != 0)
      return rc;
    sum_step += sm.step_s;
    rt_compress_stats_add(&res->hook, &sm.compress);
    res->vanilla_steps += sm.compress.vanilla > 0;
    if ((rc = metrics_row(c, s, &sm)) != 0)
      return rc;
    if (c->tb)
      tb_step(c, s, &sm);
    if (c->rec.active && s + 1 == c->rec.fail_step &&
        (rc = rt_recovery_done(o->out, c->attempt, o->process_start_rt, &c->rec)) != 0)
      return rc;
    if ((rc = checkpoint(c, s + 1)) != 0)
      return rc;
  }
  res->steps_run = o->steps > c->start ? o->steps - c->start : 0;
  res->mean_step_s = res->steps_run > 0 ? sum_step / (double)res->steps_run : 0.0;
  return 0;
}

/* Outputs closed, every rank done; rank 0 merges the files and writes the
 * parameters. */
static int finish(train_ctx *c, rt_train_result *res) {
  const rt_train_opts *o = c->o;
  rt_mlp *net = rt_ddp_mlp(c->ddp);
  int rc;
  if (c->tracing) {
    c->tracing = 0;
    if ((rc = core_trace_commit(&c->trace)) != 0)
      return rc;
  }
  fclose(c->metrics);
  c->metrics = NULL;
  if ((rc = rt_barrier(c->comm)) != 0)
    return rc;
  res->final_loss = net->loss;
  res->n_params = net->n_params;
  if (c->pg.rank != 0)
    return 0;
  if ((rc = merge_metrics(o->out, c->pg.world_size, c->attempt + 1)) != 0 ||
      (rc = rt_recovery_merge(o->out, c->attempt + 1)) != 0)
    return rc;
  return o->params_out ? write_params(o->params_out, net->params, net->n_params) : 0;
}

static void release(train_ctx *c, int rc) {
  if (c->ckpt_lock >= 0)
    close(c->ckpt_lock);
  tb_close(c->tb, c->pg.rank);
  free(c->bucket_s);
  if (c->tracing)
    core_trace_abort(&c->trace);
  if (c->metrics)
    fclose(c->metrics);
  free(c->x);
  free(c->target);
  rt_data_free(c->data);
  rt_ddp_free(c->ddp);
  rt_comm_finish(c->comm, rc);
  core_model_free(c->m);
}

int rt_train_run(const rt_train_opts *o, rt_train_result *res) {
  train_ctx c = {.o = o, .ckpt_lock = -1};
  memset(res, 0, sizeof *res);
  int rc = rt_pg_restart_count(&c.attempt);
  if (rc == 0)
    rc = prepare(&c);
  if (rc == 0 && (rc = meet(&c)) == 0 && (rc = build(&c)) == 0) {
    if (c.pg.rank == 0)
      rt_recovery_begin(o->out, c.attempt, &c.rec);
    c.rec.rdzv_s = c.rdzv_s;
    if ((rc = check_ckpt_dir(&c)) == 0 && (rc = resume(&c)) == 0 && (rc = tb_start(&c)) == 0 &&
        (rc = open_outputs(&c)) == 0 && (rc = train(&c, res)) == 0)
      rc = finish(&c, res);
  }
  res->rank = c.pg.rank;
  res->world_size = c.pg.world_size;
  res->first_step = c.start;
  res->rdzv_s = c.rdzv_s;
  release(&c, rc);
  /* Bad input leaves nothing behind: a first attempt refused takes back the
   * directories it made while they are empty (a restart keeps them). */
  if (c.attempt == 0 && (rc == CORE_EUSAGE || rc == CORE_EINVAL || rc == CORE_ECORRUPT)) {
    core_made_dirs_undo(&c.made_ckpt); /* the reverse of the order prepare() made them */
    core_made_dirs_undo(&c.made_out);
    core_made_dirs_undo(&c.made_tb);
  }
  return rc;
}

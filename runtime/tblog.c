/* tblog — TensorBoard logger of a training rank (runtime/tblog.h). */
#include "runtime/tblog.h"

#include "runtime/sysstat.h"

#include "core/afile.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/tbwriter.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long the logger waits for a wake-up before it looks at the queue
 * anyway (a wake-up the producer sent between the logger's look and its
 * wait is not seen; nanoseconds). */
#define POLL_NS 20000000L

typedef struct slot {
  double wall;
  rt_tblog_figures s;
  double *bucket_s; /* n_buckets, preallocated */
} slot;

/* Scalars of a step without the buckets': the figures listed in tblog.h. */
enum { N_FIXED = 18 };

struct rt_tblog {
  rt_tblog_opts o;
  rt_tblog_run r;
  core_tb_log log;
  int64_t cut;
  int append;  /* continued an earlier attempt's file */
  int created; /* this logger made the file (it holds only the version until a step) */
  /* The ring: the producer owns head, the consumer tail. */
  slot *slots;
  double *bucket_mem;
  size_t cap;
  atomic_size_t head, tail;
  atomic_long dropped_queue;
  atomic_int stop;
  pthread_mutex_t mu; /* only for the logger's wait */
  pthread_cond_t cv;  /* signalled, never waited on, by the producer */
  pthread_t thread;
  int started, sync_ok;
  /* The logger thread's own. */
  rt_sysmon *mon;
  double last_sample;
  int sampled;
  core_tb_buf buf;
  core_tb_scalar *vals;
  char (*bucket_tags)[48];
  long logged, dropped_write;
  char write_error[600], gpu_why[600];
};

/* DIR/rank_R made, and no event file of an earlier run in it unless this
 * attempt continues one. */
static int open_dir(const rt_tblog_opts *o, int append, char *dir, size_t n) {
  if ((size_t)snprintf(dir, n, "%s/rank_%d", o->dir, o->rank) >= n)
    return core_err_set(CORE_EUSAGE, "--tensorboard %s: the path is too long", o->dir);
  int rc = core_mkdirs_made(dir, o->made);
  if (rc)
    return core_err_wrap(CORE_EUSAGE, "--tensorboard %s (choose a directory this rank can write)", o->dir);
  char old[4400];
  int found = core_tb_newest(dir, old, sizeof old);
  if (found < 0)
    return core_err_wrap(CORE_EUSAGE, "--tensorboard %s", o->dir);
  if (found == 0 && !append)
    return core_err_set(CORE_EUSAGE,
        "--tensorboard %s: %s already holds an event file of an earlier run "
        "(%s), and TensorBoard would draw both runs as one; use an empty directory, or "
        "--resume to continue that run",
        o->dir, dir, old);
  return 0;
}

int rt_tblog_open(const rt_tblog_opts *o, rt_tblog **out) {
  *out = NULL;
  rt_tblog *l = calloc(1, sizeof *l);
  if (!l)
    return core_err_set(CORE_ENOMEM, "out of memory for the TensorBoard logger");
  l->o = *o;
  l->log.fd = -1;
  l->append = o->attempt > 0 || o->resume;
  char dir[4400], tail[64];
  int rc = open_dir(o, l->append, dir, sizeof dir);
  if (rc)
    goto free_logger;
  snprintf(tail, sizeof tail, "%ld.ddpsim-rank%d", (long)getpid(), o->rank);
  if ((rc = core_tb_log_open(&l->log, dir, tail, l->append, &l->cut)) != 0) {
    rc = core_err_wrap(rc == CORE_ENOMEM ? rc : CORE_EUSAGE, "--tensorboard %s", o->dir);
    goto free_logger;
  }
  if (l->log.damaged[0])
    fprintf(stderr,
        "ddpsim: rank %d: TensorBoard: %s fails its checksum after byte %lld; it is left as it is (TensorBoard reads "
        "it up to there) and this attempt goes on in a new event file\n",
        o->rank, l->log.damaged, (long long)l->log.damaged_at);
  if (l->log.size == 0) {
    l->created = 1;
    /* A new file starts with its version; writing it now also shows that
     * the disk takes the events, before any training. */
    if ((rc = core_tb_put_version(&l->buf, core_wall_now())) != 0 || (rc = core_tb_log_write(&l->log, &l->buf)) != 0) {
      rc = core_err_wrap(rc, "--tensorboard %s", o->dir);
      goto close_log;
    }
    l->buf.n = 0;
  }
  *out = l;
  return 0;
close_log:
  core_tb_log_close(&l->log);
  unlink(l->log.path);
free_logger:
  core_tb_buf_free(&l->buf);
  free(l);
  return rc;
}

static void *logger_main(void *arg);

/* The logger's wait: a monotonic-clock condition variable. */
static int init_sync(rt_tblog *l) {
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca) != 0 || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
      pthread_cond_init(&l->cv, &ca) != 0 || pthread_mutex_init(&l->mu, NULL) != 0)
    return core_err_set(CORE_EIO, "cannot set up the TensorBoard logger's wake-up");
  pthread_condattr_destroy(&ca);
  l->sync_ok = 1;
  return 0;
}

int rt_tblog_start(rt_tblog *l, const rt_tblog_run *r) {
  l->r = *r;
  l->cap = (size_t)(l->o.queue_steps > 0 ? l->o.queue_steps : RT_TBLOG_QUEUE_STEPS);
  int nb = r->n_buckets > 0 ? r->n_buckets : 0;
  l->slots = calloc(l->cap, sizeof *l->slots);
  l->bucket_mem = calloc(l->cap * (size_t)(nb > 0 ? nb : 1), sizeof *l->bucket_mem);
  l->vals = calloc((size_t)(N_FIXED + nb), sizeof *l->vals);
  l->bucket_tags = calloc((size_t)(nb > 0 ? nb : 1), sizeof *l->bucket_tags);
  if (!l->slots || !l->bucket_mem || !l->vals || !l->bucket_tags)
    return core_err_set(CORE_ENOMEM, "out of memory for the TensorBoard logger's queue of %zu steps", l->cap);
  for (size_t i = 0; i < l->cap; i++)
    l->slots[i].bucket_s = l->bucket_mem + i * (size_t)nb;
  for (int b = 0; b < nb; b++)
    snprintf(l->bucket_tags[b], sizeof l->bucket_tags[b], "Dist/BucketAllreduce/%d", b);
  int rc = rt_sysmon_open(l->o.gpu, &l->mon, l->gpu_why, (int)sizeof l->gpu_why);
  if (rc)
    return rc;
  if ((rc = init_sync(l)) != 0)
    return rc;
  if (l->append) {
    char msg[128];
    snprintf(msg, sizeof msg, "ddpsim train: attempt %d resumes at step %ld", l->o.attempt, r->first_step);
    if ((rc = core_tb_put_start(&l->buf, core_wall_now(), r->first_step, msg)) != 0)
      return rc;
  }
  if ((rc = pthread_create(&l->thread, NULL, logger_main, l)) != 0)
    return core_err_set(CORE_EIO, "cannot start the TensorBoard logger thread (error %d)", rc);
  l->started = 1;
  return 0;
}

void rt_tblog_step(rt_tblog *l, const rt_tblog_figures *s) {
  size_t h = atomic_load_explicit(&l->head, memory_order_relaxed);
  size_t t = atomic_load_explicit(&l->tail, memory_order_acquire);
  if (h - t >= l->cap) {
    atomic_fetch_add_explicit(&l->dropped_queue, 1, memory_order_relaxed);
    return;
  }
  slot *q = &l->slots[h % l->cap];
  q->wall = core_wall_now();
  q->s = *s;
  if (s->bucket_s && l->r.n_buckets > 0)
    memcpy(q->bucket_s, s->bucket_s, sizeof *q->bucket_s * (size_t)l->r.n_buckets);
  q->s.bucket_s = q->bucket_s;
  atomic_store_explicit(&l->head, h + 1, memory_order_release);
  /* Wake the logger now, so that a rank killed soon after loses as few
   * steps as possible; signalling takes no lock the logger holds long. */
  pthread_cond_signal(&l->cv);
}

/* The system figures onto v[n...], when they are due. */
static int add_system(rt_tblog *l, core_tb_scalar *v, int n) {
  double now = core_now();
  double every = l->o.sys_every_s < 0 ? RT_TBLOG_SYS_EVERY_S : l->o.sys_every_s;
  if (l->sampled && now - l->last_sample < every)
    return n;
  rt_sysstat s;
  rt_sysmon_sample(l->mon, &s);
  l->sampled = 1;
  l->last_sample = now;
  v[n++] = (core_tb_scalar){"System/CPUUtil", s.cpu_pct};
  v[n++] = (core_tb_scalar){"System/MemoryRSS", s.rss_mib};
  if (s.has_net) {
    v[n++] = (core_tb_scalar){"System/NetRxGbps", s.rx_gbps};
    v[n++] = (core_tb_scalar){"System/NetTxGbps", s.tx_gbps};
  }
  if (s.has_gpu) {
    v[n++] = (core_tb_scalar){"System/GPUUtil", s.gpu_pct};
    v[n++] = (core_tb_scalar){"System/GPUMemory", s.gpu_mem_mib};
  }
  return n;
}

/* One step's event into l->buf. */
static int encode(rt_tblog *l, const slot *q) {
  const rt_tblog_figures *s = &q->s;
  core_tb_scalar *v = l->vals;
  double step_s = s->step_s > 0 ? s->step_s : 0;
  int n = 0;
  v[n++] = (core_tb_scalar){"Train/Loss", s->loss};
  v[n++] = (core_tb_scalar){"Train/LR", l->r.lr};
  v[n++] = (core_tb_scalar){"Train/SamplesPerSec", step_s > 0 ? (double)l->r.batch * l->r.world / step_s : 0};
  v[n++] = (core_tb_scalar){"Train/StepTime", s->step_s};
  v[n++] = (core_tb_scalar){"Train/Attempt", l->o.attempt};
  v[n++] = (core_tb_scalar){"Dist/SyncTime", s->comm_s};
  v[n++] = (core_tb_scalar){"Dist/ExposedComm", s->exposed_comm_s};
  v[n++] = (core_tb_scalar){"Dist/CommRatio", step_s > 0 ? s->comm_s / step_s : 0};
  long dropped = atomic_load_explicit(&l->dropped_queue, memory_order_relaxed) + l->dropped_write;
  v[n++] = (core_tb_scalar){"Logger/Dropped", (double)dropped};
  for (int b = 0; b < l->r.n_buckets; b++)
    v[n++] = (core_tb_scalar){l->bucket_tags[b], s->bucket_s[b]};
  n = add_system(l, v, n);
  return core_tb_put_scalars(&l->buf, q->wall, s->step, v, n);
}

/* Everything queued, encoded and written as one batch. */
static void drain(rt_tblog *l) {
  size_t t0 = atomic_load_explicit(&l->tail, memory_order_relaxed);
  size_t h = atomic_load_explicit(&l->head, memory_order_acquire);
  long steps = (long)(h - t0);
  int rc = 0;
  for (size_t t = t0; t != h && !rc; t++)
    rc = encode(l, &l->slots[t % l->cap]);
  /* The slots are encoded: the producer may have them back. */
  atomic_store_explicit(&l->tail, h, memory_order_release);
  if (l->buf.n == 0 && !rc)
    return;
  if (!rc)
    rc = core_tb_log_write(&l->log, &l->buf);
  if (!rc) {
    l->logged += steps;
  } else {
    l->dropped_write += steps;
    if (!l->write_error[0])
      snprintf(l->write_error, sizeof l->write_error, "%s", core_err_msg());
  }
  l->buf.n = 0;
}

static void *logger_main(void *arg) {
  rt_tblog *l = arg;
  for (;;) {
    int stopping = atomic_load(&l->stop);
    drain(l);
    if (stopping)
      return NULL;
    pthread_mutex_lock(&l->mu);
    if (atomic_load(&l->head) == atomic_load(&l->tail) && !atomic_load(&l->stop)) {
      struct timespec dl;
      clock_gettime(CLOCK_MONOTONIC, &dl);
      dl.tv_nsec += POLL_NS;
      if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&l->cv, &l->mu, &dl);
    }
    pthread_mutex_unlock(&l->mu);
  }
}

int rt_tblog_close(rt_tblog *l, rt_tblog_stats *st) {
  if (!l)
    return 0;
  if (l->started) {
    atomic_store(&l->stop, 1);
    pthread_cond_signal(&l->cv);
    pthread_join(l->thread, NULL);
  }
  if (l->sync_ok) {
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
  }
  int rc = core_tb_log_close(&l->log);
  /* A file this run made and gave no step (it failed before training) goes:
   * left, it would make the next run into DIR refuse it as an earlier run's. */
  if (l->created && l->logged == 0 && l->dropped_write == 0 && atomic_load(&l->dropped_queue) == 0)
    unlink(l->log.path);
  if (st) {
    memset(st, 0, sizeof *st);
    st->logged = l->logged;
    st->dropped_queue = atomic_load(&l->dropped_queue);
    st->dropped_write = l->dropped_write;
    st->cut_bytes = l->cut;
    snprintf(st->path, sizeof st->path, "%s", l->log.path);
    snprintf(st->write_error, sizeof st->write_error, "%s", l->write_error);
    snprintf(st->gpu_why, sizeof st->gpu_why, "%s", l->gpu_why);
  }
  rt_sysmon_free(l->mon);
  core_tb_buf_free(&l->buf);
  free(l->slots);
  free(l->bucket_mem);
  free(l->vals);
  free(l->bucket_tags);
  free(l);
  return rc;
}

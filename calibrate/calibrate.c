/* sched_getaffinity and CPU_AND: which ranks share this one's CPUs. */
#define _GNU_SOURCE
#include "calibrate/calibrate_int.h"

#include "calibrate/compute.h"
#include "calibrate/compute_gpu.h"
#include "calibrate/fit.h"
#include "calibrate/jitter.h"
#include "calibrate/sweep.h"

#include "runtime/ckpt.h"
#include "runtime/compress.h"
#include "runtime/data.h"
#include "runtime/ddp.h"
#include "runtime/mlp.h"
#include "runtime/gloo.h"
#include "runtime/gpu.h"
#include "runtime/nccl.h"
#include "runtime/pg.h"

#include "core/afile.h"
#include "core/bucket.h"
#include "core/err.h"
#include "core/model.h"
#include "core/profile.h"

#include <gsl/gsl_statistics_double.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef DDPSIM_VERSION
#define DDPSIM_VERSION "0.0.0"
#endif

/* OpenBLAS reports its build (cblas.h; declared here to keep GSL's and
 * OpenBLAS's CBLAS headers out of one file). */
char *openblas_get_config(void);

void cal_say(const cal_ctx *r, const char *fmt, ...) {
  if (!r->progress || r->pg.rank != 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[%6.1f s] ", rt_now() - r->t0);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int cal_connect(cal_ctx *r, rt_store *st, int rank, int size, enum rt_algo algo, rt_comm **out) {
  if (r->nccl)
    return rt_nccl_connect_algo(st, rank, size, r->device, r->o->timeout_s, algo, out);
  return rt_gloo_connect(st, rank, size, r->bind, r->o->timeout_s, out);
}

int cal_gather_world(const cal_ctx *r, const void *mine, size_t bytes, void **all) {
  void *buf = malloc(bytes * (size_t)r->world->size);
  if (!buf)
    return core_err_set(CORE_ENOMEM, "out of memory");
  int rc = cal_allgather_host(r->world, r->bufs, mine, buf, bytes);
  if (rc) {
    free(buf);
    return rc;
  }
  *all = buf;
  return 0;
}

int cal_sub_group(cal_ctx *r, const char *prefix, int rank, int size, enum rt_algo algo, rt_comm **out) {
  rt_store *st;
  int rc = rt_pg_open_store(r->spec, prefix, &st);
  if (rc)
    return rc;
  rc = cal_connect(r, st, rank, size, algo, out);
  rt_store_close(st);
  return rc;
}

/* Max over ranks of a few doubles (gathered as raw bytes; through device
 * staging on NCCL communicators). */
static int max_over_ranks(const cal_ctx *r, rt_comm *c, double *v, int n) {
  return cal_max_over_ranks(c, r->bufs, v, n);
}

static void cpu_name(char *buf, size_t n) {
  snprintf(buf, n, "cpu");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[512];
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
      char *v = strchr(line, ':') + 1;
      v += strspn(v, " \t");
      v[strcspn(v, "\n")] = '\0';
      snprintf(buf, n, "%s", v);
      break;
    }
  fclose(f);
}

/* Whether this process can calibrate NCCL at all: a build with NCCL and a
 * CUDA device. Asked before anything is written or waited on. */
static int nccl_usable(void) {
  int v = 0, n = 0, rc;
  if ((rc = rt_nccl_version(&v)) != 0 || (rc = rt_gpu_count(&n)) != 0)
    return core_err_wrap(rc, "--backend nccl");
  return 0;
}

/* Jitter samples on every rank at once, gathered on every rank: training
 * steps of the first model (Gloo), or bursts of the probe GEMM (NCCL). */
static int jitter_part(cal_ctx *r, int ns, double *samples) {
  const cal_opts *o = r->o;
  double *mine = malloc(sizeof *mine * (size_t)ns);
  if (!mine)
    return core_err_set(CORE_ENOMEM, "out of memory for jitter samples");
  int rc;
  if (r->nccl) {
    cal_say(r, "jitter: %d bursts of %d fp32 GEMMs of %d on every rank", ns, CAL_GPU_BURST, CAL_GPU_PROBE_N);
    rc = cal_gpu_step_samples(r->device, ns, mine);
  } else {
    core_model *jm;
    const char *jpath = o->n_models ? o->models[0] : NULL;
    if (!jpath) {
      free(mine);
      return core_err_set(CORE_EUSAGE, "calibrate needs a model to time (--model)");
    }
    if ((rc = core_model_load(jpath, &jm)) != 0) {
      free(mine);
      return rc;
    }
    cal_say(r, "jitter: %d compute steps of %s on every rank", ns, jm->name);
    rc = cal_step_samples(jm, o->batch, ns, mine);
    core_model_free(jm);
  }
  if (!rc)
    rc = cal_allgather_host(r->world, r->bufs, mine, samples, sizeof *mine * (size_t)ns);
  free(mine);
  return rc;
}

int cal_run(const cal_opts *o) {
  cal_ctx r = {.o = o, .t0 = rt_now(), .bufs = &cal_host_bufs};
  struct timespec now_rt;
  clock_gettime(CLOCK_REALTIME, &now_rt);
  double start_rt = (double)now_rt.tv_sec + now_rt.tv_nsec * 1e-9;
  rt_store *st = NULL;
  double *samples = NULL, *rel = NULL;
  int rc;
  char tmpdir[64] = "";

  if (!strcmp(o->backend, "nccl")) {
    /* No GPU, or no NCCL in this build: say so at once, write nothing. */
    if ((rc = nccl_usable()) != 0)
      return rc;
    r.nccl = 1;
    r.bufs = &cal_device_bufs;
  } else if (strcmp(o->backend, "gloo") != 0) {
    return core_err_set(CORE_EUSAGE, "calibrate --backend %s: expected gloo or nccl", o->backend);
  }
  if ((rc = rt_pg_from_env(&r.pg)) != 0)
    return rc;
  if (r.nccl) {
    /* One device per rank of a node, by LOCAL_RANK (torchrun's rule). */
    r.device = r.pg.local_rank;
    if ((rc = rt_gpu_set_device(r.device)) != 0)
      return core_err_wrap(rc, "rank %d uses CUDA device %d (its LOCAL_RANK)", r.pg.rank, r.device);
  }
  if (r.pg.rank == 0) {
    /* Find out now, not after minutes of measuring, that the profile
     * cannot be written where asked. */
    if ((rc = core_afile_check(o->out)) != 0)
      return core_err_wrap(rc, "the profile cannot be written to '%s'", o->out);
  }
  rt_blas_threads(o->threads > 0 ? o->threads : 1);
  r.progress = o->progress < 0 ? isatty(2) : o->progress;
  int world = r.pg.world_size, lws = r.pg.local_world_size;
  if (world % lws != 0)
    return core_err_set(CORE_EUSAGE, "%d ranks do not divide into nodes of %d; set LOCAL_WORLD_SIZE consistently", world, lws);
  int nodes = r.nodes = world / lws;
  const char *spec = o->rdzv ? o->rdzv : getenv("DDPSIM_RDZV");
  if (!spec) {
    if (world > 1)
      return core_err_set(CORE_EUSAGE, "%d ranks need a rendezvous: run under `ddpsim launch` or pass --rdzv", world);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ddpsim-cal-XXXXXX");
    if (!mkdtemp(tmpdir))
      return core_err_errno(errno, "cannot create a rendezvous directory");
    spec = tmpdir;
  }
  r.spec = spec;
  const char *bind = o->bind ? o->bind : getenv("DDPSIM_BIND_ADDR");
  char bindbuf[256];
  if (!bind && !r.nccl) { /* NCCL finds its own interfaces (NCCL_SOCKET_IFNAME) */
    if ((rc = rt_pg_default_bind(&r.pg, bindbuf, sizeof bindbuf)) != 0)
      goto out;
    bind = bindbuf;
  }
  r.bind = bind;

  /* Start-up: rendezvous (every rank's key in the store), then the
   * communicator's connections. */
  cal_say(&r, "calibrate: %d rank(s) on %d node(s) of %d, backend %s%s", world, nodes, lws, r.nccl ? "nccl" : "gloo",
      o->quick ? ", quick" : "");
  double restart[3] = {0, 0, 0}; /* process start, rendezvous, comm init */
  const char *lt = getenv("DDPSIM_LAUNCH_TIME");
  if (lt)
    restart[0] = start_rt - atof(lt);
  if ((rc = rt_pg_open_store(spec, "cal-world", &st)) != 0)
    goto out;
  double t = rt_now();
  char key[64];
  snprintf(key, sizeof key, "arrived-%d", r.pg.rank);
  if ((rc = rt_store_set(st, key, "1", 1)) != 0)
    goto out;
  for (int k = 0; k < world; k++) {
    const char *kk[1];
    char name[64];
    snprintf(name, sizeof name, "arrived-%d", k);
    kk[0] = name;
    if ((rc = rt_store_wait(st, kk, 1, (int)(o->timeout_s * 1000))) != 0)
      goto out;
  }
  restart[1] = rt_now() - t;
  t = rt_now();
  if ((rc = cal_connect(&r, st, r.pg.rank, world, RT_ALGO_DEFAULT, &r.world)) != 0)
    goto out;
  restart[2] = rt_now() - t;
  if ((rc = max_over_ranks(&r, r.world, restart, 3)) != 0)
    goto out;

  if (r.pg.rank == 0) {
    if (!(r.prof = core_profile_new())) {
      rc = core_err_set(CORE_ENOMEM, "out of memory");
      goto out;
    }
    core_profile *p = r.prof;
    char host[128] = "?";
    gethostname(host, sizeof host - 1);
    time_t tt = time(NULL);
    struct tm tm;
    gmtime_r(&tt, &tm);
    snprintf(p->name, sizeof p->name, "%s", o->name ? o->name : host);
    snprintf(p->provenance, sizeof p->provenance, "measured by ddpsim calibrate%s%s", r.nccl ? " --backend nccl" : "",
             o->quick ? " --quick" : "");
    snprintf(p->host, sizeof p->host, "%s", host);
    strftime(p->date, sizeof p->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(p->backend, sizeof p->backend, "%s", r.nccl ? "nccl" : "gloo");
    if (r.nccl) {
      int v = 0;
      char cuda[160] = "CUDA ?";
      rt_nccl_version(&v);
      rt_gpu_versions(cuda, sizeof cuda);
      snprintf(p->versions, sizeof p->versions, "ddpsim %s; NCCL %d.%d.%d; %s", DDPSIM_VERSION, v / 10000,
               v / 100 % 100, v % 100, cuda);
    } else {
      snprintf(p->versions, sizeof p->versions, "ddpsim %s; %s; OpenBLAS %.120s", DDPSIM_VERSION, rt_gloo_version(),
               openblas_get_config());
    }
    p->nodes = nodes;
    p->ranks_per_node = lws;
    p->link_gbps = o->link_gbps;
    if (r.nccl) {
      rt_gpu_info info;
      snprintf(p->device_kind, sizeof p->device_kind, "gpu");
      if ((rc = rt_gpu_get_info(r.device, &info)) != 0)
        goto out;
      snprintf(p->device_name, sizeof p->device_name, "%.*s", (int)sizeof p->device_name - 1, info.name);
    } else {
      snprintf(p->device_kind, sizeof p->device_kind, "cpu");
      cpu_name(p->device_name, sizeof p->device_name);
    }
    p->process_start_s = restart[0];
    p->rendezvous_s = restart[1];
    p->comm_init_s = restart[2];
  }
  cal_say(&r, "start-up: process %.3f s, rendezvous %.3f s, communicator %.3f s", restart[0], restart[1], restart[2]);
  /* The first window of memory rates and layer times, before the sweeps. */
  if ((rc = cal_windows_open(&r)) != 0)
    goto out;
  if ((rc = rt_barrier(r.world)) != 0)
    goto out;

  if ((rc = cal_phase_collectives(&r)) != 0)
    goto out;

  /* Compute: rank 0 alone; the GEMM sweep is the device's rate. Then the
   * second window, every rank. */
  if (r.pg.rank == 0 && (rc = cal_phase_compute(&r)) != 0)
    goto out;
  if ((rc = rt_barrier(r.world)) != 0 || (rc = cal_window(&r)) != 0)
    goto out;

  /* Jitter: every rank computes at once, as in training. */
  int ns = o->quick ? 10 : 30;
  samples = malloc(sizeof *samples * (size_t)ns * (size_t)world);
  rel = malloc(sizeof *rel * (size_t)ns * (size_t)world);
  if (!samples || !rel) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for jitter samples");
    goto out;
  }
  if ((rc = jitter_part(&r, ns, samples)) != 0)
    goto out;
  if (r.pg.rank == 0) {
    cal_jitter j;
    if ((rc = cal_jitter_fit(samples, ns * world, rel, &j)) != 0)
      goto out;
    r.prof->jitter = j.best;
    r.prof->jitter_params[0] = j.params[0];
    r.prof->jitter_params[1] = j.params[1];
    r.prof->jitter_samples = rel;
    r.prof->n_jitter_samples = ns * world;
    rel = NULL;
    cal_say(&r, "  cv %.4f; best fit %s (log-likelihood normal %.1f, lognormal %.1f, shifted exponential %.1f)",
        j.cv, core_jitter_name(j.best), j.loglik[0], j.loglik[1], j.loglik[2]);
  }

  if ((rc = cal_phase_hooks(&r)) != 0)
    goto out;

  cal_interf in;
  if ((rc = cal_phase_interference(&r, &in)) != 0 || (rc = cal_window(&r)) != 0)
    goto out;
  if (r.pg.rank == 0) {
    cal_interference_record(&r, &in);
    if ((rc = cal_windows_close(&r)) != 0 || (rc = cal_phase_storage(&r)) != 0)
      goto out;
    if ((rc = core_profile_write(r.prof, o->out)) != 0)
      goto out;
    fprintf(stderr, "calibrate: wrote %s in %.1f s\n", o->out, rt_now() - r.t0);
  }
  rc = rt_barrier(r.world);
out:
  free(samples);
  free(rel);
  rt_comm_finish(r.intra, rc);
  rt_comm_finish(r.inter, rc);
  rt_comm_finish(r.world, rc);
  if (st)
    rt_store_close(st);
  core_profile_free(r.prof);
  cal_windows_free(r.win);
  if (tmpdir[0])
    rmdir(tmpdir);
  return rc;
}

/*
 * calibrate — cal_run, the driver: the run's setup (backend, place in the
 * launch, rendezvous), then the phases in order (calibrate_int.h, one file
 * each), then what the run holds released; with what the phases share
 * (progress lines, communicators, gathers across ranks).
 */
#include "calibrate/calibrate_int.h"

#include "runtime/blas.h"
#include "runtime/ddp.h"
#include "runtime/gloo.h"
#include "runtime/gpu.h"
#include "runtime/mlp.h"
#include "runtime/nccl.h"

#include "core/afile.h"
#include "core/clock.h"
#include "core/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void cal_say(const cal_ctx *r, const char *fmt, ...) {
  if (!r->progress || r->pg.rank != 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[%6.1f s] ", core_now() - r->t0);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int cal_connect(cal_ctx *r, rt_store *st, int rank, int size, enum rt_algo algo, rt_comm **out) {
  if (r->nccl)
    return rt_nccl_connect_algo(st, rank, size, r->device, r->o->timeout_s, algo, out);
  return rt_gloo_connect(st, rank, size, r->bind, r->o->timeout_s, out);
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

/* Gloo, or NCCL where this process can use it: a build with NCCL and a
 * CUDA device, asked before anything is written or waited on (without
 * them: say so at once, write nothing). */
static int choose_backend(cal_ctx *r) {
  const char *b = r->o->backend;
  if (!strcmp(b, "gloo"))
    return 0;
  if (strcmp(b, "nccl") != 0)
    return core_err_set(CORE_EUSAGE, "calibrate --backend %s: expected gloo or nccl", b);
  int v = 0, n = 0, rc;
  if ((rc = rt_nccl_version(&v)) != 0 || (rc = rt_gpu_count(&n)) != 0)
    return core_err_wrap(rc, "--backend nccl");
  r->nccl = 1;
  r->bufs = &cal_device_bufs;
  return 0;
}

/* That the profile and the measured model files (Gloo) can be written and
 * are none of the inputs, the models noted as inputs first. */
static int check_outputs(const cal_ctx *r) {
  const cal_opts *o = r->o;
  int rc;
  for (int k = 0; k < o->n_models; k++)
    core_afile_note_input(o->models[k]);
  if ((rc = core_afile_check(o->out)) != 0)
    return core_err_wrap(rc, "the profile cannot be written to '%s'", o->out);
  return r->nccl ? 0 : cal_windows_check_outputs(o);
}

/* This rank's place in the launch: its process group, its device (NCCL:
 * one per rank of a node, by LOCAL_RANK, torchrun's rule), its nodes; on
 * rank 0, that the profile and the measured models can be written where
 * asked, found out now rather than after minutes of measuring. */
static int take_place(cal_ctx *r) {
  const cal_opts *o = r->o;
  int rc;
  if ((rc = rt_pg_from_env(&r->pg)) != 0)
    return rc;
  if (r->nccl) {
    r->device = r->pg.local_rank;
    if ((rc = rt_gpu_set_device(r->device)) != 0)
      return core_err_wrap(rc, "rank %d uses CUDA device %d (its LOCAL_RANK)", r->pg.rank, r->device);
  }
  if (r->pg.rank == 0 && (rc = check_outputs(r)) != 0)
    return rc;
  if ((rc = rt_blas_threads(o->threads > 0 ? o->threads : 1)) != 0)
    return rc;
  r->progress = o->progress < 0 ? isatty(2) : o->progress;
  int world = r->pg.world_size, lws = r->pg.local_world_size;
  if (world % lws != 0)
    return core_err_set(
        CORE_EUSAGE, "%d ranks do not divide into nodes of %d; set LOCAL_WORLD_SIZE consistently", world, lws);
  r->nodes = world / lws;
  return 0;
}

/* Where the ranks meet: the rendezvous spec (a directory of its own for a
 * lone rank without one) and Gloo's listen address (NCCL finds its own
 * interfaces: NCCL_SOCKET_IFNAME). */
static int find_peers(cal_ctx *r) {
  const cal_opts *o = r->o;
  r->spec = o->rdzv ? o->rdzv : getenv("DDPSIM_RDZV");
  if (!r->spec) {
    if (r->pg.world_size > 1)
      return core_err_set(
          CORE_EUSAGE, "%d ranks need a rendezvous: run under `ddpsim launch` or pass --rdzv", r->pg.world_size);
    int rc = rt_pg_private_dir(r->tmpdir);
    if (rc)
      return rc;
    r->spec = r->tmpdir;
  }
  r->bind = o->bind ? o->bind : getenv("DDPSIM_BIND_ADDR");
  if (!r->bind && !r->nccl) {
    int rc = rt_pg_default_bind(&r->pg, r->bindbuf, sizeof r->bindbuf);
    if (rc)
      return rc;
    r->bind = r->bindbuf;
  }
  return 0;
}

/* Rank 0: interference, the windows' medians and the checkpoint I/O into
 * the profile, and the profile written. */
static int conclude(cal_ctx *r, const cal_interf *in) {
  int rc;
  cal_interference_record(r, in);
  if ((rc = cal_windows_close(r)) != 0 || (rc = cal_phase_storage(r)) != 0 ||
      (rc = core_profile_write(r->prof, r->o->out)) != 0)
    return rc;
  fprintf(stderr, "calibrate: wrote %s in %.1f s\n", r->o->out, core_now() - r->t0);
  return 0;
}

/* Whatever the run holds, at whichever phase it stopped: communicators
 * destroyed after success (collective), aborted after a failure. */
static void release(cal_ctx *r, int rc) {
  rt_comm_finish(r->intra, rc);
  rt_comm_finish(r->inter, rc);
  rt_comm_finish(r->world, rc);
  if (r->store)
    rt_store_close(r->store);
  core_profile_free(r->prof);
  cal_windows_free(r->win);
  rt_pg_private_dir_remove(r->tmpdir);
}

int cal_run(const cal_opts *o) {
  cal_ctx r = {.o = o, .t0 = core_now(), .bufs = &cal_host_bufs};
  double start_rt = core_wall_now();
  cal_interf in;
  int rc;
  if ((rc = choose_backend(&r)) != 0 || (rc = take_place(&r)) != 0 || (rc = find_peers(&r)) != 0 ||
      (rc = cal_phase_startup(&r, start_rt)) != 0)
    goto out_release;
  /* The first window of memory rates and layer times, before the sweeps. */
  if ((rc = cal_windows_open(&r)) != 0 || (rc = rt_barrier(r.world)) != 0)
    goto out_release;
  if ((rc = cal_phase_collectives(&r)) != 0)
    goto out_release;
  /* Compute: rank 0 alone, the device's own rate; then the second window. */
  if (r.pg.rank == 0 && (rc = cal_phase_compute(&r)) != 0)
    goto out_release;
  if ((rc = rt_barrier(r.world)) != 0 || (rc = cal_window(&r)) != 0)
    goto out_release;
  if ((rc = cal_phase_jitter(&r)) != 0 || (rc = cal_phase_hooks(&r)) != 0)
    goto out_release;
  /* Interference, then the third window. */
  if ((rc = cal_phase_interference(&r, &in)) != 0 || (rc = cal_window(&r)) != 0)
    goto out_release;
  if (r.pg.rank == 0 && (rc = conclude(&r, &in)) != 0)
    goto out_release;
  rc = rt_barrier(r.world);
out_release:
  release(&r, rc);
  return rc;
}

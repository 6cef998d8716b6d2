/*
 * phase_storage — a calibration's checkpoint I/O: the write and read
 * bandwidth of a checkpoint the size of the first model's, through the
 * runtime's own checkpoint code (docs/calibration.md, "Checkpoint I/O").
 */
#include "calibrate/calibrate_int.h"

#include "runtime/ckpt.h"
#include "runtime/ddp.h"

#include "core/clock.h"
#include "core/err.h"
#include "core/model.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Checkpoint I/O measured through the runtime's own checkpoint code: the
 * write is rt_ckpt_write (CRC-32 over the payload, write, fsync, rename,
 * fsync of the directory), the read is rt_ckpt_read (read, verify, copy
 * out), so the profile's bandwidths are what a checkpoint and a restart
 * really cost, not the device's alone. The checkpoint is as large as the
 * calibrated model's (parameters and momentum) within bounds that keep the
 * test short. The read starts with the file dropped from the page cache: a
 * restarted job reads its checkpoint from storage, often on another node. */
static int storage(cal_ctx *r, double *write_GBps, double *read_GBps) {
  int64_t lo = 16 << 20, hi = r->o->quick ? (int64_t)64 << 20 : (int64_t)256 << 20, bytes = 64 << 20;
  if (r->o->n_models) {
    core_model *m;
    int rc = core_model_load(r->o->models[0], &m);
    if (rc)
      return rc;
    bytes = 2 * m->n_params * (int64_t)sizeof(float);
    core_model_free(m);
  }
  bytes = bytes < lo ? lo : bytes > hi ? hi : bytes;
  /* One tensor of the checkpoint's size: the file format needs a model only
   * for its shape, and any shape of this size costs the same to write. */
  int64_t elems = bytes / (2 * (int64_t)sizeof(float));
  core_model shape = {.name = "calibration", .n_tensors = 1, .tensor_elems = &elems, .n_params = elems};
  rt_ckpt c = {.n_params = elems, .has_momentum = 1};
  char dir[4200], path[4400];
  snprintf(dir, sizeof dir, "%s/ddpsim-calibrate-ckpt.%d", r->o->scratch_dir, (int)getpid());
  snprintf(path, sizeof path, "%s/ckpt-%08d.ddpc", dir, 0);
  int rc = 0;
  c.params = malloc(sizeof(float) * (size_t)elems);
  c.momentum = malloc(sizeof(float) * (size_t)elems);
  if (!c.params || !c.momentum) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for the checkpoint I/O test (%lld bytes)", (long long)bytes);
    goto out_free;
  }
  for (int64_t i = 0; i < elems; i++)
    c.params[i] = c.momentum[i] = (float)(i % 1000) * 1e-3f;
  double t0 = core_now();
  if ((rc = rt_ckpt_write(dir, &shape, &c, 1)) != 0)
    goto out_remove;
  *write_GBps = (double)bytes / (core_now() - t0) / 1e9;
  int fd = open(path, O_RDONLY);
  if (fd >= 0) {
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  t0 = core_now();
  if ((rc = rt_ckpt_read(path, &shape, &c)) != 0)
    goto out_remove;
  *read_GBps = (double)bytes / (core_now() - t0) / 1e9;
out_remove:
  unlink(path);
  rmdir(dir);
out_free:
  free(c.params);
  free(c.momentum);
  return rc;
}

/* Remove what calibrations killed during this test left in the scratch
 * directory: their directories (named for a process that is gone), with the
 * test checkpoint and its temp files. */
static void sweep_scratch(const char *scratch) {
  DIR *d = opendir(scratch);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    int pid;
    char extra, dir[4400], path[4600];
    if (sscanf(de->d_name, "ddpsim-calibrate-ckpt.%d%c", &pid, &extra) != 1 || pid <= 0 || kill((pid_t)pid, 0) == 0 ||
        errno != ESRCH)
      continue;
    snprintf(dir, sizeof dir, "%s/%s", scratch, de->d_name);
    rt_ckpt_sweep(dir);
    snprintf(path, sizeof path, "%s/ckpt-%08d.ddpc", dir, 0);
    unlink(path);
    if (rmdir(dir) == 0)
      fprintf(stderr, "ddpsim calibrate: removed '%s', left by a calibration that died\n", dir);
  }
  if (d)
    closedir(d);
}

int cal_phase_storage(cal_ctx *r) {
  sweep_scratch(r->o->scratch_dir);
  cal_say(r, "checkpoint I/O through the checkpoint writer and reader in %s", r->o->scratch_dir);
  int rc = storage(r, &r->prof->write_GBps, &r->prof->read_GBps);
  if (!rc)
    cal_say(r, "  checkpoint write (CRC, fsync, rename) %.3f GB/s, read and verify %.3f GB/s", r->prof->write_GBps,
        r->prof->read_GBps);
  return rc;
}

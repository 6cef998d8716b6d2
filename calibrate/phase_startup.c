/*
 * phase_startup — a calibration's start: the rendezvous of every rank, the
 * world communicator, what each cost (the profile's restart costs, the
 * slowest rank's), and on rank 0 the profile with what it describes: name,
 * provenance, host, date, versions, nodes and device (docs/calibration.md,
 * "Start-up").
 */
#include "calibrate/calibrate_int.h"

#include "runtime/blas.h"
#include "runtime/ddp.h"
#include "runtime/gloo.h"
#include "runtime/gpu.h"
#include "runtime/nccl.h"

#include "core/clock.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef DDPSIM_VERSION
#define DDPSIM_VERSION "0.0.0"
#endif

/* Start-up costs, each the slowest rank's: a job starts when its last rank
 * does. */
typedef struct startup {
  double process_s;    /* from the launcher's start (DDPSIM_LAUNCH_TIME) to this process's; 0 without it */
  double rendezvous_s; /* until every rank's key is in the store */
  double comm_init_s;  /* the world communicator's creation */
} startup;

_Static_assert(sizeof(startup) % sizeof(float) == 0, "allgathered as fp32 words");

/* Every rank's key in the world's store (r->store, kept to the end of the
 * run): *secs from setting this rank's key to seeing every rank's. */
static int rendezvous(cal_ctx *r, double *secs) {
  int rc;
  if ((rc = rt_pg_open_store(r->spec, "cal-world", &r->store)) != 0)
    return rc;
  double t = core_now();
  char key[64];
  snprintf(key, sizeof key, "arrived-%d", r->pg.rank);
  if ((rc = rt_store_set(r->store, key, "1", 1)) != 0)
    return rc;
  for (int k = 0; k < r->pg.world_size; k++) {
    const char *kk[1];
    char name[64];
    snprintf(name, sizeof name, "arrived-%d", k);
    kk[0] = name;
    if ((rc = rt_store_wait(r->store, kk, 1, (int)(r->o->timeout_s * 1000))) != 0)
      return rc;
  }
  *secs = core_now() - t;
  return 0;
}

static int slowest_rank(cal_ctx *r, startup *s) {
  startup *all;
  int rc = cal_gather_world(r, s, sizeof *s, (void **)&all);
  if (rc)
    return rc;
  for (int k = 0; k < r->world->size; k++) {
    s->process_s = cal_larger(s->process_s, all[k].process_s);
    s->rendezvous_s = cal_larger(s->rendezvous_s, all[k].rendezvous_s);
    s->comm_init_s = cal_larger(s->comm_init_s, all[k].comm_init_s);
  }
  free(all);
  return 0;
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

/* What measured the profile: the backend's libraries and, for NCCL, the device. */
static int describe_backend(cal_ctx *r, core_profile *p) {
  if (!r->nccl) {
    snprintf(p->versions, sizeof p->versions, "ddpsim %s; %s; OpenBLAS %.120s", DDPSIM_VERSION, rt_gloo_version(),
        rt_blas_config());
    snprintf(p->device_kind, sizeof p->device_kind, "cpu");
    cpu_name(p->device_name, sizeof p->device_name);
    return 0;
  }
  int v = 0, rc;
  char cuda[160] = "CUDA ?";
  rt_nccl_version(&v);
  rt_gpu_versions(cuda, sizeof cuda);
  snprintf(p->versions, sizeof p->versions, "ddpsim %s; NCCL %d.%d.%d; %s", DDPSIM_VERSION, v / 10000, v / 100 % 100,
      v % 100, cuda);
  rt_gpu_info info;
  snprintf(p->device_kind, sizeof p->device_kind, "gpu");
  if ((rc = rt_gpu_get_info(r->device, &info)) != 0)
    return rc;
  snprintf(p->device_name, sizeof p->device_name, "%.*s", (int)sizeof p->device_name - 1, info.name);
  p->memory_GB = (double)info.total_mem / 1e9; /* cudaDeviceProp.totalGlobalMem */
  return 0;
}

/* Rank 0: the profile, with where it came from and the start-up costs. */
static int new_profile(cal_ctx *r, const startup *s) {
  const cal_opts *o = r->o;
  if (!(r->prof = core_profile_new()))
    return core_err_set(CORE_ENOMEM, "out of memory");
  core_profile *p = r->prof;
  char host[128] = "?";
  gethostname(host, sizeof host - 1);
  time_t tt = time(NULL);
  struct tm tm;
  gmtime_r(&tt, &tm);
  snprintf(p->name, sizeof p->name, "%s", o->name ? o->name : host);
  snprintf(p->provenance, sizeof p->provenance, "measured by ddpsim calibrate%s%s", r->nccl ? " --backend nccl" : "",
      o->quick ? " --quick" : "");
  snprintf(p->source, sizeof p->source, "calibrated");
  snprintf(p->host, sizeof p->host, "%s", host);
  strftime(p->date, sizeof p->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  snprintf(p->backend, sizeof p->backend, "%s", r->nccl ? "nccl" : "gloo");
  p->nodes = r->nodes;
  p->ranks_per_node = r->pg.local_world_size;
  p->link_gbps = o->link_gbps;
  int rc = describe_backend(r, p);
  if (rc)
    return rc;
  p->process_start_s = s->process_s;
  p->rendezvous_s = s->rendezvous_s;
  p->comm_init_s = s->comm_init_s;
  return 0;
}

int cal_phase_startup(cal_ctx *r, double start_rt) {
  cal_say(r, "calibrate: %d rank(s) on %d node(s) of %d, backend %s%s", r->pg.world_size, r->nodes,
      r->pg.local_world_size, r->nccl ? "nccl" : "gloo", r->o->quick ? ", quick" : "");
  startup s = {0, 0, 0};
  const char *lt = getenv("DDPSIM_LAUNCH_TIME");
  if (lt)
    s.process_s = start_rt - atof(lt);
  int rc;
  if ((rc = rendezvous(r, &s.rendezvous_s)) != 0)
    return rc;
  double t = core_now();
  if ((rc = cal_connect(r, r->store, r->pg.rank, r->pg.world_size, RT_ALGO_DEFAULT, &r->world)) != 0)
    return rc;
  s.comm_init_s = core_now() - t;
  if ((rc = slowest_rank(r, &s)) != 0 || (r->pg.rank == 0 && (rc = new_profile(r, &s)) != 0))
    return rc;
  cal_say(r, "start-up: process %.3f s, rendezvous %.3f s, communicator %.3f s", s.process_s, s.rendezvous_s,
      s.comm_init_s);
  return 0;
}

/*
 * phase_interference — how much compute and communication slow each other
 * down: GEMMs beside allreduces and allreduces beside GEMMs (CPU GEMMs and
 * Gloo allreduces on the world communicator; cuBLAS GEMMs and NCCL
 * allreduces on a communicator of their own), on CPUs also GEMMs beside
 * GEMMs on a second thread, and on CPUs where the factors were measured:
 * the allreduce's rate alone, the CPUs it kept busy and the CPUs a rank may
 * use (docs/calibration.md, "Interference").
 */
/* sched_getaffinity and CPU_AND: which ranks share this one's CPUs. */
#define _GNU_SOURCE
#include "calibrate/calibrate_int.h"

#include "calibrate/compute.h"
#include "calibrate/compute_gpu.h"

#include "runtime/comm.h"

#include "core/err.h"

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(cal_interf) % sizeof(float) == 0, "allgathered as fp32 words");

/* The allreduces' size on CPUs. */
static int interf_bytes(const cal_opts *o) { return o->quick ? (4 << 20) : (16 << 20); }

/* The ranks of the job that share this rank's CPUs: those whose kernel has
 * this one's boot id and whose CPU mask meets this one's (without a boot id,
 * at least this node's). Hosts that are network namespaces or containers of
 * one machine share its CPUs, which neither a rank's CPU mask nor its cgroup
 * shows (docs/calibration.md). Ranks bound to CPUs of their own (ddpsim
 * launch --cpu-bind) do not share them. The ids and masks go through an
 * allgather of fp32 words, copied as bits. */
static int ranks_sharing_cpus(cal_ctx *r, int *out) {
  char id[64] = "";
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(id, sizeof id, f))
      id[0] = '\0';
    fclose(f);
  }
  struct {
    uint64_t boot; /* FNV-1a of the id; without one, a value no other rank has */
    cpu_set_t cpus;
  } me, *all;
  memset(&me, 0, sizeof me);
  me.boot = 1469598103934665603ULL;
  for (const char *c = id; *c && *c != '\n'; c++)
    me.boot = (me.boot ^ (unsigned char)*c) * 1099511628211ULL;
  if (!id[0])
    me.boot = ~(uint64_t)r->pg.rank;
  if (sched_getaffinity(0, sizeof me.cpus, &me.cpus) != 0)
    memset(&me.cpus, 0xff, sizeof me.cpus); /* unknown: may meet anyone's */
  _Static_assert(sizeof me % sizeof(float) == 0, "allgathered as fp32 words");
  size_t words = sizeof me / sizeof(float);
  int world = r->pg.world_size, n = 0, rc;
  if (!(all = malloc(sizeof *all * (size_t)world)))
    return core_err_set(CORE_ENOMEM, "out of memory");
  if ((rc = rt_allgather(r->world, &me, all, words, RT_FP32)) == 0)
    for (int k = 0; k < world; k++) {
      cpu_set_t both;
      CPU_AND(&both, &all[k].cpus, &me.cpus);
      n += all[k].boot == me.boot && CPU_COUNT(&both) > 0;
    }
  free(all);
  *out = (id[0] || n > r->pg.local_world_size) ? n : r->pg.local_world_size;
  return rc;
}

/* GEMMs against allreduces from a thread, each side alone and beside the
 * other: on CPUs over the world communicator (with the allreduce's time
 * alone and the CPUs it kept busy); on GPUs over a communicator of their
 * own ("cal-interf"). */
static int gemms_and_allreduces(cal_ctx *r, cal_interf *in) {
  const cal_opts *o = r->o;
  cal_say(r, "interference: GEMMs while allreduces run");
  if (!r->nccl)
    return cal_interference(r->world, interf_bytes(o), o->quick ? 3 : 8, &in->compute_slowdown, &in->comm_slowdown,
        &in->alone_s, &in->comm_cpus);
  rt_comm *ic = NULL;
  int rc = cal_sub_group(r, "cal-interf", r->pg.rank, r->pg.world_size, RT_ALGO_DEFAULT, &ic);
  if (rc)
    return rc;
  rc = cal_gpu_interference(ic, r->device, o->quick ? (16 << 20) : (64 << 20), o->quick ? 1.0 : 2.0,
      &in->compute_slowdown, &in->comm_slowdown);
  rt_comm_finish(ic, rc);
  return rc;
}

/* Every rank's measurements combined, as cal_interf says field by field. */
static int combine_ranks(cal_ctx *r, cal_interf *in) {
  cal_interf *all;
  int rc = cal_gather_world(r, in, sizeof *in, (void **)&all);
  if (rc)
    return rc;
  for (int k = 0; k < r->world->size; k++) {
    in->compute_slowdown = cal_larger(in->compute_slowdown, all[k].compute_slowdown);
    in->comm_slowdown = cal_larger(in->comm_slowdown, all[k].comm_slowdown);
    in->cpu_slowdown = cal_larger(in->cpu_slowdown, all[k].cpu_slowdown);
    in->alone_s = cal_larger(in->alone_s, all[k].alone_s);
    in->comm_cpus = cal_larger(in->comm_cpus, all[k].comm_cpus);
    in->rank_cpus = cal_smaller(in->rank_cpus, all[k].rank_cpus);
  }
  free(all);
  return 0;
}

int cal_phase_interference(cal_ctx *r, cal_interf *in) {
  *in = (cal_interf){.compute_slowdown = 1.0, .comm_slowdown = 1.0, .cpu_slowdown = 1.0};
  int rc = gemms_and_allreduces(r, in);
  if (rc)
    return rc;
  if (!r->nccl) { /* the runtime's hooks run on CPUs only */
    cal_say(r, "interference: GEMMs beside GEMMs on a second thread");
    if ((rc = rt_barrier(r->world)) != 0 ||
        (rc = cal_cpu_interference(r->o->quick ? 0.2 : 0.5, &in->cpu_slowdown)) != 0)
      return rc;
    int sharing = 1;
    if ((rc = ranks_sharing_cpus(r, &sharing)) != 0)
      return rc;
    in->rank_cpus = cal_rank_cpus(sharing);
  }
  return combine_ranks(r, in);
}

void cal_interference_record(cal_ctx *r, const cal_interf *in) {
  core_profile *p = r->prof;
  p->compute_slowdown = in->compute_slowdown;
  p->comm_slowdown = in->comm_slowdown;
  p->cpu_slowdown = in->cpu_slowdown;
  cal_say(r,
      "  compute slowdown under communication %.3f, communication slowdown under compute %.3f, "
      "CPU work beside CPU work %.3f",
      in->compute_slowdown, in->comm_slowdown, in->cpu_slowdown);
  int n = r->pg.world_size;
  if (in->alone_s > 0 && in->comm_cpus > 0 && in->rank_cpus > 0 && n > 1) {
    /* The slowest rank's allreduce as bus bandwidth (nccl-tests' factor
     * 2(n-1)/n): the rate at which the two factors hold (sim/step.h scales
     * them with the CPUs, out of those a rank may use). */
    p->interf_busbw_GBps = interf_bytes(r->o) * 2.0 * (n - 1) / n / in->alone_s / 1e9;
    p->interf_comm_cpus = in->comm_cpus;
    p->interf_rank_cpus = in->rank_cpus;
    cal_say(r,
        "  measured with allreduces at %.3f GB/s of bus bandwidth, which kept %.2f CPUs busy of the %.2f "
        "a rank may use",
        p->interf_busbw_GBps, in->comm_cpus, in->rank_cpus);
  }
}

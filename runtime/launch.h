/*
 * launch — start N ranks of a command, the way torchrun does: each child gets
 * RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
 * and a fresh rendezvous directory per attempt; with hosts given, ranks are
 * spread over them in contiguous blocks and each child enters its host's
 * network namespace (setns) and learns that host's address, so it binds
 * there. The launcher forwards SIGINT/SIGTERM, and when a rank dies it stops
 * the others (SIGTERM, then SIGKILL after a grace period) and reports which
 * rank died and how. With restarts left it starts the whole group again,
 * whose ranks resume from their last checkpoint (DDPSIM_RESTART_COUNT > 0).
 * Exit codes 2 and 3 (bad usage or input) are not retried: they would fail
 * again. DDPSIM_LAUNCH_TIME (wall-clock seconds when the attempt started)
 * lets a rank measure its own start-up. With a CPU quota, each rank runs in
 * its own cgroup with the cpu controller's quota (v1 cfs_quota_us or v2
 * cpu.max), so that runs with more ranks than cores, and calibration, see
 * the same per-rank compute rate. With CPU binding, the launcher's CPUs are
 * dealt out in contiguous blocks, one to each rank, so that ranks of
 * different testbed hosts do not share cores as processes of different
 * machines would not (Slurm's --cpu-bind, Open MPI's --bind-to). With a failure MTBF the launcher itself
 * kills a random rank after an exponentially distributed time (seeded),
 * which makes recovery under random failures measurable.
 */
#ifndef RUNTIME_LAUNCH_H
#define RUNTIME_LAUNCH_H

typedef struct rt_launch_opts {
  int nproc;
  const char **hosts; /* network namespace names, or NULL */
  int n_hosts;
  int max_restarts;
  double grace_s;       /* SIGTERM to SIGKILL */
  const char *rdzv_dir; /* parent of the per-attempt rendezvous directories */
  int master_port;
  char **argv; /* command to run, NULL-terminated */
  int quiet;
  double cpu_quota;   /* CPUs each rank may use (cgroup cpu quota); 0 = no limit */
  int cpu_bind;       /* 1: each rank bound to CPUs of its own (sched_setaffinity) */
  double fail_mtbf_s; /* > 0: SIGKILL a random rank after an exponential time of this
                         * mean, in every attempt but the last one --max-restarts allows */
  unsigned long fail_seed;
} rt_launch_opts;

typedef struct rt_launch_result {
  int attempts;    /* groups started */
  int failed_rank; /* last rank that failed, -1 if none */
  int exit_code;   /* what ddpsim launch should exit with */
  double stop_s;   /* time to stop the others after the last failure */
} rt_launch_result;

/* Run to completion. Returns 0 when the last attempt succeeded; otherwise a
 * negative code with a message naming the rank and how it ended. */
int rt_launch_run(const rt_launch_opts *o, rt_launch_result *r);

#endif

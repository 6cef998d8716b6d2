/*
 * bench_sim — the simulator's reference figures:
 *  1. wall time of the whole gigabit-vs-ib study (load + all points), with one
 *     worker and with one per CPU; goal < 1 s;
 *  2. one step of GPT-2 1.5B on 16,384 GPUs with every rank simulated: wall
 *     time, events and peak memory of a child process that does only that;
 *     goals < 1 s and < 1 GiB;
 *  3. the job level: events a second of the failure Monte Carlo,
 *     in the shipped node-failure study and in a study whose failures come
 *     faster than recovery (the regime simulation.max_events bounds, and
 *     the rate sim/sweep.c's messages assume), and how long the node-failure
 *     study at mtbf_h = 1 takes to be refused, with the message;
 *  4. one step of GPT-2 1.5B with every rank simulated on a three-tier fat
 *     tree of 128-port switches at 16,384, 65,536 and 131,072 GPUs: wall time
 *     (load, fabric, step) and peak memory of a child process each; goals
 *     < 1 s and < 1 GiB at 131,072. The DGX H100 profile has no
 *     interference, so ranks are computed without events (sim/step.h); the
 *     same with interference (1.05 both ways) runs event by event.
 * Usage: bench_sim [SOURCE_DIR]  (default: the source tree it was built from)
 */
#include "sim/scenario.h"
#include "sim/sweep.h"

#include "core/afile.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Load and run a scenario; returns wall seconds or -1. */
static double run_study(const char *path, int jobs, uint64_t *events, long *points) {
  double t0 = now_s();
  sim_scenario *s;
  if (sim_scenario_load(path, &s)) {
    fprintf(stderr, "bench_sim: %s\n", core_err_msg());
    return -1;
  }
  sim_sweep_opts o = {.jobs = jobs, .n_shards = 1, .trace_point = -1};
  sim_sweep w;
  if (sim_sweep_run(s, &o, &w)) {
    fprintf(stderr, "bench_sim: %s\n", core_err_msg());
    sim_scenario_free(s);
    return -1;
  }
  double dt = now_s() - t0;
  *events = 0;
  for (long i = 0; i < w.n; i++)
    *events += w.res[i].events;
  *points = w.n;
  sim_sweep_free(&w);
  sim_scenario_free(s);
  return dt;
}

/* Load (from text, as if it were `name`) and run a study with one worker;
 * returns wall seconds, or -1 with the error in msg. */
static double run_job_study(const char *text, const char *name, uint64_t *events, long *points, char *msg, size_t n) {
  double t0 = now_s();
  sim_scenario *s;
  sim_sweep w;
  *events = 0;
  int rc = text ? sim_scenario_load_string(text, name, &s) : sim_scenario_load(name, &s);
  if (rc) {
    snprintf(msg, n, "%s", core_err_msg());
    return -1;
  }
  sim_sweep_opts o = {.jobs = 1, .n_shards = 1, .trace_point = -1};
  rc = sim_sweep_run(s, &o, &w);
  double dt = now_s() - t0;
  sim_scenario_free(s);
  if (rc) {
    snprintf(msg, n, "%s (after %.3f s)", core_err_msg(), dt);
    return -1;
  }
  for (long i = 0; i < w.n; i++)
    *events += w.res[i].job.events;
  *points = w.n;
  sim_sweep_free(&w);
  return dt;
}

/* The node-failure study's file with one line changed, or NULL. */
static char *edited(const char *path, const char *from, const char *to) {
  FILE *f = fopen(path, "r");
  static char buf[1 << 16];
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  char *at = strstr(buf, from), *out = malloc(n + strlen(to) + 1);
  if (!at || !out) {
    free(out);
    return NULL;
  }
  sprintf(out, "%.*s%s%s", (int)(at - buf), buf, to, at + strlen(from));
  return out;
}

/* Failures faster than recovery: GPT-2 1.5B on 2,048 DGX H100 nodes, one
 * interruption every 1.8 s, a 4 h repair each (no spares); 10 h of
 * training, so every run goes on to the wall-time cap. */
static const char interrupted[] =
    "name = \"bench-interrupted\";\n"
    "profile = \"profiles/dgx-h100.cfg\";\n"
    "model = \"models/gpt2-xl.cfg\";\n"
    "training = { batch = 8; precision = \"amp_bf16\"; optimizer = \"adam\"; };\n"
    "cluster = { nodes = 2048; devices_per_node = 8; };\n"
    "networks = ( { name = \"IB-NDR\"; gbps = 400.0; latency_us = 14.0; nics_per_node = 8; efficiency = 0.96; } );\n"
    "ddp = { backend = \"nccl\"; };\n"
    "job = { hours = 10.0; };\n"
    "failures = { mtbf_h = 1.0; detect_s = 600.0; mttr_h = 4.0; restart_s = 30.0; };\n"
    "checkpoint = { every_s = 600.0; storage_GBps = 2000.0; };\n"
    "simulation = { steps = 5; replications = 5; max_events = 1e12; };\n";

static int bench_job(const char *src) {
  char path[4096], name[4096], msg[2048];
  uint64_t ev;
  long pts;
  snprintf(path, sizeof path, "%s/scenarios/node-failure.cfg", src);
  double dt = run_job_study(NULL, path, &ev, &pts, msg, sizeof msg);
  if (dt < 0) {
    fprintf(stderr, "bench_sim: %s\n", msg);
    return 1;
  }
  printf("node-failure: %ld points, %llu job-level events, 1 worker: %.3f s, %.3g events/s\n", pts,
      (unsigned long long)ev, dt, ev / dt);
  snprintf(name, sizeof name, "%s/scenarios/bench-interrupted.cfg", src);
  dt = run_job_study(interrupted, name, &ev, &pts, msg, sizeof msg);
  if (dt < 0) {
    fprintf(stderr, "bench_sim: %s\n", msg);
    return 1;
  }
  printf("failures faster than recovery: %llu events, 1 worker: %.3f s, %.3g events/s; a point at the "
         "default simulation.max_events (%.0e) would take about %.0f s\n",
      (unsigned long long)ev, dt, ev / dt, SIM_DEFAULT_MAX_EVENTS, SIM_DEFAULT_MAX_EVENTS / (ev / dt));
  char *text = edited(path, "mtbf_h = 6330.0;", "mtbf_h = 1.0;");
  if (!text) {
    fprintf(stderr, "bench_sim: node-failure.cfg has no 'mtbf_h = 6330.0;' to edit\n");
    return 1;
  }
  dt = run_job_study(text, path, &ev, &pts, msg, sizeof msg);
  free(text);
  if (dt >= 0) {
    fprintf(stderr, "bench_sim: node-failure at mtbf_h = 1 ran (%.1f s); it should be refused\n", dt);
    return 1;
  }
  printf("node-failure at mtbf_h = 1: refused: %s\n", msg);
  return 0;
}

/* One study in a child process, so its peak memory is its own: wall
 * seconds and events, or -1. */
static double child_study(const char *text, const char *name, unsigned long long *events, double *rss_mib) {
  int fd[2];
  if (pipe(fd))
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    uint64_t ev = 0;
    char msg[2048];
    double t0 = now_s();
    sim_scenario *sc;
    sim_sweep w;
    sim_sweep_opts o = {.jobs = 1, .n_shards = 1, .trace_point = -1};
    int rc = sim_scenario_load_string(text, name, &sc);
    if (!rc && (rc = sim_sweep_run(sc, &o, &w)) == 0) {
      for (long i = 0; i < w.n; i++)
        ev += w.res[i].events;
      sim_sweep_free(&w);
    }
    double dt = now_s() - t0;
    snprintf(msg, sizeof msg, "%s", rc ? core_err_msg() : "");
    if (!rc)
      sim_scenario_free(sc);
    dprintf(fd[1], "%.6f %llu %s\n", rc ? -1.0 : dt, (unsigned long long)ev, msg);
    _exit(rc != 0);
  }
  close(fd[1]);
  char buf[4096] = {0};
  ssize_t got = read(fd[0], buf, sizeof buf - 1);
  close(fd[0]);
  int st;
  struct rusage ru;
  double dt = -1;
  if (wait4(pid, &st, 0, &ru) < 0 || got <= 0 || sscanf(buf, "%lf %llu", &dt, events) != 2 || dt < 0) {
    fprintf(stderr, "bench_sim: %s failed: %s", name, got > 0 ? buf : "no answer\n");
    return -1;
  }
  *rss_mib = ru.ru_maxrss / 1024.0;
  return dt;
}

/* The DGX H100 profile with interference, written next to it for a run. */
static int coupled_profile(const char *src, char *path, size_t n) {
  char from[4096];
  snprintf(from, sizeof from, "%s/scenarios/profiles/dgx-h100.cfg", src);
  snprintf(path, n, "%s/bench-coupled-%d.cfg", P_tmpdir, (int)getpid());
  char *text = edited(from, "interference = { compute_slowdown = 1.0; };",
      "interference = { compute_slowdown = 1.05; comm_slowdown = 1.05; };");
  core_afile a;
  int rc = text ? core_afile_open(&a, path) : -1;
  if (!rc) {
    fputs(text, a.f);
    rc = core_afile_commit(&a);
  }
  free(text);
  return rc;
}

static int bench_fabric_steps(const char *src) {
  static const int nodes[] = {2048, 8192, 16384};
  char coupled[4096];
  if (coupled_profile(src, coupled, sizeof coupled)) {
    fprintf(stderr, "bench_sim: cannot write the coupled profile: %s\n", core_err_msg());
    return 1;
  }
  int rc = 0;
  for (int k = 0; k < 3 && !rc; k++)
    for (int ev_path = 0; ev_path < 2 && !rc; ev_path++) {
      char text[9000], prof[4200], name[4200];
      snprintf(prof, sizeof prof, ev_path ? "%s" : "%s/scenarios/profiles/dgx-h100.cfg", ev_path ? coupled : src);
      snprintf(name, sizeof name, "%s/scenarios/bench-fabric-%d.cfg", src, nodes[k]);
      snprintf(text, sizeof text,
          "profile = \"%s\";\nmodel = \"models/gpt2-xl.cfg\";\n"
          "training = { batch = 8; precision = \"amp_bf16\"; optimizer = \"adam\"; };\n"
          "cluster = { nodes = %d; devices_per_node = 8; };\n"
          "networks = ( { name = \"IB-NDR\"; gbps = 400.0; latency_us = 14.0; nics_per_node = 8; efficiency = 0.96; } "
          ");\n"
          "fabric = { leaf = { ports = 128; }; spine = { ports = 128; }; core = { ports = 128; }; rail_optimized = "
          "true; };\n"
          "simulation = { steps = 1; ranks = \"every\"; };\n",
          prof, nodes[k]);
      unsigned long long ev = 0;
      double rss = 0, dt = child_study(text, name, &ev, &rss);
      if (dt < 0) {
        rc = 1;
        break;
      }
      printf("gpt2-xl %6d GPUs, 3-tier fat tree, every rank%s: %.3f s wall (load + fabric + 1 step), %llu events, peak "
             "RSS %.1f MiB\n",
          nodes[k] * 8, ev_path ? ", interference 1.05 (event by event)" : "", dt, ev, rss);
    }
  unlink(coupled);
  return rc;
}

int main(int argc, char **argv) {
  const char *src = argc > 1 ? argv[1] : DDPSIM_SOURCE_DIR;
  char path[4096];
  uint64_t ev;
  long pts;

  snprintf(path, sizeof path, "%s/scenarios/gigabit-vs-ib.cfg", src);
  for (int jobs = 1; jobs <= 2; jobs++) {
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
      double dt = run_study(path, jobs == 1 ? 1 : 0, &ev, &pts);
      if (dt < 0)
        return 1;
      if (dt < best)
        best = dt;
    }
    printf("gigabit-vs-ib: %ld points, %llu events, %s: best of 5 = %.3f s\n", pts, (unsigned long long)ev,
        jobs == 1 ? "1 worker" : "1 worker per CPU", best);
  }

  /* The 16k-rank step in a child, so its peak RSS is its own. */
  snprintf(path, sizeof path, "%s/scenarios/gpt2-16k.cfg", src);
  int fd[2];
  if (pipe(fd))
    return 1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    double dt = run_study(path, 1, &ev, &pts);
    dprintf(fd[1], "%.6f %llu\n", dt, (unsigned long long)ev);
    _exit(dt < 0);
  }
  close(fd[1]);
  char buf[128] = {0};
  ssize_t got = read(fd[0], buf, sizeof buf - 1);
  close(fd[0]);
  int st;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || got <= 0) {
    fprintf(stderr, "bench_sim: the GPT-2 16k run failed\n");
    return 1;
  }
  double dt;
  unsigned long long events;
  sscanf(buf, "%lf %llu", &dt, &events);
  printf("gpt2-xl 16384 GPUs, every rank: %.3f s wall (load + 1 step), %llu events, peak RSS %.1f MiB\n", dt, events,
      ru.ru_maxrss / 1024.0);
  return bench_job(src) || bench_fabric_steps(src);
}

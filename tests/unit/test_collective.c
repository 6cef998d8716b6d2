/* `ddpsim collective` (sim/colltime.h, cli/cmd_collective.c): the profile's
 * own fit where it measured the shape, the cost models elsewhere; the
 * table nccl-tests prints, which the nccl-tests importer reads back with
 * the same ranks, nodes, collective and times; nccl-tests' options (sizes
 * rounded to whole elements print once; at most 100000 rows) and the
 * warning of a bucket allreduce past the timeout; usage errors. */
#include "sim/colltime.h"

#include "calibrate/import_nccl.h"
#include "core/err.h"

#include "testutil.h"

#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

#define DDPSIM_BIN DDPSIM_BINARY_DIR "/ddpsim"
#define H100 TU_SRC("scenarios/profiles/dgx-h100.cfg")
#define GPU_FIXTURE TU_SRC("tests/data/gpu-test.cfg")
#define IB "gbps = 400.0; latency_us = 14.0; nics_per_node = 8; efficiency = 0.96;"

static char scratch[4096], out_path[4200], err_path[4200];

static int suite_init(void) {
  if (tu_mkdtemp(scratch, sizeof scratch, "collective"))
    return 1;
  snprintf(out_path, sizeof out_path, "%s/out.txt", scratch);
  snprintf(err_path, sizeof err_path, "%s/err.txt", scratch);
  return 0;
}

static int suite_clean(void) {
  tu_rmdir(scratch);
  return 0;
}

/* ddpsim collective ARGS... with stdout and stderr into files; the exit
 * status, or -1. */
static int run(char *const args[]) {
  char *argv[32] = {"ddpsim", "collective"};
  int n = 2;
  for (int i = 0; args[i] && n < 31; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  int rc = posix_spawn(&pid, DDPSIM_BIN, &fa, NULL, argv, environ), st;
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
    return -1;
  return WEXITSTATUS(st);
}

static int err_has(const char *text) {
  char *e = tu_read_file(err_path, NULL);
  int has = e && strstr(e, text) != NULL;
  if (!has)
    fprintf(stderr, "\n    stderr lacks '%s': %s", text, e ? e : "(none)");
  free(e);
  return has;
}

/* Where the profile measured the collective on this many ranks and nodes,
 * its fit is the prediction; elsewhere the models run, and a named
 * network replaces the measured link. */
static void test_measured_or_modelled(void) {
  core_profile *pr, *fixture;
  CU_ASSERT_FATAL(core_profile_load(H100, &pr) == 0);
  CU_ASSERT_FATAL(core_profile_load(GPU_FIXTURE, &fixture) == 0);
  sim_network measured = {.from_profile = 1, .nics_per_node = 1, .efficiency = 1, .oversubscription = 1};
  sim_network ib = {.gbps = 400, .latency_us = 14, .nics_per_node = 8, .efficiency = 0.96, .oversubscription = 1};
  sim_colltime c;
  CU_ASSERT_FATAL(
      sim_colltime_setup(fixture, GPU_FIXTURE, &measured, SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, -1, 2, 4, &c) == 0);
  CU_ASSERT_FATAL(c.measured != NULL);
  const core_prof_fit *f = core_prof_coll_fit(c.measured, 1e8);
  CU_ASSERT_DOUBLE_EQUAL(sim_colltime_at(&c, 1e8), f->alpha_us * 1e-6 + 1e8 / (f->algbw_GBps * 1e9), 1e-15);
  /* A datasheet profile's fit is Simple's model alone: its shape too goes
   * to the models, which choose among NCCL's protocols. */
  CU_ASSERT_FATAL(sim_colltime_setup(pr, H100, &measured, SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, -1, 2, 8, &c) == 0);
  CU_ASSERT(c.measured == NULL);
  CU_ASSERT_EQUAL(c.topo.nccl_hw, SIM_NCCL_HW_NVLINK);
  CU_ASSERT_FATAL(sim_colltime_setup(pr, H100, &ib, SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, -1, 2, 8, &c) == 0);
  CU_ASSERT(c.measured == NULL);
  CU_ASSERT_FATAL(
      sim_colltime_setup(pr, H100, &ib, SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, SIM_ALGO_RING, 4, 8, &c) == 0);
  CU_ASSERT_DOUBLE_EQUAL(sim_colltime_at(&c, 1e8),
      sim_coll_time(SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, SIM_ALGO_RING, &c.topo, 1e8), 1e-15);
  /* busbw factors of nccl-tests' doc/PERFORMANCE.md. */
  CU_ASSERT_DOUBLE_EQUAL(core_coll_busbw_factor(CORE_COLL_ALLREDUCE, 16), 2.0 * 15 / 16, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(core_coll_busbw_factor(CORE_COLL_ALLGATHER, 16), 15.0 / 16, 1e-15);
  CU_ASSERT_DOUBLE_EQUAL(core_coll_busbw_factor(CORE_COLL_BROADCAST, 16), 1.0, 1e-15);
  /* An algorithm the collective has not. */
  CU_ASSERT_EQUAL(
      sim_colltime_setup(pr, H100, &ib, SIM_BACKEND_NCCL, CORE_COLL_ALLGATHER, SIM_ALGO_TREE, 4, 8, &c), CORE_EINVAL);
  core_profile_free(fixture);
  core_profile_free(pr);
}

static const sim_network IB_NET = {
    .gbps = 400, .latency_us = 14, .nics_per_node = 8, .efficiency = 0.96, .oversubscription = 1};

/* NCCL's auto allreduce on the links alone, Simple protocol only. */
static double simple_only(const sim_topo *t, double S) {
  sim_topo s = *t;
  s.nccl_hw = SIM_NCCL_HW_NONE;
  double ring = sim_coll_time(SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, SIM_ALGO_RING, &s, S);
  double tree = sim_coll_time(SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, SIM_ALGO_TREE, &s, S);
  return ring < tree ? ring : tree;
}

/* A tiny allreduce on a datasheet profile costs LL's latency in NCCL's
 * tuning table (src/graph/tuning.cc at b6475625fbca), by hand: one node of
 * 8, ring LL, base 6.6 us + 14 NVLink hops x 0.6 us = 15.0 us; 16 nodes,
 * tree LL, base 6.8 us + 2 x (7 NVLink hops x 0.6 us + 4 network hops x
 * 5.0 us, NCCL's LL tree figure where its Simple ring one is the network's
 * 14 us) = 55.2 us. Simple alone took 56 and 168 us. */
static void test_protocol_small(void) {
  core_profile *pr;
  CU_ASSERT_FATAL(core_profile_load(H100, &pr) == 0);
  sim_colltime c;
  CU_ASSERT_FATAL(sim_colltime_setup(pr, H100, &IB_NET, SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, -1, 1, 8, &c) == 0);
  CU_ASSERT_DOUBLE_EQUAL(sim_colltime_at(&c, 8) * 1e6, 15.0, 0.01);
  CU_ASSERT_DOUBLE_EQUAL(simple_only(&c.topo, 8) * 1e6, 56.0, 0.01);
  CU_ASSERT_FATAL(sim_colltime_setup(pr, H100, &IB_NET, SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, -1, 16, 8, &c) == 0);
  CU_ASSERT_DOUBLE_EQUAL(sim_colltime_at(&c, 8) * 1e6, 55.2, 0.01);
  CU_ASSERT_DOUBLE_EQUAL(simple_only(&c.topo, 8) * 1e6, 168.0, 0.01);
  core_profile_free(pr);
}

/* NCCL picks, per size, the protocol it predicts fastest: LL for small
 * buffers, LL128 for medium ones, Simple for large; LL128 only over
 * NVLink. So the time rises with the size, with no jump where the protocol
 * changes (t(1.001 S) <= 1.001 t(S) holds for every latency-plus-bandwidth
 * line and so for their least), and large buffers cost Simple's time. */
static void test_protocol_switch(void) {
  sim_proto_case pc = {.op = CORE_COLL_ALLREDUCE,
      .hw = SIM_NCCL_HW_NVLINK,
      .nodes = 1,
      .intra_hops = 14,
      .net_alpha_s = 14e-6,
      .bus_Bps = 370.8e9};
  const double sizes[3] = {8, 4 << 20, 1 << 30};
  const enum sim_nccl_proto want[3] = {SIM_PROTO_LL, SIM_PROTO_LL128, SIM_PROTO_SIMPLE};
  for (int i = 0; i < 3; i++) {
    pc.bus_bytes = sizes[i] * 14 / 8;
    pc.simple_s = 56e-6 + pc.bus_bytes / pc.bus_Bps;
    enum sim_nccl_proto got;
    sim_proto_best(&pc, &got);
    CU_ASSERT_EQUAL(got, want[i]);
  }
  pc.hw = SIM_NCCL_HW_PCI;
  CU_ASSERT(isinf(sim_proto_time(&pc, SIM_PROTO_LL128)));
  core_profile *pr;
  CU_ASSERT_FATAL(core_profile_load(H100, &pr) == 0);
  const int nodes[3] = {1, 2, 16};
  for (int k = 0; k < 3; k++) {
    sim_colltime c;
    CU_ASSERT_FATAL(
        sim_colltime_setup(pr, H100, &IB_NET, SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, -1, nodes[k], 8, &c) == 0);
    double prev = 0;
    int ok = 1;
    for (double S = 8; S <= 8.6e9 && ok; S *= 1.05) {
      double t = sim_colltime_at(&c, S), t2 = sim_colltime_at(&c, S * 1.001);
      ok = t >= prev && t2 >= t && t2 <= t * 1.001 * (1 + 1e-12);
      prev = t;
    }
    CU_ASSERT(ok);
    CU_ASSERT_DOUBLE_EQUAL(sim_colltime_at(&c, 8589934592.0), simple_only(&c.topo, 8589934592.0), 1e-12);
    CU_ASSERT(sim_colltime_at(&c, 8) < 0.5 * simple_only(&c.topo, 8));
  }
  core_profile_free(pr);
}

/* A profile that is not a datasheet one keeps Simple's α and β, whose
 * measured fits already hold NCCL's switch; a datasheet one without NVLink
 * gets LL and Simple only. */
static void test_protocol_calibrated(void) {
  core_profile *pr;
  CU_ASSERT_FATAL(core_profile_load(GPU_FIXTURE, &pr) == 0);
  sim_colltime c;
  CU_ASSERT_FATAL(
      sim_colltime_setup(pr, GPU_FIXTURE, &IB_NET, SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, -1, 4, 4, &c) == 0);
  CU_ASSERT_EQUAL(c.topo.nccl_hw, SIM_NCCL_HW_NONE);
  for (double S = 8; S <= 8.6e9; S *= 8)
    CU_ASSERT_DOUBLE_EQUAL(sim_colltime_at(&c, S), simple_only(&c.topo, S), 0);
  core_profile_free(pr);
  CU_ASSERT_FATAL(core_profile_load(TU_SRC("scenarios/profiles/l40s-8gpu.cfg"), &pr) == 0);
  CU_ASSERT_FATAL(sim_colltime_setup(pr, TU_SRC("scenarios/profiles/l40s-8gpu.cfg"), &IB_NET, SIM_BACKEND_NCCL,
                      CORE_COLL_ALLREDUCE, -1, 2, 8, &c) == 0);
  CU_ASSERT_EQUAL(c.topo.nccl_hw, SIM_NCCL_HW_PCI);
  core_profile_free(pr);
}

/* The table reads back through the nccl-tests importer: the collective,
 * ranks, nodes and sizes of the command, and the times the model gives. */
static void test_table_imports(void) {
  static const char *const ops[] = {"allreduce", "allgather", "reducescatter", "broadcast"};
  core_profile *pr;
  CU_ASSERT_FATAL(core_profile_load(H100, &pr) == 0);
  sim_network ib = {.gbps = 400, .latency_us = 14, .nics_per_node = 8, .efficiency = 0.96, .oversubscription = 1};
  for (int k = 0; k < 4; k++) {
    char *args[] = {"--profile", H100, "--op", (char *)ops[k], "-g", "8", "--nodes", "4", "--network", IB, "-b", "1K",
        "-e", "64M", "-f", "4", NULL};
    CU_ASSERT_FATAL(run(args) == 0);
    cal_nccl_run r;
    int rc = cal_nccl_parse(out_path, &r);
    if (rc)
      fprintf(stderr, "\n    %s", core_err_msg());
    CU_ASSERT_FATAL(rc == 0);
    CU_ASSERT_STRING_EQUAL(r.op, ops[k]);
    CU_ASSERT_EQUAL(r.ranks, 32);
    CU_ASSERT_EQUAL(r.nodes, 4);
    CU_ASSERT_EQUAL(r.n, 9);
    /* As `mpirun -np 4 all_reduce_perf -g 8` prints it: one process of 8
     * GPUs per node (nccl-tests' nGpus is GPUs per thread). */
    char *out = tu_read_file(out_path, NULL);
    CU_ASSERT(out && strstr(out, "# nThread 1 nGpus 8 minBytes 1024 ") != NULL);
    CU_ASSERT(out && strstr(out, "#  Rank  7 Group  0 Pid      0 on       node0 device  7") != NULL);
    CU_ASSERT(out && strstr(out, "#  Rank  8 Group  0 Pid      1 on       node1 device  0") != NULL);
    free(out);
    sim_colltime c;
    CU_ASSERT_FATAL(sim_colltime_setup(pr, H100, &ib, SIM_BACKEND_NCCL, (enum core_coll)k, -1, 4, 8, &c) == 0);
    for (int i = 0; i < r.n; i++) {
      double t = sim_colltime_at(&c, r.bytes[i]) * 1e6;
      CU_ASSERT(fabs(r.time_us[i] - t) <= 0.005 + 1e-3 * t);
    }
    /* The gathering collectives print the total; each row moves count x 4 x
     * ranks bytes, so the first is 1 KiB rounded down to 32 floats. */
    CU_ASSERT_EQUAL(r.bytes[0], k == 1 || k == 2 ? 1024 / 128 * 128 : 1024);
    cal_nccl_run_free(&r);
  }
  core_profile_free(pr);
}

/* Times past 7 digits of microseconds (10 s and more) print as nccl-tests'
 * getFloatStr prints them, "%7.1e" (src/util.cu), the columns staying
 * aligned; the importer reads them back to the two digits printed. */
static void test_long_times(void) {
  char *args[] = {"--profile", H100, "-g", "8", "--nodes", "2", "--network",
      "gbps = 1.0; latency_us = 14.0; nics_per_node = 1; efficiency = 1.0;", "-b", "1G", "-e", "8G", "-f", "2",
      "--timeout", "1e6", NULL};
  CU_ASSERT_FATAL(run(args) == 0);
  char *out = tu_read_file(out_path, NULL);
  CU_ASSERT_FATAL(out != NULL);
  long rows = 0;
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
    if (line[0] != '#') {
      rows++;
      CU_ASSERT(strlen(line) == 118); /* every row's width, short times' too: 12, 12, 8, 6, 6, 2 x (7, 6, 6, 6) */
      CU_ASSERT(strstr(line, "e+07  ") != NULL || strstr(line, "e+08  ") != NULL);
    }
  CU_ASSERT_EQUAL(rows, 4);
  free(out);
  core_profile *pr;
  CU_ASSERT_FATAL(core_profile_load(H100, &pr) == 0);
  sim_network slow = {.gbps = 1, .latency_us = 14, .nics_per_node = 1, .efficiency = 1, .oversubscription = 1};
  sim_colltime c;
  CU_ASSERT_FATAL(sim_colltime_setup(pr, H100, &slow, SIM_BACKEND_NCCL, CORE_COLL_ALLREDUCE, -1, 2, 8, &c) == 0);
  cal_nccl_run r;
  CU_ASSERT_FATAL(cal_nccl_parse(out_path, &r) == 0);
  CU_ASSERT_EQUAL(r.n, 4);
  for (int i = 0; i < r.n; i++) {
    double t = sim_colltime_at(&c, r.bytes[i]) * 1e6;
    CU_ASSERT(t >= 1e7 && fabs(r.time_us[i] - t) <= 0.05 * t);
  }
  cal_nccl_run_free(&r);
  core_profile_free(pr);
}

/* A bucket's allreduce past the timeout is a warning that says what to do;
 * so is a size of the table past it. */
static void test_timeout_warning(void) {
  char *slow[] = {"--profile", H100, "-g", "8", "--nodes", "512", "--network",
      "gbps = 1.0; latency_us = 14.0; nics_per_node = 1;", "-b", "1M", "-e", "1G", "-f", "32", "--timeout", "0.3",
      NULL};
  CU_ASSERT_EQUAL(run(slow), 0);
  CU_ASSERT(err_has("warning: an allreduce of one 25 MiB bucket (bucket_cap_mb) takes"));
  CU_ASSERT(err_has("past nccl's 0.3 s timeout"));
  CU_ASSERT(err_has("the table's sizes take longer than the 0.3 s timeout"));
  char *fast[] = {"--profile", H100, "-g", "8", "--nodes", "2", NULL};
  CU_ASSERT_EQUAL(run(fast), 0);
  char *e = tu_read_file(err_path, NULL);
  CU_ASSERT(e && e[0] == '\0');
  free(e);
}

/* The rows of the last table printed, or -1 if their sizes do not grow
 * strictly (a size printed twice). */
static long table_rows(void) {
  char *out = tu_read_file(out_path, NULL);
  long n = 0;
  double last = -1;
  for (char *line = out ? strtok(out, "\n") : NULL; line && n >= 0; line = strtok(NULL, "\n")) {
    if (line[0] == '#')
      continue;
    double size = strtod(line, NULL);
    n = size > last ? n + 1 : -1;
    last = size;
  }
  free(out);
  return out ? n : -1;
}

/* nccl-tests' -b, -e, -f and -i: a step that would do nothing or be
 * ignored is refused, sizes that round to one row of whole elements print
 * it once, and a table past its documented most rows is refused before any
 * row. */
static void test_steps(void) {
  char *factor_one[] = {"--profile", H100, "-b", "8", "-e", "64", "-f", "1", NULL};
  CU_ASSERT_EQUAL(run(factor_one), 2);
  CU_ASSERT(err_has("-f 1 would not grow the size"));
  char *both[] = {"--profile", H100, "-b", "8", "-e", "64", "-f", "2", "-i", "8", NULL};
  CU_ASSERT_EQUAL(run(both), 2);
  CU_ASSERT(err_has("-f and -i both set the step"));
  char *from_zero[] = {"--profile", H100, "-b", "0", "-e", "64", "-f", "2", NULL};
  CU_ASSERT_EQUAL(run(from_zero), 2);
  CU_ASSERT(err_has("from -b 0 stays 0"));
  char *bytes[] = {"--profile", H100, "-b", "1", "-e", "64", "-i", "1", NULL}; /* floats: 0, 4, ..., 64 */
  CU_ASSERT_EQUAL(run(bytes), 0);
  CU_ASSERT_EQUAL(table_rows(), 17);
  char *gathered[] = {"--profile", H100, "-g", "8", "--op", "allgather", "-b", "1", "-e", "1K", "-i", "1", NULL};
  CU_ASSERT_EQUAL(run(gathered), 0);
  CU_ASSERT_EQUAL(table_rows(), 33); /* a float on each of 8 ranks: 0, 32, ..., 1024 */
  char *slow_factor[] = {"--profile", H100, "-b", "8", "-e", "64", "-f", "1.01", NULL};
  CU_ASSERT_EQUAL(run(slow_factor), 0);
  CU_ASSERT_EQUAL(table_rows(), 14); /* 8, 12, ..., 60 (8 x 1.01^208 is just under 64) */
  char *most[] = {"--profile", H100, "-d", "int8", "-b", "0", "-e", "99999", "-i", "1", NULL};
  CU_ASSERT_EQUAL(run(most), 0);
  CU_ASSERT_EQUAL(table_rows(), 100000);
  char *one_more[] = {"--profile", H100, "-d", "int8", "-b", "0", "-e", "100000", "-i", "1", NULL};
  CU_ASSERT_EQUAL(run(one_more), 2);
  CU_ASSERT(err_has("makes more than 100000 rows; narrow the range"));
  char *unbounded[] = {"--profile", H100, "-e", "99999999G", NULL};
  CU_ASSERT_EQUAL(run(unbounded), 2);
  CU_ASSERT(err_has("more than 100000 rows"));
  char *tiny_steps[] = {"--profile", H100, "-b", "1", "-e", "1G", "-i", "1", NULL};
  CU_ASSERT_EQUAL(run(tiny_steps), 2);
  /* "-0" is the size 0, printed as nccl-tests prints it, without a sign. */
  char *minus_zero[] = {"--profile", H100, "-b", "-0", "-e", "-0", NULL};
  CU_ASSERT_EQUAL(run(minus_zero), 0);
  CU_ASSERT_EQUAL(table_rows(), 1);
  char *out = tu_read_file(out_path, NULL);
  CU_ASSERT(out && strstr(out, "minBytes 0 maxBytes 0 ") && !strstr(out, "-0"));
  free(out);
}

/* Usage errors exit 2, input errors 3, with what to do. */
static void test_errors(void) {
  char *no_profile[] = {"-g", "8", NULL};
  CU_ASSERT_EQUAL(run(no_profile), 2);
  CU_ASSERT(err_has("give --profile FILE"));
  char *bad_op[] = {"--profile", H100, "--op", "alltoall", NULL};
  CU_ASSERT_EQUAL(run(bad_op), 2);
  CU_ASSERT(err_has("--op expects allreduce, allgather, reducescatter or broadcast"));
  char *down[] = {"--profile", H100, "-b", "1G", "-e", "1M", NULL};
  CU_ASSERT_EQUAL(run(down), 2);
  char *size[] = {"--profile", H100, "-b", "12Q", NULL};
  CU_ASSERT_EQUAL(run(size), 2);
  CU_ASSERT(err_has("-b expects a size in bytes (K, M, G suffixes), got '12Q'"));
  char *point[] = {"--profile", H100, "--point", "3", NULL};
  CU_ASSERT_EQUAL(run(point), 2);
  char *net[] = {"--profile", H100, "--nodes", "2", "--network", "gbps = -1.0; latency_us = 1.0;", NULL};
  CU_ASSERT_EQUAL(run(net), 3);
  CU_ASSERT(err_has("--network:1: 'gbps' = -1 is out of range"));
  char *cpu[] = {"--profile", TU_DATA("cpu-test.cfg"), "--nodes", "4", NULL};
  CU_ASSERT_EQUAL(run(cpu), 0); /* the measured inter-node link */
  char *nccl_cpu[] = {"--profile", TU_DATA("cpu-test.cfg"), "--backend", "nccl", NULL};
  CU_ASSERT_EQUAL(run(nccl_cpu), 2);
  CU_ASSERT(err_has("backend nccl needs GPUs"));
  char *one_rank[] = {"--profile", TU_SRC("scenarios/profiles/h200-1gpu.cfg"), "-g", "8", NULL};
  CU_ASSERT_EQUAL(run(one_rank), 3);
  CU_ASSERT(err_has("no intra-node allreduce"));
  /* More GPUs a node than the profile's node has is a usage error naming
   * the most it has; as many is fine. */
  char *wide[] = {"--profile", H100, "-g", "16", "--nodes", "2", NULL};
  CU_ASSERT_EQUAL(run(wide), 2);
  CU_ASSERT(err_has("-g 16: profile '" H100 "' describes nodes of 8 GPUs"));
  char *cpu_wide[] = {"--profile", TU_DATA("cpu-test.cfg"), "-g", "4", NULL};
  CU_ASSERT_EQUAL(run(cpu_wide), 2);
  CU_ASSERT(err_has("describes nodes of 2 CPU ranks"));
  /* An algorithm of the other backend is a usage error that says so, not a
   * hint about the network. */
  char *gloo_tree[] = {"--profile", H100, "--nodes", "2", "--backend", "gloo", "--algo", "tree", NULL};
  CU_ASSERT_EQUAL(run(gloo_tree), 2);
  CU_ASSERT(err_has("--algo tree is not one of gloo's allreduce algorithms"));
  /* The table has no fabric: an in-network reduction would be priced on
   * the links alone, so it is refused, on any GPU. */
  char *nvls[] = {"--profile", TU_SRC("scenarios/profiles/dgx-a100.cfg"), "--nodes", "2", "--algo", "nvls", NULL};
  CU_ASSERT_EQUAL(run(nvls), 2);
  CU_ASSERT(err_has("algorithm nvls reduces in the network"));
  char *collnet[] = {"--profile", H100, "--nodes", "2", "--algo", "collnet", NULL};
  CU_ASSERT_EQUAL(run(collnet), 2);
  /* A --network given by its keys is named in the header by what it is. */
  char *inline_net[] = {"--profile", H100, "-g", "8", "--nodes", "2", "--network",
      "gbps = 400.0; latency_us = 14.0; nics_per_node = 8;", NULL};
  CU_ASSERT_EQUAL(run(inline_net), 0);
  char *out = tu_read_file(out_path, NULL);
  CU_ASSERT(out && strstr(out, "; network 8x400 Gb/s; nccl)\n") != NULL);
  free(out);
  /* A broadcast's root must be one of the ranks, as NCCL requires. */
  char *root[] = {"--profile", H100, "-g", "8", "--op", "broadcast", "-r", "8", NULL};
  CU_ASSERT_EQUAL(run(root), 2);
  CU_ASSERT(err_has("-r 8 is not one of the 8 ranks (0 to 7)"));
  char *root_ok[] = {"--profile", H100, "-g", "8", "--op", "broadcast", "-r", "7", NULL};
  CU_ASSERT_EQUAL(run(root_ok), 0);
  /* A scenario's point on a fabric: the table says the fabric is not in it. */
  char *fabric[] = {"--scenario", TU_SRC("scenarios/fabric.cfg"), NULL};
  CU_ASSERT_EQUAL(run(fabric), 0);
  CU_ASSERT(err_has("fabric (its tiers, oversubscription, neighbours and in-network reduction) is not in this table"));
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("collective", suite_init, suite_clean);
  CU_add_test(s, "the profile's fit at its shape, the models elsewhere", test_measured_or_modelled);
  CU_add_test(s, "a tiny allreduce on a datasheet profile costs NCCL's LL latency", test_protocol_small);
  CU_add_test(s, "LL, LL128, Simple by size, with no jump between them", test_protocol_switch);
  CU_add_test(s, "profiles not from datasheets keep Simple's fit; no LL128 without NVLink", test_protocol_calibrated);
  CU_add_test(s, "the table imports back with the same shape and times", test_table_imports);
  CU_add_test(s, "times of 10 s and more print as nccl-tests prints them, and import back", test_long_times);
  CU_add_test(s, "a bucket allreduce past the timeout is a warning", test_timeout_warning);
  CU_add_test(s, "the sizes of -b, -e, -f and -i", test_steps);
  CU_add_test(s, "usage and input errors", test_errors);
}

/* The importers (calibrate/import_nccl.h, calibrate/import_trace.h) and
 * `ddpsim plot fit`.
 *
 * nccl-tests: the samples of tests/data/nccl-tests are synthetic outputs in
 * nccl-tests 2.17's layout whose times follow, per size, the fastest of three
 * protocols, each latency + size / bandwidth, with 1% noise; the parameters
 * are written in make_samples.py there and repeated below. The imported fits
 * must give those back, reproduce the sample's times, load as a profile and
 * drive a scenario. Every file of tests/data/nccl-tests/bad names, in its
 * first lines, the message (# expect:) and the line (# line:) the importer
 * must report.
 *
 * torch-trace: tests/data/torch-trace/mlp-small-b32.json is a real trace,
 * written by bench/pytorch/trace_mlp.py --ddp for scenarios/models/mlp-small.cfg
 * at batch 32 (torch 2.15, CPU). The layer times must be positive and, with
 * DDP's copies of gradients into buckets (taken out of them), add up to the
 * span from the first forward linear to the end of backward, computed here
 * independently from the JSON; broken traces must be rejected with the
 * file and the line/column or event index, and nothing written. */
#include "calibrate/fit.h"
#include "calibrate/import_nccl.h"
#include "calibrate/import_trace.h"

#include "sim/predict.h"
#include "sim/scenario.h"

#include "core/err.h"
#include "core/model.h"
#include "core/profile.h"

#include "simutil.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

extern char **environ;

#define NCCL_DIR DDPSIM_SOURCE_DIR "/tests/data/nccl-tests"
#define TRACE TU_DATA("torch-trace/mlp-small-b32.json")
#define BASE_PROFILE TU_SRC("scenarios/profiles/dgx-h100.cfg")
#define MLP_SMALL TU_SRC("scenarios/models/mlp-small.cfg")
#define DDPSIM_BIN DDPSIM_BINARY_DIR "/ddpsim"

static char scratch[4096];

static int suite_init(void) { return tu_mkdtemp(scratch, sizeof scratch, "import"); }
static int suite_clean(void) {
  tu_rmdir(scratch);
  return 0;
}

static const char *in_scratch(const char *name) {
  static char buf[16][8192]; /* a ring: each result stays valid for 15 more calls */
  static int k;
  k = (k + 1) % 16;
  snprintf(buf[k], sizeof buf[k], "%s/%s", scratch, name);
  return buf[k];
}

static int n_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
  closedir(d);
  return n;
}

/* Run the ddpsim binary; stderr into err_path. Exit status, -1 if it did
 * not exit normally. */
static int run_ddpsim(char *const argv[], const char *err_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  int rc = posix_spawn(&pid, DDPSIM_BIN, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return -1;
  int st;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
    return -1;
  return WEXITSTATUS(st);
}

static double rel_err(double a, double b) { return fabs(a - b) / fabs(b); }

/* --- nccl-tests ------------------------------------------------------------ */

/* The samples' generating parameters (make_samples.py): per file, the
 * (latency µs, algorithm bandwidth GB/s) of LL and Simple, the protocols of
 * the smallest and the largest sizes. */
static const struct sample {
  const char *file, *binary, *op;
  int ranks, nodes, rows;
  double ll_lat, ll_bw, simple_lat, simple_bw;
} samples[] = {
    {"all_reduce_perf.txt", "all_reduce_perf", "allreduce", 8, 1, 25, 10.0, 20.0, 35.0, 205.0},
    {"all_gather_perf.txt", "all_gather_perf", "allgather", 8, 1, 23, 8.0, 40.0, 22.0, 411.0},
    {"reduce_scatter_perf.txt", "reduce_scatter_perf", "reducescatter", 8, 1, 23, 9.0, 38.0, 24.0, 400.0},
    {"broadcast_perf.txt", "broadcast_perf", "broadcast", 8, 1, 25, 8.0, 30.0, 20.0, 190.0},
    {"all_reduce_perf-2nodes.txt", "all_reduce_perf", "allreduce", 16, 2, 25, 20.0, 12.0, 60.0, 181.0},
};
enum { N_SAMPLES = (int)(sizeof samples / sizeof *samples) };

static const char *sample_path(int i) {
  static char buf[N_SAMPLES][4096];
  snprintf(buf[i], sizeof buf[i], "%s/%s", NCCL_DIR, samples[i].file);
  return buf[i];
}

static void test_nccl_parse_samples(void) {
  for (int i = 0; i < N_SAMPLES; i++) {
    cal_nccl_run r;
    int rc = cal_nccl_parse(sample_path(i), &r);
    if (rc)
      fprintf(stderr, "\n%s\n", core_err_msg());
    CU_ASSERT_FATAL(rc == 0);
    CU_ASSERT_STRING_EQUAL(r.binary, samples[i].binary);
    CU_ASSERT_STRING_EQUAL(r.op, samples[i].op);
    CU_ASSERT_EQUAL(r.ranks, samples[i].ranks);
    CU_ASSERT_EQUAL(r.nodes, samples[i].nodes);
    CU_ASSERT_EQUAL(r.n, samples[i].rows); /* allgather / reduce-scatter: two 0-byte rows skipped */
    CU_ASSERT(r.validated);
    CU_ASSERT_STRING_EQUAL(r.host, "dgx-h100-07");
    CU_ASSERT_STRING_EQUAL(r.device, "NVIDIA H100 80GB HBM3");
    CU_ASSERT_STRING_EQUAL(r.version, "nccl-tests 2.17.6, NCCL 2.27.3");
    CU_ASSERT(strstr(r.how, "Collective test starting") != NULL);
    for (int k = 1; k < r.n; k++)
      CU_ASSERT(r.bytes[k] > r.bytes[k - 1]);
    CU_ASSERT_EQUAL(r.bytes[r.n - 1], 134217728.0);
    cal_nccl_run_free(&r);
  }
}

static core_profile *import_all(char *notes, size_t n) {
  const char *paths[N_SAMPLES];
  for (int i = 0; i < N_SAMPLES; i++)
    paths[i] = sample_path(i);
  cal_nccl_opts o = {.base = BASE_PROFILE, .name = "h100-imported", .link_gbps = 400.0, .device_kind = "gpu"};
  core_profile *p = NULL;
  int rc = cal_import_nccl(paths, N_SAMPLES, &o, &p, notes, n);
  if (rc)
    fprintf(stderr, "\nimport failed: %s\n", core_err_msg());
  return p;
}

static double fit_us(const core_prof_coll *c, double bytes) {
  const core_prof_fit *f = core_prof_coll_fit(c, bytes);
  return f->alpha_us + bytes / (f->algbw_GBps * 1e3);
}

static void test_nccl_fits_reproduce_samples(void) {
  char notes[8192];
  core_profile *p = import_all(notes, sizeof notes);
  CU_ASSERT_FATAL(p != NULL);
  for (int i = 0; i < N_SAMPLES; i++) {
    const struct sample *s = &samples[i];
    const core_prof_coll *c = core_profile_coll(p, "nccl", s->op, "ring", s->nodes > 1 ? "inter" : "intra");
    CU_ASSERT_FATAL(c != NULL);
    CU_ASSERT_EQUAL(c->ranks, s->ranks);
    CU_ASSERT_EQUAL(c->nodes, s->nodes);
    CU_ASSERT_EQUAL(c->n_points, s->rows);
    /* The generating parameters come back: latency of the smallest sizes,
     * bandwidth of the largest (what the simulator takes: alpha from the
     * first fit, beta from the last). */
    CU_ASSERT(rel_err(c->fits[0].alpha_us, s->ll_lat) < 0.03);
    CU_ASSERT(rel_err(c->fits[c->n_fits - 1].algbw_GBps, s->simple_bw) < 0.03);
    CU_ASSERT(rel_err(c->fits[c->n_fits - 1].alpha_us, s->simple_lat) < 0.15);
    /* The sample's times: the latency-bound sizes (to 64 KiB) and the
     * bandwidth-bound ones (from 8 MiB) within 3% each; over all sizes the
     * median error under 2%. Sizes near a protocol switch are not held to a
     * per-point bound here: cal_fit_alpha_beta's choice of knees (it ranks
     * splits by the residuals of the points it kept, not of all points)
     * can place a knee one or two sizes off. */
    double errs[64];
    int ne = 0;
    for (int k = 0; k < c->n_points; k++) {
      double e = rel_err(fit_us(c, c->bytes[k]), c->time_us[k]);
      errs[ne++] = e;
      if (c->bytes[k] <= 65536 || c->bytes[k] >= 8388608) {
        if (e >= 0.03)
          fprintf(stderr, "\n%s: %g bytes: fit %g us, sample %g us\n", s->file, c->bytes[k], fit_us(c, c->bytes[k]),
              c->time_us[k]);
        CU_ASSERT(e < 0.03);
      }
    }
    for (int a = 1; a < ne; a++) /* insertion sort for the median */
      for (int b = a; b > 0 && errs[b] < errs[b - 1]; b--) {
        double t = errs[b];
        errs[b] = errs[b - 1];
        errs[b - 1] = t;
      }
    CU_ASSERT(errs[ne / 2] < 0.02);
  }
  /* The rest comes from the base: its gloo entry kept, its nccl ring
   * allreduce entries replaced, compute and memory figures as they were. */
  CU_ASSERT(core_profile_coll(p, "gloo", "allreduce", "segmented_ring", "intra") != NULL);
  CU_ASSERT_EQUAL(p->n_colls, N_SAMPLES + 1);
  CU_ASSERT(strstr(notes, "kept from") != NULL);
  CU_ASSERT_EQUAL(p->memory_GBps, 3350.0);
  CU_ASSERT(p->rate[CORE_PREC_BF16].present);
  CU_ASSERT_STRING_EQUAL(p->device_kind, "gpu");
  CU_ASSERT_STRING_EQUAL(p->device_name, "NVIDIA H100 80GB HBM3");
  CU_ASSERT_STRING_EQUAL(p->backend, "nccl");
  CU_ASSERT_STRING_EQUAL(p->name, "h100-imported");
  CU_ASSERT_EQUAL(p->nodes, 2);
  CU_ASSERT_EQUAL(p->ranks_per_node, 8);
  CU_ASSERT_EQUAL(p->link_gbps, 400.0);
  CU_ASSERT(strncmp(p->provenance, "imported from nccl-tests: all_reduce_perf.txt", 45) == 0);
  CU_ASSERT(strstr(p->provenance, "algorithm assumed ring") != NULL);
  core_profile_free(p);
}

/* Written, loaded back, and used by a scenario: the simulated allreduce of
 * one bucket inside a node is the imported fit at 8 ranks. */
static void test_nccl_profile_in_scenario(void) {
  core_profile *p = import_all(NULL, 0);
  CU_ASSERT_FATAL(p != NULL);
  const char *path = in_scratch("h100-imported.cfg");
  CU_ASSERT_FATAL(core_profile_write(p, path) == 0);
  core_profile_free(p);
  core_profile *q = NULL;
  int rc = core_profile_load(path, &q);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_FATAL(rc == 0);
  const core_prof_coll *c = core_profile_coll(q, "nccl", "allreduce", "ring", "intra");
  CU_ASSERT_FATAL(c != NULL);

  char text[4096];
  snprintf(text, sizeof text,
      "profile = \"%s\"; model = \"big-test.cfg\";\n"
      "training = { batch = 8; precision = \"fp32\"; };\n"
      "cluster = { nodes = [1, 2]; devices_per_node = 8; };\n"
      "networks = ( { name = \"measured\"; from_profile = true; } );\n"
      "ddp = { backend = \"nccl\"; algorithm = \"ring\"; bucket_cap_mb = 100000.0; first_bucket_mb = 100000.0; overlap "
      "= false; };\n"
      "simulation = { steps = 2; };\n",
      path);
  sim_scenario *s = tu_load_string(text, TU_DATA("inline-import.cfg"));
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL(sim_scenario_points(s), 2);
  for (long i = 0; i < sim_scenario_points(s); i++) {
    sim_point_result r;
    CU_ASSERT(tu_run_point(s, i, &r) == 0);
    CU_ASSERT_STRING_EQUAL(r.status, "ok");
    CU_ASSERT_EQUAL(r.n_buckets, 1);
    CU_ASSERT(r.comm_s > 0);
    if (r.pt.nodes == 1) {
      /* One bucket of big-test.cfg's 4e8 gradient bytes inside a node: the
       * imported fit (the regime that covers it) at its own 8 ranks, and so
       * close to the sample's Simple protocol, 35 us + n / 205 GB/s. */
      double n = 4e8, want = fit_us(c, n) * 1e-6;
      if (rel_err(r.comm_s, want) >= 1e-6)
        fprintf(stderr, "\ncomm %.9g s, fit %.9g s\n", r.comm_s, want);
      CU_ASSERT(rel_err(r.comm_s, want) < 1e-6);
      CU_ASSERT(rel_err(r.comm_s, 35e-6 + n / 205e9) < 0.03);
    }
  }
  sim_scenario_free(s);
  core_profile_free(q);
}

/* Without "# Collective test starting", the collective comes from a *_perf
 * name before the table, the file name, or the columns. */
static void test_nccl_detection(void) {
  struct {
    int sample;
    const char *name, *extra_line, *want, *how;
  } cases[] = {
      {0, "run1.txt", NULL, "allreduce", "from the columns"},
      {3, "run2.txt", NULL, "broadcast", "from the columns"},
      {2, "run3.txt", NULL, "reducescatter", "from the columns"},
      {1, "all_gather_perf.log", NULL, "allgather", "the file name"},
      {1, "ag-allgather-8gpu.txt", NULL, "allgather", "the file name"},
      {1, "run4.txt", "+ mpirun -np 8 ./build/all_gather_perf -b 8 -e 128M -f 2\n", "allgather", "line 1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *text = tu_read_file(sample_path(cases[i].sample), NULL);
    CU_ASSERT_FATAL(text != NULL);
    char *start = strstr(text, "# Collective test starting");
    CU_ASSERT_FATAL(start != NULL);
    start[0] = start[1] = '#'; /* "##Collective ...": an unknown comment */
    size_t len = strlen(text) + 256;
    char *all = malloc(len);
    CU_ASSERT_FATAL(all != NULL);
    snprintf(all, len, "%s%s", cases[i].extra_line ? cases[i].extra_line : "", text);
    const char *path = in_scratch(cases[i].name);
    CU_ASSERT_FATAL(tu_write_file(path, all) == 0);
    cal_nccl_run r;
    int rc = cal_nccl_parse(path, &r);
    if (rc)
      fprintf(stderr, "\n%s: %s\n", cases[i].name, core_err_msg());
    CU_ASSERT(rc == 0);
    if (!rc) {
      CU_ASSERT_STRING_EQUAL(r.op, cases[i].want);
      if (!strstr(r.how, cases[i].how))
        fprintf(stderr, "\n%s: detected as '%s'\n", cases[i].name, r.how);
      CU_ASSERT(strstr(r.how, cases[i].how) != NULL);
      cal_nccl_run_free(&r);
    }
    /* The same allgather table under a neutral name: the columns fit
     * allgather and alltoall alike, so it is refused. */
    if (cases[i].sample == 1 && !cases[i].extra_line) {
      const char *neutral = in_scratch("run5.txt");
      CU_ASSERT_FATAL(tu_write_file(neutral, all) == 0);
      CU_ASSERT(cal_nccl_parse(neutral, &r) == CORE_EINVAL);
      CU_ASSERT(strstr(core_err_msg(), "cannot tell which collective") != NULL);
    }
    free(all);
    free(text);
  }
}

/* Validation off (-c 0) prints N/A for #wrong: accepted, and said. NCCL's
 * INFO lines inside the table are skipped; a timestamp column is read. */
static void test_nccl_validation_off_and_noise(void) {
  char *text = tu_read_file(sample_path(0), NULL);
  CU_ASSERT_FATAL(text != NULL);
  size_t len = strlen(text), cap = len * 2 + 256, k = 0;
  char *out = malloc(cap);
  CU_ASSERT_FATAL(out != NULL);
  int rows = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", line);
    if (buf[0] != '#') {
      char *w = strrchr(buf, ' '); /* the in-place #wrong */
      if (w && !strcmp(w, " 0"))
        snprintf(w, sizeof buf - (size_t)(w - buf), "    N/A  2026-12-02 10:00:%02d", rows % 60);
      if (++rows == 3)
        k += (size_t)snprintf(
            out + k, cap - k, "dgx-h100-07:41210:41300 [0] NCCL INFO Channel 00/24 : 0 1 2 3 4 5 6 7\n");
    } else if (strstr(buf, "#wrong")) {
      strcat(buf, "          timestamp"); /* -R 1 (nccl-tests 2.17): a date and a time per row */
    }
    k += (size_t)snprintf(out + k, cap - k, "%s\n", buf);
  }
  const char *path = in_scratch("all_reduce_perf-c0.txt");
  CU_ASSERT_FATAL(tu_write_file(path, out) == 0);
  cal_nccl_run r;
  int rc = cal_nccl_parse(path, &r);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT(rc == 0);
  if (!rc) {
    CU_ASSERT_EQUAL(r.validated, 0);
    CU_ASSERT_EQUAL(r.n, 25);
    cal_nccl_run_free(&r);
  }
  free(out);
  free(text);
}

static void test_nccl_bad_corpus(void) {
  char dir[] = NCCL_DIR "/bad";
  {
    cal_nccl_run r;
    CU_ASSERT(
        cal_nccl_parse(dir, &r) == CORE_EINVAL && strstr(core_err_msg(), "a directory, not an nccl-tests output"));
    /* A device or a file of one endless line: refused at its first line,
     * not read until memory runs out. */
    CU_ASSERT(cal_nccl_parse("/dev/zero", &r) == CORE_EINVAL &&
              strstr(core_err_msg(), "/dev/zero:1: a NUL byte") == core_err_msg());
    FILE *f = fopen(in_scratch("long-line.txt"), "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs("# nccl-tests version 2.17.6\n", f);
    for (int i = 0; i < 100000; i++)
      fputc('#', f);
    fclose(f);
    CU_ASSERT(cal_nccl_parse(in_scratch("long-line.txt"), &r) == CORE_EINVAL &&
              strstr(core_err_msg(), "long-line.txt:2: a line longer than 64 KiB"));
  }
  DIR *d = opendir(dir);
  CU_ASSERT_FATAL(d != NULL);
  struct dirent *de;
  int n = 0;
  while ((de = readdir(d)) != NULL) {
    size_t nl = strlen(de->d_name);
    if (nl < 5 || strcmp(de->d_name + nl - 4, ".txt") != 0)
      continue;
    char path[8192], expect[1024] = "";
    long line = 0;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE *f = fopen(path, "r");
    CU_ASSERT_FATAL(f != NULL);
    char buf[1200];
    if (fgets(buf, sizeof buf, f) && !strncmp(buf, "# expect: ", 10))
      snprintf(expect, sizeof expect, "%.*s", (int)strcspn(buf + 10, "\n"), buf + 10);
    if (fgets(buf, sizeof buf, f) && !strncmp(buf, "# line: ", 8))
      line = atol(buf + 8);
    fclose(f);
    if (!strcmp(de->d_name, "empty.txt")) {
      /* An empty file carries no expectation in itself. */
      CU_ASSERT_FATAL(tu_write_file(in_scratch("empty.txt"), "") == 0);
      snprintf(path, sizeof path, "%s", in_scratch("empty.txt"));
    }
    CU_ASSERT_FATAL(expect[0] != '\0');
    cal_nccl_run r;
    core_err_clear();
    int rc = cal_nccl_parse(path, &r);
    const char *msg = core_err_msg();
    char where[8300];
    if (line)
      snprintf(where, sizeof where, "%s:%ld: ", path, line);
    else
      snprintf(where, sizeof where, "%s", path);
    int ok = rc == CORE_EINVAL && strstr(msg, expect) && strncmp(msg, where, strlen(where)) == 0;
    if (!ok)
      fprintf(stderr, "\n%s: rc %d, message:\n  %s\nwanted '%s' at '%s'\n", de->d_name, rc, msg, expect, where);
    CU_ASSERT(ok);
    if (!rc)
      cal_nccl_run_free(&r);
    n++;
  }
  closedir(d);
  CU_ASSERT(n >= 20);
}

static void test_nccl_import_errors(void) {
  const char *paths[2] = {sample_path(0), sample_path(0)};
  core_profile *p = NULL;
  cal_nccl_opts o = {.base = BASE_PROFILE};
  /* Two files for one collective and scope. */
  CU_ASSERT(cal_import_nccl(paths, 2, &o, &p, NULL, 0) == CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "a second intra-node allreduce") != NULL);
  CU_ASSERT(p == NULL);
  /* No base: refused with what to pass. */
  cal_nccl_opts nob = {0};
  CU_ASSERT(cal_import_nccl(paths, 1, &nob, &p, NULL, 0) == CORE_EUSAGE);
  CU_ASSERT(strstr(core_err_msg(), "--base") != NULL);
  CU_ASSERT(strstr(core_err_msg(), "dgx-h100.cfg") != NULL);
  /* A CPU base cannot make a GPU profile. */
  cal_nccl_opts cpu = {.base = TU_DATA("cpu-test.cfg"), .device_kind = "gpu"};
  CU_ASSERT(cal_import_nccl(paths, 1, &cpu, &p, NULL, 0) == CORE_EINVAL);
  CU_ASSERT(strstr(core_err_msg(), "--device cpu") != NULL);
  cpu.device_kind = "cpu";
  CU_ASSERT(cal_import_nccl(paths, 1, &cpu, &p, NULL, 0) == 0);
  CU_ASSERT(p != NULL && !strcmp(p->device_kind, "cpu"));
  core_profile_free(p);
}

/* The command: exit 3 with FILE:LINE on bad input and nothing written;
 * exit 2 without --base; exit 0 and a loadable profile otherwise. */
static void test_nccl_cli(void) {
  char out_dir[8192], out[8300], err[8300], bad[8192], good[8192];
  snprintf(out_dir, sizeof out_dir, "%s", in_scratch("cli-out"));
  CU_ASSERT_FATAL(mkdir(out_dir, 0755) == 0);
  snprintf(out, sizeof out, "%s/p.cfg", out_dir);
  snprintf(err, sizeof err, "%s", in_scratch("cli-err.txt"));
  snprintf(bad, sizeof bad, "%s/bad/wrong-data.txt", NCCL_DIR);
  snprintf(good, sizeof good, "%s", sample_path(0));
  char *argv_bad[] = {"ddpsim", "import", "nccl-tests", "--base", BASE_PROFILE, "--out", out, good, bad, NULL};
  CU_ASSERT_EQUAL(run_ddpsim(argv_bad, err), 3);
  char *msg = tu_read_file(err, NULL);
  CU_ASSERT(msg && strstr(msg, "wrong-data.txt:16:") && strstr(msg, "elements were wrong"));
  free(msg);
  CU_ASSERT_EQUAL(n_entries(out_dir), 0);
  char *argv_nobase[] = {"ddpsim", "import", "nccl-tests", "--out", out, good, NULL};
  CU_ASSERT_EQUAL(run_ddpsim(argv_nobase, err), 2);
  msg = tu_read_file(err, NULL);
  CU_ASSERT(msg && strstr(msg, "--base"));
  free(msg);
  CU_ASSERT_EQUAL(n_entries(out_dir), 0);
  char *argv_ok[] = {"ddpsim", "import", "nccl-tests", "--base", BASE_PROFILE, "--out", out, good, NULL};
  CU_ASSERT_EQUAL(run_ddpsim(argv_ok, err), 0);
  CU_ASSERT_EQUAL(n_entries(out_dir), 1);
  core_profile *p = NULL;
  CU_ASSERT(core_profile_load(out, &p) == 0);
  CU_ASSERT(p && !strcmp(p->name, "p"));
  core_profile_free(p);
}

/* --- torch-trace ------------------------------------------------------------ */

/* The span the layers and DDP's bucket copies must add up to, from the JSON
 * directly: the first aten::linear to the end of the last backward op,
 * inside the step; and the bucket copies' time in it (copy_op's events). */
static int trace_span(const char *path, const char *copy_op, double *span_us, double *step_us, double *copy_us) {
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  if (!root)
    return -1;
  const json_t *ev = json_object_get(root, "traceEvents");
  double lo = INFINITY, hi = -INFINITY, s0 = 0, s1 = 0, cp = 0;
  size_t i;
  const json_t *e;
  json_array_foreach(ev, i, e) {
    const char *name = json_string_value(json_object_get(e, "name"));
    if (name && !strncmp(name, "ProfilerStep#", 13)) {
      s0 = json_number_value(json_object_get(e, "ts"));
      s1 = s0 + json_number_value(json_object_get(e, "dur"));
    }
  }
  json_array_foreach(ev, i, e) {
    const char *name = json_string_value(json_object_get(e, "name"));
    double ts = json_number_value(json_object_get(e, "ts")), dur = json_number_value(json_object_get(e, "dur"));
    if (!name || ts < s0 || ts > s1)
      continue;
    if (!strcmp(name, "aten::linear") && ts < lo)
      lo = ts;
    if (!strncmp(name, "autograd::engine::evaluate_function: ", 37) && ts + dur > hi)
      hi = ts + dur;
    if (!strcmp(name, copy_op))
      cp += dur;
  }
  json_decref(root);
  *span_us = hi - lo;
  *step_us = s1 - s0;
  *copy_us = cp;
  return 0;
}

static void test_trace_read_real(void) {
  cal_trace t;
  int rc = cal_trace_read(TRACE, &t);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_FATAL(rc == 0);
  CU_ASSERT_EQUAL(t.n_layers, 3);
  CU_ASSERT_EQUAL(t.n_steps, 1);
  CU_ASSERT_EQUAL(t.batch, 32);
  CU_ASSERT(t.loss_mse);
  CU_ASSERT(!t.gpu);
  static const int in[] = {512, 1024, 1024}, out[] = {1024, 1024, 512}, relu[] = {1, 1, 0};
  double sum = 0;
  for (int i = 0; i < 3; i++) {
    CU_ASSERT_EQUAL(t.layers[i].in, in[i]);
    CU_ASSERT_EQUAL(t.layers[i].out, out[i]);
    CU_ASSERT_EQUAL(t.layers[i].relu, relu[i]);
    CU_ASSERT(t.layers[i].fwd_us > 0);
    CU_ASSERT(t.layers[i].bwd_us > 0);
    sum += t.layers[i].fwd_us + t.layers[i].bwd_us;
  }
  double span = 0, step = 0, copy = 0;
  CU_ASSERT_FATAL(trace_span(TRACE, "torch::distributed::reducer::mul_out", &span, &step, &copy) == 0);
  /* DDP's copies into buckets are out of the layers, and nothing else is. */
  CU_ASSERT(copy > 0);
  CU_ASSERT(rel_err(t.bucket_copy_us, copy) < 1e-9);
  CU_ASSERT(rel_err(sum + t.bucket_copy_us, span) < 1e-9);
  CU_ASSERT(rel_err(t.span_us, span) < 1e-9);
  CU_ASSERT(rel_err(t.step_us, step) < 1e-6); /* ts + dur - ts: ts is ~1e12 us */
  /* The layers are most of the step: the rest is zero_grad and the
   * optimizer, which are no layer's. */
  CU_ASSERT(sum < step);
  CU_ASSERT(sum > 0.5 * step);
  /* One step: nothing to call unsteady. */
  CU_ASSERT(t.layers_min_us == t.layers_max_us);
  CU_ASSERT(rel_err(t.layers_median_us, sum) < 1e-9);
  /* fc2 (1024 x 1024) does the most work, forward and backward. */
  CU_ASSERT(t.layers[1].bwd_us > t.layers[0].bwd_us && t.layers[1].bwd_us > t.layers[2].bwd_us);
  cal_trace_free(&t);
}

static void test_trace_import_base(void) {
  const char *out = in_scratch("mlp-small-measured.cfg");
  cal_trace_opts o = {.base = MLP_SMALL};
  char notes[2048];
  int rc = cal_import_trace(TRACE, &o, out, notes, sizeof notes);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_FATAL(rc == 0);
  CU_ASSERT(strstr(notes, "3 linear layer(s)") != NULL);
  CU_ASSERT(strstr(notes, "copy of the gradients into its buckets") != NULL);
  CU_ASSERT(strstr(notes, "not steady") == NULL);
  core_model *m = NULL, *base = NULL;
  CU_ASSERT_FATAL(core_model_load(out, &m) == 0);
  CU_ASSERT_FATAL(core_model_load(MLP_SMALL, &base) == 0);
  cal_trace t;
  CU_ASSERT_FATAL(cal_trace_read(TRACE, &t) == 0);
  CU_ASSERT(m->measured);
  CU_ASSERT_EQUAL(m->measured_batch, 32.0);
  CU_ASSERT_STRING_EQUAL(m->name, "mlp-small");
  CU_ASSERT_EQUAL(m->n_layers, base->n_layers);
  CU_ASSERT_EQUAL(m->n_params, base->n_params);
  for (int i = 0; i < m->n_layers; i++) {
    CU_ASSERT_STRING_EQUAL(m->layers[i].name, base->layers[i].name);
    CU_ASSERT_EQUAL(m->layers[i].in, base->layers[i].in);
    CU_ASSERT_EQUAL(m->layers[i].act, base->layers[i].act);
    /* Written in ms to the nanosecond. */
    CU_ASSERT(fabs(m->layers[i].fwd_s - t.layers[i].fwd_us * 1e-6) < 1e-9);
    CU_ASSERT(fabs(m->layers[i].bwd_s - t.layers[i].bwd_us * 1e-6) < 1e-9);
  }
  CU_ASSERT(strstr(m->source, "PyTorch profiler trace") != NULL);
  cal_trace_free(&t);
  core_model_free(m);
  core_model_free(base);
}

static void test_trace_import_no_base(void) {
  const char *out = in_scratch("from-trace.cfg");
  cal_trace_opts o = {0};
  int rc = cal_import_trace(TRACE, &o, out, NULL, 0);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_FATAL(rc == 0);
  core_model *m = NULL, *base = NULL;
  CU_ASSERT_FATAL(core_model_load(out, &m) == 0);
  CU_ASSERT_FATAL(core_model_load(MLP_SMALL, &base) == 0);
  CU_ASSERT_STRING_EQUAL(m->name, "from-trace");
  CU_ASSERT(m->measured);
  CU_ASSERT_EQUAL(m->measured_batch, 32.0);
  CU_ASSERT_STRING_EQUAL(m->loss, "mse");
  CU_ASSERT(core_model_check_runnable(m) == 0);
  CU_ASSERT_EQUAL(m->n_params, base->n_params);
  for (int i = 0; i < m->n_layers; i++) {
    CU_ASSERT_EQUAL(m->layers[i].in, base->layers[i].in);
    CU_ASSERT_EQUAL(m->layers[i].out, base->layers[i].out);
    CU_ASSERT_EQUAL(m->layers[i].act, base->layers[i].act);
  }
  core_model_free(m);
  core_model_free(base);
}

/* The measured model drives a scenario: one device's step computes exactly
 * the measured layer times (batch as measured). */
static void test_trace_model_in_scenario(void) {
  const char *model = in_scratch("mlp-small-measured2.cfg");
  cal_trace_opts o = {.base = MLP_SMALL};
  CU_ASSERT_FATAL(cal_import_trace(TRACE, &o, model, NULL, 0) == 0);
  cal_trace t;
  CU_ASSERT_FATAL(cal_trace_read(TRACE, &t) == 0);
  double sum = 0;
  for (int i = 0; i < t.n_layers; i++)
    sum += (t.layers[i].fwd_us + t.layers[i].bwd_us) * 1e-6;
  cal_trace_free(&t);
  char text[4096];
  snprintf(text, sizeof text,
      "profile = \"cpu-test.cfg\"; model = \"%s\";\n"
      "training = { batch = 32; };\n"
      "cluster = { nodes = [1, 2]; devices_per_node = 1; };\n"
      "networks = ( { name = \"n\"; gbps = 10.0; latency_us = 20.0; } );\n"
      "ddp = { backend = \"gloo\"; };\n"
      "simulation = { steps = 2; };\n",
      model);
  sim_scenario *s = tu_load_string(text, TU_DATA("inline-import.cfg"));
  CU_ASSERT_FATAL(s != NULL);
  for (long i = 0; i < sim_scenario_points(s); i++) {
    sim_point_result r;
    CU_ASSERT(tu_run_point(s, i, &r) == 0);
    CU_ASSERT_STRING_EQUAL(r.status, "ok");
    /* Layers plus the optimizer's memory traffic: at least the layers. */
    CU_ASSERT(r.single_step_s >= sum * (1 - 1e-9));
    CU_ASSERT(r.single_step_s < sum * 1.5);
    CU_ASSERT(r.step_s >= r.single_step_s * (1 - 1e-9));
  }
  sim_scenario_free(s);
}

/* The real trace followed by copies of itself, a second apart, the k-th
 * slowed down time_scale[k] times (every event's offset from the trace's
 * start and its duration); gzip'd into the scratch directory as name. */
static const char *repeated_trace(const char *name, const double *time_scale, int copies) {
  json_error_t je;
  json_t *root = json_load_file(TRACE, 0, &je);
  if (!root)
    return NULL;
  json_t *ev = json_object_get(root, "traceEvents");
  size_t n = json_array_size(ev);
  double t0 = INFINITY;
  for (size_t i = 0; i < n; i++) {
    json_t *ts = json_object_get(json_array_get(ev, i), "ts");
    if (json_is_number(ts) && json_number_value(ts) < t0)
      t0 = json_number_value(ts);
  }
  for (int k = 0; k < copies; k++) {
    double shift = 1e6 * (k + 1); /* a second later each */
    for (size_t i = 0; i < n; i++) {
      json_t *c = json_deep_copy(json_array_get(ev, i));
      json_t *ts = json_object_get(c, "ts"), *dur = json_object_get(c, "dur");
      if (json_is_number(ts))
        json_object_set_new(c, "ts", json_real(t0 + shift + (json_number_value(ts) - t0) * time_scale[k]));
      if (json_is_number(dur))
        json_object_set_new(c, "dur", json_real(json_number_value(dur) * time_scale[k]));
      const char *nm = json_string_value(json_object_get(c, "name"));
      if (nm && !strncmp(nm, "ProfilerStep#", 13)) {
        char step[32];
        snprintf(step, sizeof step, "ProfilerStep#%d", k + 2);
        json_object_set_new(c, "name", json_string(step));
      }
      json_array_append_new(ev, c);
    }
  }
  char *text = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  if (!text)
    return NULL;
  const char *gz = in_scratch(name);
  gzFile g = gzopen(gz, "wb");
  int ok = g && gzwrite(g, text, (unsigned)strlen(text)) == (int)strlen(text);
  if (g && gzclose(g) != Z_OK)
    ok = 0;
  free(text);
  return ok ? gz : NULL;
}

/* The real trace into *one and path into *other; the error on stderr when
 * path does not read. */
static int read_beside_real(const char *path, cal_trace *one, cal_trace *other) {
  int rc = cal_trace_read(TRACE, one);
  if (rc == 0 && (rc = cal_trace_read(path, other)) != 0)
    cal_trace_free(one);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  return rc;
}

/* Two steps (the trace's step copied after itself): both analysed, medians. */
static void test_trace_two_steps_and_gzip(void) {
  static const double same[] = {1.0};
  const char *gz = repeated_trace("two-steps.json.gz", same, 1);
  CU_ASSERT_FATAL(gz != NULL);
  cal_trace one, two;
  CU_ASSERT_FATAL(read_beside_real(gz, &one, &two) == 0);
  CU_ASSERT_EQUAL(two.n_steps, 2);
  CU_ASSERT_EQUAL(two.n_layers, one.n_layers);
  for (int i = 0; i < one.n_layers; i++) {
    CU_ASSERT(rel_err(two.layers[i].fwd_us, one.layers[i].fwd_us) < 1e-6);
    CU_ASSERT(rel_err(two.layers[i].bwd_us, one.layers[i].bwd_us) < 1e-6);
  }
  CU_ASSERT(rel_err(two.bucket_copy_us, one.bucket_copy_us) < 1e-6);
  CU_ASSERT(rel_err(two.layers_max_us, two.layers_min_us) < 1e-6);
  cal_trace_free(&one);
  cal_trace_free(&two);
}

/* Steps at 1x, 2x and 2x the real one's times: the medians are the slow
 * mode's, the spread is reported, and the notes say the machine was not
 * steady. */
static void test_trace_unsteady(void) {
  static const double slow[] = {2.0, 2.0};
  const char *gz = repeated_trace("unsteady.json.gz", slow, 2);
  CU_ASSERT_FATAL(gz != NULL);
  cal_trace one, three;
  CU_ASSERT_FATAL(read_beside_real(gz, &one, &three) == 0);
  CU_ASSERT_EQUAL(three.n_steps, 3);
  for (int i = 0; i < one.n_layers; i++) {
    CU_ASSERT(rel_err(three.layers[i].fwd_us, 2 * one.layers[i].fwd_us) < 1e-6);
    CU_ASSERT(rel_err(three.layers[i].bwd_us, 2 * one.layers[i].bwd_us) < 1e-6);
  }
  CU_ASSERT(rel_err(three.layers_max_us, 2 * three.layers_min_us) < 1e-6);
  CU_ASSERT(rel_err(three.layers_median_us, three.layers_max_us) < 1e-6);
  char notes[2048];
  cal_trace_opts o = {.base = MLP_SMALL};
  CU_ASSERT_FATAL(cal_import_trace(gz, &o, in_scratch("unsteady.cfg"), notes, sizeof notes) == 0);
  CU_ASSERT(strstr(notes, "not steady") != NULL);
  cal_trace_free(&one);
  cal_trace_free(&three);
}

/* With a comm hook DDP copies into buckets with a bare aten::copy_ (no
 * reducer::mul_out span): the same copies come out of the layers. */
static void edit_hook_copy(json_t *root, long *idx) {
  json_t *ev = json_object_get(root, "traceEvents");
  for (size_t i = 0; i < json_array_size(ev); i++) {
    json_t *e = json_array_get(ev, i);
    const char *n = json_string_value(json_object_get(e, "name"));
    if (n && !strcmp(n, "torch::distributed::reducer::mul_out"))
      json_object_set_new(e, "name", json_string("aten::copy_"));
  }
  *idx = -1;
}

static const char *edited_trace(const char *name, void (*edit)(json_t *root, long *idx), long *idx);

static void edit_extra_linear(json_t *root, long *idx);
static int check_err(int rc, const char *what, const char *where);
static const char *at(const char *path, long idx);

/* Several traces of one model read as one run of all their steps; a broken
 * one among them, or a GPU job's, is named, and nothing is written. */
static void test_trace_many(void) {
  static const double same[] = {1.0};
  const char *gz = repeated_trace("many-2.json.gz", same, 1);
  CU_ASSERT_FATAL(gz != NULL);
  const char *files[] = {TRACE, gz};
  cal_trace one, three;
  CU_ASSERT_FATAL(cal_trace_read(TRACE, &one) == 0);
  int rc = cal_trace_read_many(files, 2, &three);
  if (rc)
    fprintf(stderr, "\n%s\n", core_err_msg());
  CU_ASSERT_FATAL(rc == 0);
  CU_ASSERT_EQUAL(three.n_steps, 3);
  CU_ASSERT_EQUAL(three.n_layers, one.n_layers);
  for (int i = 0; i < one.n_layers; i++)
    CU_ASSERT(rel_err(three.layers[i].bwd_us, one.layers[i].bwd_us) < 1e-6);
  CU_ASSERT(rel_err(three.step_us, one.step_us) < 1e-9);
  const char *out = in_scratch("many.cfg");
  char notes[2048];
  cal_trace_opts o = {.base = MLP_SMALL};
  CU_ASSERT_FATAL(cal_import_traces(files, 2, &o, out, notes, sizeof notes) == 0);
  CU_ASSERT(strstr(notes, "and 1 more trace:") != NULL);
  CU_ASSERT(strstr(notes, "3 step(s)") != NULL);
  core_model *m = NULL;
  CU_ASSERT_FATAL(core_model_load(out, &m) == 0);
  CU_ASSERT(fabs(m->layers[1].bwd_s - one.layers[1].bwd_us * 1e-6) < 1e-9);
  core_model_free(m);
  long idx;
  const char *bad = edited_trace("many-bad.json", edit_extra_linear, &idx);
  CU_ASSERT_FATAL(bad != NULL);
  const char *with_bad[] = {TRACE, bad};
  const char *none_out = in_scratch("many-none.cfg");
  CU_ASSERT(check_err(cal_import_traces(with_bad, 2, &o, none_out, NULL, 0), "4 forward linear ops", at(bad, -1)));
  CU_ASSERT(access(none_out, F_OK) != 0);
  /* a GPU job's trace after a CPU job's is another job's, said so */
  const char *gpu = TU_DATA("torch-trace/gpu-ddp.json"), *with_gpu[] = {TRACE, gpu};
  CU_ASSERT(check_err(cal_import_traces(with_gpu, 2, &o, none_out, NULL, 0),
      "holds GPU work but " TRACE " does not: give traces of one job", gpu));
  CU_ASSERT(access(none_out, F_OK) != 0);
  cal_trace_free(&one);
  cal_trace_free(&three);
}

static void test_trace_hook_copy(void) {
  long idx;
  const char *p = edited_trace("hook-copy.json", edit_hook_copy, &idx);
  CU_ASSERT_FATAL(p != NULL);
  cal_trace one, hook;
  CU_ASSERT_FATAL(read_beside_real(p, &one, &hook) == 0);
  CU_ASSERT(one.bucket_copy_us > 0);
  CU_ASSERT(rel_err(hook.bucket_copy_us, one.bucket_copy_us) < 1e-9);
  for (int i = 0; i < one.n_layers; i++)
    CU_ASSERT(rel_err(hook.layers[i].bwd_us, one.layers[i].bwd_us) < 1e-9);
  cal_trace_free(&one);
  cal_trace_free(&hook);
}

/* Write the real trace with one change made by edit(); returns its path. */
static const char *edited_trace(const char *name, void (*edit)(json_t *root, long *idx), long *idx) {
  json_error_t je;
  json_t *root = json_load_file(TRACE, 0, &je);
  if (!root)
    return NULL;
  edit(root, idx);
  const char *path = in_scratch(name);
  int rc = json_dump_file(root, path, JSON_COMPACT);
  json_decref(root);
  return rc == 0 ? path : NULL;
}

static long find_event(json_t *root, const char *name, int nth) {
  json_t *ev = json_object_get(root, "traceEvents");
  for (size_t i = 0; i < json_array_size(ev); i++) {
    const char *n = json_string_value(json_object_get(json_array_get(ev, i), "name"));
    if (n && !strcmp(n, name) && nth-- == 0)
      return (long)i;
  }
  return -1;
}

static void edit_bad_dur(json_t *root, long *idx) {
  *idx = find_event(root, "aten::linear", 1);
  json_object_set_new(json_array_get(json_object_get(root, "traceEvents"), (size_t)*idx), "dur", json_string("abc"));
}

static void edit_no_backward(json_t *root, long *idx) {
  json_t *ev = json_object_get(root, "traceEvents");
  for (size_t i = json_array_size(ev); i-- > 0;) {
    const char *n = json_string_value(json_object_get(json_array_get(ev, i), "name"));
    if (n && !strncmp(n, "autograd::engine::evaluate_function", 35))
      json_array_remove(ev, i);
  }
  *idx = -1;
}

static void edit_extra_linear(json_t *root, long *idx) {
  /* A forward linear with no backward: layer counts disagree. */
  json_t *ev = json_object_get(root, "traceEvents");
  *idx = find_event(root, "aten::linear", 0);
  json_t *c = json_deep_copy(json_array_get(ev, (size_t)*idx));
  double ts = json_number_value(json_object_get(c, "ts"));
  json_object_set_new(c, "ts", json_real(ts - 100.0)); /* inside the step */
  json_object_set_new(c, "dur", json_real(10.0));
  json_array_append_new(ev, c);
}

static void edit_not_object(json_t *root, long *idx) {
  *idx = 7;
  json_array_set_new(json_object_get(root, "traceEvents"), 7, json_integer(42));
}

/* "PATH:" or, with idx >= 0, "PATH: traceEvents[IDX]". */
static const char *at(const char *path, long idx) {
  static char buf[8400];
  if (!path)
    path = "(no file)";
  if (idx >= 0)
    snprintf(buf, sizeof buf, "%s: traceEvents[%ld]", path, idx);
  else
    snprintf(buf, sizeof buf, "%s:", path);
  return buf;
}

static int check_err(int rc, const char *what, const char *where) {
  const char *msg = core_err_msg();
  int ok = rc != 0 && strstr(msg, what) && strstr(msg, where);
  if (!ok)
    fprintf(stderr, "\nrc %d, message:\n  %s\nwanted '%s' and '%s'\n", rc, msg, what, where);
  return ok;
}

static void test_trace_errors(void) {
  char out[8300];
  snprintf(out, sizeof out, "%s", in_scratch("never.cfg"));
  cal_trace_opts none = {0}, mlp = {.base = TU_SRC("scenarios/models/mlp.cfg")};
  long idx = -1;
  const char *p;

  /* Malformed JSON: a trace cut short; file:line:column. */
  size_t len;
  char *text = tu_read_file(TRACE, &len);
  CU_ASSERT_FATAL(text != NULL);
  text[len / 2] = '\0';
  p = in_scratch("cut.json");
  CU_ASSERT_FATAL(tu_write_file(p, text) == 0);
  free(text);
  CU_ASSERT(check_err(cal_import_trace(p, &none, out, NULL, 0), "not valid JSON", at(p, -1)));
  {
    char pre[8300];
    snprintf(pre, sizeof pre, "%s:", p);
    const char *m = core_err_msg() + strlen(pre);
    CU_ASSERT(strncmp(core_err_msg(), pre, strlen(pre)) == 0 && atoi(m) > 1); /* a line number */
  }
  /* Not JSON at all, and JSON without traceEvents. */
  p = in_scratch("garbage.json");
  CU_ASSERT_FATAL(tu_write_file(p, "this is not a trace\n") == 0);
  CU_ASSERT(check_err(cal_import_trace(p, &none, out, NULL, 0), "not valid JSON", at(p, -1)));
  {
    char pre[8300];
    snprintf(pre, sizeof pre, "%s:1:", p);
    CU_ASSERT(strncmp(core_err_msg(), pre, strlen(pre)) == 0);
  }
  p = in_scratch("no-events.json");
  CU_ASSERT_FATAL(tu_write_file(p, "{\"schemaVersion\": 1, \"events\": []}\n") == 0);
  CU_ASSERT(check_err(cal_import_trace(p, &none, out, NULL, 0), "no \"traceEvents\" array", at(p, -1)));
  p = in_scratch("events-object.json");
  CU_ASSERT_FATAL(tu_write_file(p, "{\"traceEvents\": {}}\n") == 0);
  CU_ASSERT(check_err(cal_import_trace(p, &none, out, NULL, 0), "is not an array", at(p, -1)));
  /* Bad events: by index. */
  p = edited_trace("bad-dur.json", edit_bad_dur, &idx);
  CU_ASSERT_FATAL(p != NULL && idx > 0);
  CU_ASSERT(check_err(cal_import_trace(p, &none, out, NULL, 0), "\"dur\" is missing or not a number", at(p, idx)));
  p = edited_trace("not-object.json", edit_not_object, &idx);
  CU_ASSERT_FATAL(p != NULL);
  CU_ASSERT(check_err(cal_import_trace(p, &none, out, NULL, 0), "is not an object", at(p, idx)));
  p = edited_trace("no-backward.json", edit_no_backward, &idx);
  CU_ASSERT_FATAL(p != NULL);
  CU_ASSERT(check_err(cal_import_trace(p, &none, out, NULL, 0), "no backward ops", at(p, -1)));
  p = edited_trace("extra-linear.json", edit_extra_linear, &idx);
  CU_ASSERT_FATAL(p != NULL);
  CU_ASSERT(check_err(cal_import_trace(p, &none, out, NULL, 0), "4 forward linear ops", at(p, -1)));
  CU_ASSERT(strstr(core_err_msg(), "but 3 linear backward ops") != NULL);
  /* The wrong base: 4 layers in mlp.cfg. */
  CU_ASSERT(check_err(cal_import_trace(TRACE, &mlp, out, NULL, 0), "3 linear layers", at(TRACE, -1)));
  CU_ASSERT(strstr(core_err_msg(), "has 4 layers") != NULL);
  /* A base with 3 layers of other sizes. */
  p = in_scratch("other-base.cfg");
  CU_ASSERT_FATAL(
      tu_write_file(p, "model = { name = \"other\"; layers = (\n"
                       "  { name = \"a\"; type = \"linear\"; in = 512; out = 1024; activation = \"relu\"; },\n"
                       "  { name = \"b\"; type = \"linear\"; in = 1024; out = 2048; activation = \"relu\"; },\n"
                       "  { name = \"c\"; type = \"linear\"; in = 2048; out = 512; } ); };\n") == 0);
  cal_trace_opts other = {.base = p};
  cal_trace t;
  CU_ASSERT_FATAL(cal_trace_read(TRACE, &t) == 0);
  CU_ASSERT(check_err(cal_import_trace(TRACE, &other, out, NULL, 0), "layer 'b'", at(TRACE, t.layers[1].fwd_event)));
  cal_trace_free(&t);
  /* A batch the trace contradicts. */
  cal_trace_opts b64 = {.batch = 64};
  CU_ASSERT(check_err(cal_import_trace(TRACE, &b64, out, NULL, 0), "--batch 64", at(TRACE, -1)));
  /* A bad name. */
  cal_trace_opts bad_name = {.name = "a b"};
  CU_ASSERT(cal_import_trace(TRACE, &bad_name, out, NULL, 0) == CORE_EUSAGE);
  /* Nothing was written by any of them. */
  CU_ASSERT(access(out, F_OK) != 0);
}

static void test_trace_cli(void) {
  char out_dir[8192], out[8300], err[8300];
  snprintf(out_dir, sizeof out_dir, "%s", in_scratch("trace-cli"));
  CU_ASSERT_FATAL(mkdir(out_dir, 0755) == 0);
  snprintf(out, sizeof out, "%s/m.cfg", out_dir);
  snprintf(err, sizeof err, "%s", in_scratch("trace-err.txt"));
  char *argv_bad[] = {
      "ddpsim", "import", "torch-trace", "--base", TU_SRC("scenarios/models/mlp.cfg"), "--out", out, TRACE, NULL};
  CU_ASSERT_EQUAL(run_ddpsim(argv_bad, err), 3);
  CU_ASSERT_EQUAL(n_entries(out_dir), 0);
  char *argv_ok[] = {
      "ddpsim", "import", "torch-trace", "--base", MLP_SMALL, "--batch", "32", "--out", out, TRACE, NULL};
  CU_ASSERT_EQUAL(run_ddpsim(argv_ok, err), 0);
  CU_ASSERT_EQUAL(n_entries(out_dir), 1);
  core_model *m = NULL;
  CU_ASSERT(core_model_load(out, &m) == 0);
  CU_ASSERT(m && m->measured);
  core_model_free(m);
  /* The trace is noted as an input: an output onto it is refused (exit 2),
   * naming it, and the trace stays as it was. */
  size_t len, len2;
  char *text = tu_read_file(TRACE, &len);
  char copy[8300];
  snprintf(copy, sizeof copy, "%s/trace.json", out_dir);
  CU_ASSERT_FATAL(text != NULL && tu_write_file(copy, text) == 0);
  char *argv_onto[] = {"ddpsim", "import", "torch-trace", "--out", copy, copy, NULL};
  CU_ASSERT_EQUAL(run_ddpsim(argv_onto, err), 2);
  char *after = tu_read_file(copy, &len2), *msg = tu_read_file(err, NULL);
  CU_ASSERT(after && len2 == len && !memcmp(after, text, len));
  CU_ASSERT(msg && strstr(msg, "trace.json' of this command") != NULL);
  free(after);
  free(msg);
  free(text);
}

/* --- plot fit ---------------------------------------------------------------- */

static int is_png(const char *path) {
  size_t len = 0;
  char *b = tu_read_file(path, &len);
  int ok = b && len > 1000 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8);
  free(b);
  return ok;
}

static void test_plot_fit(void) {
  /* gnuplot is a run-time dependency scripts/setup.sh installs. */
  int have = system("command -v gnuplot >/dev/null 2>&1") == 0;
  if (!have)
    fprintf(stderr, "\ngnuplot is not on PATH: install it (scripts/setup.sh does)\n");
  CU_ASSERT_FATAL(have);
  core_profile *p = import_all(NULL, 0);
  CU_ASSERT_FATAL(p != NULL);
  const char *imported = in_scratch("imported-for-plot.cfg");
  CU_ASSERT_FATAL(core_profile_write(p, imported) == 0);
  core_profile_free(p);
  struct {
    const char *profile, *stem;
  } cases[] = {
      {TU_DATA("cpu-test.cfg"), "cpu-test"}, {TU_DATA("gpu-test.cfg"), "gpu-test"}, {imported, "imported-for-plot"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char dir[8192], png[8400], svg[8400], err[8300];
    snprintf(dir, sizeof dir, "%s/plots-%zu", scratch, i);
    snprintf(err, sizeof err, "%s", in_scratch("plot-err.txt"));
    char *argv[] = {"ddpsim", "plot", "fit", (char *)cases[i].profile, "-o", dir, NULL};
    int st = run_ddpsim(argv, err);
    if (st != 0) {
      char *m = tu_read_file(err, NULL);
      fprintf(stderr, "\nplot fit %s: exit %d\n%s\n", cases[i].profile, st, m ? m : "");
      free(m);
    }
    CU_ASSERT_EQUAL(st, 0);
    snprintf(png, sizeof png, "%s/%s-fit.png", dir, cases[i].stem);
    snprintf(svg, sizeof svg, "%s/%s-fit.svg", dir, cases[i].stem);
    CU_ASSERT(is_png(png));
    struct stat sb;
    CU_ASSERT(stat(svg, &sb) == 0 && sb.st_size > 1000);
    /* The temporary CSV is gone: only the two plots remain. */
    CU_ASSERT_EQUAL(n_entries(dir), 2);
  }
  /* A profile that does not load: exit 3, nothing drawn. */
  char dir[8192], err[8300];
  snprintf(dir, sizeof dir, "%s/plots-bad", scratch);
  snprintf(err, sizeof err, "%s", in_scratch("plot-err.txt"));
  char *argv[] = {"ddpsim", "plot", "fit", TU_SRC("scenarios/models/mlp-small.cfg"), "-o", dir, NULL};
  CU_ASSERT_EQUAL(run_ddpsim(argv, err), 3);
  CU_ASSERT(n_entries(dir) <= 0);
}

/* Times below the line by a fixed amount (a token bucket's burst sent at
 * once, then the line rate): the free fit's intercept is negative. The fit
 * holds alpha at zero and still runs through the points, some above it and
 * some below, not above them all as a clamped intercept would leave it. */
static void test_fit_alpha_nonnegative(void) {
  double bytes[5], t[5];
  const double rate = 125e6, burst_s = 2e-3; /* 1 Gb/s; 2 ms of it free */
  for (int i = 0; i < 5; i++) {
    bytes[i] = 1048576.0 * (1 << i);
    t[i] = bytes[i] / rate - burst_s;
  }
  cal_fit f[CAL_FIT_MAX_REGIMES];
  int nf = 0;
  CU_ASSERT_FATAL(cal_fit_alpha_beta(bytes, t, NULL, 5, f, &nf) == 0);
  CU_ASSERT_EQUAL_FATAL(nf, 1);
  CU_ASSERT_EQUAL(f[0].alpha_s, 0.0);
  CU_ASSERT(f[0].alpha_lo == 0.0 && f[0].alpha_hi == 0.0);
  int above = 0, below = 0;
  for (int i = 0; i < 5; i++) {
    double fit = f[0].alpha_s + f[0].beta_s * bytes[i];
    above += fit > t[i];
    below += fit < t[i];
  }
  CU_ASSERT(above > 0 && below > 0);
  /* Faster than the line: the burst is worth bytes the line never sends. */
  CU_ASSERT(f[0].beta_s < 1.0 / rate);
  CU_ASSERT(f[0].beta_lo < f[0].beta_s && f[0].beta_s < f[0].beta_hi);
  /* A regime with a positive intercept keeps its free fit. */
  for (int i = 0; i < 5; i++)
    t[i] = 50e-6 + bytes[i] / rate;
  CU_ASSERT_FATAL(cal_fit_alpha_beta(bytes, t, NULL, 5, f, &nf) == 0);
  CU_ASSERT(fabs(f[0].alpha_s - 50e-6) < 1e-9);
  CU_ASSERT(fabs(f[0].beta_s * rate - 1.0) < 1e-9);
}

/* A sweep of many sizes (a linear step prints thousands) takes the screened
 * search for knees: it still finds the three protocols of a synthetic
 * 3-protocol collective, the knees at their crossovers and each regime's
 * latency and bandwidth. */
static void test_fit_many_sizes(void) {
  enum { N = 400 };
  static const double lat_s[3] = {6e-6, 9e-6, 18e-6}, bw[3] = {40e9, 150e9, 230e9};
  double bytes[N], t[N];
  unsigned seed = 7;
  for (int i = 0; i < N; i++) {
    bytes[i] = 8.0 * pow(2.0, 30.0 * i / N);
    double best = 1e300;
    for (int k = 0; k < 3; k++)
      best = fmin(best, lat_s[k] + bytes[i] / bw[k]);
    seed = seed * 1103515245u + 12345u;
    t[i] = best * (1.0 + 0.02 * ((double)(seed >> 8 & 0xffff) / 65535.0 - 0.5));
  }
  cal_fit f[CAL_FIT_MAX_REGIMES];
  int nf = 0;
  CU_ASSERT_FATAL(cal_fit_alpha_beta(bytes, t, NULL, N, f, &nf) == 0);
  CU_ASSERT_EQUAL_FATAL(nf, 3);
  /* Crossovers: lat_a + S / bw_a = lat_b + S / bw_b. */
  for (int k = 0; k < 2; k++) {
    double cross = (lat_s[k + 1] - lat_s[k]) / (1.0 / bw[k] - 1.0 / bw[k + 1]);
    CU_ASSERT(f[k].max_bytes > cross / 1.25 && f[k].max_bytes < cross * 1.25);
    CU_ASSERT_EQUAL(f[k + 1].min_bytes, f[k].max_bytes);
  }
  for (int k = 0; k < 3; k++) {
    CU_ASSERT(rel_err(f[k].alpha_s, lat_s[k]) < 0.05);
    CU_ASSERT(rel_err(1.0 / f[k].beta_s, bw[k]) < 0.03);
  }
}

void test_register(void) {
  CU_pSuite nccl = CU_add_suite("import_nccl", suite_init, suite_clean);
  CU_add_test(nccl, "the samples parse: collective, ranks, nodes, rows", test_nccl_parse_samples);
  CU_add_test(nccl, "the fits give back the samples' parameters and times", test_nccl_fits_reproduce_samples);
  CU_add_test(nccl, "the written profile loads and drives a scenario", test_nccl_profile_in_scenario);
  CU_add_test(nccl, "the collective from a command line, the file name or the columns", test_nccl_detection);
  CU_add_test(nccl, "validation off (N/A) and NCCL INFO lines are accepted", test_nccl_validation_off_and_noise);
  CU_add_test(nccl, "every malformed file: its message at FILE:LINE", test_nccl_bad_corpus);
  CU_add_test(nccl, "duplicate entries, no base, CPU base", test_nccl_import_errors);
  CU_add_test(nccl, "the command: exit codes, nothing written on errors", test_nccl_cli);
  CU_pSuite tr = CU_add_suite("import_trace", suite_init, suite_clean);
  CU_add_test(tr, "a real trace: positive layer times adding up to the step's span", test_trace_read_real);
  CU_add_test(tr, "with --base: its layers plus measured times", test_trace_import_base);
  CU_add_test(tr, "without a base: layers from the shapes", test_trace_import_no_base);
  CU_add_test(tr, "the measured model drives a scenario", test_trace_model_in_scenario);
  CU_add_test(tr, "two steps (medians) from a gzip'd trace", test_trace_two_steps_and_gzip);
  CU_add_test(tr, "unsteady steps: the medians, and a warning", test_trace_unsteady);
  CU_add_test(tr, "a comm hook's bucket copies (aten::copy_) come out too", test_trace_hook_copy);
  CU_add_test(tr, "several traces: medians over all their steps; a broken one named", test_trace_many);
  CU_add_test(tr, "broken traces: file:line:column or event index, nothing written", test_trace_errors);
  CU_add_test(tr, "the command: exit codes, nothing written on errors", test_trace_cli);
  CU_pSuite fit = CU_add_suite("fit", NULL, NULL);
  CU_add_test(fit, "alpha held at zero or above, the fit still through the points", test_fit_alpha_nonnegative);
  CU_add_test(fit, "many sizes: the screened search finds the knees", test_fit_many_sizes);
  CU_pSuite pl = CU_add_suite("plot_fit", suite_init, suite_clean);
  CU_add_test(pl, "plot fit renders PNG and SVG and removes its CSV", test_plot_fit);
}

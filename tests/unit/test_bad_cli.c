/* Integration: the real `ddpsim simulate` on files of the bad-input corpus
 * exits with status 3 (invalid input file), prints the expected message on
 * stderr, and leaves the output directory without a CSV or a temp file
 * (docs/architecture.md: bad input never produces partial output files). A valid
 * scenario run the same way is the control: it exits 0 and writes its CSV,
 * so an empty directory really means nothing was written. */
#include "badcorpus.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define DDPSIM_BIN DDPSIM_BINARY_DIR "/ddpsim"
#define BAD_DIR DDPSIM_SOURCE_DIR "/tests/bad"

static char scratch[4096];

static int suite_init(void) { return tu_mkdtemp(scratch, sizeof scratch, "badcli"); }

static int suite_clean(void) {
  tu_rmdir(scratch);
  return 0;
}

/* Run ddpsim simulate SCENARIO -o OUT; stderr into err_path. Returns the
 * exit status, or -1 if it did not exit normally. */
static int run_simulate(const char *scenario, const char *out, const char *err_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  char *argv[] = {"ddpsim", "simulate", (char *)scenario, "-o", (char *)out, "-j", "2", NULL};
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

static int n_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
  closedir(d);
  return n;
}

static void test_control_good_scenario(void) {
  char out[4200], err[4200];
  snprintf(out, sizeof out, "%s/good", scratch);
  snprintf(err, sizeof err, "%s/good.err", scratch);
  CU_ASSERT_FATAL(mkdir(out, 0755) == 0);
  CU_ASSERT_EQUAL(run_simulate(DDPSIM_SOURCE_DIR "/tests/data/mlp-test.cfg", out, err), 0);
  char csv[4300];
  snprintf(csv, sizeof csv, "%s/mlp-test.csv", out);
  struct stat st;
  CU_ASSERT(stat(csv, &st) == 0 && st.st_size > 0);
  CU_ASSERT_EQUAL(n_entries(out), 1);
}

/* A spread of the corpus: scenario syntax, keys, ranges, sweeps, files,
 * cross-checks, and errors inside profiles and models. */
static const char *const picks[] = {"syntax-unclosed-array.cfg", "unknown-network-key.cfg", "out-of-range-nodes.cfg",
    "empty-sweep-nodes.cfg", "missing-profile-file.cfg", "duplicate-network-names.cfg", "nccl-on-cpu.cfg",
    "profile-fits-out-of-order.cfg", "profile-jitter-lognormal-sigma.cfg", "model-duplicate-layer-names.cfg",
    "model-zero-element-tensor.cfg", "output-csv-path.cfg", "output-csv-dotdot.cfg", "output-csv-empty.cfg",
    "profile-is-directory.cfg", "include-directory.cfg", NULL};

static void test_bad_files(void) {
  int n;
  bad_case *cases = bad_corpus_read(BAD_DIR, &n);
  CU_ASSERT_FATAL(cases != NULL);
  int ran = 0;
  for (const char *const *pk = picks; *pk; pk++) {
    const bad_case *c = NULL;
    for (int i = 0; i < n; i++)
      if (!strcmp(strrchr(cases[i].path, '/') + 1, *pk))
        c = &cases[i];
    if (!c) {
      fprintf(stderr, "\n  %s is not in the corpus", *pk);
      CU_FAIL("picked file missing from tests/bad");
      continue;
    }
    char out[4200], err[4200];
    snprintf(out, sizeof out, "%s/out-%d", scratch, ran);
    snprintf(err, sizeof err, "%s/err-%d.txt", scratch, ran);
    CU_ASSERT_FATAL(mkdir(out, 0755) == 0);
    int status = run_simulate(c->path, out, err);
    char *text = tu_read_file(err, NULL);
    CU_ASSERT_FATAL(text != NULL);
    int ok_status = status == 3;
    int ok_prefix = strncmp(text, "ddpsim simulate: error: ", 24) == 0;
    char why[1024] = "";
    if (ok_prefix)
      bad_case_check_msg(c, text + 24, why, sizeof why);
    int left = n_entries(out);
    if (!ok_status || !ok_prefix || why[0] || left != 0)
      fprintf(stderr, "\n  %s: exit %d, %d files left in -o, %s\n    stderr: %s", c->path, status, left,
          why[0] ? why : "", text);
    CU_ASSERT(ok_status);
    CU_ASSERT(ok_prefix);
    CU_ASSERT(why[0] == '\0');
    CU_ASSERT_EQUAL(left, 0);
    free(text);
    ran++;
  }
  /* An output directory that does not exist is not created either. */
  char out[4200], err[4200];
  snprintf(out, sizeof out, "%s/never-made", scratch);
  snprintf(err, sizeof err, "%s/never-made.err", scratch);
  CU_ASSERT_EQUAL(run_simulate(BAD_DIR "/unknown-top-key.cfg", out, err), 3);
  struct stat st;
  CU_ASSERT(stat(out, &st) != 0);
  CU_ASSERT(ran >= 10);
  free(cases);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("bad_inputs_cli", suite_init, suite_clean);
  CU_add_test(s, "control: a valid scenario writes its CSV", test_control_good_scenario);
  CU_add_test(s, "bad files: exit 3, message, no output", test_bad_files);
}

/* core/afile: no output destroys what the user has. A regular file is
 * replaced whole (mode kept); a symlink's target is written, the link stays;
 * /dev/null and FIFOs are written through and stay what they are; an output
 * that is an input of the command, a directory, an empty path or a missing
 * directory is refused (CORE_EUSAGE) with nothing created; temp files go on
 * abort, on SIGTERM, and, when their writer died, at the next sweep. An
 * append copies the file and renames the copy with the rows added: until
 * then the file is as it was, and appenders at once lose no row. */
#define _GNU_SOURCE
#include "testutil.h"

#include "core/afile.h"
#include "core/err.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[4096];

static int suite_init(void) {
  core_afile_track_inputs(1);
  return tu_mkdtemp(dir, sizeof dir, "afile");
}
static int suite_clean(void) {
  tu_rmdir(dir);
  return 0;
}

static void at(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fputs(text, f);
  fclose(f);
}

static int has(const char *path, const char *text) {
  char buf[256] = "";
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t k = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[k] = '\0';
  return strcmp(buf, text) == 0;
}

static int write_text(const char *path, const char *text) {
  core_afile a;
  int rc = core_afile_open(&a, path);
  if (rc)
    return rc;
  fputs(text, a.f);
  return core_afile_commit(&a);
}

/* Names in dir that contain ".tmp.". */
static int temps(void) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)))
    n += strstr(de->d_name, ".tmp.") != NULL;
  if (d)
    closedir(d);
  return n;
}

static void test_regular_and_links(void) {
  char f[4200], l[4200], dl[4200], target[4200];
  at(f, sizeof f, "out.csv");
  put(f, "old");
  chmod(f, 0600);
  CU_ASSERT_EQUAL(write_text(f, "new"), 0);
  CU_ASSERT(has(f, "new"));
  struct stat st;
  CU_ASSERT(stat(f, &st) == 0 && (st.st_mode & 0777) == 0600);
  /* A symlink: its target gets the text, the link stays a link. */
  at(l, sizeof l, "link.csv");
  CU_ASSERT_EQUAL(symlink("out.csv", l), 0);
  CU_ASSERT_EQUAL(write_text(l, "via link"), 0);
  CU_ASSERT(lstat(l, &st) == 0 && S_ISLNK(st.st_mode));
  CU_ASSERT(has(f, "via link"));
  /* A dangling one: its target is created. */
  at(dl, sizeof dl, "dangling.csv");
  at(target, sizeof target, "made-by-link.csv");
  CU_ASSERT_EQUAL(symlink("made-by-link.csv", dl), 0);
  CU_ASSERT_EQUAL(write_text(dl, "made"), 0);
  CU_ASSERT(lstat(dl, &st) == 0 && S_ISLNK(st.st_mode));
  CU_ASSERT(has(target, "made"));
  CU_ASSERT_EQUAL(temps(), 0);
  unlink(l);
  unlink(dl);
  unlink(target);
  unlink(f);
}

static void test_devices_and_fifos(void) {
  struct stat before, after;
  CU_ASSERT_EQUAL_FATAL(stat("/dev/null", &before), 0);
  CU_ASSERT_EQUAL(write_text("/dev/null", "discarded"), 0);
  CU_ASSERT(stat("/dev/null", &after) == 0 && S_ISCHR(after.st_mode) && after.st_rdev == before.st_rdev);
  core_afile a;
  CU_ASSERT_EQUAL(core_afile_open_atomic(&a, "/dev/null"), CORE_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "character device"));

  char fifo[4200];
  at(fifo, sizeof fifo, "pipe");
  CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0644), 0);
  /* Nobody reads: a clear error at once, not a hang; the FIFO stays. */
  CU_ASSERT_EQUAL(write_text(fifo, "x"), CORE_EIO);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "nothing reads the FIFO"));
  /* With a reader: the text goes through. */
  int rd = open(fifo, O_RDONLY | O_NONBLOCK);
  CU_ASSERT_FATAL(rd >= 0);
  CU_ASSERT_EQUAL(write_text(fifo, "through"), 0);
  char buf[32] = "";
  CU_ASSERT_EQUAL(read(rd, buf, sizeof buf - 1), 7);
  CU_ASSERT_STRING_EQUAL(buf, "through");
  close(rd);
  CU_ASSERT(stat(fifo, &after) == 0 && S_ISFIFO(after.st_mode));
  unlink(fifo);
}

static void test_inputs_refused(void) {
  char in[4200], hard[4200], soft[4200];
  at(in, sizeof in, "scenario.cfg");
  put(in, "input");
  core_afile_note_input(in);
  CU_ASSERT_EQUAL(write_text(in, "x"), CORE_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "same file as the input"));
  CU_ASSERT_EQUAL(core_afile_check(in), CORE_EUSAGE);
  /* By another name: a hard link, a symlink. */
  at(hard, sizeof hard, "hard.cfg");
  at(soft, sizeof soft, "soft.cfg");
  CU_ASSERT_EQUAL(link(in, hard), 0);
  CU_ASSERT_EQUAL(symlink("scenario.cfg", soft), 0);
  CU_ASSERT_EQUAL(write_text(hard, "x"), CORE_EUSAGE);
  CU_ASSERT_EQUAL(write_text(soft, "x"), CORE_EUSAGE);
  CU_ASSERT(has(in, "input"));
  CU_ASSERT_EQUAL(temps(), 0);
  unlink(hard);
  unlink(soft);
  /* in stays: a noted input's inode, reused by a later file, would refuse it. */
}

static void test_bad_paths(void) {
  char missing[4200], sub[4200];
  CU_ASSERT_EQUAL(write_text("", "x"), CORE_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "empty output path"));
  CU_ASSERT_EQUAL(write_text(dir, "x"), CORE_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "is a directory"));
  at(missing, sizeof missing, "no/such/dir/out.csv");
  CU_ASSERT_EQUAL(write_text(missing, "x"), CORE_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "does not exist"));
  at(sub, sizeof sub, "no");
  struct stat st;
  CU_ASSERT(stat(sub, &st) != 0 && errno == ENOENT); /* not created */
  /* A path that ends as a directory's does ("x/", "x/.", "x/..") names no
   * file: refused by the check, not by the temp file after the work. */
  static const char *const dir_like[] = {"new.csv/", "new/.", "new/..", "./"};
  for (size_t i = 0; i < sizeof dir_like / sizeof *dir_like; i++) {
    at(missing, sizeof missing, dir_like[i]);
    CU_ASSERT_EQUAL(core_afile_check(missing), CORE_EUSAGE);
    CU_ASSERT_EQUAL(write_text(missing, "x"), CORE_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "names a directory, not a file"));
  }
  /* Under a file, or through a loop of links: a usage error too. */
  char file[4200], loop[4200];
  at(file, sizeof file, "plain.txt");
  CU_ASSERT_EQUAL_FATAL(write_text(file, "x"), 0);
  at(missing, sizeof missing, "plain.txt/out.csv");
  CU_ASSERT_EQUAL(write_text(missing, "x"), CORE_EUSAGE);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "Not a directory; choose another path"));
  at(loop, sizeof loop, "loop");
  CU_ASSERT_EQUAL_FATAL(symlink("loop", loop), 0);
  at(missing, sizeof missing, "loop/out.csv");
  CU_ASSERT_EQUAL(write_text(missing, "x"), CORE_EUSAGE);
  unlink(loop);
  unlink(file);
  CU_ASSERT_EQUAL(temps(), 0);
}

static void test_abort_and_signal(void) {
  char f[4200];
  at(f, sizeof f, "aborted.csv");
  core_afile a;
  CU_ASSERT_EQUAL_FATAL(core_afile_open(&a, f), 0);
  fputs("half", a.f);
  CU_ASSERT_EQUAL(temps(), 1);
  core_afile_abort(&a);
  core_afile_abort(&a);
  CU_ASSERT_EQUAL(temps(), 0);
  CU_ASSERT(access(f, F_OK) != 0);
  /* A writer stopped by SIGTERM takes its temp file with it. */
  pid_t pid = fork();
  CU_ASSERT_FATAL(pid >= 0);
  if (pid == 0) {
    if (core_afile_open(&a, f) != 0)
      _exit(3);
    fputs("half", a.f);
    fflush(a.f);
    raise(SIGTERM);
    _exit(4);
  }
  int status;
  CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
  CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  CU_ASSERT_EQUAL(temps(), 0);
}

static void test_sweep(void) {
  char dead[4200], live[4200], other[4200];
  at(dead, sizeof dead, "res.csv.tmp.AAAAAA");
  at(live, sizeof live, "res.csv.tmp.BBBBBB");
  at(other, sizeof other, "notes.tmp.CCCCCC");
  put(dead, "d");
  put(live, "l");
  put(other, "o");
  int fd = open(live, O_RDONLY);
  CU_ASSERT_FATAL(fd >= 0 && flock(fd, LOCK_EX) == 0);
  CU_ASSERT_EQUAL(core_afile_sweep_stale(dir, "res.csv"), 1);
  CU_ASSERT(access(dead, F_OK) != 0);
  CU_ASSERT(access(live, F_OK) == 0);
  CU_ASSERT(access(other, F_OK) == 0);
  close(fd);
  CU_ASSERT_EQUAL(core_afile_sweep_stale(dir, "res.csv"), 1);
  CU_ASSERT(access(live, F_OK) != 0);
  unlink(other);
}

/* Append text to path; had: what the file held. */
static int append_text(const char *path, const char *text, long long *had) {
  core_afile a;
  int rc = core_afile_open_append(&a, path, had);
  if (rc)
    return rc;
  fputs(text, a.f);
  return core_afile_commit(&a);
}

static void test_append(void) {
  char f[4200], l[4200], in[4200];
  long long had = -1;
  at(f, sizeof f, "runs.csv");
  CU_ASSERT_EQUAL(append_text(f, "h\n", &had), 0); /* a new file */
  CU_ASSERT_EQUAL(had, 0);
  CU_ASSERT(has(f, "h\n"));
  chmod(f, 0600);
  CU_ASSERT_EQUAL(append_text(f, "r1\n", &had), 0);
  CU_ASSERT_EQUAL(had, 2);
  CU_ASSERT(has(f, "h\nr1\n"));
  struct stat st;
  CU_ASSERT(stat(f, &st) == 0 && (st.st_mode & 0777) == 0600);
  /* Until the commit, the file is as it was; an abort leaves it so. */
  core_afile a;
  CU_ASSERT_EQUAL_FATAL(core_afile_open_append(&a, f, &had), 0);
  fputs("half", a.f);
  fflush(a.f);
  CU_ASSERT(has(f, "h\nr1\n"));
  CU_ASSERT_EQUAL(temps(), 1);
  core_afile_abort(&a);
  CU_ASSERT(has(f, "h\nr1\n"));
  CU_ASSERT_EQUAL(temps(), 0);
  /* Through a symlink: its target grows, the link stays. */
  at(l, sizeof l, "runs-link.csv");
  CU_ASSERT_EQUAL(symlink("runs.csv", l), 0);
  CU_ASSERT_EQUAL(append_text(l, "r2\n", &had), 0);
  CU_ASSERT(lstat(l, &st) == 0 && S_ISLNK(st.st_mode));
  CU_ASSERT(has(f, "h\nr1\nr2\n"));
  /* Written through, as outputs are; refused, as outputs are. */
  CU_ASSERT_EQUAL(append_text("/dev/null", "x\n", &had), 0);
  CU_ASSERT_EQUAL(had, 0);
  CU_ASSERT_EQUAL(append_text(dir, "x\n", &had), CORE_EUSAGE);
  at(in, sizeof in, "measured.csv");
  put(in, "input");
  core_afile_note_input(in);
  CU_ASSERT_EQUAL(append_text(in, "x\n", &had), CORE_EUSAGE);
  CU_ASSERT(has(in, "input")); /* stays, as in test_inputs_refused */
  CU_ASSERT_EQUAL(temps(), 0);
  unlink(l);
  unlink(f);
}

/* Writers appending to one file at once: every row arrives. */
static void test_append_concurrent(void) {
  enum { WRITERS = 4, ROWS = 25 };
  char f[4200];
  at(f, sizeof f, "shared.csv");
  pid_t pid[WRITERS];
  for (int w = 0; w < WRITERS; w++) {
    pid[w] = fork();
    CU_ASSERT_FATAL(pid[w] >= 0);
    if (pid[w] == 0) {
      for (int r = 0; r < ROWS; r++) {
        char row[64];
        long long had;
        snprintf(row, sizeof row, "writer %d row %d\n", w, r);
        if (append_text(f, row, &had) != 0)
          _exit(3);
      }
      _exit(0);
    }
  }
  for (int w = 0; w < WRITERS; w++) {
    int status;
    CU_ASSERT_EQUAL(waitpid(pid[w], &status, 0), pid[w]);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  FILE *in = fopen(f, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(in);
  int lines = 0, ch;
  while ((ch = fgetc(in)) != EOF)
    lines += ch == '\n';
  fclose(in);
  CU_ASSERT_EQUAL(lines, WRITERS * ROWS);
  CU_ASSERT_EQUAL(temps(), 0);
  unlink(f);
}

/* What core_mkdirs_made created is taken back, deepest first, while empty;
 * what was there before stays, wherever the path passes it. */
static void test_made_undo(void) {
  char top[4400], deep[4400], other[4400];
  snprintf(top, sizeof top, "%s/made", dir);
  snprintf(deep, sizeof deep, "%s/made//a/b/", dir);
  snprintf(other, sizeof other, "%s/made/a/keep", dir);
  core_made_dirs m = {0}, again = {0};
  core_made_dirs_undo(&m); /* a zeroed one does nothing */
  CU_ASSERT_EQUAL_FATAL(core_mkdirs_made(deep, &m), 0);
  CU_ASSERT_EQUAL(core_mkdirs_made(deep, &again), 0);
  CU_ASSERT_EQUAL(again.n, 0); /* nothing new made */
  core_made_dirs_undo(&again);
  CU_ASSERT_EQUAL(access(deep, F_OK), 0);
  core_made_dirs_undo(&m);
  CU_ASSERT_NOT_EQUAL(access(top, F_OK), 0);
  CU_ASSERT_EQUAL(access(dir, F_OK), 0); /* the directory that was there */
  /* A level something else was put into stops the undo there. */
  CU_ASSERT_EQUAL_FATAL(core_mkdirs_made(deep, &m), 0);
  CU_ASSERT_EQUAL_FATAL(mkdir(other, 0755), 0);
  core_made_dirs_undo(&m);
  CU_ASSERT_NOT_EQUAL(access(deep, F_OK), 0);
  CU_ASSERT_EQUAL(access(other, F_OK), 0);
  rmdir(other);
  snprintf(other, sizeof other, "%s/made/a", dir);
  rmdir(other);
  rmdir(top);
  /* Through "..", past an empty directory that was there: only the new
   * level goes; "new/." takes back "new". */
  char old[4400], through[4400];
  snprintf(old, sizeof old, "%s/old", dir);
  snprintf(through, sizeof through, "%s/new/../old", dir);
  CU_ASSERT_EQUAL_FATAL(mkdir(old, 0755), 0);
  CU_ASSERT_EQUAL_FATAL(core_mkdirs_made(through, &m), 0);
  core_made_dirs_undo(&m);
  CU_ASSERT_EQUAL(access(old, F_OK), 0);
  snprintf(other, sizeof other, "%s/new", dir);
  CU_ASSERT_NOT_EQUAL(access(other, F_OK), 0);
  snprintf(through, sizeof through, "%s/new/.", dir);
  CU_ASSERT_EQUAL_FATAL(core_mkdirs_made(through, &m), 0);
  core_made_dirs_undo(&m);
  CU_ASSERT_NOT_EQUAL(access(other, F_OK), 0);
  rmdir(other);
  rmdir(old);
}

/* A directory that cannot be made for the path's sake (a name too long, a
 * path past PATH_MAX, a link that leads nowhere on the way) is the user's to
 * change: CORE_EUSAGE (exit 2), with nothing made. */
static void test_mkdirs_refused(void) {
  char path[8192], link[4400];
  core_made_dirs m = {0};
  int n = snprintf(path, sizeof path, "%s/", dir);
  memset(path + n, 'x', 300);
  path[n + 300] = '\0';
  CU_ASSERT_EQUAL(core_mkdirs_made(path, &m), CORE_EUSAGE);
  CU_ASSERT_EQUAL(m.n, 0);
  for (n = snprintf(path, sizeof path, "%s", dir); n < 5000; n += 100)
    snprintf(path + n, sizeof path - (size_t)n, "/%099d", 0);
  CU_ASSERT_EQUAL(core_mkdirs_made(path, &m), CORE_EUSAGE);
  CU_ASSERT(strstr(core_err_msg(), "too long") != NULL);
  snprintf(link, sizeof link, "%s/nowhere", dir);
  CU_ASSERT_EQUAL_FATAL(symlink("missing-dir", link), 0);
  snprintf(path, sizeof path, "%s/sub/sub2", link);
  CU_ASSERT_EQUAL(core_mkdirs_made(path, &m), CORE_EUSAGE);
  CU_ASSERT(strstr(core_err_msg(), "symbolic link that leads nowhere") != NULL);
  CU_ASSERT_EQUAL(m.n, 0);
  unlink(link);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("afile", suite_init, suite_clean);
  CU_add_test(s, "regular files replaced whole; symlinks followed", test_regular_and_links);
  CU_add_test(s, "character devices and FIFOs written through", test_devices_and_fifos);
  CU_add_test(s, "an input of the command is never an output", test_inputs_refused);
  CU_add_test(s, "empty path, directory, missing directory refused", test_bad_paths);
  CU_add_test(s, "temp file gone on abort and on SIGTERM", test_abort_and_signal);
  CU_add_test(s, "temp files of dead writers swept, live ones kept", test_sweep);
  CU_add_test(s, "append: the file whole before and after; links, devices, inputs", test_append);
  CU_add_test(s, "append: writers at once lose no row", test_append_concurrent);
  CU_add_test(s, "directories made are taken back while empty, no others", test_made_undo);
  CU_add_test(s, "directories that cannot be made for their path: usage errors", test_mkdirs_refused);
}

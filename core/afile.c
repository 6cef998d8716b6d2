#include "afile.h"

#include "err.h"
#include "path.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- inputs of this command -------------------------------------------------- */

typedef struct input {
  dev_t dev;
  ino_t ino;
  char path[256]; /* for the message; cut if longer */
} input;

static pthread_mutex_t inputs_lock = PTHREAD_MUTEX_INITIALIZER;
static input *inputs;
static int n_inputs, cap_inputs;
static atomic_int tracking;

void core_afile_track_inputs(int on) { atomic_store(&tracking, on); }

/* Standard output's file as it was when the hook was set (a descriptor 1
 * closed then, and later taken by an input, is not standard output). */
static void (*_Atomic stdout_hook)(const char *path);
static struct stat stdout_st;

void core_afile_on_stdout_input(void (*fn)(const char *path)) {
  if (fn && (fstat(STDOUT_FILENO, &stdout_st) != 0 || !S_ISREG(stdout_st.st_mode)))
    fn = NULL; /* a terminal, a pipe, /dev/null or nothing: no file to add to */
  atomic_store(&stdout_hook, fn);
}

static int is_stdout(const struct stat *st) { return stdout_st.st_dev == st->st_dev && stdout_st.st_ino == st->st_ino; }

static void note(const struct stat *st, const char *path) {
  if (!atomic_load(&tracking) || !S_ISREG(st->st_mode))
    return; /* /dev/null or a pipe read and written is no loss */
  void (*hook)(const char *) = atomic_load(&stdout_hook);
  if (hook && is_stdout(st))
    hook(path);
  pthread_mutex_lock(&inputs_lock);
  for (int i = 0; i < n_inputs; i++)
    if (inputs[i].dev == st->st_dev && inputs[i].ino == st->st_ino)
      goto out_unlock;
  if (n_inputs == cap_inputs) {
    int cap = cap_inputs ? 2 * cap_inputs : 16;
    input *more = realloc(inputs, sizeof *more * (size_t)cap);
    if (!more)
      goto out_unlock; /* the check is lost, not the command */
    inputs = more;
    cap_inputs = cap;
  }
  inputs[n_inputs].dev = st->st_dev;
  inputs[n_inputs].ino = st->st_ino;
  snprintf(inputs[n_inputs].path, sizeof inputs[n_inputs].path, "%s", path);
  n_inputs++;
out_unlock:
  pthread_mutex_unlock(&inputs_lock);
}

void core_afile_note_input(const char *path) {
  struct stat st;
  if (path && stat(path, &st) == 0)
    note(&st, path);
}

void core_afile_note_input_fd(int fd, const char *path) {
  struct stat st;
  if (fstat(fd, &st) == 0)
    note(&st, path ? path : "an input");
}

/* The input that st is, or NULL. The copy of its name lives in buf. */
static const char *input_of(const struct stat *st, char *buf, size_t n) {
  const char *hit = NULL;
  pthread_mutex_lock(&inputs_lock);
  for (int i = 0; i < n_inputs && !hit; i++)
    if (inputs[i].dev == st->st_dev && inputs[i].ino == st->st_ino) {
      snprintf(buf, n, "%s", inputs[i].path);
      hit = buf;
    }
  pthread_mutex_unlock(&inputs_lock);
  return hit;
}

/* ---- where an output goes ------------------------------------------------------ */

enum kind { K_NEW, K_REGULAR, K_DIRECT };

typedef struct target {
  enum kind kind;
  int append;       /* direct write to a regular file reached through /proc (/dev/stdout) */
  mode_t mode;      /* of the file replaced */
  char final[4096]; /* the name that is replaced or created: path after symlinks */
} target;
/* Directories go into buffers of the paths' size, where core_path_dir cannot fail. */

/* Follow path's symlinks to the name they end at (which may not exist).
 * *via_proc is set when a hop passes through /proc (/dev/stdout, /dev/fd/N):
 * such links name open files, not places to rename into. */
static int follow_links(const char *path, char *out, size_t n, int *via_proc) {
  char cur[4096], link[4096], dir[4096];
  snprintf(cur, sizeof cur, "%s", path);
  *via_proc = 0;
  for (int hop = 0;; hop++) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
      break;
    if (hop == 40)
      return core_err_set(CORE_EUSAGE, "output '%s': too many levels of symbolic links", path);
    if (strncmp(cur, "/proc/", 6) == 0)
      *via_proc = 1;
    ssize_t k = readlink(cur, link, sizeof link - 1);
    if (k < 0)
      return core_err_errno(errno, "cannot read the symbolic link '%s'", cur);
    link[k] = '\0';
    if (link[0] == '/') {
      snprintf(cur, sizeof cur, "%s", link);
    } else {
      core_path_dir(cur, dir, sizeof dir);
      size_t dl = strlen(dir), ll = strlen(link);
      if (dl + 1 + ll >= sizeof cur)
        return core_err_set(CORE_EUSAGE, "output '%s': its link target is too long", path);
      memcpy(cur, dir, dl);
      cur[dl] = '/';
      memcpy(cur + dl + 1, link, ll + 1);
    }
  }
  if (strlen(cur) >= n)
    return core_err_set(CORE_EUSAGE, "output path is too long: %.64s...", path);
  snprintf(out, n, "%s", cur);
  return 0;
}

static const char *kind_name(mode_t m) {
  return S_ISDIR(m) ? "a directory" : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a file";
}

/* A directory the user may not write (permissions, a read-only file system)
 * is a path to choose again (exit 2), like one that does not exist. */
static int not_ours(int e) { return e == EACCES || e == EPERM || e == EROFS; }

/* The temp file goes beside the target. */
static int writable_dir(const char *final) {
  char dir[4096];
  core_path_dir(final, dir, sizeof dir);
  if (access(dir, W_OK | X_OK) == 0)
    return 0;
  if (not_ours(errno))
    return core_err_set(CORE_EUSAGE, "cannot write into directory '%s' (for '%s'): %s; choose another path", dir, final,
        strerror(errno));
  return core_err_errno(errno, "cannot write into directory '%s' (for '%s'); check its permissions", dir, final);
}

/* The temp file's name is the target's and ".tmp.XXXXXX": a name too long
 * for that (or a component too long for the file system) is the user's to
 * shorten, and is told before any work. */
static const char tmp_suffix[] = ".tmp.XXXXXX";

/* path for a message: whole, or its first 64 bytes and "...". */
static const char *shown(const char *path, char *buf, size_t n) {
  snprintf(buf, n, strlen(path) > 80 ? "%.64s..." : "%s", path);
  return buf;
}

static int parts_fit(const char *path) {
  char sh[96];
  for (const char *p = path; *p; p += strspn(p, "/")) {
    size_t k = strcspn(p, "/");
    if (k > NAME_MAX)
      return core_err_set(CORE_EUSAGE, "output '%s': a name in that path is longer than %d bytes; shorten it",
          shown(path, sh, sizeof sh), NAME_MAX);
    p += k;
  }
  return 0;
}

/* final (path after its links) leaves room for the temp file's suffix. */
static int name_fits(const char *path, const char *final) {
  char sh[96], fsh[96];
  size_t base = strlen(core_path_base(final));
  if (base + sizeof tmp_suffix - 1 > NAME_MAX)
    return core_err_set(CORE_EUSAGE,
        "output '%s'%s%s%s: its name is %zu bytes; the temp file written beside it adds %zu, past the file "
        "system's %d: shorten the name to %zu bytes or less",
        shown(path, sh, sizeof sh), strcmp(path, final) ? " (a link to '" : "",
        strcmp(path, final) ? shown(final, fsh, sizeof fsh) : "", strcmp(path, final) ? "')" : "", base,
        sizeof tmp_suffix - 1, NAME_MAX, (size_t)NAME_MAX - (sizeof tmp_suffix - 1));
  return 0;
}

static int resolve(const char *path, int regular_only, target *t) {
  memset(t, 0, sizeof *t);
  if (!path || !*path)
    return core_err_set(CORE_EUSAGE, "an empty output path: name a file");
  const char *base = core_path_base(path);
  if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) /* "x/", "x/.": no file name to write */
    return core_err_set(CORE_EUSAGE, "output '%s' names a directory, not a file; name a file", path);
  if (strlen(path) >= sizeof t->final)
    return core_err_set(CORE_EUSAGE, "output path is too long: %.64s...", path);
  int via_proc, rc = parts_fit(path);
  if (rc || (rc = follow_links(path, t->final, sizeof t->final, &via_proc)) != 0)
    return rc;
  struct stat st;
  if (stat(path, &st) != 0) {
    /* A part of the path a file, a loop of links, no search permission:
     * a path to choose again (exit 2); other failures are the system's. */
    if (errno == ENOTDIR || errno == ELOOP || errno == ENAMETOOLONG || not_ours(errno))
      return core_err_set(CORE_EUSAGE, "cannot write '%s': %s; choose another path", path, strerror(errno));
    if (errno != ENOENT)
      return core_err_errno(errno, "cannot look at output '%s'", path);
    char dir[4096];
    struct stat ds;
    core_path_dir(t->final, dir, sizeof dir);
    if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode))
      return core_err_set(CORE_EUSAGE,
          "cannot write '%s': the directory '%s' does not exist; create it first or choose another path", path, dir);
    t->kind = K_NEW;
    if ((rc = name_fits(path, t->final)) != 0)
      return rc;
    return writable_dir(t->final);
  }
  char other[256];
  const char *in = input_of(&st, other, sizeof other);
  if (in)
    return core_err_set(CORE_EUSAGE,
        "output '%s' is the same file as the input '%s' of this command: writing it would destroy that input; choose "
        "another output path",
        path, in);
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || (S_ISREG(st.st_mode) && via_proc)) {
    if (regular_only)
      return core_err_set(CORE_EUSAGE,
          "output '%s' is %s; this output is replaced by a rename, so it must be a regular file", path,
          S_ISFIFO(st.st_mode)  ? "a FIFO"
          : S_ISCHR(st.st_mode) ? "a character device"
                                : "an open file");
    t->kind = K_DIRECT;
    t->append = S_ISREG(st.st_mode);
    snprintf(t->final, sizeof t->final, "%s", path);
    return 0;
  }
  if (!S_ISREG(st.st_mode))
    return core_err_set(CORE_EUSAGE,
        "output '%s' is %s; name a regular file (or a character device or FIFO to write through)", path,
        kind_name(st.st_mode));
  t->kind = K_REGULAR;
  t->mode = st.st_mode & 07777;
  if ((rc = name_fits(path, t->final)) != 0)
    return rc;
  return writable_dir(t->final);
}

int core_afile_check(const char *path) {
  target t;
  return resolve(path, 0, &t);
}

/* ---- temp files removed when the process is stopped ----------------------------- */

enum { N_SLOTS = 64 };
static char slot_path[N_SLOTS][4200];
static atomic_int slot_state[N_SLOTS]; /* 0 free, 1 being filled, 2 holds a temp file */
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

void core_afile_remove_temps(void) {
  for (int i = 0; i < N_SLOTS; i++)
    if (atomic_load(&slot_state[i]) == 2)
      unlink(slot_path[i]);
}

static void on_stop(int sig) {
  core_afile_remove_temps();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Only signals left at their default: a command's own handler keeps them. */
static void install_handlers(void) {
  for (size_t i = 0; i < sizeof stop_signals / sizeof *stop_signals; i++) {
    struct sigaction old, sa;
    if (sigaction(stop_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
      continue;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(stop_signals[i], &sa, NULL);
  }
}

static int slot_take(const char *tmp) {
  pthread_once(&handlers_once, install_handlers);
  for (int i = 0; i < N_SLOTS; i++) {
    int free_state = 0;
    if (atomic_compare_exchange_strong(&slot_state[i], &free_state, 1)) {
      snprintf(slot_path[i], sizeof slot_path[i], "%s", tmp);
      atomic_store(&slot_state[i], 2);
      return i;
    }
  }
  return -1; /* more temp files open than slots: this one is not cleaned on a signal */
}

static void slot_give(core_afile *a) {
  if (a->slot >= 0)
    atomic_store(&slot_state[a->slot], 0);
  a->slot = -1;
}

/* ---- writing -------------------------------------------------------------------- */

static void sweep_target(const char *final);

static int open_direct(core_afile *a, const target *t) {
  int flags = O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK | (t->append ? O_APPEND : 0);
  int fd = open(t->final, flags);
  if (fd < 0) {
    if (errno == ENXIO)
      return core_err_set(CORE_EIO, "nothing reads the FIFO '%s': start its reader first", t->final);
    return core_err_errno(errno, "cannot open '%s' for writing", t->final);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (!(a->f = fdopen(fd, "w"))) {
    int e = errno;
    close(fd);
    return core_err_errno(e, "cannot open '%s'", t->final);
  }
  a->direct = 1;
  return 0;
}

static int open_temp(core_afile *a, const target *t, const char *mode) {
  snprintf(a->tmp, sizeof a->tmp, "%s%s", t->final, tmp_suffix);
  int fd = mkstemp(a->tmp);
  if (fd < 0)
    return core_err_errno(errno, "cannot create a temp file beside '%s' (check the directory is writable)", t->final);
  a->slot = slot_take(a->tmp);
  flock(fd, LOCK_EX | LOCK_NB); /* held until closed: core_afile_sweep_stale leaves it be */
  fchmod(fd, t->kind == K_REGULAR ? t->mode : 0644);
  if (!(a->f = fdopen(fd, mode))) {
    int e = errno;
    close(fd);
    unlink(a->tmp);
    slot_give(a);
    return core_err_errno(e, "cannot open '%s'", a->tmp);
  }
  return 0;
}

/* Appenders take turns on the target's directory: the lock covers a file
 * not yet created, and outlives the rename that replaces the file's inode.
 * A file system without flock leaves them unserialised. */
static int lock_dir(core_afile *a) {
  char dir[4096];
  core_path_dir(a->path, dir, sizeof dir);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return core_err_errno(errno, "cannot open directory '%s' to append to '%s'", dir, a->path);
  while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
    ;
  a->locked = 1;
  a->lock_fd = fd;
  return 0;
}

static void unlock_dir(core_afile *a) {
  if (a->locked)
    close(a->lock_fd); /* releases the flock */
  a->locked = 0;
}

/* What a->path holds now (under the lock: a file another appender created
 * since resolve counts) into the temp file, with its mode. */
static int copy_existing(core_afile *a, long long *had) {
  int fd = open(a->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? 0 : core_err_errno(errno, "cannot read '%s' to append to it", a->path);
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    rc = core_err_set(CORE_EUSAGE, "'%s' is no longer a regular file; cannot append to it", a->path);
    goto out_close;
  }
  fchmod(fileno(a->f), st.st_mode & 07777);
  char buf[65536];
  ssize_t k;
  while ((k = read(fd, buf, sizeof buf)) > 0) {
    if (fwrite(buf, 1, (size_t)k, a->f) != (size_t)k) {
      rc = core_err_errno(errno ? errno : EIO, "copying '%s' to append to it failed", a->path);
      goto out_close;
    }
    *had += k;
  }
  if (k < 0)
    rc = core_err_errno(errno, "reading '%s' to append to it failed", a->path);
  /* A copy smaller than stdio's buffer meets a full disk only here: the
   * caller, reading the copy back, would otherwise see a short file. */
  else if (fflush(a->f) != 0)
    rc = core_err_errno(errno ? errno : EIO, "copying '%s' to append to it failed", a->path);
out_close:
  close(fd);
  return rc;
}

/* The temp file of an append (had != NULL) starts as a copy of the file. */
static int open_appending(core_afile *a, const target *t, long long *had) {
  int rc = lock_dir(a);
  if (rc)
    return rc;
  if ((rc = open_temp(a, t, "w+")) != 0) {
    unlock_dir(a);
    return rc;
  }
  if ((rc = copy_existing(a, had)) != 0)
    core_afile_abort(a);
  return rc;
}

static int open_with(core_afile *a, const char *path, int regular_only, long long *had) {
  memset(a, 0, sizeof *a);
  a->slot = -1;
  target t;
  int rc = resolve(path, regular_only, &t);
  if (rc)
    return rc;
  snprintf(a->path, sizeof a->path, "%s", t.final);
  if (t.kind == K_DIRECT)
    return open_direct(a, &t);
  sweep_target(t.final);
  return had ? open_appending(a, &t, had) : open_temp(a, &t, "w");
}

int core_afile_open(core_afile *a, const char *path) { return open_with(a, path, 0, NULL); }
int core_afile_open_atomic(core_afile *a, const char *path) { return open_with(a, path, 1, NULL); }

int core_afile_open_append(core_afile *a, const char *path, long long *had) {
  *had = 0;
  return open_with(a, path, 0, had);
}

void core_afile_abort(core_afile *a) {
  if (a->f) {
    fclose(a->f);
    a->f = NULL;
    if (!a->direct)
      unlink(a->tmp);
  }
  slot_give(a);
  unlock_dir(a);
}

static int fsync_dir_of(const char *path) {
  char dir[4096];
  core_path_dir(path, dir, sizeof dir);
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return core_err_errno(errno, "cannot open directory '%s' to sync it", dir);
  int rc = 0;
  if (fsync(fd) != 0 && errno != EINVAL)
    rc = core_err_errno(errno, "fsync of directory '%s' failed", dir);
  close(fd);
  return rc;
}

static int commit_direct(core_afile *a) {
  FILE *f = a->f;
  a->f = NULL;
  int bad = ferror(f) || fflush(f) != 0;
  int e = errno ? errno : EIO;
  if (fclose(f) != 0 && !bad) {
    bad = 1;
    e = errno;
  }
  return bad ? core_err_errno(e, "writing '%s' failed", a->path) : 0;
}

int core_afile_commit(core_afile *a) {
  int rc = 0;
  if (!a->f)
    return core_err_set(CORE_EINTERNAL, "commit of '%s' without an open temp file", a->path);
  if (a->direct)
    return commit_direct(a);
  if (ferror(a->f) || fflush(a->f) != 0) {
    rc = core_err_errno(errno ? errno : EIO, "writing '%s' failed", a->path);
    goto fail_abort;
  }
  if (fsync(fileno(a->f)) != 0) {
    rc = core_err_errno(errno, "fsync of '%s' failed", a->path);
    goto fail_abort;
  }
  FILE *f = a->f;
  a->f = NULL;
  if (fclose(f) != 0) {
    rc = core_err_errno(errno, "closing '%s' failed", a->path);
    goto fail_unlink;
  }
  if (rename(a->tmp, a->path) != 0) {
    rc = core_err_errno(errno, "cannot move '%s' into place as '%s'", a->tmp, a->path);
    goto fail_unlink;
  }
  slot_give(a);
  rc = fsync_dir_of(a->path);
  unlock_dir(a);
  return rc;
fail_abort:
  core_afile_abort(a);
  return rc;
fail_unlink:
  unlink(a->tmp);
  slot_give(a);
  unlock_dir(a);
  return rc;
}

/* ---- leftovers of dead writers -------------------------------------------------- */

/* Has st gone unchanged for min_age_s seconds? Against the fine clock:
 * time() reads a clock that may lag a file's fine-grained mtime by a tick,
 * so a file just written could look written in the future. */
static int unchanged_for(const struct stat *st, int min_age_s) {
  struct timespec now;
  if (min_age_s <= 0)
    return 1;
  if (clock_gettime(CLOCK_REALTIME, &now) != 0)
    return 0;
  double age = (double)(now.tv_sec - st->st_mtim.tv_sec) + (now.tv_nsec - st->st_mtim.tv_nsec) * 1e-9;
  return age >= min_age_s;
}

/* Removes dir/name when it is a regular temp file nobody holds locked,
 * unchanged for min_age_s seconds or more. */
static int sweep_one(const char *dir, const char *name, int min_age_s) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct stat st;
  int removed = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && unchanged_for(&st, min_age_s) &&
      flock(fd, LOCK_EX | LOCK_NB) == 0 && unlink(path) == 0) {
    fprintf(stderr, "ddpsim: removed '%s' (%lld bytes), the temp file of a writer that died\n", path,
        (long long)st.st_size);
    removed = 1;
  }
  close(fd);
  return removed;
}

int core_afile_sweep_stale(const char *dir, const char *name_prefix) {
  DIR *d = opendir(dir);
  if (!d)
    return errno == ENOENT ? 0 : core_err_errno(errno, "cannot list directory '%s'", dir);
  size_t np = strlen(name_prefix);
  int removed = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (strncmp(de->d_name, name_prefix, np) == 0 && strstr(de->d_name + np, ".tmp."))
      removed += sweep_one(dir, de->d_name, 0);
  closedir(d);
  return removed;
}

/* Is name a temp file of the target base: "<base>.tmp." and mkstemp's six
 * letters and digits, nothing more (a user's "x.csv.old.tmp.1" is not)? */
static int temp_of(const char *name, const char *base) {
  size_t b = strlen(base), k = sizeof tmp_suffix - 1;
  if (strncmp(name, base, b) != 0 || strncmp(name + b, tmp_suffix, k - 6) != 0 || strlen(name + b) != k)
    return 0;
  for (const char *x = name + b + k - 6; *x; x++)
    if (!isalnum((unsigned char)*x))
      return 0;
  return 1;
}

/* The temp files of final that dead writers left (a process killed while
 * writing it): removed before it is written again, so that they do not pile
 * up. One a minute old at least, so that a live writer's, between its
 * mkstemp and its flock, is never taken for one. Best effort. */
static void sweep_target(const char *final) {
  char dir[4096];
  core_path_dir(final, dir, sizeof dir);
  const char *base = core_path_base(final);
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *de;
  while ((de = readdir(d)))
    if (temp_of(de->d_name, base))
      sweep_one(dir, de->d_name, 60);
  closedir(d);
}

/* mkdir of one level; a file where a directory must be, or a name too long
 * for the file system, is the user's to change (exit 2), other failures are
 * the system's. Notes in made, if any,
 * each level it creates (past CORE_MADE_DIRS_MAX levels, none: undo then
 * stops at a level it cannot empty). */
static int mkdir_one(const char *buf, core_made_dirs *made) {
  if (mkdir(buf, 0755) == 0) {
    if (made && made->n < CORE_MADE_DIRS_MAX)
      made->len[made->n++] = strlen(buf);
    return 0;
  }
  if (errno == EEXIST)
    return 0;
  if (errno == ENOTDIR)
    return core_err_set(CORE_EUSAGE,
        "cannot create directory '%s': a part of that path is a file; choose another output directory", buf);
  if (errno == ENOENT) /* every level before was made or there: one is a link that leads nowhere */
    return core_err_set(CORE_EUSAGE,
        "cannot create directory '%s': a part of that path is a symbolic link that leads nowhere; create the directory "
        "it names, or choose another output directory",
        buf);
  if (not_ours(errno) || errno == ENAMETOOLONG)
    return core_err_set(
        CORE_EUSAGE, "cannot create directory '%s': %s; choose another output directory", buf, strerror(errno));
  return core_err_errno(errno, "cannot create directory '%s'", buf);
}

int core_mkdirs_made(const char *dir, core_made_dirs *made) {
  char buf[4096];
  int rc;
  if (!*dir)
    return core_err_set(CORE_EUSAGE, "an empty directory path: name a directory");
  if (strlen(dir) >= sizeof buf)
    return core_err_set(CORE_EUSAGE, "directory path is too long: %.64s...; choose a shorter one", dir);
  snprintf(buf, sizeof buf, "%s", dir);
  if (made) {
    snprintf(made->path, sizeof made->path, "%s", dir);
    made->n = 0;
  }
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if ((rc = mkdir_one(buf, made)) != 0)
      return rc;
    *p = '/';
  }
  if ((rc = mkdir_one(buf, made)) != 0)
    return rc;
  struct stat st;
  if (stat(buf, &st) != 0 && lstat(buf, &st) == 0 && S_ISLNK(st.st_mode))
    return core_err_set(CORE_EUSAGE,
        "'%s' is a symbolic link that leads nowhere (its target is missing, or the links loop); create the directory "
        "it names, or choose another output directory",
        buf);
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
    return core_err_set(CORE_EUSAGE, "'%s' exists and is not a directory; choose another output directory", buf);
  return 0;
}

int core_mkdirs(const char *dir) { return core_mkdirs_made(dir, NULL); }

void core_made_dirs_undo(core_made_dirs *made) {
  while (made->n > 0) {
    made->path[made->len[--made->n]] = '\0';
    if (rmdir(made->path) != 0 && errno != ENOENT)
      break; /* something was written into it: it is no longer only ours */
  }
  made->n = 0;
}

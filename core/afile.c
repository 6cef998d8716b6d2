#include "afile.h"

#include "err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int core_afile_open(core_afile *a, const char *path) {
  memset(a, 0, sizeof *a);
  if (strlen(path) >= sizeof a->path)
    return core_err_set(CORE_EINVAL, "output path is too long: %.64s...", path);
  snprintf(a->path, sizeof a->path, "%s", path);
  snprintf(a->tmp, sizeof a->tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(a->tmp);
  if (fd < 0)
    return core_err_errno(errno, "cannot create a temp file beside '%s' (check the directory exists and is writable)", path);
  fchmod(fd, 0644);
  a->f = fdopen(fd, "w");
  if (!a->f) {
    int e = errno;
    close(fd);
    unlink(a->tmp);
    return core_err_errno(e, "cannot open '%s'", a->tmp);
  }
  return 0;
}

void core_afile_abort(core_afile *a) {
  if (a->f) {
    fclose(a->f);
    a->f = NULL;
    unlink(a->tmp);
  }
}

static int fsync_dir_of(const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    dir[1] = '\0';
  else if (slash)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return core_err_errno(errno, "cannot open directory '%s' to sync it", dir);
  int rc = 0;
  if (fsync(fd) != 0 && errno != EINVAL)
    rc = core_err_errno(errno, "fsync of directory '%s' failed", dir);
  close(fd);
  return rc;
}

int core_afile_commit(core_afile *a) {
  int rc = 0;
  if (!a->f)
    return core_err_set(CORE_EINTERNAL, "commit of '%s' without an open temp file", a->path);
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
  return fsync_dir_of(a->path);
fail_abort:
  core_afile_abort(a);
  return rc;
fail_unlink:
  unlink(a->tmp);
  return rc;
}

int core_mkdirs(const char *dir) {
  char buf[4096];
  if (strlen(dir) >= sizeof buf)
    return core_err_set(CORE_EINVAL, "directory path is too long: %.64s...", dir);
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return core_err_errno(errno, "cannot create directory '%s'", buf);
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST)
    return core_err_errno(errno, "cannot create directory '%s'", buf);
  struct stat st;
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
    return core_err_set(CORE_EIO, "'%s' exists and is not a directory; choose another output directory", buf);
  return 0;
}

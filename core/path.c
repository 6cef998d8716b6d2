#include "path.h"

#include "err.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int core_path_dir(const char *path, char *out, size_t n) {
  char copy[PATH_MAX]; /* dirname may write into its argument */
  int len = -1;
  if (strlen(path) < sizeof copy) {
    memcpy(copy, path, strlen(path) + 1);
    len = snprintf(out, n, "%s", dirname(copy));
  }
  if (len < 0 || (size_t)len >= n)
    return core_err_set(CORE_EINVAL, "the directory of '%.64s...' is too long", path);
  return 0;
}

const char *core_path_base(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

int core_path_stem_len(const char *name, const char *ext) {
  size_t len = strlen(name), el = strlen(ext);
  return (int)(len > el && strcmp(name + len - el, ext) == 0 ? len - el : len);
}

/* What a path names: the file's identity where it exists, else the real
 * path of its directory and its name (a dangling symlink followed). */
typedef struct path_id {
  int exists;
  dev_t dev;
  ino_t ino;
  char where[8400];
} path_id;

static void identify(const char *path, path_id *id) {
  struct stat st;
  char cur[4096], link[4096], dir[4096];
  memset(id, 0, sizeof *id);
  if (stat(path, &st) == 0) {
    id->exists = 1, id->dev = st.st_dev, id->ino = st.st_ino;
    return;
  }
  snprintf(cur, sizeof cur, "%s", path);
  for (int hop = 0; hop < 40 && lstat(cur, &st) == 0 && S_ISLNK(st.st_mode); hop++) {
    ssize_t k = readlink(cur, link, sizeof link - 1);
    if (k < 0)
      break;
    link[k] = '\0';
    core_path_dir(cur, dir, sizeof dir);
    if (link[0] == '/')
      snprintf(cur, sizeof cur, "%s", link);
    else if (snprintf(cur, sizeof cur, "%s/%s", dir, link) >= (int)sizeof cur)
      break;
  }
  core_path_dir(cur, dir, sizeof dir);
  char *real = realpath(dir, NULL);
  snprintf(id->where, sizeof id->where, "%s/%s", real ? real : dir, core_path_base(cur));
  free(real);
}

static int same_id(const path_id *a, const path_id *b) {
  if (a->exists || b->exists)
    return a->exists && b->exists && a->dev == b->dev && a->ino == b->ino;
  return !strcmp(a->where, b->where);
}

int core_path_same_file(const char *a, const char *b) {
  path_id ia, ib;
  identify(a, &ia);
  identify(b, &ib);
  return same_id(&ia, &ib);
}

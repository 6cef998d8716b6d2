#include "path.h"

#include "err.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

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

/* Replays files through a libFuzzer target without libFuzzer: every regular
 * file named on the command line, or found in a directory named there (one
 * level), goes to LLVMFuzzerTestOneInput once. The normal build uses it so
 * the targets are always compiled and run on their seed corpus; a crash or
 * an oracle's abort() fails the test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long replayed;

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return -1;
  }
  size_t cap = 65536, n = 0;
  uint8_t *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap)
      break;
    uint8_t *more = realloc(buf, cap * 2);
    if (!more) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = more;
    cap *= 2;
  }
  fclose(f);
  if (!buf)
    return -1;
  fprintf(stderr, "replay %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  replayed++;
  return 0;
}

static int replay(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "no such file or directory: %s\n", path);
    return -1;
  }
  if (!S_ISDIR(st.st_mode))
    return replay_file(path);
  struct dirent **list;
  int n = scandir(path, &list, NULL, alphasort);
  if (n < 0)
    return -1;
  int rc = 0;
  for (int i = 0; i < n; i++) {
    char p[8192];
    snprintf(p, sizeof p, "%s/%s", path, list[i]->d_name);
    if (list[i]->d_name[0] != '.' && stat(p, &st) == 0 && S_ISREG(st.st_mode) && replay_file(p))
      rc = -1;
    free(list[i]);
  }
  free(list);
  return rc;
}

int main(int argc, char **argv) {
  int rc = 0;
  for (int i = 1; i < argc; i++)
    if (replay(argv[i]))
      rc = 1;
  fprintf(stderr, "replayed %ld inputs\n", replayed);
  return rc || replayed == 0;
}

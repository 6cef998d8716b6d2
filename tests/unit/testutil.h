/* Helpers shared by the unit suites: test data paths, whole-file reads,
 * scratch directories, and running one scenario point. */
#ifndef TESTS_UNIT_TESTUTIL_H
#define TESTS_UNIT_TESTUTIL_H

#include <stddef.h>

#define TU_DATA(rel) DDPSIM_SOURCE_DIR "/tests/data/" rel
#define TU_SRC(rel) DDPSIM_SOURCE_DIR "/" rel

/* Whole file, NUL-terminated, malloc'd; NULL on failure. *len may be NULL. */
char *tu_read_file(const char *path, size_t *len);
/* Write text to path; 0 on success. */
int tu_write_file(const char *path, const char *text);
/* A fresh scratch directory under the build tree; 0 on success. */
int tu_mkdtemp(char *out, size_t n, const char *tag);
/* rm -r of a scratch directory made by tu_mkdtemp, subdirectories included. */
void tu_rmdir(const char *dir);

#endif

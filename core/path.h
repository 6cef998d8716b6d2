/*
 * path — the directory and the file name of a path, split one way for every
 * command that names its outputs after its inputs or writes beside them:
 * the directory as POSIX dirname(3) gives it ("/x.csv" is in "/", "x.csv"
 * in "."), the file name as what follows the last '/'.
 */
#ifndef CORE_PATH_H
#define CORE_PATH_H

#include <stddef.h>

/* The directory of path into out, as dirname(3): "a/b" "a", "/x" "/", "x"
 * ".", "a/b/" "a". CORE_EINVAL when it does not fit in n bytes. */
int core_path_dir(const char *path, char *out, size_t n);

/* The file name of path: what follows its last '/', all of it without one
 * (points into path; "" when path ends with '/'). */
const char *core_path_base(const char *path);

/* The length of name without the suffix ext ("x.csv", ".csv": 1) when it
 * ends with it and has more before it; else strlen(name). */
int core_path_stem_len(const char *name, const char *ext);

#endif

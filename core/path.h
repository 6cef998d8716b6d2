/*
 * path — the directory and the file name of a path, split one way for every
 * command that names its outputs after its inputs or writes beside them:
 * the directory as POSIX dirname(3) gives it ("/x.csv" is in "/", "x.csv"
 * in "."), the file name as what follows the last '/'; and whether two
 * paths name one file, for commands that refuse an output over another.
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

/* Do paths a and b name one file, so that writing one would replace the
 * other? By identity where either exists (both must, and be one file);
 * else by the real path of the directory and the name, symlinks that lead
 * nowhere followed to where they would write. */
int core_path_same_file(const char *a, const char *b);

#endif

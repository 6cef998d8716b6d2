/*
 * cfg — strict reading of libconfig files (scenarios, profiles, models).
 *
 * libconfig does the parsing; this module adds what users need from the
 * errors: every rejected file names file:line, the key, what was expected and
 * an example of a valid value. Unknown keys are errors (a typo must not be
 * silently ignored), numbers are range-checked, and a "sweepable" key may be
 * a scalar or a non-empty array of scalars — the scenario format's sweep
 * dimensions. Paths inside a file resolve relative to that file. Integers
 * beyond 32 bits are read as 64-bit values as written (libconfig 1.5 alone
 * truncates them); beyond 64 bits they are an error with file:line.
 */
#ifndef CORE_CFG_H
#define CORE_CFG_H

#include <libconfig.h>
#include <stddef.h>
#include <stdio.h>

typedef struct core_cfg {
  config_t cfg;
  char path[4096];
  char dir[4096]; /* directory of path, for relative references */
  int loaded;
} core_cfg;

/* Parse a whole file. what names the kind of file for messages ("scenario"). */
int core_cfg_load(core_cfg *c, const char *path, const char *what);
/* Parse from memory (fuzzing, tests); name stands in for the file name. */
int core_cfg_load_string(core_cfg *c, const char *text, const char *name, const char *what);
void core_cfg_free(core_cfg *c);

const config_setting_t *core_cfg_root(const core_cfg *c);

/* The member key of group g, as config_setting_get_member gives it, for a
 * plain key (no path); NULL when g is not a group or has no such member. */
const config_setting_t *core_cfg_member(const config_setting_t *g, const char *key);

/* "file:line" of a setting into buf; returns buf. */
const char *core_cfg_where(const config_setting_t *s, char *buf, size_t n);

/* Every key of group must be in allowed (NULL-terminated). what names the
 * group in messages ("ddp"). */
int core_cfg_check_keys(const config_setting_t *group, const char *const allowed[], const char *what);

/* The kinds of ddpsim input file, told apart by their top levels. */
enum core_cfg_kind { CORE_CFG_SCENARIO, CORE_CFG_PROFILE, CORE_CFG_MODEL };
/* root is the top level of a file of kind want, or of no kind it can be
 * told from; a file that is plainly another kind (a profile given as a
 * scenario) is an error naming what it is and where it goes instead. */
int core_cfg_expect_kind(const config_setting_t *root, enum core_cfg_kind want);

/* A child group; missing is an error when required, else *out = NULL. */
int core_cfg_group(const config_setting_t *parent, const char *key, int required, const config_setting_t **out);
/* A child list of groups: ( {...}, {...} ). */
int core_cfg_list(const config_setting_t *parent, const char *key, int required, const config_setting_t **out);
/* The same, where an empty list ( ) is a value: a profile calibrated on one
 * rank measured no collective. */
int core_cfg_list_or_empty(const config_setting_t *parent, const char *key, int required, const config_setting_t **out);

int core_cfg_double(
    const config_setting_t *g, const char *key, int required, double def, double lo, double hi, double *out);
int core_cfg_int(const config_setting_t *g, const char *key, int required, long long def, long long lo, long long hi,
    long long *out);
int core_cfg_bool(const config_setting_t *g, const char *key, int required, int def, int *out);
/* choices: NULL-terminated list of accepted values, or NULL for any text;
 * a required text must not be empty. */
int core_cfg_string(const config_setting_t *g, const char *key, int required, const char *def,
    const char *const choices[], const char **out);

/* Sweepable keys: a scalar, or an array [a, b, c] with at least one element.
 * *vals is malloc'd (free() it); on a missing optional key it holds def. */
int core_cfg_double_list(
    const config_setting_t *g, const char *key, int required, double def, double lo, double hi, double **vals, int *n);
int core_cfg_int_list(const config_setting_t *g, const char *key, int required, long long def, long long lo,
    long long hi, long long **vals, int *n);
int core_cfg_bool_list(const config_setting_t *g, const char *key, int required, int def, int **vals, int *n);
/* Strings are borrowed from the parsed file; the array itself is malloc'd. */
int core_cfg_string_list(const config_setting_t *g, const char *key, int required, const char *def,
    const char *const choices[], const char ***vals, int *n);

/* A sweep's array of g.key (if any) holds no value twice; else the error
 * names the repeat's line. Lists of measured values need not be distinct. */
int core_cfg_distinct(const config_setting_t *g, const char *key);
/* The same for any array or list of g.key, the error ending in what to do. */
int core_cfg_distinct_as(const config_setting_t *g, const char *key, const char *what_to_do);

/* s as a libconfig string literal: quoted, with '"', '\\' and newlines
 * escaped, so that any text (a file name) reads back as it was. */
void core_cfg_put_str(FILE *f, const char *s);

/* Resolve rel against the directory of the file that holds setting s. */
int core_cfg_path(const config_setting_t *s, const char *rel, char *out, size_t n);

#endif

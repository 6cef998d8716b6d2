#include "cfg.h"

#include "afile.h"
#include "err.h"
#include "path.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* core_cfg embeds config_t first, so a setting's config pointer leads back to
 * the file name even for text parsed from memory (libconfig records no file
 * name then). */
static const char *setting_file(const config_setting_t *s) {
  if (s->file)
    return s->file;
  const core_cfg *c = (const core_cfg *)(const void *)s->config;
  return c ? c->path : "?";
}

const char *core_cfg_where(const config_setting_t *s, char *buf, size_t n) {
  snprintf(buf, n, "%s:%u", setting_file(s), s->line);
  return buf;
}

/* The directory fits: c->path is no longer than c->dir. */
static void set_dir(core_cfg *c) { core_path_dir(c->path, c->dir, sizeof c->dir); }

static int parse_error(core_cfg *c, const char *what) {
  const char *file = config_error_file(&c->cfg);
  int code = core_err_set(CORE_EINVAL,
      "%s:%d: %s file does not parse: %s (see the libconfig syntax: key = value; groups in { }, lists in ( ), arrays "
      "in [ ])",
      file ? file : c->path, config_error_line(&c->cfg), what, config_error_text(&c->cfg));
  config_destroy(&c->cfg);
  c->loaded = 0;
  return code;
}

/* --- integers beyond 32 bits ------------------------------------------------
 * libconfig 1.5 reads an integer written without the L suffix with atoi
 * (lib/scanner.l; 1.7 reads 64 bits): 4294967296 becomes 0 and 2147483648
 * becomes -2147483648, silently. Such literals get their L before parsing,
 * so they are 64-bit values, read and reported as written; an array holding
 * one gets an L on every integer (an array holds one type); a literal beyond
 * 64 bits is an error. The scan skips strings, comments and names. */

typedef struct offsets {
  size_t *at, n, cap;
} offsets;

static int offsets_push(offsets *o, size_t at) {
  if (o->n == o->cap) {
    size_t cap = o->cap ? 2 * o->cap : 16;
    size_t *a = realloc(o->at, sizeof *a * cap);
    if (!a)
      return core_err_set(CORE_ENOMEM, "out of memory reading a configuration file");
    o->at = a;
    o->cap = cap;
  }
  o->at[o->n++] = at;
  return 0;
}

/* Length of the number at p: digits, letters, '.', and the sign of an
 * exponent. */
static size_t number_len(const char *p) {
  int hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
  size_t k = 0;
  while (isalnum((unsigned char)p[k]) || p[k] == '.' ||
         (!hex && k > 0 && (p[k] == '+' || p[k] == '-') && (p[k - 1] == 'e' || p[k - 1] == 'E')))
    k++;
  return k;
}

/* The number at p of length k (neg: a '-' before it): 1 an integer beyond
 * libconfig 1.5's int, 0 one within it, -1 not an integer without suffix (a
 * float, an L already), -2 an integer beyond 64 bits. */
static int integer_width(const char *p, size_t k, int neg) {
  int hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
  const char *d = hex ? p + 2 : p;
  size_t nd = k - (size_t)(d - p);
  if (nd == 0 || strspn(d, hex ? "0123456789abcdefABCDEF" : "0123456789") < nd)
    return -1;
  char buf[32];
  if (nd >= sizeof buf)
    return -2;
  memcpy(buf, d, nd);
  buf[nd] = '\0';
  errno = 0;
  unsigned long long v = strtoull(buf, NULL, hex ? 16 : 10);
  if (errno == ERANGE || v > (neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX))
    return -2;
  return v > (neg ? (unsigned long long)INT_MAX + 1 : (unsigned long long)INT_MAX);
}

/* Where text must get an L: offsets just past each integer literal that
 * needs 64 bits, ascending. */
static int find_wide(const core_cfg *c, const char *text, const char *what, offsets *wide) {
  offsets arr = {0};
  int in_array = 0, arr_wide = 0, line = 1, rc = 0;
  for (const char *p = text; *p && !rc;) {
    if (*p == ' ' || *p == '\t') {
      p += strspn(p, " \t");
    } else if (*p == '"') {
      /* Up to the closing quote; an escaped character (a quote too) is skipped. */
      for (p++; *p && *p != '"';) {
        p += strcspn(p, "\"\\\n");
        if (*p == '\\' && p[1]) {
          line += p[1] == '\n';
          p += 2;
        } else if (*p == '\\' || *p == '\n') {
          line += *p == '\n';
          p++;
        }
      }
      p += *p == '"';
    } else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
      p += strcspn(p, "\n");
    } else if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      for (const char *q = p; q < (e ? e : p + strlen(p)); q++)
        line += *q == '\n';
      p = e ? e + 2 : p + strlen(p);
    } else if (isalpha((unsigned char)*p) || *p == '*') {
      for (p++; isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '*'; p++)
        ;
    } else if (isdigit((unsigned char)*p) || *p == '.') {
      size_t k = number_len(p);
      int neg = p > text && p[-1] == '-', w = integer_width(p, k, neg);
      if (w == -2)
        rc = core_err_set(CORE_EINVAL,
            "%s:%d: the integer %s%.*s does not fit in 64 bits (at most 9223372036854775807); check the %s file",
            c->path, line, neg ? "-" : "", (int)(k > 40 ? 40 : k), p, what);
      else if (w >= 0 && in_array) {
        rc = offsets_push(&arr, (size_t)(p - text) + k);
        arr_wide |= w;
      } else if (w == 1)
        rc = offsets_push(wide, (size_t)(p - text) + k);
      p += k;
    } else {
      if (*p == '[') {
        in_array = 1;
        arr.n = 0;
        arr_wide = 0;
      } else if (*p == ']' && in_array) {
        for (size_t i = 0; arr_wide && i < arr.n && !rc; i++)
          rc = offsets_push(wide, arr.at[i]);
        in_array = 0;
      }
      line += *p == '\n';
      p++;
    }
  }
  free(arr.at);
  return rc;
}

/* text with an L after every integer that needs 64 bits, into *out (NULL
 * when none does). */
static int widen_integers(const core_cfg *c, const char *text, const char *what, char **out) {
  offsets wide = {0};
  *out = NULL;
  int rc = find_wide(c, text, what, &wide);
  if (rc || wide.n == 0)
    goto free_offsets;
  size_t len = strlen(text), from = 0;
  char *t = malloc(len + wide.n + 1), *q = t;
  if (!t) {
    rc = core_err_set(CORE_ENOMEM, "out of memory reading %s file '%s'", what, c->path);
    goto free_offsets;
  }
  for (size_t i = 0; i < wide.n; i++) {
    memcpy(q, text + from, wide.at[i] - from);
    q += wide.at[i] - from;
    *q++ = 'L';
    from = wide.at[i];
  }
  memcpy(q, text + from, len - from + 1);
  *out = t;
free_offsets:
  free(wide.at);
  return rc;
}

/* libconfig 1.5's scanner exits the process when it cannot read its input,
 * and an @include line makes it open whatever path the file names (a
 * directory, a device). So files are read into memory here, as regular files
 * only, and may not include others (nothing in ddpsim uses @include; the
 * scanner takes it at the start of a line only). */
static int parse_text(core_cfg *c, const char *text, const char *what) {
  int line = 1;
  for (const char *p = text;; line++) {
    const char *q = p + strspn(p, " \t");
    if (strncmp(q, "@include", 8) == 0)
      return core_err_set(CORE_EINVAL,
          "%s:%d: %s file uses @include, which ddpsim does not support; put the settings into the file itself", c->path,
          line, what);
    const char *nl = strchr(p, '\n');
    if (!nl)
      break;
    p = nl + 1;
  }
  char *wide = NULL;
  int rc = widen_integers(c, text, what, &wide);
  if (rc)
    return rc;
  config_init(&c->cfg);
  c->loaded = 1;
  /* config_read_string keeps no file name for its settings; setting_file()
   * falls back to c->path, which is this file. */
  int ok = config_read_string(&c->cfg, wide ? wide : text) == CONFIG_TRUE;
  free(wide);
  return ok ? 0 : parse_error(c, what);
}

int core_cfg_load(core_cfg *c, const char *path, const char *what) {
  memset(c, 0, sizeof *c);
  if (strlen(path) >= sizeof c->path)
    return core_err_set(CORE_EINVAL, "%s path is too long: %.64s...", what, path);
  snprintf(c->path, sizeof c->path, "%s", path);
  set_dir(c);
  /* Opened without blocking: a FIFO nobody writes is refused below, not
   * waited on. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return core_err_open(errno, "cannot open %s file '%s'", what, path);
  struct stat st = {0};
  FILE *f = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "r"))) {
    int regular = S_ISREG(st.st_mode), e = errno;
    close(fd);
    if (regular)
      return core_err_set(CORE_EIO, "cannot read %s file '%s': %s", what, path, strerror(e));
    return core_err_set(CORE_EINVAL, "cannot read %s file '%s': not a regular file (check the path)", what, path);
  }
  core_afile_note_input_fd(fileno(f), path);
  size_t cap = (size_t)st.st_size + 1, n = 0;
  char *text = malloc(cap);
  while (text) {
    n += fread(text + n, 1, cap - n, f);
    if (n < cap || ferror(f))
      break;
    char *more = realloc(text, cap * 2); /* the file grew since fstat */
    if (!more) {
      free(text);
      text = NULL;
      break;
    }
    text = more;
    cap *= 2;
  }
  int err = ferror(f) ? (errno ? errno : EIO) : 0;
  fclose(f);
  if (!text)
    return core_err_set(CORE_ENOMEM, "out of memory reading %s file '%s'", what, path);
  if (err) {
    free(text);
    return core_err_errno(err, "cannot read %s file '%s'", what, path);
  }
  text[n] = '\0';
  int rc;
  const char *nul = memchr(text, '\0', n);
  if (nul) {
    int line = 1;
    for (const char *p = text; p < nul; p++)
      line += *p == '\n';
    rc = core_err_set(CORE_EINVAL, "%s:%d: %s file holds a NUL byte; is it a text file?", path, line, what);
  } else
    rc = parse_text(c, text, what);
  free(text);
  return rc;
}

int core_cfg_load_string(core_cfg *c, const char *text, const char *name, const char *what) {
  memset(c, 0, sizeof *c);
  snprintf(c->path, sizeof c->path, "%s", name);
  set_dir(c);
  return parse_text(c, text, what);
}

void core_cfg_free(core_cfg *c) {
  if (c->loaded)
    config_destroy(&c->cfg);
  c->loaded = 0;
}

const config_setting_t *core_cfg_root(const core_cfg *c) { return config_root_setting(&c->cfg); }

/* A scan with strcmp: libconfig's own lookup reads the key as a path and
 * compares names a character at a time against its separators (a strchr
 * each), and model files look keys up in every layer. Names are unique in a
 * group (libconfig refuses a repeated one), so the first match is the one. */
const config_setting_t *core_cfg_member(const config_setting_t *g, const char *key) {
  if (!g || g->type != CONFIG_TYPE_GROUP || !g->value.list)
    return NULL;
  const config_list_t *list = g->value.list;
  for (unsigned i = 0; i < list->length; i++) {
    const config_setting_t *s = list->elements[i];
    if (s->name && strcmp(s->name, key) == 0)
      return s;
  }
  return NULL;
}

static const char *group_name(const config_setting_t *g) {
  return g->name ? g->name : (g->parent ? "(list element)" : "(top level)");
}

int core_cfg_check_keys(const config_setting_t *group, const char *const allowed[], const char *what) {
  char w[4200];
  int n = config_setting_length(group);
  for (int i = 0; i < n; i++) {
    const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
    int known = 0;
    for (const char *const *a = allowed; *a; a++)
      if (s->name && strcmp(s->name, *a) == 0) {
        known = 1;
        break;
      }
    if (!known) {
      char list[1024] = "";
      size_t len = 0;
      for (const char *const *a = allowed; *a && len < sizeof list - 64; a++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", a == allowed ? "" : ", ", *a);
      return core_err_set(CORE_EINVAL, "%s: unknown key '%s' in %s; expected one of: %s (check the spelling)",
          core_cfg_where(s, w, sizeof w), s->name ? s->name : "?", what, list);
    }
  }
  return 0;
}

/* The kind root's top level shows, and the setting that shows it; -1 when
 * it shows none (a scenario's 'profile' is a text, a profile file's a
 * group; a model file's 'model' is a group, a scenario's a text or list). */
static int file_kind(const config_setting_t *root, const config_setting_t **at) {
  static const char *const scenario_groups[] = {"cluster", "networks", "training", NULL};
  const config_setting_t *p = core_cfg_member(root, "profile"), *m = core_cfg_member(root, "model");
  if ((*at = p) != NULL && p->type == CONFIG_TYPE_GROUP)
    return CORE_CFG_PROFILE;
  if ((*at = m) != NULL && m->type == CONFIG_TYPE_GROUP)
    return CORE_CFG_MODEL;
  if ((*at = p) != NULL && p->type == CONFIG_TYPE_STRING)
    return CORE_CFG_SCENARIO;
  for (const char *const *k = scenario_groups; *k; k++)
    if ((*at = core_cfg_member(root, *k)) != NULL)
      return CORE_CFG_SCENARIO;
  return -1;
}

int core_cfg_expect_kind(const config_setting_t *root, enum core_cfg_kind want) {
  static const char *const name[] = {"a scenario", "a profile", "a model file"};
  static const char *const shows[] = {
      "a text 'profile', or a 'cluster', 'networks' or 'training' setting, at its top level",
      "one top-level 'profile' group", "one top-level 'model' group"};
  /* Where the file found goes instead, and what goes here. */
  static const char *const instead[] = {"give it to simulate, advise or collective --scenario",
      "name it in a scenario's profile = \"...\" or pass it with --profile", "name it in a scenario's model = \"...\""};
  static const char *const here[] = {"a scenario (scenarios/*.cfg)",
      "a profile (scenarios/profiles/, or what calibrate or import writes)",
      "a model file (scenarios/models/, or what import torch-trace writes)"};
  char w[4200];
  const config_setting_t *at;
  int kind = file_kind(root, &at);
  if (kind < 0 || kind == (int)want)
    return 0;
  return core_err_set(CORE_EINVAL, "%s: this is %s (%s), not %s: %s, and give %s here", core_cfg_where(at, w, sizeof w),
      name[kind], shows[kind], name[want], instead[kind], here[want]);
}

static int missing(const config_setting_t *g, const char *key, const char *expect) {
  char w[4200];
  /* The top level has no line of its own: name the file alone. */
  if (!g->parent)
    return core_err_set(
        CORE_EINVAL, "%s: the file is missing key '%s' at its top level; add it (%s)", setting_file(g), key, expect);
  return core_err_set(CORE_EINVAL, "%s: group '%s' is missing key '%s'; add it (%s)", core_cfg_where(g, w, sizeof w),
      group_name(g), key, expect);
}

static int wrong(const config_setting_t *s, const char *expect) {
  char w[4200];
  return core_err_set(CORE_EINVAL, "%s: bad value for '%s': expected %s", core_cfg_where(s, w, sizeof w),
      s->name ? s->name : group_name(s->parent), expect);
}

static int child(
    const config_setting_t *g, const char *key, int required, const char *expect, const config_setting_t **out) {
  *out = core_cfg_member(g, key);
  if (!*out && required)
    return missing(g, key, expect);
  return 0;
}

int core_cfg_group(const config_setting_t *parent, const char *key, int required, const config_setting_t **out) {
  int rc = child(parent, key, required, "a group: key = { ... };", out);
  if (rc || !*out)
    return rc;
  if (!config_setting_is_group(*out))
    return wrong(*out, "a group in { } braces");
  return 0;
}

static int list_of_groups(
    const config_setting_t *parent, const char *key, int required, int allow_empty, const config_setting_t **out) {
  int rc = child(parent, key, required, "a list of groups: key = ( { ... }, { ... } );", out);
  if (rc || !*out)
    return rc;
  if (!config_setting_is_list(*out))
    return wrong(*out, "a list of groups in ( ) parentheses: key = ( { ... }, { ... } );");
  if (!allow_empty && config_setting_length(*out) == 0)
    return wrong(*out, "at least one group in the list; an empty list sweeps nothing");
  for (int i = 0; i < config_setting_length(*out); i++)
    if (!config_setting_is_group(config_setting_get_elem(*out, (unsigned)i)))
      return wrong(config_setting_get_elem(*out, (unsigned)i), "each element of the list to be a group in { } braces");
  return 0;
}

int core_cfg_list(const config_setting_t *parent, const char *key, int required, const config_setting_t **out) {
  return list_of_groups(parent, key, required, 0, out);
}

int core_cfg_list_or_empty(
    const config_setting_t *parent, const char *key, int required, const config_setting_t **out) {
  return list_of_groups(parent, key, required, 1, out);
}

/* One scalar element (a setting or an array element) as a number. */
/* What a key expects, formatted only when a message needs it. */
static const char *expect_number(double lo, double hi, char *buf, size_t n) {
  snprintf(buf, n, "a number in [%g, %g]", lo, hi);
  return buf;
}

static const char *expect_integer(long long lo, long long hi, char *buf, size_t n) {
  snprintf(buf, n, "an integer in [%lld, %lld]", lo, hi);
  return buf;
}

static const char *expect_text(const char *const choices[], char *buf, size_t n) {
  if (!choices) {
    snprintf(buf, n, "a text in double quotes");
    return buf;
  }
  size_t len = (size_t)snprintf(buf, n, "one of");
  for (const char *const *c = choices; *c && len < n - 64; c++)
    len += (size_t)snprintf(buf + len, n - len, "%s \"%s\"", c == choices ? "" : ",", *c);
  return buf;
}

static int scalar_double(const config_setting_t *s, double lo, double hi, double *out) {
  char expect[160];
  double v;
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_INT: v = (double)config_setting_get_int(s); break;
  case CONFIG_TYPE_INT64: v = (double)config_setting_get_int64(s); break;
  case CONFIG_TYPE_FLOAT: v = config_setting_get_float(s); break;
  default: return wrong(s, expect_number(lo, hi, expect, sizeof expect));
  }
  if (!isfinite(v) || v < lo || v > hi) {
    char w[4200];
    return core_err_set(CORE_EINVAL, "%s: '%s' = %g is out of range; expected %s", core_cfg_where(s, w, sizeof w),
        s->name ? s->name : group_name(s->parent), v, expect_number(lo, hi, expect, sizeof expect));
  }
  *out = v;
  return 0;
}

static int scalar_int(const config_setting_t *s, long long lo, long long hi, long long *out) {
  char expect[160];
  long long v;
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_INT: v = config_setting_get_int(s); break;
  case CONFIG_TYPE_INT64: v = config_setting_get_int64(s); break;
  default: return wrong(s, expect_integer(lo, hi, expect, sizeof expect));
  }
  if (v < lo || v > hi) {
    char w[4200];
    return core_err_set(CORE_EINVAL, "%s: '%s' = %lld is out of range; expected %s", core_cfg_where(s, w, sizeof w),
        s->name ? s->name : group_name(s->parent), v, expect_integer(lo, hi, expect, sizeof expect));
  }
  *out = v;
  return 0;
}

static int scalar_bool(const config_setting_t *s, int *out) {
  if (config_setting_type(s) != CONFIG_TYPE_BOOL)
    return wrong(s, "true or false");
  *out = config_setting_get_bool(s);
  return 0;
}

static int scalar_string(const config_setting_t *s, const char *const choices[], int nonempty, const char **out) {
  char expect[1024];
  if (config_setting_type(s) != CONFIG_TYPE_STRING)
    return wrong(s, expect_text(choices, expect, sizeof expect));
  const char *v = config_setting_get_string(s);
  if (choices) {
    for (const char *const *c = choices; *c; c++)
      if (strcmp(v, *c) == 0) {
        *out = *c;
        return 0;
      }
    char w[4200];
    return core_err_set(CORE_EINVAL, "%s: '%s' = \"%s\" is not accepted; expected %s", core_cfg_where(s, w, sizeof w),
        s->name ? s->name : group_name(s->parent), v, expect_text(choices, expect, sizeof expect));
  }
  if (nonempty && !v[0])
    return wrong(s, "a non-empty text");
  *out = v;
  return 0;
}

int core_cfg_double(
    const config_setting_t *g, const char *key, int required, double def, double lo, double hi, double *out) {
  const config_setting_t *s = core_cfg_member(g, key);
  char expect[160];
  if (!s && required)
    return missing(g, key, expect_number(lo, hi, expect, sizeof expect));
  if (!s) {
    *out = def;
    return 0;
  }
  return scalar_double(s, lo, hi, out);
}

int core_cfg_int(const config_setting_t *g, const char *key, int required, long long def, long long lo, long long hi,
    long long *out) {
  const config_setting_t *s = core_cfg_member(g, key);
  char expect[160];
  if (!s && required)
    return missing(g, key, expect_integer(lo, hi, expect, sizeof expect));
  if (!s) {
    *out = def;
    return 0;
  }
  return scalar_int(s, lo, hi, out);
}

int core_cfg_bool(const config_setting_t *g, const char *key, int required, int def, int *out) {
  const config_setting_t *s;
  int rc = child(g, key, required, "true or false", &s);
  if (rc)
    return rc;
  if (!s) {
    *out = def;
    return 0;
  }
  return scalar_bool(s, out);
}

int core_cfg_string(const config_setting_t *g, const char *key, int required, const char *def,
    const char *const choices[], const char **out) {
  const config_setting_t *s;
  int rc = child(g, key, required, "a text in double quotes", &s);
  if (rc)
    return rc;
  if (!s) {
    *out = def;
    return 0;
  }
  return scalar_string(s, choices, required, out);
}

/* Shared shape of the sweepable getters: scalar or non-empty array. */
static int sweep_elems(
    const config_setting_t *g, const char *key, int required, const char *expect, const config_setting_t **s, int *n) {
  int rc = child(g, key, required, expect, s);
  if (rc || !*s)
    return rc;
  if (config_setting_is_array(*s)) {
    *n = config_setting_length(*s);
    if (*n == 0)
      return wrong(*s, "at least one value in the array; an empty sweep runs nothing");
  } else if (config_setting_is_aggregate(*s)) {
    return wrong(*s, "a value or an array of values in [ ] brackets");
  } else {
    *n = 1;
  }
  return 0;
}

static const config_setting_t *sweep_elem(const config_setting_t *s, int i) {
  return config_setting_is_array(s) ? config_setting_get_elem(s, (unsigned)i) : s;
}

/* One element type of a sweepable key: how to read one value into slot. */
typedef struct elem_type {
  const char *expect;
  size_t size;
  int (*read)(const config_setting_t *s, const void *arg, void *slot);
} elem_type;

/* Read a scalar or a non-empty array of elem_type values into a malloc'd
 * array; a missing optional key gives the one default value *def. */
static int read_list(const config_setting_t *g, const char *key, int required, const elem_type *et, const void *arg,
    const void *def, void **vals, int *n) {
  const config_setting_t *s;
  *vals = NULL;
  *n = 0;
  int rc = sweep_elems(g, key, required, et->expect, &s, n);
  if (rc)
    return rc;
  char *v = malloc(et->size * (size_t)(s ? *n : 1));
  if (!v)
    return core_err_set(CORE_ENOMEM, "out of memory reading '%s'", key);
  if (!s) {
    memcpy(v, def, et->size);
    *n = 1;
  } else {
    for (int i = 0; i < *n; i++)
      if ((rc = et->read(sweep_elem(s, i), arg, v + et->size * (size_t)i)) != 0) {
        free(v);
        return rc;
      }
  }
  *vals = v;
  return 0;
}

typedef struct drange {
  double lo, hi;
} drange;
typedef struct irange {
  long long lo, hi;
} irange;

static int read_double(const config_setting_t *s, const void *a, void *slot) {
  const drange *r = a;
  return scalar_double(s, r->lo, r->hi, slot);
}
static int read_int(const config_setting_t *s, const void *a, void *slot) {
  const irange *r = a;
  return scalar_int(s, r->lo, r->hi, slot);
}
static int read_bool(const config_setting_t *s, const void *a, void *slot) {
  (void)a;
  return scalar_bool(s, slot);
}
static int read_string(const config_setting_t *s, const void *a, void *slot) { return scalar_string(s, a, 1, slot); }

int core_cfg_double_list(
    const config_setting_t *g, const char *key, int required, double def, double lo, double hi, double **vals, int *n) {
  static const elem_type t = {"a number or an array of numbers", sizeof(double), read_double};
  drange r = {lo, hi};
  return read_list(g, key, required, &t, &r, &def, (void **)vals, n);
}

int core_cfg_int_list(const config_setting_t *g, const char *key, int required, long long def, long long lo,
    long long hi, long long **vals, int *n) {
  static const elem_type t = {"an integer or an array of integers", sizeof(long long), read_int};
  irange r = {lo, hi};
  return read_list(g, key, required, &t, &r, &def, (void **)vals, n);
}

int core_cfg_bool_list(const config_setting_t *g, const char *key, int required, int def, int **vals, int *n) {
  static const elem_type t = {"true, false or an array of them", sizeof(int), read_bool};
  return read_list(g, key, required, &t, NULL, &def, (void **)vals, n);
}

int core_cfg_string_list(const config_setting_t *g, const char *key, int required, const char *def,
    const char *const choices[], const char ***vals, int *n) {
  static const elem_type t = {"a text or an array of texts", sizeof(const char *), read_string};
  return read_list(g, key, required, &t, choices, &def, (void **)vals, n);
}

/* Do two elements of an array hold the same value? */
static int same_value(const config_setting_t *a, const config_setting_t *b) {
  int ta = config_setting_type(a), tb = config_setting_type(b);
  if ((ta == CONFIG_TYPE_INT64 ? CONFIG_TYPE_INT : ta) != (tb == CONFIG_TYPE_INT64 ? CONFIG_TYPE_INT : tb))
    return 0; /* a list may mix types */
  switch (ta) {
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64: return config_setting_get_int64(a) == config_setting_get_int64(b);
  case CONFIG_TYPE_FLOAT: return config_setting_get_float(a) == config_setting_get_float(b);
  case CONFIG_TYPE_BOOL: return config_setting_get_bool(a) == config_setting_get_bool(b);
  case CONFIG_TYPE_STRING: return strcmp(config_setting_get_string(a), config_setting_get_string(b)) == 0;
  default: return 0;
  }
}

static void value_text(const config_setting_t *s, char *buf, size_t n) {
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64: snprintf(buf, n, "%lld", config_setting_get_int64(s)); break;
  case CONFIG_TYPE_FLOAT: snprintf(buf, n, "%g", config_setting_get_float(s)); break;
  case CONFIG_TYPE_BOOL: snprintf(buf, n, "%s", config_setting_get_bool(s) ? "true" : "false"); break;
  default: snprintf(buf, n, "\"%.200s\"", config_setting_get_string(s)); break;
  }
}

int core_cfg_distinct(const config_setting_t *g, const char *key) {
  return core_cfg_distinct_as(
      g, key, "each value of a sweep is its own points, so a repeat only duplicates rows: remove it");
}

int core_cfg_distinct_as(const config_setting_t *g, const char *key, const char *what_to_do) {
  const config_setting_t *s = g ? core_cfg_member(g, key) : NULL;
  if (!s || !(config_setting_is_array(s) || config_setting_is_list(s)))
    return 0;
  int n = config_setting_length(s);
  for (int i = 1; i < n; i++) {
    const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    for (int j = 0; j < i; j++)
      if (same_value(e, config_setting_get_elem(s, (unsigned)j))) {
        char w[4200], v[256];
        value_text(e, v, sizeof v);
        return core_err_set(
            CORE_EINVAL, "%s: '%s' holds %s twice; %s", core_cfg_where(e, w, sizeof w), key, v, what_to_do);
      }
  }
  return 0;
}

int core_cfg_path(const config_setting_t *s, const char *rel, char *out, size_t n) {
  int len;
  if (rel[0] == '/') {
    len = snprintf(out, n, "%s", rel);
  } else {
    const char *file = setting_file(s);
    const char *slash = strrchr(file, '/');
    if (slash)
      len = snprintf(out, n, "%.*s/%s", (int)(slash - file), file, rel);
    else
      len = snprintf(out, n, "%s", rel);
  }
  if (len < 0 || (size_t)len >= n) {
    char w[4200];
    return core_err_set(CORE_EINVAL, "%s: path '%.64s...' is too long", core_cfg_where(s, w, sizeof w), rel);
  }
  return 0;
}

void core_cfg_put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', f);
    if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

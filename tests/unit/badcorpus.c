#include "badcorpus.h"

#include "testutil.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_cfg(const struct dirent *de) {
  size_t n = strlen(de->d_name);
  return n > 4 && strcmp(de->d_name + n - 4, ".cfg") == 0;
}

/* 1-based line holding marker, 0 if none. */
static int marker_line(const char *text, const char *marker) {
  const char *hit = strstr(text, marker);
  if (!hit)
    return 0;
  int line = 1;
  for (const char *p = text; p < hit; p++)
    line += *p == '\n';
  return line;
}

static int parse_case(const char *dir, const char *name, bad_case *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->path, sizeof c->path, "%s/%s", dir, name);
  snprintf(c->file, sizeof c->file, "%s", c->path);
  char *text = tu_read_file(c->path, NULL);
  if (!text)
    return -1;
  const char *p = text;
  int ok = 0;
  for (int ln = 0; *p == '#'; ln++) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    char buf[1000];
    snprintf(buf, sizeof buf, "%.*s", (int)len, p);
    if (ln == 0 && strncmp(buf, "# expect: ", 10) == 0) {
      snprintf(c->expect, sizeof c->expect, "%s", buf + 10);
      ok = c->expect[0] != '\0';
    } else if (strncmp(buf, "# line: ", 8) == 0) {
      c->line = atoi(buf + 8);
    } else if (strncmp(buf, "# file: ", 8) == 0) {
      snprintf(c->file, sizeof c->file, "%s/%s", dir, buf + 8);
      c->in_aux = 1;
    }
    if (!eol)
      break;
    p = eol + 1;
  }
  c->ref_line = marker_line(text, "# <-- the reference");
  free(text);
  return ok ? 0 : -1;
}

bad_case *bad_corpus_read(const char *dir, int *n) {
  struct dirent **list;
  *n = 0;
  int m = scandir(dir, &list, is_cfg, alphasort);
  if (m < 0)
    return NULL;
  bad_case *cases = calloc((size_t)(m ? m : 1), sizeof *cases);
  int bad = cases == NULL;
  for (int i = 0; i < m; i++) {
    if (!bad && parse_case(dir, list[i]->d_name, &cases[*n]) == 0)
      (*n)++;
    else if (!bad) {
      fprintf(stderr, "\n%s/%s: no '# expect: ...' first line\n", dir, list[i]->d_name);
      bad = 1;
    }
    free(list[i]);
  }
  free(list);
  if (bad) {
    free(cases);
    return NULL;
  }
  return cases;
}

/* msg at p starts with "<file>:<digits>:"; returns the number, 0 for
 * "<file>: " (what has no line, as a missing top-level key), or -1. */
static long located_at(const char *p, const char *file) {
  size_t fl = strlen(file);
  if (strncmp(p, file, fl) == 0 && p[fl] == ':' && p[fl + 1] == ' ')
    return 0;
  if (strncmp(p, file, fl) != 0 || p[fl] != ':' || !isdigit((unsigned char)p[fl + 1]))
    return -1;
  char *end;
  long v = strtol(p + fl + 1, &end, 10);
  return *end == ':' ? v : -1;
}

int bad_case_check_msg(const bad_case *c, const char *msg, char *why, unsigned long n) {
  if (!strstr(msg, c->expect)) {
    snprintf(why, n, "message lacks \"%s\"", c->expect);
    return -1;
  }
  long at = located_at(msg, c->path);
  if (at < 0) {
    snprintf(why, n, "message does not start with %s:LINE:", c->path);
    return -1;
  }
  if (!c->in_aux) {
    if (c->line && at != c->line) {
      snprintf(why, n, "message names line %ld, expected %d", at, c->line);
      return -1;
    }
    return 0;
  }
  if (c->ref_line && at != c->ref_line) {
    snprintf(why, n, "message starts at scenario line %ld, expected the reference at %d", at, c->ref_line);
    return -1;
  }
  /* The file that holds the error, with its line. */
  for (const char *p = strstr(msg, c->file); p; p = strstr(p + 1, c->file)) {
    long l = located_at(p, c->file);
    if (l >= 0 && (!c->line || l == c->line))
      return 0;
  }
  if (c->line)
    snprintf(why, n, "message does not name %s:%d:", c->file, c->line);
  else
    snprintf(why, n, "message does not name %s:LINE:", c->file);
  return -1;
}

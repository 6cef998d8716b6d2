/* The bad-input corpus of tests/bad: each scenario file starts with
 *   # expect: <substring of the error message>
 * and optionally
 *   # line: N          (the line the message must name)
 *   # file: aux/F.cfg  (the error is in this profile or model, not in the
 *                       scenario; N is then a line of that file)
 * A scenario whose error sits in an aux file marks the line that references
 * it with "# <-- the reference"; the message must start there. */
#ifndef TESTS_UNIT_BADCORPUS_H
#define TESTS_UNIT_BADCORPUS_H

typedef struct bad_case {
  char path[4096]; /* the scenario */
  char expect[1024];
  int line;        /* 0: not given */
  char file[4096]; /* full path of the file holding the error */
  int in_aux;
  int ref_line; /* line of the reference in the scenario, 0 if none */
} bad_case;

/* All cases of dir, sorted by name; *n set. Returns NULL on failure. */
bad_case *bad_corpus_read(const char *dir, int *n);

/* Check one error message against a case; returns 0 when it fits, else
 * writes why into why. */
int bad_case_check_msg(const bad_case *c, const char *msg, char *why, unsigned long n);

#endif

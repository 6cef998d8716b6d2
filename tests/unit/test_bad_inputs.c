/* The bad-input corpus (tests/bad, format in badcorpus.h): every file must be
 * rejected by sim_scenario_load with CORE_EINVAL and a message that contains
 * the expected text and starts with file:line of the scenario (and names
 * file:line of the profile or model when the error is there). The same text
 * through sim_scenario_load_string must give the same answer, and a profile
 * or model with the error must be rejected on its own with its own
 * file:line first. */
#include "sim/scenario.h"

#include "core/cfg.h"
#include "core/err.h"
#include "core/model.h"
#include "core/profile.h"

#include "badcorpus.h"
#include "testutil.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD_DIR DDPSIM_SOURCE_DIR "/tests/bad"

static bad_case *cases;
static int n_cases;

static int suite_init(void) {
  cases = bad_corpus_read(BAD_DIR, &n_cases);
  return cases ? 0 : 1;
}

static int suite_clean(void) {
  free(cases);
  return 0;
}

static void test_corpus_size(void) {
  CU_ASSERT(n_cases >= 30);
  int aux = 0, lines = 0;
  for (int i = 0; i < n_cases; i++) {
    aux += cases[i].in_aux;
    lines += cases[i].line > 0;
  }
  /* Errors in profiles and models are part of it, and most name a line. */
  CU_ASSERT(aux >= 10);
  CU_ASSERT(lines >= n_cases * 3 / 4);
}

static void test_load_file(void) {
  int failures = 0;
  for (int i = 0; i < n_cases; i++) {
    const bad_case *c = &cases[i];
    core_err_clear();
    sim_scenario *s = (sim_scenario *)(void *)&s; /* must be reset to NULL */
    int rc = sim_scenario_load(c->path, &s);
    char why[1024] = "";
    if (rc != CORE_EINVAL)
      snprintf(why, sizeof why, "returned %d (%s), expected CORE_EINVAL", rc, core_err_name(rc));
    else if (s != NULL)
      snprintf(why, sizeof why, "failed but left *out set");
    else
      bad_case_check_msg(c, core_err_msg(), why, sizeof why);
    if (why[0]) {
      failures++;
      fprintf(stderr, "\n  %s: %s\n    message: %s", c->path, why, core_err_msg());
    }
    if (rc == 0)
      sim_scenario_free(s);
  }
  CU_ASSERT_EQUAL(failures, 0);
}

/* From memory under the same name: the same code and message. */
static void test_load_string(void) {
  int failures = 0;
  for (int i = 0; i < n_cases; i++) {
    const bad_case *c = &cases[i];
    size_t len;
    char *text = tu_read_file(c->path, &len);
    CU_ASSERT_FATAL(text != NULL);
    if (strlen(text) != len) { /* a NUL byte: a C string cannot carry it */
      free(text);
      continue;
    }
    sim_scenario *s = NULL;
    int rc1 = sim_scenario_load(c->path, &s);
    char msg1[2048];
    snprintf(msg1, sizeof msg1, "%s", core_err_msg());
    int rc2 = sim_scenario_load_string(text, c->path, &s);
    if (rc1 != rc2 || strcmp(msg1, core_err_msg()) != 0) {
      failures++;
      fprintf(stderr, "\n  %s: from a string: %d \"%s\"\n    from the file: %d \"%s\"", c->path, rc2, core_err_msg(),
          rc1, msg1);
    }
    if (rc2 == 0)
      sim_scenario_free(s);
    free(text);
  }
  CU_ASSERT_EQUAL(failures, 0);
}

/* An aux profile or model is bad on its own: its loader rejects it and the
 * message starts with that file's file:line. */
static void test_aux_alone(void) {
  int failures = 0, checked = 0;
  for (int i = 0; i < n_cases; i++) {
    const bad_case *c = &cases[i];
    if (!c->in_aux)
      continue;
    const char *base = strrchr(c->file, '/') + 1;
    int rc;
    if (strncmp(base, "profile-", 8) == 0) {
      core_profile *p = NULL;
      rc = core_profile_load(c->file, &p);
      core_profile_free(p);
    } else if (strncmp(base, "model-", 6) == 0) {
      core_model *m = NULL;
      rc = core_model_load(c->file, &m);
      core_model_free(m);
    } else {
      continue;
    }
    checked++;
    bad_case alone = *c;
    snprintf(alone.path, sizeof alone.path, "%s", c->file);
    alone.in_aux = 0;
    char why[1024] = "";
    if (rc != CORE_EINVAL)
      snprintf(why, sizeof why, "returned %d, expected CORE_EINVAL", rc);
    else
      bad_case_check_msg(&alone, core_err_msg(), why, sizeof why);
    if (why[0]) {
      failures++;
      fprintf(stderr, "\n  %s alone: %s\n    message: %s", c->file, why, core_err_msg());
    }
  }
  CU_ASSERT_EQUAL(failures, 0);
  CU_ASSERT(checked >= 10);
}

/* The corpus is about errors, not about unreadable scaffolding: the same
 * scenarios with a known-good profile and model in place of a bad aux file
 * load. This keeps each aux case to its one error. */
static void test_aux_cases_are_otherwise_valid(void) {
  int failures = 0;
  for (int i = 0; i < n_cases; i++) {
    const bad_case *c = &cases[i];
    if (!c->in_aux)
      continue;
    char *text = tu_read_file(c->path, NULL);
    CU_ASSERT_FATAL(text != NULL);
    const char *rel = strstr(c->file, "/aux/");
    char ref[512];
    snprintf(ref, sizeof ref, "\"aux/%s\"", rel + 5);
    char *hit = strstr(text, ref);
    if (!hit) {
      free(text);
      continue;
    }
    const char *good =
        strncmp(rel + 5, "profile-", 8) == 0 ? "\"../data/cpu-test.cfg\"" : "\"../../scenarios/models/mlp-small.cfg\"";
    size_t need = strlen(text) + strlen(good) + 1;
    char *fixed = malloc(need);
    CU_ASSERT_FATAL(fixed != NULL);
    snprintf(fixed, need, "%.*s%s%s", (int)(hit - text), text, good, hit + strlen(ref));
    sim_scenario *s = NULL;
    int rc = sim_scenario_load_string(fixed, c->path, &s);
    if (rc) {
      failures++;
      fprintf(stderr, "\n  %s with a good %s: %s", c->path, good, core_err_msg());
    }
    sim_scenario_free(s);
    free(fixed);
    free(text);
  }
  CU_ASSERT_EQUAL(failures, 0);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("bad_inputs", suite_init, suite_clean);
  CU_add_test(s, "corpus has enough cases", test_corpus_size);
  CU_add_test(s, "sim_scenario_load rejects each with file:line", test_load_file);
  CU_add_test(s, "sim_scenario_load_string agrees", test_load_string);
  CU_add_test(s, "bad profiles and models rejected on their own", test_aux_alone);
  CU_add_test(s, "aux cases are valid but for the aux file", test_aux_cases_are_otherwise_valid);
}

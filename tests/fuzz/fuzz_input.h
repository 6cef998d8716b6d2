/* What the fuzz targets share: the input as text, and the check that a
 * refusal names the input's file first (file:line). Header-only, so that
 * the libFuzzer build and the corpus replay compile it alike. */
#ifndef TESTS_FUZZ_FUZZ_INPUT_H
#define TESTS_FUZZ_FUZZ_INPUT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* data as a NUL-terminated malloc'd text; NULL past 1 MiB (the inputs are
 * configuration files) or without memory. */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return NULL;
  char *text = malloc(size + 1);
  if (!text)
    return NULL;
  memcpy(text, data, size);
  text[size] = '\0';
  return text;
}

/* 1 when msg starts with "name:". */
static inline int fuzz_names_file(const char *msg, const char *name) {
  size_t n = strlen(name);
  return strncmp(msg, name, n) == 0 && msg[n] == ':';
}

#endif

#include "isal.h"

#include "err.h"

#include <dlfcn.h>
#include <isa-l/crc.h>
#include <isa-l/crc64.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DDPSIM_ISAL_SONAME
#define DDPSIM_ISAL_SONAME NULL
#endif
#ifndef DDPSIM_ISAL_PATH
#define DDPSIM_ISAL_PATH NULL
#endif

static pthread_once_t isal_once = PTHREAD_ONCE_INIT;
static __typeof__(&crc32_iscsi) isal_crc32c;
static __typeof__(&crc64_ecma_refl) isal_crc64;
static char isal_error[1024];

/* The library's handle: the first candidate name the loader opens; why
 * holds the first failure. */
static void *open_isal(char *why, size_t n, const char **tried) {
  const char *env = getenv("DDPSIM_ISAL");
  const char *names[] = {DDPSIM_ISAL_SONAME, DDPSIM_ISAL_PATH, "libisal.so"};
  if (env && *env) {
    names[0] = env;
    names[1] = names[2] = NULL;
  }
  snprintf(why, n, "no candidate name");
  void *h = NULL;
  for (size_t i = 0; i < sizeof names / sizeof *names && !h; i++) {
    if (!names[i] || !*names[i])
      continue;
    if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) == NULL && !*tried) {
      const char *e = dlerror();
      *tried = names[i];
      snprintf(why, n, "%s", e ? e : "unknown loader error");
    }
  }
  return h;
}

static void load_isal(void) {
  const char *tried = NULL, *missing = NULL;
  char why[512];
  void *h = open_isal(why, sizeof why, &tried);
  void *f32 = h ? dlsym(h, "crc32_iscsi") : NULL, *f64 = h ? dlsym(h, "crc64_ecma_refl") : NULL;
  if (f32 && f64) {
    memcpy(&isal_crc32c, &f32, sizeof f32);
    memcpy(&isal_crc64, &f64, sizeof f64);
    return;
  }
  if (h)
    missing = f32 ? "crc64_ecma_refl" : "crc32_iscsi";
  snprintf(isal_error, sizeof isal_error,
      "ISA-L not found: cannot load %s (%s); install libisal2 (ddpsim's checksums come from it) or set "
      "DDPSIM_ISAL=/path/libisal.so.2",
      missing ? missing
      : tried ? tried
              : "libisal.so",
      missing ? "the library lacks it" : why);
}

static int loaded(void) {
  pthread_once(&isal_once, load_isal);
  return isal_crc32c ? 0 : core_err_set(CORE_EUNSUPPORTED, "%s", isal_error);
}

int core_isal_crc32c(const void *p, size_t n, uint32_t *crc) {
  int rc = loaded();
  if (rc)
    return rc;
  /* ISA-L's crc32_iscsi neither inverts its seed nor its result: CRC-32C is
   * ~crc32_iscsi(p, n, ~0), and chunks chain through the raw state. */
  unsigned int state = 0xffffffffu;
  const unsigned char *c = p;
  while (n > 0) {
    int chunk = n > (size_t)INT_MAX ? INT_MAX : (int)n;
    state = isal_crc32c((unsigned char *)c, chunk, state);
    c += chunk;
    n -= (size_t)chunk;
  }
  *crc = ~state;
  return 0;
}

int core_isal_crc64(const void *p, size_t n, uint64_t *crc) {
  int rc = loaded();
  if (rc)
    return rc;
  *crc = isal_crc64(*crc, p, n);
  return 0;
}

#include "isal.h"

#include "dl.h"

#include <isa-l/crc.h>
#include <isa-l/crc64.h>
#include <limits.h>

#ifndef DDPSIM_ISAL_SONAME
#define DDPSIM_ISAL_SONAME NULL
#endif
#ifndef DDPSIM_ISAL_PATH
#define DDPSIM_ISAL_PATH NULL
#endif

static const core_dl_lib isal_lib = {
    .what = "ISA-L",
    .env = "DDPSIM_ISAL",
    .names = {DDPSIM_ISAL_SONAME, DDPSIM_ISAL_PATH, "libisal.so", NULL},
    .hint = "install libisal2 (ddpsim's checksums come from it)",
};

#define ISAL_FUNCS(X) X(crc32_iscsi) X(crc64_ecma_refl)
static struct { ISAL_FUNCS(CORE_DL_FN) } isal;
static core_dl_once loaded = CORE_DL_ONCE_INIT;

static void load(void) {
  void *h = NULL;
  const char *as = NULL;
  int rc = core_dl_open(&isal_lib, &h, &as);
#define RESOLVE(f) CORE_DL_RESOLVE(&isal_lib, as, h, &isal, rc, f)
  ISAL_FUNCS(RESOLVE)
#undef RESOLVE
  core_dl_settle(&loaded, rc);
}

int core_isal_available(void) { return core_dl_load_once(&loaded, load) == 0; }

int core_isal_crc32c(const void *p, size_t n, uint32_t *crc) {
  int rc = core_dl_load_once(&loaded, load);
  if (rc)
    return rc;
  /* ISA-L's crc32_iscsi neither inverts its seed nor its result: CRC-32C is
   * ~crc32_iscsi(p, n, ~0), and chunks chain through the raw state. */
  unsigned int state = 0xffffffffu;
  const unsigned char *c = p;
  while (n > 0) {
    int chunk = n > (size_t)INT_MAX ? INT_MAX : (int)n;
    state = isal.crc32_iscsi((unsigned char *)c, chunk, state);
    c += chunk;
    n -= (size_t)chunk;
  }
  *crc = ~state;
  return 0;
}

int core_isal_crc64(const void *p, size_t n, uint64_t *crc) {
  int rc = core_dl_load_once(&loaded, load);
  if (rc)
    return rc;
  *crc = isal.crc64_ecma_refl(*crc, p, n);
  return 0;
}

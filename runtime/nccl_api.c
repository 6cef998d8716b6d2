/* nccl_api — loading NCCL on first use (runtime/nccl_api.h). The build
 * passes the soname and file it found as DDPSIM_NCCL_SONAME and
 * DDPSIM_NCCL_PATH; without them only libnccl.so is tried. */
#include "runtime/nccl_api.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

#ifndef DDPSIM_NCCL_SONAME
#define DDPSIM_NCCL_SONAME NULL
#endif
#ifndef DDPSIM_NCCL_PATH
#define DDPSIM_NCCL_PATH NULL
#endif

static const core_dl_lib nccl_lib = {
    .what = "NCCL",
    .env = "DDPSIM_NCCL",
    .names = {DDPSIM_NCCL_SONAME, DDPSIM_NCCL_PATH, "libnccl.so"},
    .hint = "install NCCL (2.14 or later)",
};

static rt_nccl_api table;
static core_dl_once loaded = CORE_DL_ONCE_INIT;

static void load(void) {
  void *h = NULL;
  const char *as = NULL;
  int rc = core_dl_open(&nccl_lib, &h, &as);
#define RESOLVE(f) CORE_DL_RESOLVE(&nccl_lib, as, h, &table, rc, f)
  RT_NCCL_FUNCS(RESOLVE)
#undef RESOLVE
  core_dl_settle(&loaded, rc);
}

int rt_nccl_api_load(const rt_nccl_api **api) {
  int rc = core_dl_load_once(&loaded, load);
  *api = rc ? NULL : &table;
  return rc;
}

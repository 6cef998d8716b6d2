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

static const rt_dl_lib nccl_lib = {
    .what = "NCCL",
    .env = "DDPSIM_NCCL",
    .names = {DDPSIM_NCCL_SONAME, DDPSIM_NCCL_PATH, "libnccl.so"},
    .hint = "install NCCL (2.14 or later)",
};

static rt_nccl_api table;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static char load_msg[1024];

static void load(void) {
  void *h = NULL;
  const char *as = NULL;
  int rc = rt_dl_open(&nccl_lib, &h, &as);
#define RESOLVE(f) RT_DL_RESOLVE(&nccl_lib, as, h, &table, rc, f)
  RT_NCCL_FUNCS(RESOLVE)
#undef RESOLVE
  load_rc = rc;
  if (rc)
    snprintf(load_msg, sizeof load_msg, "%s", core_err_msg());
}

int rt_nccl_api_load(const rt_nccl_api **api) {
  pthread_once(&once, load);
  *api = load_rc ? NULL : &table;
  return load_rc ? core_err_set(load_rc, "%s", load_msg) : 0;
}

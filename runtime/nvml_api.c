/* nvml_api — loading NVML on first use (runtime/nvml_api.h). */
#include "runtime/nvml_api.h"

#include "runtime/dl.h"

#include "core/err.h"

#include <pthread.h>
#include <stdio.h>

static const rt_dl_lib nvml_lib = {
    .what = "NVML",
    .env = "DDPSIM_NVML",
    .names = {"libnvidia-ml.so.1", "libnvidia-ml.so"},
    .hint = "install the NVIDIA driver (it ships libnvidia-ml)",
};

static rt_nvml nvml;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static char load_msg[1024];

#define RESOLVE(f)                                                                                                     \
  do {                                                                                                                 \
    void *addr_ = NULL;                                                                                                \
    if (!rc && !(rc = rt_dl_sym(&nvml_lib, as, h, #f, &addr_)))                                                        \
      memcpy(&nvml.f, &addr_, sizeof addr_);                                                                           \
  } while (0)

static void load(void) {
  void *h = NULL;
  const char *as = NULL;
  int rc = rt_dl_open(&nvml_lib, &h, &as);
  RESOLVE(nvmlInit_v2);
  RESOLVE(nvmlShutdown);
  RESOLVE(nvmlDeviceGetHandleByIndex_v2);
  RESOLVE(nvmlDeviceGetUtilizationRates);
  RESOLVE(nvmlDeviceGetMemoryInfo);
  RESOLVE(nvmlErrorString);
  load_rc = rc;
  if (rc)
    snprintf(load_msg, sizeof load_msg, "%s", core_err_msg());
}

int rt_nvml_load(const rt_nvml **api) {
  pthread_once(&once, load);
  *api = load_rc ? NULL : &nvml;
  return load_rc ? core_err_set(load_rc, "%s", load_msg) : 0;
}

static int nvml_fail(const rt_nvml *api, const char *call, int r) {
  const char *why = api->nvmlErrorString ? api->nvmlErrorString(r) : NULL;
  return core_err_set(CORE_EUNSUPPORTED, "NVML: %s failed: %s (%d)", call, why ? why : "unknown error", r);
}

int rt_nvml_open_device(const rt_nvml *api, int index, rt_nvml_device *dev) {
  int r = api->nvmlInit_v2();
  if (r != 0)
    return nvml_fail(api, "nvmlInit", r);
  if ((r = api->nvmlDeviceGetHandleByIndex_v2((unsigned int)index, dev)) != 0) {
    int rc = nvml_fail(api, "nvmlDeviceGetHandleByIndex", r);
    core_err_wrap(rc, "GPU %d", index);
    api->nvmlShutdown();
    return rc;
  }
  return 0;
}

void rt_nvml_close(const rt_nvml *api) { api->nvmlShutdown(); }

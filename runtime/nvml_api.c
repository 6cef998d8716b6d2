/* nvml_api — loading NVML on first use (runtime/nvml_api.h). */
#include "runtime/nvml_api.h"

#include "core/dl.h"

#include "core/err.h"

#include <pthread.h>
#include <stdio.h>

static const core_dl_lib nvml_lib = {
    .what = "NVML",
    .env = "DDPSIM_NVML",
    .names = {"libnvidia-ml.so.1", "libnvidia-ml.so"},
    .hint = "install the NVIDIA driver (it ships libnvidia-ml)",
};

static rt_nvml nvml;
static core_dl_once loaded = CORE_DL_ONCE_INIT;

#define RESOLVE(f) CORE_DL_RESOLVE(&nvml_lib, as, h, &nvml, rc, f)

static void load(void) {
  void *h = NULL;
  const char *as = NULL;
  int rc = core_dl_open(&nvml_lib, &h, &as);
  RESOLVE(nvmlInit_v2)
  RESOLVE(nvmlShutdown)
  RESOLVE(nvmlDeviceGetHandleByIndex_v2)
  RESOLVE(nvmlDeviceGetUtilizationRates)
  RESOLVE(nvmlDeviceGetMemoryInfo)
  RESOLVE(nvmlErrorString)
  core_dl_settle(&loaded, rc);
}

int rt_nvml_load(const rt_nvml **api) {
  int rc = core_dl_load_once(&loaded, load);
  *api = rc ? NULL : &nvml;
  return rc;
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

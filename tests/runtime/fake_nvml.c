/* A stand-in for libnvidia-ml (loaded through DDPSIM_NVML by test_rt_tblog):
 * NVML's entry points with the C ABI of nvml.h (runtime/nvml_api.h), one
 * device (index 0) at 42% utilisation with 1234 MiB in use. */
#include <stddef.h>

typedef struct {
  unsigned int gpu, memory;
} fake_utilization;
typedef struct {
  unsigned long long total, free, used;
} fake_memory;

static int device_token;
static int inits;

int nvmlInit_v2(void) {
  inits++;
  return 0;
}
int nvmlShutdown(void) { return inits-- > 0 ? 0 : 1; }
/* NVML_ERROR_INVALID_ARGUMENT (2) for any device but 0. */
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device) {
  if (index != 0)
    return 2;
  *device = &device_token;
  return 0;
}
int nvmlDeviceGetUtilizationRates(void *device, fake_utilization *u) {
  if (device != &device_token)
    return 2;
  u->gpu = 42;
  u->memory = 7;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void *device, fake_memory *m) {
  if (device != &device_token)
    return 2;
  m->total = 80ull << 30;
  m->used = 1234ull << 20;
  m->free = m->total - m->used;
  return 0;
}
const char *nvmlErrorString(int r) { return r == 2 ? "Invalid Argument" : "Unknown Error"; }

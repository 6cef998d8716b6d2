/*
 * nvml_api — the NVIDIA Management Library functions the TensorBoard logger
 * reads a GPU's utilisation and memory with, as a table of function pointers
 * filled on first use (core/dl.h): libnvidia-ml ships with the driver,
 * not the CUDA Toolkit, so it is opened only where a rank asks for GPU
 * figures, and ddpsim builds without its header.
 *
 * The declarations below are NVML's stable C ABI as nvml.h (NVIDIA's NVML
 * API Reference, "Initialization and Cleanup" and "Device Queries") defines
 * it: nvmlReturn_t is an int enum with NVML_SUCCESS = 0; nvmlUtilization_t
 * is {unsigned int gpu, memory} in percent over the driver's last sample
 * period; nvmlMemory_t is {unsigned long long total, free, used} in bytes;
 * nvmlInit and nvmlDeviceGetHandleByIndex are the _v2 symbols nvml.h maps
 * them to.
 *
 * Where: $DDPSIM_NVML when set; otherwise libnvidia-ml.so.1 (the driver's
 * soname), then libnvidia-ml.so. Missing: CORE_EUNSUPPORTED ("NVML not
 * found: cannot load libnvidia-ml.so.1 (...); install the NVIDIA driver or
 * set DDPSIM_NVML=/path/libnvidia-ml.so.1").
 */
#ifndef RUNTIME_NVML_API_H
#define RUNTIME_NVML_API_H

typedef struct rt_nvml_device_st *rt_nvml_device; /* nvmlDevice_t */
typedef struct rt_nvml_utilization {              /* nvmlUtilization_t */
  unsigned int gpu, memory;
} rt_nvml_utilization;
typedef struct rt_nvml_memory { /* nvmlMemory_t */
  unsigned long long total, free, used;
} rt_nvml_memory;

typedef struct rt_nvml {
  int (*nvmlInit_v2)(void);
  int (*nvmlShutdown)(void);
  int (*nvmlDeviceGetHandleByIndex_v2)(unsigned int index, rt_nvml_device *device);
  int (*nvmlDeviceGetUtilizationRates)(rt_nvml_device device, rt_nvml_utilization *utilization);
  int (*nvmlDeviceGetMemoryInfo)(rt_nvml_device device, rt_nvml_memory *memory);
  const char *(*nvmlErrorString)(int result);
} rt_nvml;

/* The loaded table (loading it on the first call; thread-safe), or
 * CORE_EUNSUPPORTED with the message above on every call. NVML itself is
 * not initialised: rt_nvml_open_device does that. */
int rt_nvml_load(const rt_nvml **api);

/* nvmlInit and the handle of device index: 0, or CORE_EUNSUPPORTED naming
 * the NVML call that failed and nvmlErrorString's reason. Each successful
 * call is paired with rt_nvml_close (nvmlShutdown; NVML counts them). */
int rt_nvml_open_device(const rt_nvml *api, int index, rt_nvml_device *dev);
void rt_nvml_close(const rt_nvml *api);

#endif

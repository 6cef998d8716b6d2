/*
 * gpu_datasheet — vendor datasheet figures of the data-center GPUs a trace
 * may come from, told by the device name the trace records (and its memory,
 * where one name covers two models): what a profile of the traced GPU needs
 * and the trace cannot measure (peak rates, memory and host-link bandwidth).
 */
#ifndef CALIBRATE_GPU_DATASHEET_H
#define CALIBRATE_GPU_DATASHEET_H

#include <stdint.h>

typedef struct cal_gpu_sheet {
  const char *model;        /* e.g. "A100-SXM4-40GB" */
  double fp32_tflops, tf32_tflops, half_tflops; /* dense peaks; tf32 0 where there is none */
  double memory_GBps, host_link_GBps;
  const char *source;
} cal_gpu_sheet;

/* The sheet for a device name as CUDA reports it ("NVIDIA A100-PG509-200",
 * "Tesla V100-SXM2-32GB") with its total memory in bytes; NULL if unknown. */
const cal_gpu_sheet *cal_gpu_sheet_find(const char *device_name, int64_t memory_bytes);

#endif

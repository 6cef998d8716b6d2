/*
 * gpu_datasheet — vendor datasheet figures of the data-center GPUs a trace
 * may come from, told by the device name the trace records (and its memory,
 * where one name covers two models): what a profile of the traced GPU needs
 * and the trace cannot measure (dense peak rates per precision, memory,
 * host-link and NVLink bandwidth, memory capacity), and the roofs against which the importer
 * classes a traced kernel as compute-, memory- or launch-bound. Each GPU's
 * figures are those of a shipped profile (scenarios/profiles/, named in
 * the entry; tests/unit/test_import_gpu.c checks that they agree).
 */
#ifndef CALIBRATE_GPU_DATASHEET_H
#define CALIBRATE_GPU_DATASHEET_H

#include "core/profile.h"

#include <stdint.h>

typedef struct cal_gpu_sheet {
  const char *model;               /* e.g. "A100-SXM4-40GB" */
  const char *profile;             /* the shipped profile with the same figures, e.g. "dgx-a100-40gb.cfg" */
  double peak_tflops[CORE_N_PREC]; /* dense peaks; 0 where the GPU has no such math */
  double memory_GBps, host_link_GBps, nvlink_GBps; /* per direction; nvlink 0: none */
  double memory_GB;                                /* capacity, the datasheet's figure */
  const char *source;
} cal_gpu_sheet;

/* The sheet for a device name as CUDA reports it ("NVIDIA A100-PG509-200",
 * "Tesla V100-SXM2-32GB") with its total memory in bytes; NULL if unknown. */
const cal_gpu_sheet *cal_gpu_sheet_find(const char *device_name, int64_t memory_bytes);

/* The table, for tests: *n entries. */
const cal_gpu_sheet *cal_gpu_sheets(int *n);

#endif

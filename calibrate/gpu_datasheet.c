#include "gpu_datasheet.h"

#include <string.h>

/* Peaks in the order of enum core_prec: fp32, tf32, fp16, bf16. Host links
 * are PCIe x16 per direction: Gen3 16 GB/s, Gen4 32, Gen5 64 (PCI-SIG base
 * specifications 3.0, 4.0, 5.0). */
static const cal_gpu_sheet sheets[] = {
    {"V100-SXM2", "dgx1-v100.cfg", {15.7, 0, 125.0, 0}, 900.0, 16.0, 150.0, 32.0,
        "NVIDIA Tesla V100 datasheet (SXM2: 15.7 TFLOP/s fp32, 125 tensor fp16, no tf32 or bf16; 32 GB HBM2 900 GB/s "
        "(16 GB boards too); NVLink "
        "2 300 GB/s both ways; PCIe Gen3)"},
    {"A100-SXM4-40GB", "dgx-a100-40gb.cfg", {19.5, 156.0, 312.0, 312.0}, 1555.0, 32.0, 300.0, 40.0,
        "NVIDIA A100 datasheet (19.5 TFLOP/s fp32, 156 tf32, 312 fp16/bf16 dense; 40 GB HBM2 1,555 GB/s; NVLink 3 600 "
        "GB/s both ways; PCIe Gen4)"},
    {"A100-SXM4-80GB", "dgx-a100.cfg", {19.5, 156.0, 312.0, 312.0}, 2039.0, 32.0, 300.0, 80.0,
        "NVIDIA A100 datasheet (19.5 TFLOP/s fp32, 156 tf32, 312 fp16/bf16 dense; 80 GB HBM2e 2,039 GB/s; NVLink 3 600 "
        "GB/s both ways; PCIe Gen4)"},
    {"H100-SXM", "dgx-h100.cfg", {67.0, 494.7, 989.4, 989.4}, 3350.0, 64.0, 450.0, 80.0,
        "NVIDIA H100 datasheet (SXM: 67 TFLOP/s fp32, 989 tf32 and 1,979 fp16/bf16 with sparsity, half that dense; "
        "80 GB HBM3 3.35 TB/s; NVLink 4 900 GB/s both ways; PCIe Gen5)"},
    {"H200-SXM", "hgx-h200.cfg", {67.0, 494.7, 989.4, 989.4}, 4800.0, 64.0, 450.0, 141.0,
        "NVIDIA H200 datasheet (SXM: compute as H100 SXM; 141 GB HBM3e 4.8 TB/s; NVLink 4 900 GB/s both ways; PCIe "
        "Gen5)"},
    {"B200-SXM", "dgx-b200.cfg", {75.0, 1100.0, 2250.0, 2250.0}, 7700.0, 64.0, 900.0, 180.0,
        "NVIDIA HGX B200 specifications (75 TFLOP/s fp32; 2.2 PFLOP/s tf32 and 4.5 fp16/bf16 with sparsity, half that "
        "dense; 180 GB HBM3e 7.7 TB/s; NVLink 5 1.8 TB/s both ways; PCIe Gen5)"},
    {"L40S", "l40s-8gpu.cfg", {91.6, 183.0, 362.05, 362.05}, 864.0, 32.0, 0, 48.0,
        "NVIDIA L40S datasheet (91.6 TFLOP/s fp32, 183 tf32, 362.05 fp16/bf16 dense; 48 GB GDDR6 864 GB/s; no NVLink; "
        "PCIe "
        "Gen4)"},
};

const cal_gpu_sheet *cal_gpu_sheets(int *n) {
  *n = (int)(sizeof sheets / sizeof *sheets);
  return sheets;
}

const cal_gpu_sheet *cal_gpu_sheet_find(const char *name, int64_t memory_bytes) {
  /* In the table's order; the A100s are told apart by their memory. */
  static const char *const keys[] = {"V100", NULL, NULL, "H100", "H200", "B200", "L40S"};
  if (!name)
    return NULL;
  if (strstr(name, "A100")) /* one name for both: 40 GB boards report about 42 GB */
    return memory_bytes > 0 && memory_bytes < (int64_t)60e9 ? &sheets[1] : &sheets[2];
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    if (keys[i] && strstr(name, keys[i]))
      return &sheets[i];
  return NULL;
}

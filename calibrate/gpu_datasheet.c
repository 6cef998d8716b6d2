#include "gpu_datasheet.h"

#include <string.h>

/* Host links are PCIe x16 per direction: Gen3 16 GB/s, Gen4 32, Gen5 64
 * (PCI-SIG base specifications 3.0, 4.0, 5.0). */
static const cal_gpu_sheet sheets[] = {
    {"V100-SXM2", 15.7, 0, 125.0, 900.0, 16.0,
     "NVIDIA Tesla V100 datasheet (SXM2: 15.7 TFLOP/s fp32, 125 tensor fp16, HBM2 900 GB/s; PCIe Gen3)"},
    {"A100-SXM4-40GB", 19.5, 156.0, 312.0, 1555.0, 32.0,
     "NVIDIA A100 datasheet (19.5 TFLOP/s fp32, 156 tf32, 312 fp16/bf16 dense; 40 GB HBM2 1,555 GB/s; PCIe Gen4)"},
    {"A100-SXM4-80GB", 19.5, 156.0, 312.0, 2039.0, 32.0,
     "NVIDIA A100 datasheet (19.5 TFLOP/s fp32, 156 tf32, 312 fp16/bf16 dense; 80 GB HBM2e 2,039 GB/s; PCIe Gen4)"},
    {"H100-SXM", 67.0, 494.7, 989.4, 3350.0, 64.0,
     "NVIDIA H100 datasheet (SXM: 67 TFLOP/s fp32, 989 tf32 and 1,979 bf16 with sparsity, half that dense; HBM3 3.35 TB/s; PCIe Gen5)"},
    {"H200-SXM", 67.0, 494.7, 989.4, 4800.0, 64.0,
     "NVIDIA H200 datasheet (SXM: compute as H100 SXM; HBM3e 4.8 TB/s; PCIe Gen5)"},
};

const cal_gpu_sheet *cal_gpu_sheet_find(const char *name, int64_t memory_bytes) {
  if (!name)
    return NULL;
  if (strstr(name, "V100"))
    return &sheets[0];
  if (strstr(name, "A100")) /* one name for both: 40 GB boards report about 42 GB */
    return memory_bytes > 0 && memory_bytes < (int64_t)60e9 ? &sheets[1] : &sheets[2];
  if (strstr(name, "H100"))
    return &sheets[3];
  if (strstr(name, "H200"))
    return &sheets[4];
  return NULL;
}

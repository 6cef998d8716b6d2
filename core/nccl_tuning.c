/* nccl_tuning — NCCL's tuning-model latencies (core/nccl_tuning.h). */
#include "core/nccl_tuning.h" /* by its path: a bare "nccl..." is NCCL's own */

/* tuning.cc's baseLat and hwLat, Tree and Ring rows, {LL, LL128, Simple}. */
static const double base_lat[CORE_NCCL_N_ALGOS][CORE_NCCL_N_PROTOS] = {
    {6.8, 14.0, 0.0}, /* Tree */
    {6.6, 14.0, 8.4}, /* Ring */
};
static const double hop_lat[CORE_NCCL_N_HW][CORE_NCCL_N_ALGOS][CORE_NCCL_N_PROTOS] = {
    {{0.6, 1.25, 28.0}, {0.6, 1.9, 3.4}}, /* NVLink: Tree, Ring */
    {{1.0, 1.9, 28.0}, {1.0, 2.5, 5.7}},  /* PCIe */
    {{5.0, 8.5, 28.0}, {2.7, 4.0, 14.0}}, /* network */
};

double core_nccl_base_lat_us(enum core_nccl_algo a, enum core_nccl_proto p) { return base_lat[a][p]; }

double core_nccl_hop_lat_us(enum core_nccl_hw hw, enum core_nccl_algo a, enum core_nccl_proto p) {
  return hop_lat[hw][a][p];
}

#include "dims.h"

#include "sim/job.h"

#include <string.h>

const char *sim_dim_path(const sim_scenario *s, enum sim_dim d, int other) {
  static const char *const paths[SIM_N_DIMS] = {"model", "networks", "fabric", "ddp.backend", "ddp.algorithm",
      "training.precision", "training.batch", "ddp.bucket_cap_mb", "ddp.overlap", "ddp.find_unused_parameters",
      "ddp.compression", "cluster.devices_per_node", "cluster.nodes", "failures.mtbf_h", "failures.weibull_shape",
      "failures.detect_s", "failures.mttr_h", "failures.restart_s", "failures.load_s", "checkpoint.cost_s",
      "checkpoint.mode", "failures.spares", "checkpoint.every_s"};
  if ((unsigned)d >= SIM_N_DIMS)
    return other ? NULL : "?";
  const char *alt = d == SIM_DIM_FAIL_RATE    ? "failures.weibull_scale_h"
                    : d == SIM_DIM_CKPT_EVERY ? "checkpoint.every_steps"
                                              : NULL;
  int uses_alt = (d == SIM_DIM_FAIL_RATE && s->job.fail_dist == SIM_FAIL_WEIBULL) ||
                 (d == SIM_DIM_CKPT_EVERY && s->job.every_in_steps);
  if (other)
    return alt ? (uses_alt ? paths[d] : alt) : NULL;
  return uses_alt ? alt : paths[d];
}

const char *sim_dim_column(const sim_scenario *s, enum sim_dim d) {
  static const char *const names[SIM_N_DIMS] = {"model", "network", "fabric", "backend", "algorithm", "precision",
      "batch", "bucket_cap_mb", "overlap", "find_unused_parameters", "compression", "gpus_per_node", "nodes", NULL,
      NULL, "detect_s", "mttr_h", "restart_s", "load_s", "ckpt_s", "ckpt_mode", "spares", "ckpt_every_s"};
  if (d == SIM_DIM_CKPT_EVERY && s->job.every_in_steps)
    return "ckpt_every_steps";
  if ((unsigned)d < SIM_N_DIMS && names[d])
    return names[d];
  const char *path = sim_dim_path(s, d, 0), *dot = strchr(path, '.');
  return dot ? dot + 1 : path;
}

/*
 * dims — the names of a scenario's sweep dimensions (enum sim_dim): the
 * CSV's column and the scenario's key, as the scenario at hand spells them,
 * for the tables, messages and TensorBoard tags that name a dimension.
 */
#ifndef SIM_DIMS_H
#define SIM_DIMS_H

#include "sim/scenario.h"

/* The dimension as the CSV's column names it ("gpus_per_node", "ckpt_mode"),
 * for tables printed beside the CSV; the failure distribution's own
 * dimensions, which have no column, by their scenario key ("mtbf_h",
 * "weibull_scale_h"). */
const char *sim_dim_column(const sim_scenario *s, enum sim_dim d);
/* The dimension's key with its group, as s spells it ("training.batch",
 * "failures.weibull_scale_h" with Weibull failures, "checkpoint.every_steps"
 * with checkpoints in steps); other = 1: the spelling s does not use, NULL
 * for a dimension that has one only. */
const char *sim_dim_path(const sim_scenario *s, enum sim_dim d, int other);

#endif

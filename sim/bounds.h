/*
 * bounds — what a study asks for, held against what it can be before it
 * runs: its points within simulation.max_points (a sweep's arrays multiply,
 * and a study far bigger than meant runs for hours or runs out of memory).
 * Each refusal is an input error
 * (CORE_EINVAL) that starts with file:line of the key to change.
 */
#ifndef SIM_BOUNDS_H
#define SIM_BOUNDS_H

#include "sim/scenario.h"

/* The study's points, the product of its sweeps, within
 * simulation.max_points: the whole study's, sharded or not (every shard
 * refuses the same scenario, and merge puts them back into one CSV). The
 * message is at the sweep with the most values and names every sweep. */
int sim_bounds_points(const sim_scenario *s, const config_setting_t *root);

#endif

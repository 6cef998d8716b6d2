/*
 * bounds — what a study asks for, held against what it can be before it
 * runs: its points within simulation.max_points (a sweep's arrays multiply,
 * and a study far bigger than meant runs for hours or runs out of memory),
 * and its scheduled failures (failures.at_steps) within the job's steps (one
 * past the last step would never happen). Each refusal is an input error
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

/* The scheduled failures within the job's steps where the scenario fixes
 * them: job.steps, or job.samples over the largest global batch it sweeps
 * (the fewest steps). With job.hours the steps depend on the step time:
 * sim_bounds_schedule_point checks each point once it is known. */
int sim_bounds_schedule(const sim_scenario *s, const config_setting_t *root);

/* The same for point p, whose job trains total_steps steps of step_s
 * seconds: a scheduled failure comes in the middle of its step, so one at
 * or after total_steps - 0.5 would never happen. A sweep passes its point
 * with the fewest steps, so that one change of the scenario fixes all. */
int sim_bounds_schedule_point(const sim_scenario *s, const sim_point *p, double total_steps, double step_s);

#endif

/* Helpers shared by the simulator's unit suites (linked with ddpsim_sim):
 * predicting one point of a loaded scenario. */
#ifndef TESTS_UNIT_SIMUTIL_H
#define TESTS_UNIT_SIMUTIL_H

#include "sim/predict.h"
#include "sim/scenario.h"

/* Point idx of s predicted into r on an engine of its own; 0 on success,
 * else the error code with the message on stderr. */
int tu_run_point(const sim_scenario *s, long idx, sim_point_result *r);

#endif

/* Helpers shared by the simulator's unit suites (linked with ddpsim_sim):
 * loading a scenario and predicting one of its points. */
#ifndef TESTS_UNIT_SIMUTIL_H
#define TESTS_UNIT_SIMUTIL_H

#include "sim/predict.h"
#include "sim/scenario.h"

/* text loaded as if it were the scenario file `as` (relative paths resolve
 * against its directory); NULL with the message and the text on stderr. */
sim_scenario *tu_load_string(const char *text, const char *as);
/* The scenario file at path; NULL with the message on stderr. */
sim_scenario *tu_load_file(const char *path);

/* Point idx of s predicted into r on an engine of its own; 0 on success,
 * else the error code with the message on stderr. */
int tu_run_point(const sim_scenario *s, long idx, sim_point_result *r);

#endif

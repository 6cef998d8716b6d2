/*
 * advice — what `ddpsim advise` makes of the points its search simulated
 * (sim/advise.h): which meet the deadline and the budget, which are on the
 * front of time to train against cost (no other point both faster and no
 * dearer, or cheaper and no slower), their rank by the objective, and for
 * each the part of the wall time it removes most against the scenario as
 * given (exposed communication, checkpoint stalls, lost work, time down,
 * or compute spread over more devices) with the settings it changes; then
 * the ranked table, and DIR/NAME-advice.csv. When no point meets the
 * deadline or the budget, the error names the closest ones.
 */
#ifndef SIM_ADVICE_H
#define SIM_ADVICE_H

#include "sim/advise.h"

#include <stdio.h>

/* Feasibility, front, ranks and reasons; CORE_EINVAL (at the line of the
 * deadline or budget) when no point meets them. */
int sim_advice_rank(const sim_scenario *s, sim_advice *a);

/* The points in rank order, one row each (columns in scenarios/README.md). */
int sim_advice_write_csv(const sim_scenario *s, const sim_advice *a, const char *path);

/* The search in numbers, then the top rows with their reasons. */
void sim_advice_print(const sim_scenario *s, const sim_advice *a, double wall_s, FILE *f);

#endif

/*
 * summary — the table `ddpsim simulate` prints: one row per point with a
 * column for every dimension the study sweeps (rows never differ only in
 * something the table does not show), the step level's times and
 * throughput or the job level's goodput, time to train and waste, the cost
 * when the study has prices, and under each group of checkpoint intervals
 * the best one with its interval and the intervals tied with it.
 */
#ifndef SIM_SUMMARY_H
#define SIM_SUMMARY_H

#include "sim/sweep.h"

#include <stdio.h>

void sim_summary_print(const sim_scenario *s, const sim_sweep *w, FILE *f);

/* Why runs of a point did not finish (how many, the cap, the interrupts
 * and recovery behind it, how their values were made): "" when all did. */
void sim_summary_unfinished(const sim_point_result *r, char *buf, size_t n);

/* The value of dimension d at point p, as the table and the advice print it. */
const char *sim_summary_dim_value(const sim_scenario *s, const sim_point *p, enum sim_dim d, char *buf, size_t n);

#endif

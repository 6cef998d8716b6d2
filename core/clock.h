/*
 * clock — the project's two clocks, in seconds as doubles. core_now is
 * monotonic (CLOCK_MONOTONIC): durations within a process, immune to the
 * wall clock being set. core_wall_now is the wall clock (CLOCK_REALTIME):
 * moments compared across processes, such as a rank's death and the
 * launcher seeing it, and times recorded in files.
 */
#ifndef CORE_CLOCK_H
#define CORE_CLOCK_H

double core_now(void);
double core_wall_now(void);

#endif

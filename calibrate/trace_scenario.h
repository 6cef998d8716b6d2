/*
 * trace_scenario — a scenario of the job a GPU trace measured, ready to edit
 * for what-ifs: the model `ddpsim import torch-trace` wrote, at its traced
 * batch, on the traced world (nodes of as many GPUs as the trace's host
 * lists), with DDP's defaults; and beside it a profile of the traced GPU
 * whose allreduce fit comes from the trace's own bucket allreduce kernels
 * (their bytes and times), the rest from a base profile or, without one, the
 * GPU's datasheet (calibrate/gpu_datasheet.h). Simulated as it stands, the
 * scenario replays the traced step: `bench/trace-replay.sh` checks it against
 * the trace's median step.
 */
#ifndef CALIBRATE_TRACE_SCENARIO_H
#define CALIBRATE_TRACE_SCENARIO_H

#include "core/traced.h"

#include <stddef.h>

/* model: the model file written for the trace; scenario: the file to write
 * (its profile goes beside it, NAME.profile.cfg); profile_base may be NULL. */
int cal_trace_scenario(
    const char *model, const char *scenario, const char *profile_base, char *notes, size_t notes_len);

/* Whether cal_trace_scenario can make a scenario of the traced step t (its
 * world on hosts of its host's GPUs; its batch per GPU within a scenario's
 * range; its GPU's datasheet, unless a base profile is given): 0, or the error it would give. For the importer to
 * refuse before it writes the model. */
int cal_trace_scenario_check(const core_traced *t, double batch, int have_profile_base);

/* The profile cal_trace_scenario writes beside scenario, into out (n bytes):
 * so that a command checks it, with its other outputs, before any work. */
void cal_trace_scenario_profile(const char *scenario, char *out, size_t n);

#endif

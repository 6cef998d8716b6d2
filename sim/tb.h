/*
 * tb — a study's predictions as TensorBoard scalars (`ddpsim simulate
 * --tensorboard DIR`), so that they sit beside a real run's (`ddpsim train
 * --tensorboard`) in one TensorBoard.
 *
 * TensorBoard's step axis is the study's innermost swept dimension (the
 * last, in the CSV's point order, with more than one value: nodes in a
 * scaling study, the checkpoint interval in a failure study): a point's step
 * is that dimension's value where every value is a whole number (nodes,
 * GPUs per node, batch, spares, the interval in seconds or steps, bucket
 * caps of whole megabytes), else its position 0, 1, ... in the sweep. Each
 * combination of the other swept dimensions is a run of its own, the
 * directory DIR/NAME/dim=value,dim=value (DIR/NAME when nothing else is
 * swept), holding one event file (core/tbwriter.h) of scalars per point:
 *   Predicted/StepTime, Predicted/ComputeTime, Predicted/SyncTime (the
 *   buckets' collectives), Predicted/ExposedComm, Predicted/CommRatio
 *   (SyncTime / StepTime), Predicted/SamplesPerSec, Predicted/ScalingEff,
 *   and with a job level Predicted/Goodput, Predicted/TimeToTrainH,
 *   Predicted/ETTR, Predicted/Failures; Sweep/<dim> holds the swept value
 *   (its position for named alternatives). A figure that is not finite (a
 *   point that timed out, a run that never finished) is left out.
 * Events carry no wall time (0), so the same study and seed give the same
 * bytes; files are written whole (core/afile.h), replacing earlier ones.
 */
#ifndef SIM_TB_H
#define SIM_TB_H

#include "core/afile.h"
#include "sim/scenario.h"
#include "sim/sweep.h"

/* Refuse before any work a DIR that cannot take the files (DIR/NAME is
 * made, and noted in *made unless it is NULL): CORE_EUSAGE. */
int sim_tb_check(const sim_scenario *s, const char *dir, core_made_dirs *made);
/* Write every run's event file of the study w of s. */
int sim_tb_write(const sim_scenario *s, const sim_sweep *w, const char *dir);

#endif

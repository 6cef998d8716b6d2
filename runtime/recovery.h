/*
 * recovery — rank 0's account of how a training job came back from a
 * failure: the time to detect it, stop the other ranks, start again,
 * rendezvous, load the checkpoint and replay the steps lost since it. Each
 * attempt after a failure writes OUT/recovery-attempt-A.csv once it has
 * replayed the lost steps; rt_recovery_merge gathers them into
 * OUT/recovery.csv at the end of the run.
 *
 * The failure's times come from the launcher (DDPSIM_FAIL_TIME: when it saw
 * a rank die, DDPSIM_STOP_S: how long stopping the others took) and, for an
 * injected failure, from the file the dying rank wrote
 * (OUT/fail-attempt-A.time: when it died, at which step).
 */
#ifndef RUNTIME_RECOVERY_H
#define RUNTIME_RECOVERY_H

typedef struct rt_recovery {
  int active;       /* this attempt follows a failure */
  long prev_last;   /* last step the previous attempt completed, or -1 */
  long fail_step;   /* the step the failure interrupted */
  double death_rt;  /* wall clock of the death (or of its detection) */
  double seen_rt;   /* wall clock when the launcher saw it */
  double stop_s;    /* stopping the other ranks */
  double rdzv_s;    /* this attempt's rendezvous */
  double load_s;    /* loading the checkpoint */
  double loaded_rt; /* wall clock when the checkpoint was loaded */
  long resume_step; /* the step this attempt starts from */
} rt_recovery;

/* What is known at the start of attempt `attempt` (0: no failure before it)
 * from the environment and the previous attempt's files in out_dir. */
void rt_recovery_begin(const char *out_dir, int attempt, rt_recovery *rec);

/* The previous failure's recovery is complete now: write its row.
 * process_start_rt is when this attempt's process started. */
int rt_recovery_done(const char *out_dir, int attempt, double process_start_rt, const rt_recovery *rec);

/* Every attempt's row into out_dir/recovery.csv (none written when no
 * attempt recovered). */
int rt_recovery_merge(const char *out_dir, int attempts);

#endif

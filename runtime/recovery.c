#include "runtime/recovery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/csv.h"

/* The last step the previous attempt's rank 0 recorded, or -1. */
static long last_step(const char *out_dir, int attempt) {
  char path[4400];
  long last = -1;
  core_csv_table t;
  snprintf(path, sizeof path, "%s/rank-0.attempt-%d.csv", out_dir, attempt);
  if (core_csv_read(path, &t) != 0)
    return -1;
  int c = core_csv_col(&t, "step");
  for (long i = 0; c >= 0 && i < t.nrows; i++)
    if (atol(t.rows[i][c]) > last)
      last = atol(t.rows[i][c]);
  core_csv_table_free(&t);
  return last;
}

void rt_recovery_begin(const char *out_dir, int attempt, rt_recovery *rec) {
  char path[4400];
  memset(rec, 0, sizeof *rec);
  rec->prev_last = -1;
  const char *ft = getenv("DDPSIM_FAIL_TIME"), *st = getenv("DDPSIM_STOP_S");
  if (attempt == 0 || !ft)
    return;
  rec->active = 1;
  rec->seen_rt = atof(ft);
  rec->stop_s = st ? atof(st) : 0;
  rec->death_rt = rec->seen_rt;
  rec->prev_last = last_step(out_dir, attempt - 1);
  rec->fail_step = rec->prev_last + 1;
  /* The dying rank wrote when it died (injected failures only). */
  snprintf(path, sizeof path, "%s/fail-attempt-%d.time", out_dir, attempt - 1);
  FILE *f = fopen(path, "r");
  if (f) {
    double d;
    long stp;
    if (fscanf(f, "%lf %ld", &d, &stp) == 2) {
      rec->death_rt = d;
      rec->fail_step = stp;
    }
    fclose(f);
  }
}

static const char *const cols[] = {"attempt", "fail_step", "detect_s", "stop_s", "restart_s", "rendezvous_s",
    "ckpt_load_s", "resume_step", "replay_steps", "replay_s", "recovery_s"};
enum { N_COLS = 11 };

int rt_recovery_done(const char *out_dir, int attempt, double process_start_rt, const rt_recovery *rec) {
  char path[4400];
  double now = core_wall_now();
  core_csv c;
  snprintf(path, sizeof path, "%s/recovery-attempt-%d.csv", out_dir, attempt);
  int rc = core_csv_open(&c, path, cols, N_COLS);
  if (rc)
    return rc;
  /* The steps done since the checkpoint are lost and run again. fail_step,
   * not rank 0's last row: a survivor killed just after a step may not have
   * recorded it. */
  long replay = rec->fail_step - rec->resume_step;
  core_csv_int(&c, attempt);
  core_csv_int(&c, rec->fail_step);
  core_csv_num(&c, rec->seen_rt - rec->death_rt);
  core_csv_num(&c, rec->stop_s);
  core_csv_num(&c, process_start_rt - (rec->seen_rt + rec->stop_s));
  core_csv_num(&c, rec->rdzv_s);
  core_csv_num(&c, rec->load_s);
  core_csv_int(&c, rec->resume_step);
  core_csv_int(&c, replay > 0 ? replay : 0);
  core_csv_num(&c, now - rec->loaded_rt);
  core_csv_num(&c, now - rec->death_rt);
  core_csv_end_row(&c);
  return core_csv_commit(&c);
}

int rt_recovery_merge(const char *out_dir, int attempts) {
  char path[4400];
  core_csv out;
  int rc, any = 0;
  for (int a = 1; a < attempts; a++) {
    snprintf(path, sizeof path, "%s/recovery-attempt-%d.csv", out_dir, a);
    any |= access(path, R_OK) == 0;
  }
  if (!any)
    return 0;
  snprintf(path, sizeof path, "%s/recovery.csv", out_dir);
  if ((rc = core_csv_open(&out, path, cols, N_COLS)) != 0)
    return rc;
  for (int a = 1; a < attempts; a++) {
    core_csv_table t;
    snprintf(path, sizeof path, "%s/recovery-attempt-%d.csv", out_dir, a);
    if (access(path, R_OK) != 0)
      continue;
    if ((rc = core_csv_read(path, &t)) != 0) {
      core_csv_abort(&out);
      return rc;
    }
    for (long i = 0; i < t.nrows && t.ncols == N_COLS; i++) {
      for (int j = 0; j < N_COLS; j++)
        core_csv_str(&out, t.rows[i][j]);
      core_csv_end_row(&out);
    }
    core_csv_table_free(&t);
  }
  return core_csv_commit(&out);
}

/*
 * objective — what `ddpsim advise` looks for (the scenario's advise group):
 * "time" or "cost" to minimize, or any column of the advice to minimize or
 * maximize (time_to_train_h by default), and optionally a deadline on the time to train and a budget on
 * the cost, which a recommendation must meet. The column must be one the
 * study has: cost columns need prices (sim/cost.h), the time to train a job
 * group. Checked with file:line when the scenario is read, so that a study
 * that cannot answer its own question fails before anything runs.
 */
#ifndef SIM_OBJECTIVE_H
#define SIM_OBJECTIVE_H

#include <libconfig.h>

/* The numeric columns of the advice an objective may name. */
enum sim_obj_col {
  SIM_OBJ_TIME_H = 0,
  SIM_OBJ_COST_USD,
  SIM_OBJ_USD_PER_HOUR,
  SIM_OBJ_GOODPUT,
  SIM_OBJ_STEP_S,
  SIM_OBJ_SAMPLES_PER_S,
  SIM_OBJ_SCALING_EFF,
  SIM_OBJ_EXPOSED_COMM_S,
  SIM_OBJ_WASTE_CKPT_H,
  SIM_OBJ_WASTE_LOST_H,
  SIM_OBJ_WASTE_RESTART_H,
  SIM_OBJ_N
};

typedef struct sim_objective {
  enum sim_obj_col col;
  int maximize;      /* else minimize */
  double deadline_h; /* 0: none */
  double budget_usd; /* 0: none */
  int top;           /* rows of the ranked table */
  /* For messages: the keys, NULL when not given. Borrowed from the file. */
  const config_setting_t *key, *deadline_key, *budget_key;
} sim_objective;

/* The advise group of a scenario's root (defaults without one). has_job: the
 * study has a job group (time to train); priced: it has prices. */
int sim_objective_parse(const config_setting_t *root, int has_job, int priced, sim_objective *o);

/* "minimize time_to_train_h within 240 h and 2e+06 USD", for tables. */
const char *sim_objective_text(const sim_objective *o, char *buf, int n);

#endif

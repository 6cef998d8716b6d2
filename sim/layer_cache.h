/*
 * layer_cache — the per-layer compute times of a scenario's points, costed
 * once per model, precision, per-GPU batch and optimizer and then shared by
 * every point and worker thread that needs the same ones. A sweep over
 * networks, backends or node counts costs each model's layers once instead
 * of once a point. Entries are copies: the caller's arrays never alias the
 * cache. Safe to use from several threads at once.
 */
#ifndef SIM_LAYER_CACHE_H
#define SIM_LAYER_CACHE_H

#include "core/model.h"

typedef struct sim_layer_cache sim_layer_cache;

/* What an entry is for; the model must outlive the cache (the scenario owns
 * both). */
typedef struct sim_layer_key {
  const core_model *model;
  int precision; /* enum sim_precision */
  double batch;  /* per GPU */
  int optimizer; /* enum sim_optimizer */
} sim_layer_key;

/* NULL when out of memory: callers then cost every point themselves. */
sim_layer_cache *sim_layer_cache_new(void);
void sim_layer_cache_free(sim_layer_cache *c);

/* Copies the entry for k into fwd[n_layers], bwd[n_layers] and *opt and
 * returns 1; returns 0 when there is none (or c is NULL). */
int sim_layer_cache_get(sim_layer_cache *c, const sim_layer_key *k, double *fwd, double *bwd, double *opt);

/* Keeps a copy of the times for k; does nothing when the cache is full, out
 * of memory, or already holds k (the times of a key are always the same). */
void sim_layer_cache_put(sim_layer_cache *c, const sim_layer_key *k, const double *fwd, const double *bwd, double opt);

#endif

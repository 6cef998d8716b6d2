#include "sim/layer_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Enough for a sweep over every batch and precision of a few models; past
 * it, points are costed as if there were no cache. */
#define MAX_ENTRIES 256

typedef struct entry {
  sim_layer_key key;
  double *times; /* fwd[n_layers], then bwd[n_layers] */
  double opt;
} entry;

struct sim_layer_cache {
  pthread_mutex_t lock;
  int n;
  entry e[MAX_ENTRIES];
};

sim_layer_cache *sim_layer_cache_new(void) {
  sim_layer_cache *c = calloc(1, sizeof *c);
  if (c && pthread_mutex_init(&c->lock, NULL) != 0) {
    free(c);
    return NULL;
  }
  return c;
}

void sim_layer_cache_free(sim_layer_cache *c) {
  if (!c)
    return;
  for (int i = 0; i < c->n; i++)
    free(c->e[i].times);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

static int same(const sim_layer_key *a, const sim_layer_key *b) {
  return a->model == b->model && a->precision == b->precision && a->batch == b->batch && a->optimizer == b->optimizer;
}

/* The entry for k, or NULL; called with the lock held. */
static const entry *find(const sim_layer_cache *c, const sim_layer_key *k) {
  for (int i = 0; i < c->n; i++)
    if (same(&c->e[i].key, k))
      return &c->e[i];
  return NULL;
}

int sim_layer_cache_get(sim_layer_cache *c, const sim_layer_key *k, double *fwd, double *bwd, double *opt) {
  if (!c)
    return 0;
  size_t L = (size_t)k->model->n_layers;
  pthread_mutex_lock(&c->lock);
  const entry *e = find(c, k);
  if (e) {
    memcpy(fwd, e->times, L * sizeof *fwd);
    memcpy(bwd, e->times + L, L * sizeof *bwd);
    *opt = e->opt;
  }
  pthread_mutex_unlock(&c->lock);
  return e != NULL;
}

void sim_layer_cache_put(sim_layer_cache *c, const sim_layer_key *k, const double *fwd, const double *bwd, double opt) {
  if (!c)
    return;
  size_t L = (size_t)k->model->n_layers;
  double *t = malloc((2 * L + 1) * sizeof *t);
  if (!t)
    return;
  memcpy(t, fwd, L * sizeof *t);
  memcpy(t + L, bwd, L * sizeof *t);
  pthread_mutex_lock(&c->lock);
  if (c->n < MAX_ENTRIES && !find(c, k)) {
    c->e[c->n++] = (entry){.key = *k, .times = t, .opt = opt};
    t = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  free(t);
}

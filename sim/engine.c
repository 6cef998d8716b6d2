#include "engine.h"

#include "core/err.h"

#include <stdlib.h>
#include <string.h>

#define SLOT_BITS 24
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define SEQ_MAX ((UINT64_C(1) << (64 - SLOT_BITS)) - 1)
/* Digits of 6 bits: 64 cells a level, 11 levels cover 64-bit times. */
#define DIGIT 6
#define FAN 64
#define LEVELS 11
/* A cell that empties with room for more keys than this gives it back, so
 * that a burst of pending events does not stay allocated in every cell it
 * passed through. */
#define CELL_KEEP 4096

typedef struct key {
  sim_time t;
  uint64_t w; /* seq << SLOT_BITS | slot: unique, and ordered by seq */
} key;

/* Keys of one cell, taken from head; a level-0 cell holds one time and is
 * kept in seq order from head on (sorted when `unsorted`). */
typedef struct cell {
  key *k;
  uint32_t head, n, cap;
  uint8_t unsorted;
} cell;

typedef struct slot {
  sim_handler h;
  void *ctx;
  uint64_t arg;
  uint64_t w; /* key word while pending; 0 when free */
  uint32_t next_free;
  uint8_t cancelled;
} slot;

struct sim_engine {
  cell c[LEVELS][FAN];
  uint64_t occ[LEVELS]; /* bit s: cell s of the level holds keys */
  uint32_t levels;      /* bit l: level l holds keys */
  sim_time base;        /* every key held has t >= base (the wheel's position) */
  uint32_t n;           /* keys held, cancelled ones included */
  slot *slots;
  uint32_t n_slots, slots_cap, free_head; /* free_head: 0 = none, else index+1 */
  uint64_t seq;
  sim_time now;
  sim_counters c_;
  uint64_t dead_in_heap; /* cancelled keys not yet taken out */
  int stop;
  int broken; /* out of memory while moving keys: the order is lost until reset */
};

static inline int key_less(key a, key b) { return a.t < b.t || (a.t == b.t && a.w < b.w); }

/* The level of t against base: that of the highest 6-bit digit in which
 * they differ (0 when they differ only in the lowest, or not at all). */
static inline int level_of(sim_time t, sim_time base) {
  sim_time x = t ^ base;
  return x ? (63 - __builtin_clzll(x)) / DIGIT : 0;
}

int sim_engine_new(sim_engine **out) {
  sim_engine *e = calloc(1, sizeof *e);
  if (!e)
    return core_err_set(CORE_ENOMEM, "out of memory creating the event engine");
  e->slots_cap = 1024;
  e->slots = malloc(sizeof *e->slots * e->slots_cap);
  if (!e->slots) {
    sim_engine_free(e);
    return core_err_set(CORE_ENOMEM, "out of memory creating the event engine");
  }
  *out = e;
  return 0;
}

void sim_engine_free(sim_engine *e) {
  if (!e)
    return;
  for (int l = 0; l < LEVELS; l++)
    for (int s = 0; s < FAN; s++)
      free(e->c[l][s].k);
  free(e->slots);
  free(e);
}

/* Only the cells whose bit is set in occ hold keys (cell_add sets it,
 * cell_clear empties the cell as it clears it), so only they are emptied;
 * a broken engine's cells are all emptied. */
void sim_engine_reset(sim_engine *e) {
  for (int l = 0; l < LEVELS; l++) {
    if (e->broken) {
      for (int s = 0; s < FAN; s++)
        e->c[l][s].head = e->c[l][s].n = 0;
      continue;
    }
    for (uint64_t m = e->occ[l]; m; m &= m - 1)
      e->c[l][__builtin_ctzll(m)].head = e->c[l][__builtin_ctzll(m)].n = 0;
  }
  memset(e->occ, 0, sizeof e->occ);
  e->levels = 0;
  e->base = 0;
  e->n = 0;
  e->n_slots = 0;
  e->free_head = 0;
  e->seq = 0;
  e->now = 0;
  e->dead_in_heap = 0;
  e->stop = 0;
  e->broken = 0;
  memset(&e->c_, 0, sizeof e->c_);
}

static int grow(void **p, uint32_t *cap, size_t elem, uint32_t first) {
  uint32_t nc = *cap ? *cap * 2 : first;
  void *np = realloc(*p, elem * nc);
  if (!np)
    return core_err_set(CORE_ENOMEM, "out of memory growing the event queue to %u entries", nc);
  *p = np;
  *cap = nc;
  return 0;
}

static inline int cell_add(sim_engine *e, int l, int s, key k) {
  cell *c = &e->c[l][s];
  if (c->n == c->cap && grow((void **)&c->k, &c->cap, sizeof *c->k, 16))
    return CORE_ENOMEM;
  c->k[c->n++] = k;
  e->occ[l] |= UINT64_C(1) << s;
  e->levels |= 1u << l;
  return 0;
}

static inline int file_key(sim_engine *e, key k) {
  int l = level_of(k.t, e->base);
  return cell_add(e, l, (int)((k.t >> (DIGIT * l)) & (FAN - 1)), k);
}

static void cell_clear(sim_engine *e, int l, int s) {
  cell *c = &e->c[l][s];
  c->head = c->n = 0;
  c->unsorted = 0;
  if (c->cap > CELL_KEEP) {
    free(c->k);
    c->k = NULL;
    c->cap = 0;
  }
  e->occ[l] &= ~(UINT64_C(1) << s);
  if (!e->occ[l])
    e->levels &= ~(1u << l);
}

/* A key before base (a push after sim_engine_run stopped short of a later
 * key): every key is filed again against the new, lower base. Rare. */
static int refile_all(sim_engine *e, sim_time base) {
  uint32_t total = e->n, at = 0;
  key *all = malloc(sizeof *all * (total ? total : 1));
  if (!all)
    return core_err_set(CORE_ENOMEM, "out of memory refiling %u pending events", total);
  for (int l = 0; l < LEVELS; l++)
    for (int s = 0; s < FAN; s++) {
      cell *c = &e->c[l][s];
      if (c->n > c->head)
        memcpy(all + at, c->k + c->head, sizeof *all * (c->n - c->head));
      at += c->n - c->head;
      if (c->n)
        cell_clear(e, l, s);
    }
  e->base = base;
  int rc = 0;
  for (uint32_t j = 0; j < total && !rc; j++)
    rc = file_key(e, all[j]);
  /* Keys of one time may now sit in a level-0 cell out of seq order. */
  for (int s = 0; s < FAN; s++)
    e->c[0][s].unsorted = 1;
  free(all);
  if (rc)
    e->broken = 1;
  return rc;
}

int sim_engine_push(sim_engine *e, sim_time t, sim_handler h, void *ctx, uint64_t arg, sim_event_id *id) {
  if (t < e->now)
    return core_err_set(CORE_EINTERNAL, "event scheduled in the past (%llu ns < now %llu ns)", (unsigned long long)t,
        (unsigned long long)e->now);
  if (e->seq >= SEQ_MAX)
    return core_err_set(CORE_EINTERNAL, "more than 2^40 events in one run");
  if (e->broken)
    return core_err_set(CORE_ENOMEM, "the event queue ran out of memory earlier in this run");
  uint32_t s;
  if (e->free_head) {
    s = e->free_head - 1;
    e->free_head = e->slots[s].next_free;
  } else {
    if (e->n_slots > SLOT_MASK)
      return core_err_set(CORE_ENOMEM, "more than %u events pending at once", SLOT_MASK + 1);
    if (e->n_slots == e->slots_cap && grow((void **)&e->slots, &e->slots_cap, sizeof *e->slots, 1024))
      return CORE_ENOMEM;
    s = e->n_slots++;
  }
  key k = {t, ((e->seq + 1) << SLOT_BITS) | s};
  if ((t < e->base && refile_all(e, t)) || file_key(e, k)) {
    e->slots[s].next_free = e->free_head;
    e->free_head = s + 1;
    return CORE_ENOMEM;
  }
  e->n++;
  e->seq++;
  slot *sl = &e->slots[s];
  sl->h = h;
  sl->ctx = ctx;
  sl->arg = arg;
  sl->w = k.w;
  sl->cancelled = 0;
  e->c_.scheduled++;
  e->c_.pending++;
  if (id)
    *id = k.w;
  return 0;
}

int sim_engine_cancel(sim_engine *e, sim_event_id id) {
  uint32_t s = (uint32_t)(id & SLOT_MASK);
  if (s >= e->n_slots || e->slots[s].w == 0 || e->slots[s].w != id || e->slots[s].cancelled)
    return core_err_set(CORE_EINVAL, "event %llu is not pending (already run or cancelled)", (unsigned long long)id);
  e->slots[s].cancelled = 1;
  e->dead_in_heap++;
  e->c_.cancelled++;
  e->c_.pending--;
  return 0;
}

static int by_w(const void *pa, const void *pb) {
  const key *a = pa, *b = pb;
  return (a->w > b->w) - (a->w < b->w);
}

/* Seq order from head on: keys pushed after a cell was filled come later
 * in seq, so only keys that arrived by a move can be out of order. */
static void cell_sort(cell *c) {
  c->unsorted = 0;
  for (uint32_t j = c->head + 1; j < c->n; j++)
    if (c->k[j].w < c->k[j - 1].w) {
      qsort(c->k + c->head, c->n - c->head, sizeof *c->k, by_w);
      return;
    }
}

/* The level-0 cell holding the earliest keys, after moving the lowest
 * occupied cell of a higher level down when level 0 is empty: its earliest
 * time becomes base and its keys go to lower levels (a key only moves down,
 * at most LEVELS times). -1 when empty or out of memory. */
static int settle(sim_engine *e) {
  if (!e->n || e->broken)
    return -1;
  if (!e->occ[0]) {
    int l = __builtin_ctz(e->levels), s = __builtin_ctzll(e->occ[l]);
    cell *c = &e->c[l][s];
    sim_time m = c->k[c->head].t;
    for (uint32_t j = c->head + 1; j < c->n; j++)
      if (c->k[j].t < m)
        m = c->k[j].t;
    e->base = m;
    /* Every key of the cell goes below level l, never into this cell.
     * Those reaching level 0 run soon: their slots are fetched ahead. */
    for (uint32_t j = c->head; j < c->n; j++) {
      key k = c->k[j];
      if (file_key(e, k)) {
        e->broken = 1;
        return -1;
      }
      if ((k.t ^ m) < FAN)
        __builtin_prefetch(&e->slots[k.w & SLOT_MASK]);
    }
    cell_clear(e, l, s);
    for (uint64_t m0 = e->occ[0]; m0; m0 &= m0 - 1)
      e->c[0][__builtin_ctzll(m0)].unsorted = 1;
  }
  int s = __builtin_ctzll(e->occ[0]);
  if (e->c[0][s].unsorted)
    cell_sort(&e->c[0][s]);
  return s;
}

static void take_front(sim_engine *e, int s) {
  cell *c = &e->c[0][s];
  if (++c->head == c->n)
    cell_clear(e, 0, s);
  e->n--;
}

static void free_slot(sim_engine *e, uint32_t s) {
  e->slots[s].w = 0;
  e->slots[s].next_free = e->free_head;
  e->free_head = s + 1;
}

/* Drop cancelled keys from the front; the level-0 cell whose head is the
 * next live key, or -1 if none. */
static int front_live(sim_engine *e) {
  for (;;) {
    int s = settle(e);
    if (s < 0)
      return -1;
    key k = e->c[0][s].k[e->c[0][s].head];
    uint32_t sl = (uint32_t)(k.w & SLOT_MASK);
    if (!e->slots[sl].cancelled)
      return s;
    take_front(e, s);
    e->dead_in_heap--;
    free_slot(e, sl);
  }
}

int sim_engine_pop(sim_engine *e, sim_time *t, sim_handler *h, void **ctx, uint64_t *arg) {
  int c = front_live(e);
  if (c < 0)
    return 0;
  key k = e->c[0][c].k[e->c[0][c].head];
  take_front(e, c);
  uint32_t s = (uint32_t)(k.w & SLOT_MASK);
  *t = k.t;
  if (h)
    *h = e->slots[s].h;
  if (ctx)
    *ctx = e->slots[s].ctx;
  if (arg)
    *arg = e->slots[s].arg;
  free_slot(e, s);
  e->now = k.t;
  e->c_.pending--;
  e->c_.executed++;
  return 1;
}

uint64_t sim_engine_run(sim_engine *e, sim_time until) {
  uint64_t done = 0;
  e->stop = 0;
  int c;
  while (!e->stop && (c = front_live(e)) >= 0) {
    key k = e->c[0][c].k[e->c[0][c].head];
    if (k.t > until)
      break;
    take_front(e, c);
    uint32_t s = (uint32_t)(k.w & SLOT_MASK);
    slot sl = e->slots[s];
    free_slot(e, s);
    e->now = k.t;
    e->c_.pending--;
    e->c_.executed++;
    done++;
    sl.h(e, sl.ctx, sl.arg);
  }
  return done;
}

void sim_engine_stop(sim_engine *e) { e->stop = 1; }

sim_time sim_engine_now(const sim_engine *e) { return e->now; }

sim_counters sim_engine_counters(const sim_engine *e) { return e->c_; }

int sim_engine_check(const sim_engine *e) {
  const sim_counters *c = &e->c_;
  if (e->broken)
    return core_err_set(CORE_ENOMEM, "the event queue ran out of memory moving %u pending events", e->n);
  if (c->scheduled != c->executed + c->cancelled + c->pending || c->pending != e->n - e->dead_in_heap)
    return core_err_set(CORE_EINTERNAL,
        "event counters disagree: scheduled %llu != executed %llu + cancelled %llu + pending %llu (queue holds %u, "
        "%llu cancelled)",
        (unsigned long long)c->scheduled, (unsigned long long)c->executed, (unsigned long long)c->cancelled,
        (unsigned long long)c->pending, e->n, (unsigned long long)e->dead_in_heap);
  return 0;
}

#include "engine.h"

#include "core/err.h"

#include <stdlib.h>
#include <string.h>

#define SLOT_BITS 24
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define SEQ_MAX ((UINT64_C(1) << (64 - SLOT_BITS)) - 1)

typedef struct key {
  sim_time t;
  uint64_t w; /* seq << SLOT_BITS | slot: unique, and ordered by seq */
} key;

typedef struct slot {
  sim_handler h;
  void *ctx;
  uint64_t arg;
  uint64_t w;       /* key word while pending; 0 when free */
  uint32_t next_free;
  uint8_t cancelled;
} slot;

struct sim_engine {
  key *heap;
  uint32_t n, cap;
  slot *slots;
  uint32_t n_slots, slots_cap, free_head; /* free_head: 0 = none, else index+1 */
  uint64_t seq;
  sim_time now;
  sim_counters c;
  uint64_t dead_in_heap; /* cancelled keys not yet popped */
  int stop;
};

/* Branch-free: sifting mispredicts less when the comparison is arithmetic. */
static inline int key_less(key a, key b) { return (a.t < b.t) | ((a.t == b.t) & (a.w < b.w)); }

int sim_engine_new(sim_engine **out) {
  sim_engine *e = calloc(1, sizeof *e);
  if (!e)
    return core_err_set(CORE_ENOMEM, "out of memory creating the event engine");
  e->cap = 1024;
  e->heap = malloc(sizeof *e->heap * e->cap);
  e->slots_cap = 1024;
  e->slots = malloc(sizeof *e->slots * e->slots_cap);
  if (!e->heap || !e->slots) {
    sim_engine_free(e);
    return core_err_set(CORE_ENOMEM, "out of memory creating the event engine");
  }
  *out = e;
  return 0;
}

void sim_engine_free(sim_engine *e) {
  if (!e)
    return;
  free(e->heap);
  free(e->slots);
  free(e);
}

void sim_engine_reset(sim_engine *e) {
  e->n = 0;
  e->n_slots = 0;
  e->free_head = 0;
  e->seq = 0;
  e->now = 0;
  e->dead_in_heap = 0;
  e->stop = 0;
  memset(&e->c, 0, sizeof e->c);
}

static int grow(void **p, uint32_t *cap, size_t elem) {
  uint32_t nc = *cap * 2;
  void *np = realloc(*p, elem * nc);
  if (!np)
    return core_err_set(CORE_ENOMEM, "out of memory growing the event queue to %u entries", nc);
  *p = np;
  *cap = nc;
  return 0;
}

int sim_engine_push(sim_engine *e, sim_time t, sim_handler h, void *ctx, uint64_t arg,
                    sim_event_id *id) {
  if (t < e->now)
    return core_err_set(CORE_EINTERNAL, "event scheduled in the past (%llu ns < now %llu ns)",
                        (unsigned long long)t, (unsigned long long)e->now);
  if (e->seq >= SEQ_MAX)
    return core_err_set(CORE_EINTERNAL, "more than 2^40 events in one run");
  uint32_t s;
  if (e->free_head) {
    s = e->free_head - 1;
    e->free_head = e->slots[s].next_free;
  } else {
    if (e->n_slots > SLOT_MASK)
      return core_err_set(CORE_ENOMEM, "more than %u events pending at once", SLOT_MASK + 1);
    if (e->n_slots == e->slots_cap && grow((void **)&e->slots, &e->slots_cap, sizeof *e->slots))
      return CORE_ENOMEM;
    s = e->n_slots++;
  }
  if (e->n == e->cap && grow((void **)&e->heap, &e->cap, sizeof *e->heap)) {
    e->slots[s].next_free = e->free_head;
    e->free_head = s + 1;
    return CORE_ENOMEM;
  }
  key k = {t, (++e->seq << SLOT_BITS) | s};
  slot *sl = &e->slots[s];
  sl->h = h;
  sl->ctx = ctx;
  sl->arg = arg;
  sl->w = k.w;
  sl->cancelled = 0;

  /* Sift up with a hole: move parents down, write the key once. */
  uint32_t i = e->n++;
  while (i > 0) {
    uint32_t p = (i - 1) >> 1;
    if (!key_less(k, e->heap[p]))
      break;
    e->heap[i] = e->heap[p];
    i = p;
  }
  e->heap[i] = k;
  e->c.scheduled++;
  e->c.pending++;
  if (id)
    *id = k.w;
  return 0;
}

int sim_engine_cancel(sim_engine *e, sim_event_id id) {
  uint32_t s = (uint32_t)(id & SLOT_MASK);
  if (s >= e->n_slots || e->slots[s].w == 0 || e->slots[s].w != id || e->slots[s].cancelled)
    return core_err_set(CORE_EINVAL, "event %llu is not pending (already run or cancelled)",
                        (unsigned long long)id);
  e->slots[s].cancelled = 1;
  e->dead_in_heap++;
  e->c.cancelled++;
  e->c.pending--;
  return 0;
}

/* Remove the heap top and return its key. */
static key heap_pop(sim_engine *e) {
  key top = e->heap[0];
  key last = e->heap[--e->n];
  uint32_t n = e->n, i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n)
      c += (uint32_t)key_less(e->heap[c + 1], e->heap[c]);
    if (!key_less(e->heap[c], last))
      break;
    e->heap[i] = e->heap[c];
    i = c;
  }
  if (n)
    e->heap[i] = last;
  return top;
}

static void free_slot(sim_engine *e, uint32_t s) {
  e->slots[s].w = 0;
  e->slots[s].next_free = e->free_head;
  e->free_head = s + 1;
}

/* Next live key, dropping cancelled ones on the way. */
static int next_live(sim_engine *e, key *k) {
  while (e->n) {
    *k = heap_pop(e);
    uint32_t s = (uint32_t)(k->w & SLOT_MASK);
    if (!e->slots[s].cancelled)
      return 1;
    e->dead_in_heap--;
    free_slot(e, s);
  }
  return 0;
}

int sim_engine_pop(sim_engine *e, sim_time *t, sim_handler *h, void **ctx, uint64_t *arg) {
  key k;
  if (!next_live(e, &k))
    return 0;
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
  e->c.pending--;
  e->c.executed++;
  return 1;
}

uint64_t sim_engine_run(sim_engine *e, sim_time until) {
  uint64_t done = 0;
  e->stop = 0;
  while (!e->stop && e->n) {
    if (e->heap[0].t > until)
      break;
    key k;
    if (!next_live(e, &k))
      break;
    if (k.t > until) {
      /* The live event after dropped ones is late: put it back. */
      uint32_t i = e->n++;
      while (i > 0 && key_less(k, e->heap[(i - 1) >> 1])) {
        e->heap[i] = e->heap[(i - 1) >> 1];
        i = (i - 1) >> 1;
      }
      e->heap[i] = k;
      break;
    }
    uint32_t s = (uint32_t)(k.w & SLOT_MASK);
    slot sl = e->slots[s];
    free_slot(e, s);
    e->now = k.t;
    e->c.pending--;
    e->c.executed++;
    done++;
    sl.h(e, sl.ctx, sl.arg);
  }
  return done;
}

void sim_engine_stop(sim_engine *e) { e->stop = 1; }

sim_time sim_engine_now(const sim_engine *e) { return e->now; }

sim_counters sim_engine_counters(const sim_engine *e) { return e->c; }

int sim_engine_check(const sim_engine *e) {
  const sim_counters *c = &e->c;
  if (c->scheduled != c->executed + c->cancelled + c->pending ||
      c->pending != e->n - e->dead_in_heap)
    return core_err_set(CORE_EINTERNAL,
                        "event counters disagree: scheduled %llu != executed %llu + cancelled %llu + pending %llu (heap holds %u, %llu cancelled)",
                        (unsigned long long)c->scheduled, (unsigned long long)c->executed,
                        (unsigned long long)c->cancelled, (unsigned long long)c->pending, e->n,
                        (unsigned long long)e->dead_in_heap);
  return 0;
}

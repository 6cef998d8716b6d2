/*
 * engine — the discrete-event core: a priority queue of events keyed by
 * (time in integer nanoseconds, sequence number), so events at equal times
 * run in the order they were scheduled and a run is reproducible bit for bit.
 *
 * The queue is a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster
 * algorithms for the shortest path problem", JACM 37(2), 1990) over 128-bit
 * keys (time, seq<<24 | slot): a simulation never schedules before the event
 * it is running, so keys only grow, and a key waits in the bucket of the
 * highest bit in which it differs from the last key taken out; taking the
 * minimum empties the lowest non-empty bucket into lower ones. A key moves at
 * most 128 times, and each move is an append to an array, which keeps a queue
 * of a hundred thousand pending events out of the cache misses of a binary
 * heap. The payload (handler, context, argument) sits in a slot table.
 * Cancellation is lazy, as in libuv's timers and ROSS's queues: the slot is
 * marked and its key skipped when it comes out. Counters track scheduled =
 * executed + cancelled + pending at all times (sim_engine_check). Limits:
 * 2^24 pending events, 2^40 events per run.
 */
#ifndef SIM_ENGINE_H
#define SIM_ENGINE_H

#include <stdint.h>

typedef uint64_t sim_time;     /* nanoseconds */
typedef uint64_t sim_event_id; /* from push, never 0; valid until the event runs or is cancelled */

typedef struct sim_engine sim_engine;
typedef void (*sim_handler)(sim_engine *e, void *ctx, uint64_t arg);

typedef struct sim_counters {
  uint64_t scheduled, executed, cancelled, pending;
} sim_counters;

int sim_engine_new(sim_engine **out);
void sim_engine_free(sim_engine *e);
/* Drop all pending events and zero the clock and counters; keeps memory. */
void sim_engine_reset(sim_engine *e);

/* Schedule handler(ctx, arg) at absolute time t (>= now). id may be NULL. */
int sim_engine_push(sim_engine *e, sim_time t, sim_handler h, void *ctx, uint64_t arg, sim_event_id *id);
/* Cancel a pending event; CORE_EINVAL if it already ran or was cancelled. */
int sim_engine_cancel(sim_engine *e, sim_event_id id);

/* Remove the next live event without running it (the queue interface the
 * differential test drives). Returns 1 and fills the outputs, or 0 if empty. */
int sim_engine_pop(sim_engine *e, sim_time *t, sim_handler *h, void **ctx, uint64_t *arg);

/* Run events in order until the queue is empty or the next event is after
 * until; the clock advances to each event's time. Returns events executed. */
uint64_t sim_engine_run(sim_engine *e, sim_time until);
/* Stop sim_engine_run after the current handler returns. */
void sim_engine_stop(sim_engine *e);

sim_time sim_engine_now(const sim_engine *e);
sim_counters sim_engine_counters(const sim_engine *e);
/* 0 if scheduled == executed + cancelled + pending, else CORE_EINTERNAL. */
int sim_engine_check(const sim_engine *e);

#endif

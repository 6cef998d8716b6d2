/*
 * store — rendezvous stores: a small key-value space every rank of a job can
 * reach, where ranks publish what the others need before they can talk (the
 * Gloo backend's addresses, the NCCL backend's unique id). Two kinds, both
 * Gloo's (implemented in runtime/gloo_store.cc): FileStore on a shared
 * directory and RedisStore on host:port, each under a prefix so one store
 * hosts several runs or restart generations.
 *
 * Keys are set once: setting a key twice is CORE_EINVAL, so every run (and
 * every restart generation) needs a prefix no earlier one used. Failures are
 * core_err codes with a message naming the key, the store and what to do;
 * a wait that runs out is CORE_ETIMEDOUT.
 */
#ifndef RUNTIME_STORE_H
#define RUNTIME_STORE_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>

typedef struct rt_store rt_store;

/* FileStore on dir, which must exist and be shared by all ranks (NFS or a
 * local directory for one host). Keys become files. */
int rt_store_open_file(const char *dir, const char *prefix, rt_store **out);
/* RedisStore on a running redis-server. Keys live until the server drops
 * them. */
int rt_store_open_redis(const char *host, int port, const char *prefix, rt_store **out);
void rt_store_close(rt_store *s);

/* A one-line description for messages, e.g. "file:///tmp/rdv (prefix job1)". */
const char *rt_store_describe(const rt_store *s);

/* Values are raw bytes, at least one (FileStore cannot hand back an empty
 * value). */
int rt_store_set(rt_store *s, const char *key, const void *val, size_t len);
/* Wait up to timeout_ms for key, then return a malloc'ed copy of its value
 * (free() it) and its length. */
int rt_store_get(rt_store *s, const char *key, int timeout_ms, void **val, size_t *len);
/* Wait up to timeout_ms until every key is set. */
int rt_store_wait(rt_store *s, const char *const *keys, size_t nkeys, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif

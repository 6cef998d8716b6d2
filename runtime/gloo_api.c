/* gloo_api — the Gloo shim (runtime/gloo_shim.h, runtime/store.h) opened on
 * first use. The shim is C++ over Gloo, built as a module of its own
 * (libddpsim-gloo.so); these functions load it once (core/dl.h) and call
 * its functions of the same names, so that a command that never rendezvouses
 * or talks over Gloo starts without Gloo and the C++ runtime.
 *
 * Where: $DDPSIM_GLOO_SHIM when set; otherwise beside the running binary,
 * then where the build wrote it (DDPSIM_GLOO_SHIM_PATH), then the loader's
 * search path. A shim that cannot be loaded is CORE_EUNSUPPORTED naming it
 * and the variable. */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "core/err.h"
#include "core/path.h"
#include "runtime/comm.h"
#include "core/dl.h"
#include "runtime/gloo_shim.h"
#include "runtime/store.h"

#ifndef DDPSIM_GLOO_SHIM_NAME
#define DDPSIM_GLOO_SHIM_NAME "libddpsim-gloo.so"
#endif
#ifndef DDPSIM_GLOO_SHIM_PATH
#define DDPSIM_GLOO_SHIM_PATH NULL
#endif

#define RT_GLOO_FUNCS(X)                                                                                               \
  X(rt_gloo_version)                                                                                                   \
  X(rt_gloo_sum)                                                                                                       \
  X(rt_gloo_ctx_create)                                                                                                \
  X(rt_gloo_ctx_abort)                                                                                                 \
  X(rt_gloo_ctx_destroy)                                                                                               \
  X(rt_gloo_ctx_allreduce)                                                                                             \
  X(rt_gloo_ctx_allgather)                                                                                             \
  X(rt_gloo_ctx_reduce_scatter)                                                                                        \
  X(rt_gloo_ctx_broadcast)                                                                                             \
  X(rt_gloo_ctx_barrier)                                                                                               \
  X(rt_store_open_file)                                                                                                \
  X(rt_store_open_redis)                                                                                               \
  X(rt_store_close)                                                                                                    \
  X(rt_store_describe)                                                                                                 \
  X(rt_store_set)                                                                                                      \
  X(rt_store_get)                                                                                                      \
  X(rt_store_wait)

typedef struct gloo_api {
  RT_GLOO_FUNCS(CORE_DL_FN)
} gloo_api;

/* What the shim calls back into (gloo_shim.dynlist), referenced here so that
 * every program that can open the shim links them in. */
__attribute__((used)) static const void *const host_functions[] = {
    (const void *)core_err_errno,
    (const void *)core_err_msg,
    (const void *)core_err_set,
    (const void *)rt_algo_name,
    (const void *)rt_dtype_name,
    (const void *)rt_dtype_size,
};

static char beside_binary[PATH_MAX + 64];
static core_dl_lib shim_lib = {
    .what = "ddpsim's Gloo shim",
    .env = "DDPSIM_GLOO_SHIM",
    .names = {beside_binary, DDPSIM_GLOO_SHIM_PATH, DDPSIM_GLOO_SHIM_NAME},
    .hint = "keep " DDPSIM_GLOO_SHIM_NAME " beside the ddpsim binary (the build writes it there)",
};
static gloo_api api;
static core_dl_once loaded = CORE_DL_ONCE_INIT;

/* The shim's name in the running binary's directory; empty when
 * /proc/self/exe cannot be read. */
static void find_beside_binary(void) {
  char exe[PATH_MAX], dir[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return;
  exe[n] = '\0';
  if (core_path_dir(exe, dir, sizeof dir) == 0)
    snprintf(beside_binary, sizeof beside_binary, "%s/%s", dir, DDPSIM_GLOO_SHIM_NAME);
}

static void load(void) {
  void *h = NULL;
  const char *as = NULL;
  find_beside_binary();
  int rc = core_dl_open(&shim_lib, &h, &as);
#define RESOLVE(f) CORE_DL_RESOLVE(&shim_lib, as, h, &api, rc, f)
  RT_GLOO_FUNCS(RESOLVE)
#undef RESOLVE
  core_dl_settle(&loaded, rc);
}

static int load_shim(void) { return core_dl_load_once(&loaded, load); }

const char *rt_gloo_version(void) { return load_shim() ? "Gloo (not loaded)" : api.rt_gloo_version(); }

int rt_gloo_sum(enum rt_dtype t, void *out, const void *a, const void *b, size_t n) {
  int rc = load_shim();
  return rc ? rc : api.rt_gloo_sum(t, out, a, b, n);
}

int rt_gloo_ctx_create(rt_store *store, int rank, int size, const char *bind_addr, int timeout_ms, rt_gloo_ctx **out) {
  int rc = load_shim();
  return rc ? rc : api.rt_gloo_ctx_create(store, rank, size, bind_addr, timeout_ms, out);
}

/* A context or store exists only once the shim has loaded; NULL is a no-op,
 * as in the shim. */
void rt_gloo_ctx_abort(rt_gloo_ctx *c) {
  if (c)
    api.rt_gloo_ctx_abort(c);
}

void rt_gloo_ctx_destroy(rt_gloo_ctx *c) {
  if (c)
    api.rt_gloo_ctx_destroy(c);
}

/* A collective on a context the shim made, so it is loaded (or c is NULL,
 * which the shim reports). */
int rt_gloo_ctx_allreduce(rt_gloo_ctx *c, void *buf, size_t count, enum rt_dtype t, enum rt_algo a) {
  int rc = load_shim();
  return rc ? rc : api.rt_gloo_ctx_allreduce(c, buf, count, t, a);
}

int rt_gloo_ctx_allgather(rt_gloo_ctx *c, const void *send, void *recv, size_t count, enum rt_dtype t) {
  int rc = load_shim();
  return rc ? rc : api.rt_gloo_ctx_allgather(c, send, recv, count, t);
}

int rt_gloo_ctx_reduce_scatter(rt_gloo_ctx *c, const void *send, void *recv, size_t recvcount, enum rt_dtype t) {
  int rc = load_shim();
  return rc ? rc : api.rt_gloo_ctx_reduce_scatter(c, send, recv, recvcount, t);
}

int rt_gloo_ctx_broadcast(rt_gloo_ctx *c, void *buf, size_t count, enum rt_dtype t, int root) {
  int rc = load_shim();
  return rc ? rc : api.rt_gloo_ctx_broadcast(c, buf, count, t, root);
}

int rt_gloo_ctx_barrier(rt_gloo_ctx *c) {
  int rc = load_shim();
  return rc ? rc : api.rt_gloo_ctx_barrier(c);
}

int rt_store_open_file(const char *dir, const char *prefix, rt_store **out) {
  int rc = load_shim();
  return rc ? rc : api.rt_store_open_file(dir, prefix, out);
}

int rt_store_open_redis(const char *host, int port, const char *prefix, rt_store **out) {
  int rc = load_shim();
  return rc ? rc : api.rt_store_open_redis(host, port, prefix, out);
}

void rt_store_close(rt_store *s) {
  if (s)
    api.rt_store_close(s);
}

const char *rt_store_describe(const rt_store *s) { return s ? api.rt_store_describe(s) : "(no store)"; }

int rt_store_set(rt_store *s, const char *key, const void *val, size_t len) {
  int rc = load_shim();
  return rc ? rc : api.rt_store_set(s, key, val, len);
}

int rt_store_get(rt_store *s, const char *key, int timeout_ms, void **val, size_t *len) {
  int rc = load_shim();
  return rc ? rc : api.rt_store_get(s, key, timeout_ms, val, len);
}

int rt_store_wait(rt_store *s, const char *const *keys, size_t nkeys, int timeout_ms) {
  int rc = load_shim();
  return rc ? rc : api.rt_store_wait(s, keys, nkeys, timeout_ms);
}

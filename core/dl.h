/*
 * dl — shared libraries opened at run time (dlopen) instead of at start-up:
 * the CUDA runtime, cuBLAS, NCCL, NVML, OpenBLAS, the Gloo shim and ISA-L
 * are needed only by some commands (GPU measurements, real training,
 * checksums), so ddpsim loads each on first use and every other command
 * starts without it (no DT_NEEDED entry).
 *
 * A library is looked for under the name in its environment variable when
 * that is set (and nowhere else), otherwise under its candidate names in
 * order: the soname the build found, the file the build found, the
 * unversioned name. Failures are CORE_EUNSUPPORTED with a message naming
 * the library, what the loader said and how to fix it. Libraries stay
 * loaded for the life of the process (CUDA and NCCL cannot be unloaded).
 */
#ifndef CORE_DL_H
#define CORE_DL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h> /* memcpy, for CORE_DL_RESOLVE */

enum { CORE_DL_MAX_NAMES = 4 };

typedef struct core_dl_lib {
  const char *what;                     /* "NCCL", "CUDA runtime" */
  const char *env;                      /* "DDPSIM_NCCL": overrides names */
  const char *names[CORE_DL_MAX_NAMES]; /* tried in order; NULL or "" skipped */
  const char *hint;                     /* "install NCCL" */
} core_dl_lib;

/* Open lib (RTLD_NOW | RTLD_LOCAL): *handle and, when loaded_as is not NULL,
 * the name that opened it. Otherwise CORE_EUNSUPPORTED:
 * "NCCL not found: cannot load libnccl.so.2 (<dlerror>); install NCCL or
 * set DDPSIM_NCCL=/path/libnccl.so.2". */
int core_dl_open(const core_dl_lib *lib, void **handle, const char **loaded_as);

/* The address of symbol name in handle (opened from lib as loaded_as), or
 * CORE_EUNSUPPORTED saying the library lacks it (an older release than the
 * build's headers). */
int core_dl_sym(const core_dl_lib *lib, const char *loaded_as, void *handle, const char *name, void **addr);

/* Tables of functions: CORE_DL_FN(f) declares a member f with the type of
 * &f from the library's header, CORE_DL_STR(f) is the symbol to look up.
 * Both expand f first, so a header's alias (cublasCreate is
 * cublasCreate_v2) names the member and the symbol alike. */
#define CORE_DL_FN(f) __typeof__(&f) f;
#define CORE_DL_STR(f) CORE_DL_STR_(f)
#define CORE_DL_STR_(f) #f

/* Resolve member f of *table; no-op once rc is non-zero (for X-macros). */
#define CORE_DL_RESOLVE(lib, loaded_as, handle, table, rc, f)                                                          \
  do {                                                                                                                 \
    void *addr_ = NULL;                                                                                                \
    if (!(rc) && !((rc) = core_dl_sym((lib), (loaded_as), (handle), CORE_DL_STR(f), &addr_)))                          \
      memcpy(&(table)->f, &addr_, sizeof addr_);                                                                       \
  } while (0);

/* A table filled once: pthread_once runs its loader, which ends with
 * core_dl_settle(); a failure is kept with its message and repeated to every
 * caller (messages are per thread). */
typedef struct core_dl_once {
  pthread_once_t once;
  int rc;
  char msg[1024];
  atomic_int ok;
} core_dl_once;
#define CORE_DL_ONCE_INIT                                                                                              \
  { .once = PTHREAD_ONCE_INIT }

/* In a loader: record its result (rc and, on failure, the current message). */
void core_dl_settle(core_dl_once *o, int rc);

/* Run loader once; then 0, or its error with its message, on every call. */
int core_dl_load_once(core_dl_once *o, void (*loader)(void));

/* Whether the table loaded, without loading it. */
int core_dl_loaded(core_dl_once *o);

#endif

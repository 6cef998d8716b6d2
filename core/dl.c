/* dl — run-time loading of optional libraries (core/dl.h). */
#include "dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "path.h"

/* CORE_DL_RESOLVE copies a void * into a function pointer (POSIX dlsym). */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function and data pointers differ");

static int usable(const char *name) { return name && *name; }

/* The name a user would put in the environment variable: the first
 * candidate, as a file name. */
static const char *example_name(const core_dl_lib *lib) {
  for (int i = 0; i < CORE_DL_MAX_NAMES; i++)
    if (usable(lib->names[i]))
      return core_path_base(lib->names[i]);
  return "the library";
}

static int not_found(const core_dl_lib *lib, const char *name, const char *why, const char *also) {
  return core_err_set(CORE_EUNSUPPORTED, "%s not found: cannot load %s (%s)%s; %s or set %s=/path/%s", lib->what, name,
      why, also, lib->hint, lib->env, example_name(lib));
}

int core_dl_open(const core_dl_lib *lib, void **handle, const char **loaded_as) {
  *handle = NULL;
  const char *env = getenv(lib->env);
  if (usable(env)) {
    if ((*handle = dlopen(env, RTLD_NOW | RTLD_LOCAL)) == NULL)
      return not_found(lib, env, dlerror(), "");
    if (loaded_as)
      *loaded_as = env;
    return 0;
  }
  const char *first = NULL;
  char why[512] = "no candidate name", also[768] = "";
  for (int i = 0; i < CORE_DL_MAX_NAMES; i++) {
    const char *name = lib->names[i];
    if (!usable(name))
      continue;
    if ((*handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != NULL) {
      if (loaded_as)
        *loaded_as = name;
      return 0;
    }
    const char *e = dlerror();
    if (!first) {
      first = name;
      snprintf(why, sizeof why, "%s", e ? e : "unknown loader error");
    } else {
      size_t n = strlen(also);
      snprintf(also + n, sizeof also - n, "%s%s", n ? ", " : "; also tried ", name);
    }
  }
  return not_found(lib, first ? first : example_name(lib), why, also);
}

void core_dl_settle(core_dl_once *o, int rc) {
  o->rc = rc;
  if (rc)
    snprintf(o->msg, sizeof o->msg, "%s", core_err_msg());
  else
    atomic_store(&o->ok, 1);
}

int core_dl_load_once(core_dl_once *o, void (*loader)(void)) {
  pthread_once(&o->once, loader);
  return o->rc ? core_err_set(o->rc, "%s", o->msg) : 0;
}

int core_dl_loaded(core_dl_once *o) { return atomic_load(&o->ok); }

int core_dl_sym(const core_dl_lib *lib, const char *loaded_as, void *handle, const char *name, void **addr) {
  (void)dlerror();
  *addr = dlsym(handle, name);
  if (*addr)
    return 0;
  const char *e = dlerror();
  return core_err_set(CORE_EUNSUPPORTED,
      "%s (%s) lacks %s (%s): it is older than the release ddpsim was built "
      "with; %s or set %s=/path/%s",
      lib->what, loaded_as, name, e ? e : "a null symbol", lib->hint, lib->env, example_name(lib));
}

#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { ERR_MSG_MAX = 2048 };

static _Thread_local char err_msg[ERR_MSG_MAX];

int core_err_set(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err_msg, sizeof err_msg, fmt, ap);
  va_end(ap);
  return code;
}

int core_err_wrap(int code, const char *fmt, ...) {
  char prefix[ERR_MSG_MAX];
  char old[ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, err_msg, sizeof old);
  size_t n = strlen(prefix);
  if (n > sizeof err_msg - 3)
    n = sizeof err_msg - 3;
  memcpy(err_msg, prefix, n);
  memcpy(err_msg + n, ": ", 2);
  size_t room = sizeof err_msg - n - 3;
  size_t m = strlen(old);
  if (m > room)
    m = room;
  memcpy(err_msg + n + 2, old, m);
  err_msg[n + 2 + m] = '\0';
  return code;
}

const char *core_err_msg(void) { return err_msg[0] ? err_msg : "no error recorded"; }

void core_err_clear(void) { err_msg[0] = '\0'; }

const char *core_err_name(int code) {
  switch (code) {
  case CORE_OK: return "ok";
  case CORE_EINVAL: return "invalid input";
  case CORE_EIO: return "I/O error";
  case CORE_ENOMEM: return "out of memory";
  case CORE_ETIMEDOUT: return "timed out";
  case CORE_ECOMM: return "communication error";
  case CORE_ECORRUPT: return "corrupt file";
  case CORE_ENOSPC: return "disk full";
  case CORE_EUSAGE: return "usage error";
  case CORE_EUNSUPPORTED: return "not supported in this build";
  case CORE_EPEER: return "peer rank failed";
  case CORE_EINTERNAL: return "internal error";
  default: return "unknown error";
  }
}

int core_err_errno(int errnum, const char *fmt, ...) {
  char what[ERR_MSG_MAX / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  int code = (errnum == ENOSPC
#ifdef EDQUOT
                 || errnum == EDQUOT
#endif
                 )
                 ? CORE_ENOSPC
                 : CORE_EIO;
  return core_err_set(
      code, "%s: %s%s", what, strerror(errnum), code == CORE_ENOSPC ? " (free some space and run again)" : "");
}

int core_err_open(int errnum, const char *fmt, ...) {
  char what[ERR_MSG_MAX / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  int system = errnum == EIO || errnum == ENOMEM || errnum == EMFILE || errnum == ENFILE;
  return core_err_set(system ? CORE_EIO : CORE_EINVAL, "%s: %s (check the path)", what, strerror(errnum));
}

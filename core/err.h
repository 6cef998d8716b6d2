/*
 * err — error codes and the last error message, shared by every layer.
 *
 * Functions across ddpsim return 0 on success or one of the negative codes
 * below. The function that detects a failure records a message saying what
 * failed, where (file:line for inputs) and what to do, with core_err_set();
 * callers up the stack may prefix context with core_err_wrap(). The CLI
 * prints core_err_msg() and maps the code to an exit status. The message is
 * per thread, so ranks' communication threads cannot clobber each other.
 */
#ifndef CORE_ERR_H
#define CORE_ERR_H

enum core_err_code {
  CORE_OK = 0,
  CORE_EINVAL = -1,       /* bad input: scenario, profile, model, option */
  CORE_EIO = -2,          /* a file or socket operation failed */
  CORE_ENOMEM = -3,       /* allocation failed */
  CORE_ETIMEDOUT = -4,    /* a peer or collective did not answer in time */
  CORE_ECOMM = -5,        /* communication backend error */
  CORE_ECORRUPT = -6,     /* a checkpoint or profile failed its checks */
  CORE_ENOSPC = -7,       /* the disk is full */
  CORE_EUSAGE = -8,       /* wrong command-line use */
  CORE_EUNSUPPORTED = -9, /* built without the needed backend or device */
  CORE_EPEER = -10,       /* another rank died */
  CORE_EINTERNAL = -11    /* a broken invariant: a bug in ddpsim */
};

/* Record a message for the calling thread and return code (for one-line
 * `return core_err_set(...)`). */
int core_err_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefix the current message with context ("loading profile x: ..."). */
int core_err_wrap(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *core_err_msg(void);
void core_err_clear(void);

/* Short name of a code, e.g. "invalid input". */
const char *core_err_name(int code);

/* Record errno-based failure: "<what>: <strerror>"; maps ENOSPC and EDQUOT
 * to CORE_ENOSPC, everything else to CORE_EIO. */
int core_err_errno(int errnum, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record that an input could not be opened: "<what>: <strerror> (check the
 * path)". A path that leads nowhere (missing, a part of it a file, not
 * permitted) is bad input, CORE_EINVAL (exit 3), as every reader of ddpsim's
 * inputs says it; trouble of the system (EIO, out of memory or descriptors)
 * is CORE_EIO. */
int core_err_open(int errnum, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

#include "kineto.h"
#include "intern.h"
#include "kdims.h"
#include "kineto_int.h"

#include "core/err.h"

#include <yajl/yajl_parse.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 8 /* containers the reader looks into; values below them are skipped */

/* --- interned strings and shapes ------------------------------------------- */

struct cal_kstore {
  cal_intern str, dims; /* names, threads, dtypes; Input Dims (int64_t values) */
};

const char *cal_ktrace_str(const cal_ktrace *t, int32_t id) {
  size_t len;
  const char *s = t->store ? cal_intern_get(&t->store->str, id, &len) : NULL;
  return s ? s : "";
}

int32_t cal_ktrace_find_str(const cal_ktrace *t, const char *s) {
  return t->store ? cal_intern_find(&t->store->str, s, strlen(s)) : -1;
}

/* e's Input Dims, encoded (calibrate/kdims.h); NULL without any. */
static const char *dims_of(const cal_ktrace *t, const cal_kevent *e, size_t *len) {
  return t->store ? cal_intern_get(&t->store->dims, e->dims, len) : NULL;
}

int cal_ktrace_n_inputs(const cal_ktrace *t, const cal_kevent *e) {
  size_t len = 0;
  const char *d = dims_of(t, e, &len);
  return cal_kdims_count(d, len);
}

int cal_ktrace_dims(const cal_ktrace *t, const cal_kevent *e, int input, int64_t *sizes, int max) {
  size_t len = 0;
  const char *d = dims_of(t, e, &len);
  return cal_kdims_rank(d, len, input, sizes, max);
}

int64_t cal_ktrace_numel(const cal_ktrace *t, const cal_kevent *e, int input) {
  int64_t d[8], n = 1;
  int rank = cal_ktrace_dims(t, e, input, d, 8);
  if (rank <= 0 || rank > 8)
    return -1;
  for (int k = 0; k < rank; k++)
    if (d[k] < 0 || __builtin_mul_overflow(n, d[k], &n))
      return -1;
  return n;
}

const char *cal_kcat_name(int cat) {
  /* libkineto/src/ActivityType.cpp names the categories. */
  static const char *const names[CAL_K_N] = {"cpu_op", "user_annotation", "gpu_user_annotation", "cuda_runtime",
      "kernel", "gpu_memcpy", "gpu_memset", "python_function"};
  return cat >= 0 && cat < CAL_K_N ? names[cat] : "?";
}

void cal_ktrace_free(cal_ktrace *t) {
  if (!t)
    return;
  if (t->store) {
    cal_intern_free(&t->store->str);
    cal_intern_free(&t->store->dims);
    free(t->store);
  }
  free(t->ev);
  memset(t, 0, sizeof *t);
}

/* --- the parse: YAJL's callbacks ---------------------------------------------- */

/* What a container being read is. */
enum frame { F_TOP, F_ROOT, F_EVENTS, F_EVENT, F_ARGS, F_DIMS, F_DIM, F_DEVS, F_DEV, F_DIST, F_SKIP };

/* Keys read, per container. */
enum key {
  K_OTHER,
  K_EVENTS,
  K_DEVPROPS,
  K_DISTINFO,
  K_BASETIME, /* top level */
  K_PH,
  K_CAT,
  K_NAME,
  K_PID,
  K_TID,
  K_TS,
  K_DUR,
  K_ARGS, /* an event */
  K_EXT,
  K_CORR,
  K_SEQ,
  K_DEVICE,
  K_STREAM,
  K_BYTES,
  K_IN_NEL,
  K_OUT_NEL,
  K_DTYPE, /* its args */
  K_COLL,
  K_IDIMS,
  K_ID,
  K_DEVNAME,
  K_MEM,
  K_MAJOR,
  K_MINOR,
  K_SMS, /* deviceProperties[i] */
  K_BACKEND,
  K_RANK,
  K_WORLD,
  K_NCCL /* distributedInfo */
};

typedef struct kkey {
  const char *s;
  int k; /* enum key, or enum cal_kcat */
} kkey;

/* Trace-level keys: libkineto/src/output_json.cpp (deviceProperties,
 * baseTimeNanoseconds), torch/profiler/profiler.py (distributedInfo). */
static const kkey root_keys[] = {{"traceEvents", K_EVENTS}, {"deviceProperties", K_DEVPROPS},
    {"distributedInfo", K_DISTINFO}, {"baseTimeNanoseconds", K_BASETIME}, {0}};
static const kkey event_keys[] = {{"ph", K_PH}, {"cat", K_CAT}, {"name", K_NAME}, {"pid", K_PID}, {"tid", K_TID},
    {"ts", K_TS}, {"dur", K_DUR}, {"args", K_ARGS}, {0}};
/* Args: "External id", "correlation", "device", "stream", "bytes" from
 * libkineto/src/output_json.cpp; "Sequence number", "Input Dims" (older
 * "Input dims") from torch/csrc/autograd/profiler_kineto.cpp; the
 * collectives' "Collective name", "dtype", "In msg nelems", "Out msg nelems"
 * from torch/csrc/profiler/util.h (kCommsName, kDtype, kInMsgNelems, ...). */
static const kkey arg_keys[] = {{"External id", K_EXT}, {"correlation", K_CORR}, {"Sequence number", K_SEQ},
    {"device", K_DEVICE}, {"stream", K_STREAM}, {"bytes", K_BYTES}, {"In msg nelems", K_IN_NEL},
    {"Out msg nelems", K_OUT_NEL}, {"dtype", K_DTYPE}, {"Collective name", K_COLL}, {"Input Dims", K_IDIMS},
    {"Input dims", K_IDIMS}, {0}};
static const kkey dev_keys[] = {{"id", K_ID}, {"name", K_DEVNAME}, {"totalGlobalMem", K_MEM}, {"computeMajor", K_MAJOR},
    {"computeMinor", K_MINOR}, {"numSms", K_SMS}, {0}};
static const kkey dist_keys[] = {
    {"backend", K_BACKEND}, {"rank", K_RANK}, {"world_size", K_WORLD}, {"nccl_version", K_NCCL}, {0}};
/* The categories kept; "Operator" and no "cat" (older exports) are CPU ops. */
static const kkey cats[] = {{"cpu_op", CAL_K_CPU_OP}, {"Operator", CAL_K_CPU_OP},
    {"user_annotation", CAL_K_USER_ANNOTATION}, {"cuda_runtime", CAL_K_RUNTIME}, {"cuda_driver", CAL_K_RUNTIME},
    {"gpu_user_annotation", CAL_K_GPU_ANNOTATION}, {"kernel", CAL_K_KERNEL}, {"gpu_memcpy", CAL_K_MEMCPY},
    {"gpu_memset", CAL_K_MEMSET}, {"python_function", CAL_K_PYTHON}, {0}};

enum vtype { V_NUM, V_STR, V_OTHER };    /* a value's JSON type; V_OTHER: null, boolean, container */
enum { T_ABSENT, T_OK, T_BAD, T_OTHER }; /* a field of the event being read; T_OTHER: "ph" not "X" */
#define CAT_NONE (-1)                    /* no "cat" */
#define CAT_SKIP (-2)                    /* a category not kept */

typedef struct sbuf {
  char *p;
  size_t len, cap;
} sbuf;

typedef struct kdev {
  int id, major, minor, sms;
  int64_t mem;
  char name[128];
} kdev;

/* The event being read: its fields arrive in any order. */
typedef struct kpending {
  int ph;            /* T_ABSENT; T_OK: "X"; T_BAD: not a string; T_OTHER: another phase */
  int cat, cat_bad;  /* enum cal_kcat, CAT_NONE or CAT_SKIP; "cat" not a string */
  int name, ts, dur; /* T_* */
  sbuf sname, pid, tid, dtype, coll;
  int has_dtype, has_coll, has_dims;
  cal_kevent e;
  cal_kdims d; /* Input Dims */
} kpending;

typedef struct kparse {
  cal_ktrace *t;
  size_t ev_cap;
  struct {
    enum frame f;
    enum key k;
  } st[MAX_FRAMES];
  int top;
  long skip;       /* depth inside a value skipped whole */
  int seen_events; /* a "traceEvents" array, or the bare array form */
  int64_t n_elems; /* elements of traceEvents so far */
  kpending p;
  sbuf thread;
  kdev *devs;
  size_t n_devs, devs_cap;
  int rc; /* the error that stopped the parse */
} kparse;

static int fail(kparse *P, int rc) {
  P->rc = rc;
  return 0; /* stops YAJL */
}

static int sbuf_set(sbuf *b, const void *s, size_t len) {
  if (cal_intern_grow((void **)&b->p, &b->cap, len + 1, 1))
    return -1;
  memcpy(b->p, s, len);
  b->p[len] = '\0';
  b->len = len;
  return 0;
}

/* YAJL's number text as a C string in buf[64]; -1 when longer. */
static int token(const char *s, size_t len, char *buf) {
  if (len == 0 || len >= 64)
    return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  return 0;
}

/* A JSON number as an int64; -1 when it is not an integer in range. */
static int parse_int(const char *s, size_t len, int64_t *out) {
  char buf[64], *end;
  if (token(s, len, buf))
    return -1;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (errno || *end) {
    double d = strtod(buf, &end); /* 1e3, 12.0 */
    if (*end || !(fabs(d) < 9.2e18) || d != floor(d))
      return -1;
    v = (long long)d;
  }
  *out = v;
  return 0;
}

/* A JSON number of microseconds as integer nanoseconds, exactly for the
 * decimal forms traces use (1745981234567890.123); -1 when out of range. */
static int parse_ns(const char *s, size_t len, int64_t *out) {
  char buf[64], *end;
  if (token(s, len, buf))
    return -1;
  if (strpbrk(buf, "eE")) {
    double d = strtod(buf, &end) * 1e3;
    if (*end || !(fabs(d) < 9.2e18))
      return -1;
    *out = llround(d);
    return 0;
  }
  errno = 0;
  long long whole = strtoll(buf, &end, 10);
  if (errno || (*end && *end != '.') || whole > INT64_MAX / 1000 - 1 || whole < -(INT64_MAX / 1000 - 1))
    return -1;
  long long frac = 0;
  if (*end == '.') {
    double f = strtod(end, &end); /* ".123" */
    if (*end)
      return -1;
    frac = llround(f * 1e3);
  }
  *out = whole * 1000 + (buf[0] == '-' ? -frac : frac);
  return 0;
}

/* s's entry in keys, or otherwise. */
static int lookup(const kkey *keys, const void *s, size_t len, int otherwise) {
  for (; keys->s; keys++)
    if (strlen(keys->s) == len && !memcmp(keys->s, s, len))
      return keys->k;
  return otherwise;
}

static int on_key(void *ctx, const unsigned char *s, size_t len) {
  kparse *P = ctx;
  if (P->skip)
    return 1;
  static const kkey *const tables[] = {
      [F_ROOT] = root_keys, [F_EVENT] = event_keys, [F_ARGS] = arg_keys, [F_DEV] = dev_keys, [F_DIST] = dist_keys};
  enum frame f = P->st[P->top].f;
  const kkey *keys = f < sizeof tables / sizeof *tables ? tables[f] : NULL;
  P->st[P->top].k = keys ? (enum key)lookup(keys, s, len, K_OTHER) : K_OTHER;
  return 1;
}

static int not_object(kparse *P) {
  return fail(P,
      core_err_set(CORE_EINVAL, "%s: traceEvents[%" PRId64 "] is not an object; the trace is damaged, export it again",
          P->t->path, P->n_elems));
}

/* The top level (or its "traceEvents") is not what a trace holds. */
static int not_trace(kparse *P, const char *what) {
  return fail(
      P, core_err_set(CORE_EINVAL,
             "%s: %s; expected a Chrome trace from torch.profiler (prof.export_chrome_trace(path))", P->t->path, what));
}

#define NOT_TRACE "neither an object with a \"traceEvents\" array nor an array of events"
#define NOT_ARRAY "\"traceEvents\" is not an array of events"

static int oom(kparse *P) { return fail(P, core_err_set(CORE_ENOMEM, "out of memory reading %s", P->t->path)); }

/* A value of the event being read. */
static int event_value(kparse *P, enum key k, enum vtype v, const char *s, size_t len) {
  kpending *p = &P->p;
  int bad = 0;
  switch (k) {
  case K_PH: p->ph = v != V_STR ? T_BAD : len == 1 && s[0] == 'X' ? T_OK : T_OTHER; break;
  case K_CAT:
    p->cat = v == V_STR ? lookup(cats, s, len, CAT_SKIP) : CAT_NONE;
    p->cat_bad = v != V_STR;
    break;
  case K_NAME:
    p->name = v == V_STR ? T_OK : T_BAD;
    bad = v == V_STR && sbuf_set(&p->sname, s, len);
    break;
  case K_PID:
  case K_TID:
    if (v != V_OTHER)
      bad = sbuf_set(k == K_PID ? &p->pid : &p->tid, s, len);
    break;
  case K_TS: p->ts = v == V_NUM && parse_ns(s, len, &p->e.ts_ns) == 0 ? T_OK : T_BAD; break;
  case K_DUR: p->dur = v == V_NUM && parse_ns(s, len, &p->e.dur_ns) == 0 && p->e.dur_ns >= 0 ? T_OK : T_BAD; break;
  default: break;
  }
  return bad ? oom(P) : 1;
}

static int arg_value(kparse *P, enum key k, enum vtype v, const char *s, size_t len) {
  kpending *p = &P->p;
  int64_t x;
  if (v == V_STR && (k == K_DTYPE || k == K_COLL)) {
    if (sbuf_set(k == K_DTYPE ? &p->dtype : &p->coll, s, len))
      return oom(P);
    *(k == K_DTYPE ? &p->has_dtype : &p->has_coll) = 1;
    return 1;
  }
  if (v != V_NUM || parse_int(s, len, &x))
    return 1;
  cal_kevent *e = &p->e;
  int64_t *to = k == K_EXT       ? &e->ext_id
                : k == K_CORR    ? &e->corr
                : k == K_SEQ     ? &e->seq
                : k == K_BYTES   ? &e->bytes
                : k == K_IN_NEL  ? &e->in_nelems
                : k == K_OUT_NEL ? &e->out_nelems
                                 : NULL;
  if (to)
    *to = x;
  else if ((k == K_DEVICE || k == K_STREAM) && x >= INT32_MIN && x <= INT32_MAX)
    *(k == K_DEVICE ? &e->device : &e->stream) = (int32_t)x;
  return 1;
}

static int dims_value(kparse *P, enum frame f, enum vtype v, const char *s, size_t len) {
  cal_kdims *d = &P->p.d;
  int64_t x;
  if (f == F_DIMS) { /* a scalar where an input's list belongs */
    if (cal_kdims_input(d))
      return oom(P);
    cal_kdims_not_shape(d);
  } else if (v == V_NUM && parse_int(s, len, &x) == 0) {
    if (cal_kdims_size(d, x))
      return oom(P);
  } else {
    cal_kdims_not_shape(d);
  }
  return 1;
}

/* distributedInfo's rank or world size, unusable: refused, not taken as absent
 * (a world of one would be simulated without its allreduces). */
static int bad_dist(kparse *P, enum key k, enum vtype v, const char *s, size_t len) {
  int world = k == K_WORLD;
  return fail(P, core_err_set(CORE_EINVAL,
                     "%s: distributedInfo.%s is %.*s, not a whole number from %d to %d; the trace is damaged, export "
                     "it again",
                     P->t->path, world ? "world_size" : "rank", v == V_OTHER ? 12 : (int)(len > 40 ? 40 : len),
                     v == V_OTHER ? "not a number" : s, world ? 1 : 0, INT32_MAX));
}

static int meta_value(kparse *P, enum frame f, enum key k, enum vtype v, const char *s, size_t len) {
  cal_ktrace *t = P->t;
  int64_t x = -1;
  int num = v == V_NUM && parse_int(s, len, &x) == 0;
  int in_int = num && x >= INT32_MIN && x <= INT32_MAX;
  kdev *d = f == F_DEV ? &P->devs[P->n_devs - 1] : NULL;
  if (k == K_BASETIME && num)
    t->base_time_ns = x;
  else if (k == K_BACKEND && v == V_STR)
    snprintf(t->backend, sizeof t->backend, "%.*s", (int)len, s);
  else if (k == K_NCCL && v == V_STR)
    snprintf(t->nccl_version, sizeof t->nccl_version, "%.*s", (int)len, s);
  else if ((k == K_RANK || k == K_WORLD) && (!in_int || x < (k == K_WORLD)))
    return bad_dist(P, k, v, s, len);
  else if (k == K_RANK || k == K_WORLD)
    *(k == K_RANK ? &t->rank : &t->world_size) = (int)x;
  else if (d && k == K_DEVNAME && v == V_STR)
    snprintf(d->name, sizeof d->name, "%.*s", (int)len, s);
  else if (d && k == K_MEM && num)
    d->mem = x;
  else if (d && in_int && (k == K_ID || k == K_MAJOR || k == K_MINOR || k == K_SMS))
    *(k == K_ID ? &d->id : k == K_MAJOR ? &d->major : k == K_MINOR ? &d->minor : &d->sms) = (int)x;
  return 1;
}

/* Every scalar value, and containers (V_OTHER) before they are skipped. */
static int on_value(kparse *P, enum vtype v, const char *s, size_t len) {
  if (P->skip)
    return 1;
  enum frame f = P->st[P->top].f;
  enum key k = P->st[P->top].k;
  switch (f) {
  case F_TOP: return not_trace(P, NOT_TRACE);
  case F_ROOT:
    if (k == K_EVENTS)
      return not_trace(P, NOT_ARRAY);
    return meta_value(P, f, k, v, s, len);
  case F_EVENTS: return not_object(P);
  case F_EVENT: return event_value(P, k, v, s, len);
  case F_ARGS: return arg_value(P, k, v, s, len);
  case F_DIMS:
  case F_DIM: return dims_value(P, f, v, s, len);
  case F_DEV:
  case F_DIST: return meta_value(P, f, k, v, s, len);
  default: return 1;
  }
}

static int on_null(void *ctx) { return on_value(ctx, V_OTHER, NULL, 0); }
static int on_bool(void *ctx, int b) {
  (void)b;
  return on_value(ctx, V_OTHER, NULL, 0);
}
static int on_number(void *ctx, const char *s, size_t len) { return on_value(ctx, V_NUM, s, len); }
static int on_string(void *ctx, const unsigned char *s, size_t len) {
  return on_value(ctx, V_STR, (const char *)s, len);
}

static void pending_reset(kpending *p) {
  p->ph = p->name = p->ts = p->dur = T_ABSENT;
  p->cat = CAT_NONE;
  p->cat_bad = p->has_dtype = p->has_coll = p->has_dims = 0;
  p->sname.len = p->pid.len = p->tid.len = 0;
  memset(&p->e, 0, sizeof p->e);
  p->e.ext_id = p->e.corr = p->e.seq = p->e.bytes = p->e.in_nelems = p->e.out_nelems = -1;
  p->e.device = p->e.stream = p->e.dtype = p->e.coll = p->e.dims = -1;
}

/* The frame a container opened under frame f (key k) gets; F_SKIP: not read. */
static enum frame child_frame(kparse *P, enum frame f, enum key k, int is_map) {
  switch (f) {
  case F_TOP: return is_map ? F_ROOT : F_EVENTS;
  case F_ROOT:
    if (k == K_EVENTS)
      return is_map ? (not_trace(P, NOT_ARRAY), F_SKIP) : F_EVENTS;
    return k == K_DEVPROPS && !is_map ? F_DEVS : k == K_DISTINFO && is_map ? F_DIST : F_SKIP;
  case F_EVENTS: return is_map ? F_EVENT : (not_object(P), F_SKIP);
  case F_EVENT: return k == K_ARGS && is_map ? F_ARGS : F_SKIP;
  case F_ARGS: return k == K_IDIMS && !is_map ? F_DIMS : F_SKIP;
  case F_DIMS: return is_map ? F_SKIP : F_DIM;
  case F_DEVS: return is_map ? F_DEV : F_SKIP;
  default: return F_SKIP;
  }
}

static int open_frame(kparse *P, enum frame c) {
  kpending *p = &P->p;
  if (c == F_EVENTS)
    P->seen_events = 1;
  else if (c == F_EVENT)
    pending_reset(p);
  else if (c == F_DIMS && cal_kdims_start(&p->d))
    return oom(P);
  else if (c == F_DIM && cal_kdims_input(&p->d))
    return oom(P);
  else if (c == F_DEV) {
    if (cal_intern_grow((void **)&P->devs, &P->devs_cap, P->n_devs + 1, sizeof *P->devs))
      return oom(P);
    P->devs[P->n_devs] = (kdev){.id = (int)P->n_devs, .major = -1, .minor = -1, .sms = -1, .mem = -1};
    P->n_devs++;
  }
  P->top++;
  P->st[P->top].f = c;
  P->st[P->top].k = K_OTHER;
  return 1;
}

static int on_open(kparse *P, int is_map) {
  if (P->skip) {
    P->skip++;
    return 1;
  }
  enum frame f = P->st[P->top].f;
  enum key k = P->st[P->top].k;
  enum frame c = child_frame(P, f, k, is_map);
  if (P->rc)
    return 0;
  if (c == F_SKIP || P->top + 1 >= MAX_FRAMES) {
    if (f == F_DIMS || f == F_DIM) /* a nested list: no one tensor's shape */
      dims_value(P, f, V_OTHER, NULL, 0);
    else if (f == F_EVENT || f == F_ARGS)
      on_value(P, V_OTHER, NULL, 0);
    P->skip = 1;
    return P->rc ? 0 : 1;
  }
  return open_frame(P, c);
}

static int on_start_map(void *ctx) { return on_open(ctx, 1); }
static int on_start_array(void *ctx) { return on_open(ctx, 0); }

static int commit_event(kparse *P);

static int on_close(void *ctx) {
  kparse *P = ctx;
  if (P->skip) {
    P->skip--;
    return 1;
  }
  enum frame f = P->st[P->top].f;
  P->top--;
  if (f == F_DIMS)
    P->p.has_dims = 1;
  if (f == F_EVENT) {
    int ok = commit_event(P);
    P->n_elems++;
    return ok;
  }
  return 1;
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_bool,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_close,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_close,
};

/* --- keeping an event ---------------------------------------------------------- */

static int event_error(kparse *P, const char *what) {
  const kpending *p = &P->p;
  return fail(P, core_err_set(CORE_EINVAL, "%s: traceEvents[%" PRId64 "] (\"%.80s\"): %s", P->t->path, P->n_elems,
                     p->name == T_OK ? p->sname.p : "?", what));
}

/* Is the complete event just read well-formed, and of a kept category? */
static int check_event(kparse *P, int *keep) {
  const kpending *p = &P->p;
  *keep = 0;
  if (p->ph == T_BAD)
    return event_error(P, "\"ph\" is not a string");
  if (p->ph != T_OK)
    return 1; /* metadata, instant, flow and counter events */
  if (p->cat_bad)
    return event_error(P, "\"cat\" is not a string");
  if (p->cat == CAT_SKIP)
    return 1;
  if (p->name != T_OK)
    return event_error(P, "a complete event (\"ph\": \"X\") without a \"name\" string");
  if (p->ts != T_OK)
    return event_error(P, "\"ts\" is missing or not a number of microseconds (of magnitude below 9.2e15)");
  if (p->dur != T_OK)
    return event_error(P, "\"dur\" is missing or not a number of microseconds >= 0 (and below 9.2e15)");
  *keep = 1;
  return 1;
}

static int commit_event(kparse *P) {
  kpending *p = &P->p;
  cal_ktrace *t = P->t;
  int keep;
  if (!check_event(P, &keep) || !keep)
    return !P->rc;
  cal_kevent *e = &p->e;
  e->cat = (uint8_t)(p->cat == CAT_NONE ? CAL_K_CPU_OP : p->cat);
  e->index = P->n_elems;
  cal_intern *S = &t->store->str;
  if (sbuf_set(&P->thread, p->pid.p ? p->pid.p : "", p->pid.len) ||
      cal_intern_grow((void **)&P->thread.p, &P->thread.cap, p->pid.len + p->tid.len + 2, 1))
    return oom(P);
  P->thread.p[p->pid.len] = '/';
  if (p->tid.len)
    memcpy(P->thread.p + p->pid.len + 1, p->tid.p, p->tid.len);
  P->thread.len = p->pid.len + 1 + p->tid.len;
  if ((e->name = cal_intern_add(S, p->sname.p, p->sname.len)) < 0 ||
      (e->thread = cal_intern_add(S, P->thread.p, P->thread.len)) < 0 ||
      (p->has_dtype && (e->dtype = cal_intern_add(S, p->dtype.p, p->dtype.len)) < 0) ||
      (p->has_coll && (e->coll = cal_intern_add(S, p->coll.p, p->coll.len)) < 0) ||
      (p->has_dims && (e->dims = cal_intern_add(&t->store->dims, p->d.v, p->d.n * sizeof *p->d.v)) < 0))
    return oom(P);
  size_t cap = P->ev_cap;
  if (cal_intern_grow((void **)&t->ev, &cap, (size_t)t->n + 1, sizeof *t->ev))
    return oom(P);
  P->ev_cap = cap;
  t->ev[t->n++] = *e;
  return 1;
}

/* The traced rank's device: the one the kernels ran on (the most of them),
 * else the first listed. */
static void pick_device(kparse *P) {
  cal_ktrace *t = P->t;
  long best = -1, best_n = 0;
  t->n_devices = P->n_devs > INT32_MAX ? INT32_MAX : (int)P->n_devs;
  for (size_t i = 0; i < P->n_devs; i++) {
    long n = 0;
    for (int64_t j = 0; j < t->n; j++)
      n += t->ev[j].cat == CAL_K_KERNEL && t->ev[j].device == P->devs[i].id;
    if (n > best_n)
      best = (long)i, best_n = n;
  }
  if (best < 0 && P->n_devs)
    best = 0;
  if (best < 0)
    return;
  const kdev *d = &P->devs[best];
  t->device_id = d->id;
  snprintf(t->device_name, sizeof t->device_name, "%s", d->name);
  t->sm_count = d->sms;
  t->cc_major = d->major;
  t->cc_minor = d->minor;
  t->device_mem = d->mem;
}

static void parse_free(kparse *P) {
  kpending *p = &P->p;
  free(p->sname.p);
  free(p->pid.p);
  free(p->tid.p);
  free(p->dtype.p);
  free(p->coll.p);
  cal_kdims_free(&p->d);
  free(P->thread.p);
  free(P->devs);
}

static int read_into(const char *path, cal_ktrace *t, kparse *P) {
  cal_kfile f;
  yajl_handle h = NULL;
  int rc = cal_kfile_open(&f, path);
  if (rc)
    return rc;
  if (!(t->store = calloc(1, sizeof *t->store)) || !(h = yajl_alloc(&callbacks, NULL, P))) {
    rc = core_err_set(CORE_ENOMEM, "out of memory reading %s", path);
    goto close_all;
  }
  cal_intern_init(&t->store->str, 1);
  cal_intern_init(&t->store->dims, 0);
  if ((rc = cal_kfile_parse(&f, h, &P->rc)) != 0)
    goto close_all;
  if (t->world_size > 0 && t->rank >= t->world_size) /* known only once both keys are read */
    rc = core_err_set(CORE_EINVAL,
        "%s: distributedInfo.rank is %d, not below its world_size of %d; the trace is damaged, export it again", path,
        t->rank, t->world_size);
  else if (!P->seen_events)
    rc = core_err_set(CORE_EINVAL,
        "%s: no \"traceEvents\" array at the top level; expected a Chrome trace from torch.profiler "
        "(prof.export_chrome_trace(path))",
        path);
  else if (t->n == 0)
    rc = core_err_set(CORE_EINVAL,
        "%s: no complete events (\"ph\": \"X\") of the kinds a profiled training step holds (cpu_op, user_annotation, "
        "cuda_runtime, kernel, ...) among its %" PRId64 " events; profile at least one step with torch.profiler",
        path, P->n_elems);
  else
    pick_device(P);
close_all:
  if (h)
    yajl_free(h);
  cal_kfile_close(&f);
  return rc;
}

int cal_ktrace_read(const char *path, cal_ktrace *t) {
  memset(t, 0, sizeof *t);
  if (strlen(path) >= sizeof t->path)
    return core_err_set(CORE_EINVAL, "trace path too long (%zu characters): '%.80s...'", strlen(path), path);
  snprintf(t->path, sizeof t->path, "%s", path);
  t->device_id = t->sm_count = t->cc_major = t->cc_minor = t->rank = t->world_size = -1;
  t->device_mem = -1;
  kparse P = {.t = t, .st[0].f = F_TOP};
  int rc = read_into(path, t, &P);
  parse_free(&P);
  if (rc) {
    cal_ktrace_free(t);
    return rc;
  }
  /* Give back what doubling left unused: a long trace's array is large. */
  cal_kevent *ev = realloc(t->ev, sizeof *ev * (size_t)t->n);
  if (ev)
    t->ev = ev;
  return 0;
}

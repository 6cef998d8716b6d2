// gloo_store — the rendezvous stores of runtime/store.h over Gloo's
// FileStore and RedisStore, each under a PrefixStore; half of the Gloo shim
// (gloo_shim.h), with its exceptions caught as gloo_shim.cc catches them.

#include "runtime/gloo_shim_int.hpp"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include <gloo/rendezvous/file_store.h>

using gloo_shim::classify;
using gloo_shim::contains_ci;
using gloo_shim::guarded;

// ---- stores ---------------------------------------------------------------

#if GLOO_USE_REDIS
// Whether a TCP connection to host:port succeeds within timeout_ms; *why
// says what failed otherwise.
static bool tcp_reachable(const char *host, int port, int timeout_ms, std::string *why) {
  struct addrinfo hints, *res = nullptr;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const std::string service = std::to_string(port);
  int g = getaddrinfo(host, service.c_str(), &hints, &res);
  if (g != 0) {
    *why = std::string("cannot resolve host: ") + gai_strerror(g);
    return false;
  }
  bool ok = false;
  *why = "no address to connect to";
  for (struct addrinfo *a = res; a && !ok; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      *why = strerror(errno);
      continue;
    }
    int err = 0;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        struct pollfd p = {fd, POLLOUT, 0};
        int pr = poll(&p, 1, timeout_ms);
        socklen_t l = sizeof err;
        if (pr == 0)
          err = ETIMEDOUT;
        else if (pr < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0)
          err = errno;
      }
    }
    close(fd);
    if (err == 0)
      ok = true;
    else
      *why = strerror(err);
  }
  freeaddrinfo(res);
  return ok;
}
#endif

static int store_fail(const rt_store *s, const char *op, const char *key, int code, const std::string &what) {
  const char *hint = "";
  if (code == CORE_ETIMEDOUT) {
    hint = "; a rank that should have set it did not start, or uses another store or prefix";
  } else if (contains_ci(what, "already")) {
    code = CORE_EINVAL; // a reused prefix, not a communication failure
    hint = "; a key can be set once per store: use a prefix no earlier run used";
  }
  return core_err_set(code, "store %s of key '%s' on %s: %s%s", op, key, s->desc.c_str(), what.c_str(), hint);
}

static int store_finish(rt_store *s, rt_store **out, const char *prefix) {
  s->prefix = prefix;
  std::string what;
  int rc = guarded([&] { s->top.reset(new gloo::rendezvous::PrefixStore(prefix, *s->base)); }, &what);
  if (rc) {
    core_err_set(rc, "opening store %s: %s", s->desc.c_str(), what.c_str());
    delete s;
    return rc;
  }
  *out = s;
  return 0;
}

extern "C" int rt_store_open_file(const char *dir, const char *prefix, rt_store **out) {
  *out = nullptr;
  if (!dir || !*dir || !prefix || !*prefix)
    return core_err_set(CORE_EINVAL, "FileStore needs a directory and a non-empty prefix");
  struct stat st;
  if (stat(dir, &st) != 0) {
    if (errno == ENOENT)
      return core_err_set(CORE_EUSAGE,
          "rendezvous directory '%s' does not exist: create it (empty, on a filesystem every rank can reach) or give "
          "another (--rdzv, DDPSIM_RDZV)",
          dir);
    return core_err_errno(errno,
        "rendezvous directory '%s' (it must exist, on a filesystem "
        "every rank can reach)",
        dir);
  }
  if (!S_ISDIR(st.st_mode))
    return core_err_set(CORE_EINVAL,
        "rendezvous path '%s' is not a directory: give a "
        "directory shared by all ranks",
        dir);
  if (access(dir, W_OK | X_OK) != 0)
    return core_err_errno(errno,
        "rendezvous directory '%s' is not writable (every rank "
        "writes its address there)",
        dir);
  rt_store *s = new (std::nothrow) rt_store;
  if (!s)
    return core_err_set(CORE_ENOMEM, "out of memory opening FileStore on %s", dir);
  s->desc = std::string("file://") + dir + " (prefix " + prefix + ")";
  std::string what;
  int rc = guarded([&] { s->base.reset(new gloo::rendezvous::FileStore(dir)); }, &what);
  if (rc) {
    delete s;
    return core_err_set(rc == CORE_ENOMEM ? rc : CORE_EIO, "opening FileStore on %s: %s", dir, what.c_str());
  }
  return store_finish(s, out, prefix);
}

extern "C" int rt_store_open_redis(const char *host, int port, const char *prefix, rt_store **out) {
  *out = nullptr;
  if (!host || !*host || !prefix || !*prefix)
    return core_err_set(CORE_EINVAL, "RedisStore needs a host and a non-empty prefix");
  if (port < 1 || port > 65535)
    return core_err_set(CORE_EINVAL, "RedisStore port %d is out of range 1..65535", port);
#if GLOO_USE_REDIS
  // RedisStore's constructor leaks its hiredis context when it throws, and
  // a leak in a process that forks ranks shows up in every rank; so find an
  // unreachable server here first, with the same 2 s bound Gloo's
  // constructor uses (redisConnectWithTimeout in redis_store.cc).
  std::string why;
  if (!tcp_reachable(host, port, 2000, &why))
    return core_err_set(CORE_ECOMM,
        "connecting to redis-server at %s:%d: %s; start it "
        "(redis-server --port %d) or fix the redis:// spec",
        host, port, why.c_str(), port);
  rt_store *s = new (std::nothrow) rt_store;
  if (!s)
    return core_err_set(CORE_ENOMEM, "out of memory opening RedisStore on %s:%d", host, port);
  s->desc = std::string("redis://") + host + ":" + std::to_string(port) + " (prefix " + prefix + ")";
  std::string what;
  int rc = guarded(
      [&] {
        s->redis = new gloo::rendezvous::RedisStore(host, port);
        s->base.reset(s->redis);
      },
      &what);
  if (rc) {
    core_err_set(CORE_ECOMM,
        "connecting to redis-server at %s:%d: %s; start it (redis-server "
        "--port %d) or fix the redis:// spec",
        host, port, what.c_str(), port);
    delete s;
    return CORE_ECOMM;
  }
  return store_finish(s, out, prefix);
#else
  (void)out;
  return core_err_set(CORE_EUNSUPPORTED,
      "RedisStore on %s:%d: this Gloo was built without "
      "Redis (GLOO_USE_REDIS=0); use a FileStore directory",
      host, port);
#endif
}

extern "C" void rt_store_close(rt_store *s) {
  if (!s)
    return;
  try {
    delete s;
  } catch (...) {
    // A destructor that throws leaves nothing to recover; the handle is gone.
  }
}

extern "C" const char *rt_store_describe(const rt_store *s) { return s ? s->desc.c_str() : "(no store)"; }

extern "C" int rt_store_set(rt_store *s, const char *key, const void *val, size_t len) {
  if (!s || !key || !*key || (!val && len))
    return core_err_set(CORE_EINVAL, "rt_store_set: needs a store, a key and a value");
  if (len == 0)
    return core_err_set(CORE_EINVAL,
        "store set of key '%s' on %s: empty value (FileStore "
        "cannot read one back); store at least one byte",
        key, s->desc.c_str());
  std::string what;
  int rc = guarded(
      [&] {
#if GLOO_USE_REDIS
        // RedisStore::set leaks hiredis's reply when it refuses a key that
        // exists; refuse it here first. PrefixStore's key is prefix/key.
        if (s->redis && s->redis->check({s->prefix + "/" + key}))
          throw gloo::Exception(std::string("key '") + key + "' already set");
#endif
        const char *p = static_cast<const char *>(val);
        s->top->set(key, std::vector<char>(p, p + len));
      },
      &what);
  return rc ? store_fail(s, "set", key, rc, what) : 0;
}

extern "C" int rt_store_get(rt_store *s, const char *key, int timeout_ms, void **val, size_t *len) {
  if (!s || !key || !*key || !val || !len || timeout_ms <= 0)
    return core_err_set(CORE_EINVAL, "rt_store_get: needs a store, a key, outputs and a "
                                     "positive timeout");
  *val = nullptr;
  *len = 0;
  std::vector<char> data;
  std::string what;
  // Wait first with our timeout: the stores' own get() waits with Gloo's
  // 30 s default (Store::kDefaultTimeout), not the caller's.
  int rc = guarded(
      [&] {
        s->top->wait({key}, std::chrono::milliseconds(timeout_ms));
        data = s->top->get(key);
      },
      &what);
  if (rc)
    return store_fail(s, "get", key, rc, what);
  void *p = malloc(data.size() ? data.size() : 1);
  if (!p)
    return core_err_set(CORE_ENOMEM, "store get of key '%s': out of memory for %zu bytes", key, data.size());
  if (!data.empty())
    memcpy(p, data.data(), data.size());
  *val = p;
  *len = data.size();
  return 0;
}

extern "C" int rt_store_wait(rt_store *s, const char *const *keys, size_t nkeys, int timeout_ms) {
  if (!s || (!keys && nkeys) || timeout_ms <= 0)
    return core_err_set(CORE_EINVAL, "rt_store_wait: needs a store, keys and a positive "
                                     "timeout");
  std::string what;
  int rc = guarded(
      [&] {
        std::vector<std::string> k(keys, keys + nkeys);
        s->top->wait(k, std::chrono::milliseconds(timeout_ms));
      },
      &what);
  return rc ? store_fail(s, "wait", nkeys ? keys[0] : "(none)", rc, what) : 0;
}

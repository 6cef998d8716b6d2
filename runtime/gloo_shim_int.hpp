// gloo_shim_int — what the two halves of the Gloo shim share: the store
// (gloo_store.cc, whose rt_store the contexts of gloo_shim.cc rendezvous
// over) and the translation of Gloo's exceptions into core_err codes.
#ifndef RUNTIME_GLOO_SHIM_INT_HPP
#define RUNTIME_GLOO_SHIM_INT_HPP

#include "runtime/gloo_shim.h"

extern "C" {
#include "core/err.h"
}

#include <string.h>
#include <strings.h>

#include <memory>
#include <exception>
#include <new>
#include <string>

#include <gloo/common/error.h>
#include <gloo/config.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#if GLOO_USE_REDIS
// Debian installs hiredis.h under hiredis/; redis_store.h knows this macro.
#define HIREDIS_NESTED_INCLUDE 1
#include <gloo/rendezvous/redis_store.h>
#endif

namespace gloo_shim {

// ---- error classification -------------------------------------------------

inline bool contains_ci(const std::string &s, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= s.size(); i++)
    if (strncasecmp(s.c_str() + i, needle, n) == 0)
      return true;
  return false;
}

// Gloo reports failures only as exception text, so the class of a failure is
// read from the phrases its TCP transport and stores use (gloo/transport/tcp/
// pair.cc, buffer.cc, unbound_buffer.cc, rendezvous/*_store.cc of Gloo 0.5):
// "Connection closed by peer", "Socket closed", strerror(ECONNRESET/EPIPE) for
// a dead peer; "Read timeout", "Timed out waiting", "Wait timeout for key(s)",
// "Application timeout caused pair closure" for a silent one.
inline int classify(const std::string &what) {
  static const char *const peer[] = {
      "closed by peer", "socket closed", "socket unexpectedly closed", "connection reset", "broken pipe"};
  for (const char *p : peer)
    if (contains_ci(what, p))
      return CORE_EPEER;
  if (contains_ci(what, "timed out") || contains_ci(what, "timeout"))
    return CORE_ETIMEDOUT;
  return CORE_ECOMM;
}

// Run fn, translating whatever it throws into (code, message). Returns 0 or
// the code; *what gets the exception's text.
template <typename F> int guarded(F &&fn, std::string *what) {
  try {
    fn();
    return 0;
  } catch (const std::bad_alloc &e) {
    *what = "out of memory";
    return CORE_ENOMEM;
  } catch (const gloo::IoException &e) {
    *what = e.what();
  } catch (const gloo::EnforceNotMet &e) {
    *what = e.what();
  } catch (const std::exception &e) {
    *what = e.what();
  } catch (...) {
    *what = "unknown C++ exception";
  }
  return classify(*what);
}

} // namespace gloo_shim

struct rt_store {
  std::unique_ptr<gloo::rendezvous::Store> base;
  std::unique_ptr<gloo::rendezvous::PrefixStore> top;
  std::string desc;
  std::string prefix;
#if GLOO_USE_REDIS
  gloo::rendezvous::RedisStore *redis = nullptr; // base, when it is Redis
#endif
};

#endif

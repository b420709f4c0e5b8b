// The C ABI called after a thread's thread_local destructors have run, each time after a failed
// call: from another thread_local's destructor, from an atexit handler and from a static object's
// destructor (which run after the main thread's thread_locals are destroyed). Each call must fail
// as it should and keep its message, touching no freed memory (CI runs this under
// AddressSanitizer). Needs no GPU: the failing call is an argument error.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ptxdsl/ptxdsl.h"

namespace {

// Whether a call refused for its width gives the status and message it should, here.
bool fails_as_it_should(const char* where) {
  const std::int32_t status = ptxdsl_norm_prepare(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 0);
  const char* message = ptxdsl_last_error();
  const char* want = "ptxdsl_norm_prepare: width must be in [1, 262144], got 0";
  if (status == PTXDSL_ERROR_INVALID_ARGUMENT && std::strcmp(message, want) == 0) {
    std::printf("%s: the call failed as it should\n", where);
    return true;
  }
  std::fprintf(stderr, "%s: got %s, \"%s\"; want PTXDSL_ERROR_INVALID_ARGUMENT, \"%s\"\n", where,
               ptxdsl_status_name(status), message, want);
  return false;
}

// Exits at once (no more handlers) when a call after the thread_locals went wrong.
void require(const char* where) {
  if (!fails_as_it_should(where)) std::_Exit(1);
}

struct CallsOnThreadExit {
  ~CallsOnThreadExit() { require("a thread_local's destructor"); }
};

struct CallsAtExit {
  ~CallsAtExit() { require("a static object's destructor"); }
};
// Constructed before main registers its atexit handler, so destroyed after the handler has run.
CallsAtExit calls_at_exit;

}  // namespace

int main() {
  std::atexit([] { require("an atexit handler"); });
  // Constructed before the thread's first call builds the library's thread_locals, so destroyed
  // after them.
  std::thread([] {
    thread_local CallsOnThreadExit calls_on_exit;
    (void)calls_on_exit;
    require("a thread");
  }).join();
  require("main");
  return 0;
}

// What the C ABI's internals hold, which its exports hide (links the library's objects): failing
// calls keep no object behind, and a message longer than the thread's buffer is cut and says so.
// Needs no GPU.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "norm_objects.hpp"
#include "ptxdsl/ptxdsl.h"
#include "status.hpp"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "failed: %s\n", what);
  }
}

// Many calls for keys whose object cannot be built (devices the driver does not have, or no
// driver at all), each a key of its own: none may leave a context or a norm object behind.
void failing_calls_keep_nothing() {
  constexpr std::int32_t kCalls = 20000;
  constexpr std::int32_t kFirstDevice = 1 << 20;  // past any machine's device count
  int wrong_status = 0;
  for (std::int32_t i = 0; i < kCalls; ++i) {
    const std::int32_t status = ptxdsl_norm_prepare(kFirstDevice + i, PTXDSL_RMS_NORM, PTXDSL_F16,
                                                    PTXDSL_F16, 256 + i % 64);
    if (status != PTXDSL_ERROR_NO_DRIVER && status != PTXDSL_ERROR_INVALID_ARGUMENT &&
        ++wrong_status == 1) {
      std::fprintf(stderr, "call %d: got %s (%s); want NO_DRIVER or INVALID_ARGUMENT\n",
                   static_cast<int>(i), ptxdsl_status_name(status), ptxdsl_last_error());
    }
  }
  const ptxdsl::capi::HeldObjects held = ptxdsl::capi::held_objects();
  std::printf("after %d failing calls: %zu contexts, %zu norm objects held (the last: %s)\n",
              static_cast<int>(kCalls), held.contexts, held.norms, ptxdsl_last_error());
  expect(wrong_status == 0, "every call refused");
  expect(held.contexts == 0 && held.norms == 0, "no context and no norm object held");
}

void long_messages_are_cut() {
  const std::string long_message(10000, 'm');
  ptxdsl::capi::fail("f", PTXDSL_ERROR_DRIVER, long_message.c_str());
  const char* message = ptxdsl_last_error();
  const std::size_t length = std::strlen(message);
  const char* mark = " [... truncated]";
  std::printf("a message of %zu bytes kept as %zu\n", long_message.size() + 3, length);
  expect(length > 1000 && length < long_message.size(), "a long message is cut");
  expect(std::strncmp(message, "f: mmm", 6) == 0, "a cut message keeps its start");
  expect(
      length >= std::strlen(mark) && std::strcmp(message + length - std::strlen(mark), mark) == 0,
      "a cut message ends with the mark");
  ptxdsl::capi::fail("g", PTXDSL_ERROR_DRIVER, "short");
  expect(std::strcmp(ptxdsl_last_error(), "g: short") == 0, "a short message after it is whole");
}

}  // namespace

int main() {
  failing_calls_keep_nothing();
  long_messages_are_cut();
  return failures == 0 ? 0 : 1;
}

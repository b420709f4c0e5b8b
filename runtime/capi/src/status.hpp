#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "ptxdsl/ptxdsl.h"

// How the C ABI turns C++ outcomes into a ptxdsl_status and this thread's last-error message.
namespace ptxdsl::capi {

// A refusal by the C layer itself, with the status it returns.
class CallError : public std::runtime_error {
 public:
  CallError(ptxdsl_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  ptxdsl_status status() const { return status_; }

 private:
  ptxdsl_status status_;
};

void clear_last_error() noexcept;
// Records "<function>: <message>" as this thread's last error and returns `status`.
std::int32_t fail(const char* function, ptxdsl_status status, const char* message) noexcept;
// The status and message of the exception being handled (call only inside a catch block).
std::int32_t fail_current(const char* function) noexcept;

// Runs `body` with every exception turned into a status: nothing crosses the C boundary.
template <class Body>
std::int32_t guarded(const char* function, Body&& body) noexcept {
  clear_last_error();
  try {
    body();
    return PTXDSL_SUCCESS;
  } catch (...) {
    return fail_current(function);
  }
}

}  // namespace ptxdsl::capi

#include "status.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <string_view>

#include "ptxdsl/runtime/error.hpp"

namespace ptxdsl::capi {
namespace {

// The CUresult for CUDA_ERROR_OUT_OF_MEMORY, which cuda.h (not seen here) names.
constexpr int kDriverOutOfMemory = 2;

// What ends a message too long for the buffer (a long JIT log keeps its first errors).
constexpr std::string_view kTruncated = " [... truncated]";

// A plain array, not a std::string: trivially destructible, it is still there for calls made after
// the thread's thread_local destructors have run (from atexit handlers and static destructors),
// and recording a message never allocates.
thread_local char last_error[4096];

// Appends `text` at `used`, cutting it (and marking the cut) where the buffer ends.
std::size_t append(std::size_t used, std::string_view text) noexcept {
  constexpr std::size_t kRoom = sizeof(last_error) - 1;
  if (used + text.size() > kRoom) {
    const std::size_t keep = kRoom - kTruncated.size();
    std::memcpy(last_error + std::min(used, keep), text.data(), keep - std::min(used, keep));
    std::memcpy(last_error + keep, kTruncated.data(), kTruncated.size());
    last_error[kRoom] = '\0';
    return kRoom;
  }
  std::memcpy(last_error + used, text.data(), text.size());
  last_error[used + text.size()] = '\0';
  return used + text.size();
}

}  // namespace

void clear_last_error() noexcept {
  last_error[0] = '\0';
}

std::int32_t fail(const char* function, ptxdsl_status status, const char* message) noexcept {
  append(append(append(0, function), ": "), message);
  return status;
}

std::int32_t fail_current(const char* function) noexcept {
  try {
    throw;
  } catch (const CallError& e) {
    return fail(function, e.status(), e.what());
  } catch (const runtime::DriverError& e) {
    return fail(function,
                e.code() == kDriverOutOfMemory ? PTXDSL_ERROR_OUT_OF_MEMORY : PTXDSL_ERROR_DRIVER,
                e.what());
  } catch (const Error& e) {
    // ptxdsl's own checks (alignment, sizes, overlaps, widths the kernels refuse...).
    return fail(function, PTXDSL_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc&) {
    return fail(function, PTXDSL_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(function, PTXDSL_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(function, PTXDSL_ERROR_INTERNAL, "an unknown exception");
  }
}

}  // namespace ptxdsl::capi

extern "C" const char* ptxdsl_last_error(void) {
  return ptxdsl::capi::last_error;
}

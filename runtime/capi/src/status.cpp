#include "status.hpp"

#include <new>
#include <string>

#include "ptxdsl/runtime/error.hpp"

namespace ptxdsl::capi {
namespace {

// The CUresult for CUDA_ERROR_OUT_OF_MEMORY, which cuda.h (not seen here) names.
constexpr int kDriverOutOfMemory = 2;

thread_local std::string last_error;

}  // namespace

void clear_last_error() noexcept {
  last_error.clear();  // keeps its capacity: never allocates
}

std::int32_t fail(const char* function, ptxdsl_status status, const char* message) noexcept {
  try {
    last_error.assign(function);
    last_error.append(": ");
    last_error.append(message);
  } catch (...) {
    last_error.clear();  // no memory for the message: the status still says what happened
  }
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
  return ptxdsl::capi::last_error.c_str();
}

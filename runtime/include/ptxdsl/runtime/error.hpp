#pragma once

#include <string>

#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl::runtime {

// A CUDA driver call that failed: what we were doing, the call, cuGetErrorName/cuGetErrorString
// and, for a JIT failure, the JIT log, all in what(). `code()` is the CUresult.
class DriverError : public Error {
 public:
  DriverError(int code, std::string call, const std::string& message)
      : Error(message), code_(code), call_(std::move(call)) {}
  int code() const { return code_; }
  const std::string& call() const { return call_; }

 private:
  int code_;
  std::string call_;
};

}  // namespace ptxdsl::runtime

#pragma once

#include <cstddef>
#include <cstdint>

#include "ptxdsl/dsl/dim3.hpp"

// The driver's handle types, declared as cuda.h declares them, so public headers need no toolkit
// and a caller who does include cuda.h can pass its own CUstream, CUcontext... straight in.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUmemPoolHandle_st;
struct CUgraph_st;
struct CUgraphExec_st;

namespace ptxdsl::runtime {

// A device address with the element type it points to; `p + n` moves by n elements.
template <class T>
struct DevicePtr {
  std::uint64_t address = 0;
  DevicePtr operator+(std::ptrdiff_t elements) const {
    return {address +
            static_cast<std::uint64_t>(elements * static_cast<std::ptrdiff_t>(sizeof(T)))};
  }
  explicit operator bool() const { return address != 0; }
};

class Stream;

// A non-owning stream argument: a Stream, a raw CUstream, or the legacy default stream (nullptr).
class StreamRef {
 public:
  StreamRef() = default;
  StreamRef(std::nullptr_t) {}                         // NOLINT: the default stream
  StreamRef(CUstream_st* handle) : handle_(handle) {}  // NOLINT: a CUstream from elsewhere
  StreamRef(const Stream& stream);                     // NOLINT
  CUstream_st* handle() const { return handle_; }

 private:
  CUstream_st* handle_ = nullptr;
};

}  // namespace ptxdsl::runtime

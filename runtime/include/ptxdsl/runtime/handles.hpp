#pragma once

#include <cstddef>
#include <cstdint>

// The driver's handle types, declared as cuda.h declares them, so public headers need no toolkit
// and a caller who does include cuda.h can pass its own CUstream, CUcontext... straight in.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;

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

// A launch shape.
struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  Dim3(std::uint32_t x_ = 1, std::uint32_t y_ = 1, std::uint32_t z_ = 1)  // NOLINT: Dim3 g = 64;
      : x(x_), y(y_), z(z_) {}
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

#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ptxdsl/dsl/device_model.hpp"
#include "ptxdsl/runtime/handles.hpp"

namespace ptxdsl::runtime {

namespace detail {
struct ContextState;
}

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  std::uint64_t total_memory = 0;
  // Its compute capability, SMs, threads, registers, shared memory and L2, read from the driver:
  // what a planner needs to know of the device.
  DeviceModel model;
};

// A device's primary context: retained and made current on construction, released when the last
// object that uses it (this, its modules, buffers, streams, events) is gone. Move-only.
class Context {
 public:
  explicit Context(int device = 0);
  Context(Context&&) noexcept = default;
  Context& operator=(Context&&) noexcept = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() = default;

  // Another handle to the same primary context (objects that outlive the caller's handle keep one).
  Context share() const;

  int device() const;
  const DeviceInfo& info() const;
  int sm_count() const { return static_cast<int>(info().model.sm_count); }
  CUctx_st* handle() const;
  // Makes this context current on the calling thread (a no-op when it already is).
  void make_current() const;
  void synchronize() const;
  // Free and total device memory, in bytes.
  std::uint64_t free_memory() const;

  const std::shared_ptr<const detail::ContextState>& state() const { return state_; }

 private:
  explicit Context(std::shared_ptr<const detail::ContextState> state) : state_(std::move(state)) {}
  std::shared_ptr<const detail::ContextState> state_;
};

}  // namespace ptxdsl::runtime

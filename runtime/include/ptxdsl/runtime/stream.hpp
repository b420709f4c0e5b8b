#pragma once

#include <memory>

#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/handles.hpp"

namespace ptxdsl::runtime {

// A non-blocking stream of `ctx`; destroyed (after its work is done, as the driver does) with the
// object. Move-only.
class Stream {
 public:
  explicit Stream(const Context& ctx);
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  CUstream_st* handle() const { return handle_; }
  void synchronize() const;

 private:
  void release() noexcept;
  std::shared_ptr<const detail::ContextState> ctx_;
  CUstream_st* handle_ = nullptr;
};

inline StreamRef::StreamRef(const Stream& stream) : handle_(stream.handle()) {}

// A timing event. Move-only.
class Event {
 public:
  explicit Event(const Context& ctx);
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  CUevent_st* handle() const { return handle_; }
  void record(StreamRef stream = {});
  void synchronize() const;
  // Milliseconds from `start` to this event; both recorded, this one complete.
  float elapsed_ms_since(const Event& start) const;

 private:
  void release() noexcept;
  std::shared_ptr<const detail::ContextState> ctx_;
  CUevent_st* handle_ = nullptr;
};

}  // namespace ptxdsl::runtime

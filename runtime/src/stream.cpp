#include <utility>

#include <fmt/format.h>

#include "driver_api.hpp"
#include "ptxdsl/runtime/stream.hpp"

namespace ptxdsl::runtime {

Stream::Stream(const Context& ctx) : ctx_(ctx.state()) {
  ctx.make_current();
  CUstream s = nullptr;
  PTXDSL_CU_CHECK("creating a stream", cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
  handle_ = s;
}

Stream::Stream(Stream&& other) noexcept
    : ctx_(std::move(other.ctx_)), handle_(std::exchange(other.handle_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Stream::~Stream() {
  release();
}

void Stream::release() noexcept {
  if (handle_ != nullptr) {
    if (const detail::DriverApi* d = detail::loaded_driver()) d->cuStreamDestroy(handle_);
    handle_ = nullptr;
  }
}

void Stream::synchronize() const {
  PTXDSL_CU_CHECK("synchronizing a stream", cuStreamSynchronize, handle_);
}

Event::Event(const Context& ctx) : ctx_(ctx.state()) {
  ctx.make_current();
  CUevent e = nullptr;
  PTXDSL_CU_CHECK("creating an event", cuEventCreate, &e, CU_EVENT_DEFAULT);
  handle_ = e;
}

Event::Event(Event&& other) noexcept
    : ctx_(std::move(other.ctx_)), handle_(std::exchange(other.handle_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Event::~Event() {
  release();
}

void Event::release() noexcept {
  if (handle_ != nullptr) {
    if (const detail::DriverApi* d = detail::loaded_driver()) d->cuEventDestroy(handle_);
    handle_ = nullptr;
  }
}

void Event::record(StreamRef stream) {
  PTXDSL_CU_CHECK("recording an event", cuEventRecord, handle_, stream.handle());
}

void Event::synchronize() const {
  PTXDSL_CU_CHECK("waiting for an event", cuEventSynchronize, handle_);
}

float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  PTXDSL_CU_CHECK("reading the time between two events", cuEventElapsedTime, &ms, start.handle_,
                  handle_);
  return ms;
}

}  // namespace ptxdsl::runtime

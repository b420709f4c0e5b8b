#include <limits>
#include <utility>

#include <fmt/format.h>

#include "driver_api.hpp"
#include "ptxdsl/runtime/memory.hpp"

namespace ptxdsl::runtime {
namespace {

void enqueue_fill(std::size_t value_bytes, std::uint64_t dst, std::uint32_t value,
                  std::size_t count, StreamRef stream) {
  if (count == 0) return;
  CUstream s = stream.handle();
  auto what = [&] {
    return fmt::format("filling {} values of {} bytes at 0x{:x} with 0x{:x}", count, value_bytes,
                       dst, value);
  };
  switch (value_bytes) {
    case 1:
      PTXDSL_CU_CHECK(what, cuMemsetD8Async, dst, static_cast<unsigned char>(value), count, s);
      break;
    case 2:
      PTXDSL_CU_CHECK(what, cuMemsetD16Async, dst, static_cast<unsigned short>(value), count, s);
      break;
    case 4:
      PTXDSL_CU_CHECK(what, cuMemsetD32Async, dst, value, count, s);
      break;
    default:
      throw Error(fmt::format("fill value size must be 1, 2 or 4 bytes, got {}", value_bytes));
  }
}

// On the legacy default stream a fill, like a synchronous copy, returns when it is done.
void fill_raw(std::size_t value_bytes, std::uint64_t dst, std::uint32_t value, std::size_t count,
              StreamRef stream) {
  if (count == 0) return;
  enqueue_fill(value_bytes, dst, value, count, stream);
  if (stream.handle() == nullptr) {
    PTXDSL_CU_CHECK(
        [&] { return fmt::format("waiting for a fill of {} values at 0x{:x}", count, dst); },
        cuStreamSynchronize, nullptr);
  }
}

// A synchronous copy from pageable memory may return before its DMA lands; work on non-blocking
// streams is not ordered after it. Waiting for the legacy stream makes "returned" mean "arrived".
void finish_upload(std::size_t bytes) {
  PTXDSL_CU_CHECK([&] { return fmt::format("finishing a copy of {} bytes to the device", bytes); },
                  cuStreamSynchronize, nullptr);
}

}  // namespace

void copy_to_device(const Context& ctx, std::uint64_t dst, const void* src, std::size_t bytes) {
  ctx.make_current();
  PTXDSL_CU_CHECK(
      [&] { return fmt::format("copying {} bytes to device address 0x{:x}", bytes, dst); },
      cuMemcpyHtoD, dst, src, bytes);
  finish_upload(bytes);
}

void copy_to_host(const Context& ctx, void* dst, std::uint64_t src, std::size_t bytes) {
  ctx.make_current();
  PTXDSL_CU_CHECK(
      [&] { return fmt::format("copying {} bytes from device address 0x{:x}", bytes, src); },
      cuMemcpyDtoH, dst, src, bytes);
}

void copy_device(const Context& ctx, std::uint64_t dst, std::uint64_t src, std::size_t bytes) {
  ctx.make_current();
  PTXDSL_CU_CHECK(
      [&] { return fmt::format("copying {} bytes from 0x{:x} to 0x{:x}", bytes, src, dst); },
      cuMemcpyDtoD, dst, src, bytes);
}

void copy_to_device_async(const Context& ctx, std::uint64_t dst, const void* src, std::size_t bytes,
                          StreamRef stream) {
  ctx.make_current();
  PTXDSL_CU_CHECK(
      [&] { return fmt::format("copying {} bytes to device address 0x{:x}", bytes, dst); },
      cuMemcpyHtoDAsync, dst, src, bytes, stream.handle());
}

void copy_device_async(const Context& ctx, std::uint64_t dst, std::uint64_t src, std::size_t bytes,
                       StreamRef stream) {
  ctx.make_current();
  PTXDSL_CU_CHECK(
      [&] { return fmt::format("copying {} bytes from 0x{:x} to 0x{:x}", bytes, src, dst); },
      cuMemcpyDtoDAsync, dst, src, bytes, stream.handle());
}

void copy_to_host_async(const Context& ctx, void* dst, std::uint64_t src, std::size_t bytes,
                        StreamRef stream) {
  ctx.make_current();
  PTXDSL_CU_CHECK(
      [&] { return fmt::format("copying {} bytes from device address 0x{:x}", bytes, src); },
      cuMemcpyDtoHAsync, dst, src, bytes, stream.handle());
}

void fill_u8(const Context& ctx, std::uint64_t dst, std::uint8_t value, std::size_t count,
             StreamRef stream) {
  ctx.make_current();
  fill_raw(1, dst, value, count, stream);
}
void fill_u16(const Context& ctx, std::uint64_t dst, std::uint16_t value, std::size_t count,
              StreamRef stream) {
  ctx.make_current();
  fill_raw(2, dst, value, count, stream);
}
void fill_u32(const Context& ctx, std::uint64_t dst, std::uint32_t value, std::size_t count,
              StreamRef stream) {
  ctx.make_current();
  fill_raw(4, dst, value, count, stream);
}
void fill_u8_async(const Context& ctx, std::uint64_t dst, std::uint8_t value, std::size_t count,
                   StreamRef stream) {
  ctx.make_current();
  enqueue_fill(1, dst, value, count, stream);
}
void fill_u16_async(const Context& ctx, std::uint64_t dst, std::uint16_t value, std::size_t count,
                    StreamRef stream) {
  ctx.make_current();
  enqueue_fill(2, dst, value, count, stream);
}
void fill_u32_async(const Context& ctx, std::uint64_t dst, std::uint32_t value, std::size_t count,
                    StreamRef stream) {
  ctx.make_current();
  enqueue_fill(4, dst, value, count, stream);
}

std::optional<Allocation> find_allocation(const Context& ctx, std::uint64_t address) {
  ctx.make_current();
  const detail::DriverApi& d = detail::driver();
  CUdeviceptr start = 0;
  const CUresult r = d.cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                             static_cast<CUdeviceptr>(address));
  if (r == CUDA_ERROR_INVALID_VALUE) return std::nullopt;  // not an allocation the driver made
  detail::check(r, "cuPointerGetAttribute",
                [&] { return fmt::format("finding the allocation of 0x{:x}", address); });
  std::size_t bytes = 0;
  PTXDSL_CU_CHECK(
      [&] { return fmt::format("finding the size of the allocation at 0x{:x}", start); },
      cuPointerGetAttribute, &bytes, CU_POINTER_ATTRIBUTE_RANGE_SIZE, start);
  return Allocation{start, bytes};
}

namespace detail {

std::size_t checked_bytes(std::size_t count, std::size_t element_bytes) {
  if (element_bytes != 0 && count > std::numeric_limits<std::size_t>::max() / element_bytes)
      [[unlikely]] {
    throw Error(fmt::format("{} elements of {} bytes do not fit a size_t ({} bytes at most)", count,
                            element_bytes, std::numeric_limits<std::size_t>::max()));
  }
  return count * element_bytes;
}

RawBuffer::RawBuffer(const Context& ctx, std::size_t bytes) : ctx_(ctx.state()), bytes_(bytes) {
  if (bytes == 0) return;
  ctx.make_current();
  CUdeviceptr p = 0;
  PTXDSL_CU_CHECK(
      [&] {
        return fmt::format("allocating {} bytes on device {} ({} bytes free)", bytes, ctx.device(),
                           ctx.free_memory());
      },
      cuMemAlloc, &p, bytes);
  address_ = p;
}

RawBuffer::RawBuffer(RawBuffer&& other) noexcept
    : ctx_(std::move(other.ctx_)), address_(other.address_), bytes_(other.bytes_) {
  other.address_ = 0;
  other.bytes_ = 0;
}

RawBuffer& RawBuffer::operator=(RawBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    address_ = other.address_;
    bytes_ = other.bytes_;
    other.address_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

RawBuffer::~RawBuffer() {
  release();
}

void RawBuffer::release() noexcept {
  if (address_ != 0) {
    if (const DriverApi* d = loaded_driver()) {
      // cuMemFree wants the owning context current; the caller's is restored after.
      CUcontext previous = nullptr;
      d->cuCtxGetCurrent(&previous);
      if (previous != ctx_->context) d->cuCtxSetCurrent(ctx_->context);
      d->cuMemFree(address_);
      if (previous != ctx_->context) d->cuCtxSetCurrent(previous);
    }
    address_ = 0;
  }
  bytes_ = 0;
}

void RawBuffer::upload(std::size_t offset, const void* src, std::size_t bytes) {
  if (bytes > bytes_ || offset > bytes_ - bytes) {
    throw Error(fmt::format("upload of {} bytes at offset {} overruns a buffer of {} bytes", bytes,
                            offset, bytes_));
  }
  if (bytes == 0) return;
  make_current(ctx_->context);
  PTXDSL_CU_CHECK([&] { return fmt::format("copying {} bytes to the device", bytes); },
                  cuMemcpyHtoD, address_ + offset, src, bytes);
  finish_upload(bytes);
}

void RawBuffer::download(std::size_t offset, void* dst, std::size_t bytes) const {
  if (bytes > bytes_ || offset > bytes_ - bytes) {
    throw Error(fmt::format("download of {} bytes at offset {} overruns a buffer of {} bytes",
                            bytes, offset, bytes_));
  }
  if (bytes == 0) return;
  make_current(ctx_->context);
  PTXDSL_CU_CHECK([&] { return fmt::format("copying {} bytes from the device", bytes); },
                  cuMemcpyDtoH, dst, address_ + offset, bytes);
}

void RawBuffer::fill(std::size_t value_bytes, std::uint32_t value, std::size_t count,
                     StreamRef stream) {
  if (checked_bytes(count, value_bytes) > bytes_) {
    throw Error(fmt::format("fill of {} values of {} bytes overruns a buffer of {} bytes", count,
                            value_bytes, bytes_));
  }
  if (count == 0) return;
  make_current(ctx_->context);
  fill_raw(value_bytes, address_, value, count, stream);
}

}  // namespace detail

MemoryPool::MemoryPool(const Context& ctx) : ctx_(ctx.state()) {
  ctx.make_current();
  int supported = 0;
  PTXDSL_CU_CHECK("asking whether the device has memory pools", cuDeviceGetAttribute, &supported,
                  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, ctx_->device);
  if (supported == 0) {
    throw Error(
        fmt::format("device {} ({}) has no stream-ordered memory pools (driver or device "
                    "too old)",
                    ctx.device(), ctx.info().name));
  }
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = ctx_->device;
  CUmemoryPool pool = nullptr;
  PTXDSL_CU_CHECK([&] { return fmt::format("creating a memory pool on device {}", ctx.device()); },
                  cuMemPoolCreate, &pool, &props);
  pool_ = pool;
  // Kept, not released at every synchronization: the next call reuses it without the driver.
  cuuint64_t keep = std::numeric_limits<cuuint64_t>::max();
  PTXDSL_CU_CHECK("setting a memory pool's release threshold", cuMemPoolSetAttribute, pool_,
                  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
}

MemoryPool::MemoryPool(MemoryPool&& other) noexcept
    : ctx_(std::move(other.ctx_)), pool_(std::exchange(other.pool_, nullptr)) {}

MemoryPool& MemoryPool::operator=(MemoryPool&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    pool_ = std::exchange(other.pool_, nullptr);
  }
  return *this;
}

MemoryPool::~MemoryPool() {
  release();
}

void MemoryPool::release() noexcept {
  if (pool_ != nullptr) {
    // Allocations still out keep the pool's memory until they are freed (the driver's rule).
    if (const detail::DriverApi* d = detail::loaded_driver()) d->cuMemPoolDestroy(pool_);
    pool_ = nullptr;
  }
}

std::uint64_t MemoryPool::allocate_async(std::size_t bytes, StreamRef stream) {
  detail::make_current(ctx_->context);
  CUdeviceptr p = 0;
  PTXDSL_CU_CHECK(
      [&] {
        return fmt::format("allocating {} bytes in stream order on device {}", bytes,
                           ctx_->info.ordinal);
      },
      cuMemAllocFromPoolAsync, &p, bytes, pool_, stream.handle());
  return p;
}

void MemoryPool::free_async(std::uint64_t address, StreamRef stream) {
  detail::make_current(ctx_->context);
  PTXDSL_CU_CHECK([&] { return fmt::format("freeing 0x{:x} in stream order", address); },
                  cuMemFreeAsync, address, stream.handle());
}

}  // namespace ptxdsl::runtime

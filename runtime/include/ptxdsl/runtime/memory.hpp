#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/handles.hpp"

namespace ptxdsl::runtime {

// Copies and fills on raw device addresses, in `ctx` (made current). The synchronous forms run on
// the legacy default stream and return when the data has arrived; they do not wait for work on
// non-blocking streams (synchronize those first). The `_async` forms are ordered on `stream`.
void copy_to_device(const Context& ctx, std::uint64_t dst, const void* src, std::size_t bytes);
void copy_to_host(const Context& ctx, void* dst, std::uint64_t src, std::size_t bytes);
void copy_device(const Context& ctx, std::uint64_t dst, std::uint64_t src, std::size_t bytes);
void copy_to_device_async(const Context& ctx, std::uint64_t dst, const void* src, std::size_t bytes,
                          StreamRef stream);
void copy_to_host_async(const Context& ctx, void* dst, std::uint64_t src, std::size_t bytes,
                        StreamRef stream);
void copy_device_async(const Context& ctx, std::uint64_t dst, std::uint64_t src, std::size_t bytes,
                       StreamRef stream);
// `count` values of 1, 2 or 4 bytes (NaN bit patterns, zeros...). On the legacy default stream
// these return when the memory is filled; the `_async` forms never wait, on any stream.
void fill_u8(const Context& ctx, std::uint64_t dst, std::uint8_t value, std::size_t count,
             StreamRef stream = {});
void fill_u16(const Context& ctx, std::uint64_t dst, std::uint16_t value, std::size_t count,
              StreamRef stream = {});
void fill_u32(const Context& ctx, std::uint64_t dst, std::uint32_t value, std::size_t count,
              StreamRef stream = {});
void fill_u8_async(const Context& ctx, std::uint64_t dst, std::uint8_t value, std::size_t count,
                   StreamRef stream);
void fill_u16_async(const Context& ctx, std::uint64_t dst, std::uint16_t value, std::size_t count,
                    StreamRef stream);
void fill_u32_async(const Context& ctx, std::uint64_t dst, std::uint32_t value, std::size_t count,
                    StreamRef stream);

// The allocation the driver knows `address` to be in (device, managed, or pinned host memory that
// kernels may address), or nothing for an address it does not know: memory from malloc or new,
// or freed. Throws only for a failure of the driver itself.
struct Allocation {
  std::uint64_t start = 0, bytes = 0;
  bool contains(std::uint64_t address) const { return address - start < bytes; }
};
std::optional<Allocation> find_allocation(const Context& ctx, std::uint64_t address);

namespace detail {

// Untyped device memory (cuMemAlloc, at least 256-byte aligned); freed on destruction. Keeps its
// context retained.
class RawBuffer {
 public:
  RawBuffer() = default;
  RawBuffer(const Context& ctx, std::size_t bytes);
  RawBuffer(RawBuffer&& other) noexcept;
  RawBuffer& operator=(RawBuffer&& other) noexcept;
  RawBuffer(const RawBuffer&) = delete;
  RawBuffer& operator=(const RawBuffer&) = delete;
  ~RawBuffer();

  std::uint64_t address() const { return address_; }
  // The address as a launch argument reads it (cuLaunchKernel takes a pointer to the value).
  const std::uint64_t* address_slot() const { return &address_; }
  std::size_t bytes() const { return bytes_; }

  void upload(std::size_t offset, const void* src, std::size_t bytes);
  void download(std::size_t offset, void* dst, std::size_t bytes) const;
  void fill(std::size_t value_bytes, std::uint32_t value, std::size_t count, StreamRef stream);

 private:
  void release() noexcept;
  std::shared_ptr<const ContextState> ctx_;
  std::uint64_t address_ = 0;
  std::size_t bytes_ = 0;
};

// count × element_bytes, or a ptxdsl::Error naming both where the product does not fit a size_t.
std::size_t checked_bytes(std::size_t count, std::size_t element_bytes);

}  // namespace detail

// Device memory allocated and freed in stream order (cuMemAllocFromPoolAsync, cuMemFreeAsync) from
// a pool of the context's device that keeps what was freed for the next allocation rather than
// returning it at each synchronization. Both calls are legal under stream capture, where the
// graph owns the allocation (a graph memory node). Move-only; memory not yet freed stays valid
// after the pool is destroyed, until it is freed.
class MemoryPool {
 public:
  explicit MemoryPool(const Context& ctx);
  MemoryPool(MemoryPool&& other) noexcept;
  MemoryPool& operator=(MemoryPool&& other) noexcept;
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;
  ~MemoryPool();

  // `bytes` (at least 256-byte aligned) that work enqueued on `stream` after this call may use.
  std::uint64_t allocate_async(std::size_t bytes, StreamRef stream);
  // Frees `address` once the work enqueued on `stream` before this call is done.
  void free_async(std::uint64_t address, StreamRef stream);

 private:
  void release() noexcept;
  std::shared_ptr<const detail::ContextState> ctx_;
  CUmemPoolHandle_st* pool_ = nullptr;
};

// `count` elements of T in device memory; move-only, freed on destruction.
template <class T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "device buffers hold trivially copyable values");

 public:
  DeviceBuffer() = default;
  DeviceBuffer(const Context& ctx, std::size_t count)
      : raw_(ctx, detail::checked_bytes(count, sizeof(T))), count_(count) {}
  DeviceBuffer(const Context& ctx, std::span<const T> host) : DeviceBuffer(ctx, host.size()) {
    upload(host);
  }

  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  std::uint64_t address() const { return raw_.address(); }
  DevicePtr<T> ptr(std::size_t offset = 0) const { return DevicePtr<T>{address()} + offset; }
  const std::uint64_t* address_slot() const { return raw_.address_slot(); }

  void upload(std::span<const T> host, std::size_t offset = 0) {
    raw_.upload(offset * sizeof(T), host.data(), host.size() * sizeof(T));
  }
  void download(std::span<T> host, std::size_t offset = 0) const {
    raw_.download(offset * sizeof(T), host.data(), host.size() * sizeof(T));
  }
  std::vector<T> to_host() const {
    std::vector<T> host(count_);
    download(host);
    return host;
  }
  // Every element set to `value` (1, 2 or 4 bytes wide), ordered on `stream`.
  void fill(const T& value,
            StreamRef stream = {}) requires(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    raw_.fill(sizeof(T), bits, count_, stream);
  }

 private:
  detail::RawBuffer raw_;
  std::size_t count_ = 0;
};

}  // namespace ptxdsl::runtime

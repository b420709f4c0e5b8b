#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ptxdsl/dsl/dim3.hpp"
#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/dsl/kernel.hpp"
#include "ptxdsl/dsl/tensor_map.hpp"
#include "ptxdsl/dsl/types.hpp"

// The CPU executor: runs a finalized kernel's IR on host memory, thread by thread as PTX defines
// it, and checks every memory access. See docs/executor.md for what it models and what it does not.
//
//   CpuDevice dev;
//   ExecutorAddress x = dev.upload(std::span<const float>(host_x), "x");
//   ExecutorAddress y = dev.alloc(n * 4, "y");
//   dev.launch(kernel, {.grid = rows, .block = 256}, {x, y, n, 1e-5f});
//   std::vector<float> out = dev.download<float>(y, n);
namespace ptxdsl {

// An address in the executor's global memory (host memory behind fake device addresses; not a
// GPU's, which runtime::DevicePtr holds). Distinct from integers so that a pointer parameter cannot
// be passed a length by mistake.
struct ExecutorAddress {
  std::uint64_t address = 0;
  ExecutorAddress operator+(std::int64_t bytes) const {
    return {address + static_cast<std::uint64_t>(bytes)};
  }
  friend bool operator==(const ExecutorAddress&, const ExecutorAddress&) = default;
};

// One launch argument: a device pointer or a typed scalar. C++ numbers map to PTX types as written
// (`17u` is u32, `17` is s32, `1e-5f` is f32); `Arg::of` names any type explicitly.
struct Arg {
  bool pointer = false;
  ScalarType type = ScalarType::U64;
  std::uint64_t bits = 0;
  // A tensor map parameter's bytes (executor_tensor_map), where is_tensor_map.
  bool is_tensor_map = false;
  std::array<std::byte, kTensorMapBytes> map{};

  Arg(ExecutorAddress p) : pointer(true), type(ScalarType::U64), bits(p.address) {}    // NOLINT
  Arg(float v) : type(ScalarType::F32), bits(bits_of<std::uint32_t>(v)) {}             // NOLINT
  Arg(double v) : type(ScalarType::F64), bits(bits_of<std::uint64_t>(v)) {}            // NOLINT
  Arg(std::uint16_t v) : type(ScalarType::U16), bits(v) {}                             // NOLINT
  Arg(std::uint32_t v) : type(ScalarType::U32), bits(v) {}                             // NOLINT
  Arg(std::int32_t v) : type(ScalarType::S32), bits(static_cast<std::uint32_t>(v)) {}  // NOLINT
  Arg(std::uint64_t v) : type(ScalarType::U64), bits(v) {}                             // NOLINT
  Arg(std::int64_t v) : type(ScalarType::S64), bits(static_cast<std::uint64_t>(v)) {}  // NOLINT
  // Any scalar by its bit pattern: `Arg::of(ScalarType::F16, f32_to_f16_bits(0.5f))`.
  static Arg of(ScalarType t, std::uint64_t bits) {
    Arg a(std::uint64_t{0});
    a.type = t;
    a.bits = bits;
    return a;
  }
  // A tensor map parameter: the executor's encoding of `spec` (tensor_map.hpp).
  static Arg of_tensor_map(const TensorMapSpec& spec) {
    Arg a(std::uint64_t{0});
    a.is_tensor_map = true;
    a.map = executor_tensor_map(spec);
    return a;
  }

 private:
  template <class U, class V>
  static std::uint64_t bits_of(V v) {
    U u;
    std::memcpy(&u, &v, sizeof u);
    return u;
  }
};

// A parameter bound by its name (the norm kernels fix their parameter names).
struct NamedArg {
  std::string name;
  Arg value;
};
// Orders `args` as `kernel.params()` declares them; throws naming missing or unknown names.
std::vector<Arg> args_by_name(const Kernel& kernel, std::span<const NamedArg> args);
inline std::vector<Arg> args_by_name(const Kernel& kernel, std::initializer_list<NamedArg> args) {
  return args_by_name(kernel, std::span<const NamedArg>(args.begin(), args.size()));
}

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  std::uint32_t dynamic_shared_bytes = 0;
  // CTAs per thread-block cluster; {0, 0, 0}: the kernel's .reqnctapercluster, or no clusters
  // (each CTA its own cluster of one).
  Dim3 cluster{0, 0, 0};
};

// Which thread to trace: its CTA and its thread index within the CTA.
struct TraceTarget {
  Dim3 cta{0, 0, 0};
  Dim3 thread{0, 0, 0};
  std::size_t max_records = 100000;  // older records are kept, later ones dropped
};

// One instruction as the traced thread saw it: its index in `Kernel::instructions()`, the PTX line,
// whether the guard let it run, and the registers it wrote with their new values.
struct TraceRecord {
  std::uint32_t index = 0;
  std::string instr;
  bool executed = true;
  std::vector<std::pair<std::string, std::string>> writes;  // {"%f3", "1.5 (0x3FC00000)"}
};
// One line per record: `  12  add.f32 %f3, %f1, %f2;  // acc    %f3 = 1.5 (0x3FC00000)`.
std::string format_trace(std::span<const TraceRecord> records);

struct ExecOptions {
  // Reading a register that this thread never wrote is an error (PTX leaves its value undefined).
  bool check_uninitialized_registers = true;
  // Reading shared memory that no thread of the CTA wrote is an error.
  bool check_uninitialized_shared = true;
  // Two warps of a CTA touching the same shared byte between two barriers, at least one of them
  // writing, is an error (the order the GPU runs them in is not defined: a missing bar.sync).
  bool check_shared_races = true;
  // Run CTAs on this many host threads (1 runs them in order; atomics stay atomic either way).
  unsigned threads = 1;
  // Stop a launch (with an Error) after this many warp-instructions: a kernel that loops forever.
  std::uint64_t max_warp_instructions = 4'000'000'000ull;
  // Record one thread's instructions and register writes into LaunchStats::trace.
  bool trace = false;
  TraceTarget trace_target;
};

struct LaunchStats {
  std::uint64_t ctas = 0;
  std::uint64_t warp_instructions = 0;  // instructions issued, counted once per warp
  std::uint64_t lane_instructions = 0;  // ... counted once per thread whose guard let it run
  double seconds = 0;
  std::vector<TraceRecord> trace;
};

namespace detail {
struct Memory;
}

// Host-backed global memory plus the launcher. Every allocation gets its own device address range,
// far from its neighbours, so any access outside an allocation is caught and named.
class CpuDevice {
 public:
  CpuDevice();
  ~CpuDevice();
  CpuDevice(const CpuDevice&) = delete;
  CpuDevice& operator=(const CpuDevice&) = delete;

  // Device memory owned by the executor, filled with `fill` bytes (cudaMalloc leaves garbage; the
  // default 0xFF makes f32/f16 NaN, so reading what was never written shows).
  ExecutorAddress alloc(std::size_t bytes, std::string_view name = {}, std::uint8_t fill = 0xFF);
  // Host memory used in place: the kernel reads and writes `host` directly.
  ExecutorAddress map(std::span<std::byte> host, std::string_view name = {});
  template <class T>
  requires std::is_trivially_copyable_v<T> ExecutorAddress map(std::span<T> host,
                                                               std::string_view name = {}) {
    return map(std::as_writable_bytes(host), name);
  }
  // alloc + write.
  template <class T>
  requires std::is_trivially_copyable_v<T> ExecutorAddress upload(std::span<const T> host,
                                                                  std::string_view name = {}) {
    ExecutorAddress p = alloc(host.size_bytes(), name);
    write(p, std::as_bytes(host));
    return p;
  }
  void free(ExecutorAddress p);  // by the address alloc/map returned

  void write(ExecutorAddress dst, std::span<const std::byte> src);
  void read(std::span<std::byte> dst, ExecutorAddress src) const;
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void write(ExecutorAddress dst, std::span<const T> src) { write(dst, std::as_bytes(src)); }
  template <class T>
  requires std::is_trivially_copyable_v<T> std::vector<T> download(ExecutorAddress src,
                                                                   std::size_t count)
  const {
    std::vector<T> out(count);
    read(std::as_writable_bytes(std::span<T>(out)), src);
    return out;
  }
  // The host bytes behind [p, p + bytes): throws when they are not inside one allocation.
  std::span<std::byte> host(ExecutorAddress p, std::size_t bytes);

  // Runs `kernel` (finalized) over the grid. `args` follow `kernel.params()`: an ExecutorAddress
  // for each pointer, a value of exactly the declared type for each scalar. Throws ptxdsl::Error on
  // a bad launch, a memory fault, an uninitialized read, a barrier some threads never reach, ...
  LaunchStats launch(const Kernel& kernel, const LaunchConfig& config, std::span<const Arg> args,
                     const ExecOptions& options = {});
  LaunchStats launch(const Kernel& kernel, const LaunchConfig& config,
                     std::initializer_list<Arg> args, const ExecOptions& options = {}) {
    return launch(kernel, config, std::span<const Arg>(args.begin(), args.size()), options);
  }

 private:
  std::unique_ptr<detail::Memory> memory_;
};

}  // namespace ptxdsl

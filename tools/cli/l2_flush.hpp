#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ptxdsl/runtime/memory.hpp"
#include "ptxdsl/runtime/module.hpp"

// The L2 flush before each timed repetition: a buffer several times the L2's size written on the
// timing stream, by a kernel of ours (16-byte stores, as torch's zero_ under triton's do_bench and
// tools/bench/compare_peers.py write theirs) or by the driver's memset.
namespace ptxdsl::cli {

enum class FlushMethod { Kernel, Memset };

// "kernel" or "memset"; throws UsageError naming the value otherwise.
FlushMethod parse_flush_method(const std::string& text);
const char* flush_method_name(FlushMethod m);

class L2Flush {
 public:
  // `bytes`: a multiple of 4096.
  L2Flush(const runtime::Context& ctx, std::uint64_t bytes, FlushMethod method);
  // Writes the whole buffer with `value` in every word.
  void run(runtime::StreamRef stream, std::uint32_t value);

 private:
  runtime::DeviceBuffer<std::uint32_t> buffer_;
  FlushMethod method_;
  std::optional<runtime::Function> kernel_;
};

}  // namespace ptxdsl::cli

#include "l2_flush.hpp"

#include <fmt/format.h>

#include "cli.hpp"
#include "ptxdsl/cli/device.hpp"
#include "ptxdsl/dsl.hpp"
#include "ptxdsl/runtime/launch.hpp"

namespace ptxdsl::cli {
namespace {

constexpr std::uint32_t kThreads = 256;

// p[4i .. 4i+3] = value for thread i of the grid (one 16-byte store); the grid covers the buffer.
runtime::Function flush_kernel(const runtime::Context& ctx) {
  Module m(Arch::Sm80);
  Kernel& k = m.kernel("ptxdsl_l2_flush");
  k.require_threads(kThreads);
  auto p = k.param_ptr<U32>("p");
  auto value = k.param<U32>("value");
  auto thread = k.mad<U32>(k.ctaid_x(), kThreads, k.tid_x());
  k.st_v<4>(p + k.shl(thread, 2u), Vec<U32, 4>{value, value, value, value});
  return load_kernel(ctx, m, "ptxdsl_l2_flush");
}

}  // namespace

FlushMethod parse_flush_method(const std::string& text) {
  if (text == "kernel") return FlushMethod::Kernel;
  if (text == "memset") return FlushMethod::Memset;
  throw UsageError(fmt::format("--flush must be 'kernel' or 'memset', got '{}'", text));
}

const char* flush_method_name(FlushMethod m) {
  return m == FlushMethod::Kernel ? "kernel" : "memset";
}

L2Flush::L2Flush(const runtime::Context& ctx, std::uint64_t bytes, FlushMethod method)
    : buffer_(ctx, bytes / 4), method_(method) {
  if (method_ == FlushMethod::Kernel) kernel_ = flush_kernel(ctx);
}

void L2Flush::run(runtime::StreamRef stream, std::uint32_t value) {
  if (method_ == FlushMethod::Memset) {
    buffer_.fill(value, stream);
    return;
  }
  const auto ctas = static_cast<std::uint32_t>(buffer_.bytes() / (16 * kThreads));
  runtime::launch(*kernel_, ctas, kThreads, 0, stream, buffer_.address(), value);
}

}  // namespace ptxdsl::cli

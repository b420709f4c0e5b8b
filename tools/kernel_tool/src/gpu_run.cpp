#include "ptxdsl/cli/gpu_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ptxdsl/cli/device.hpp"
#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/runtime/launch.hpp"
#include "ptxdsl/runtime/memory.hpp"
#include "ptxdsl/runtime/module.hpp"
#include "ptxdsl/runtime/stream.hpp"
#include "ptxdsl/runtime/tensor_map.hpp"

namespace ptxdsl::cli {
namespace {

runtime::L2Promotion l2_promotion(const tool::TensorMapArg& map) {
  switch (map.l2_promotion_bytes) {
    case 0:
      return runtime::L2Promotion::None;
    case 64:
      return runtime::L2Promotion::B64;
    case 128:
      return runtime::L2Promotion::B128;
    case 256:
      return runtime::L2Promotion::B256;
    default:
      throw Error("tensor map over '" + map.buffer +
                  "': the L2 promotion must be 0, 64, 128 or 256 bytes, got " +
                  std::to_string(map.l2_promotion_bytes));
  }
}

// A built definition ready to launch on a GPU, any number of times: its buffers uploaded from the
// run, its tensor maps encoded over them, its parameters' values in place.
class GpuLaunch {
 public:
  GpuLaunch(const tool::BuiltKernel& built, const tool::PreparedRun& run, int ordinal)
      : built_(built), run_(run), ctx_(ordinal) {
    for (const auto& [name, bytes] : run.bytes) {
      buffers_.emplace(name,
                       runtime::DeviceBuffer<std::byte>(ctx_, std::span<const std::byte>(bytes)));
    }
    // cuLaunchKernel reads each parameter through a pointer to its value: addresses, a tensor
    // map's 128 bytes, scalar bits (little-endian, so the low bytes are the parameter's).
    const std::vector<ParamSpec>& ps = built.contract.params;
    scalars_.resize(ps.size());
    params_.resize(ps.size());
    maps_.reserve(ps.size());  // params_ point into it: never reallocated
    for (std::size_t i = 0; i < ps.size(); ++i) {
      if (ps[i].tensor_map) {
        const tool::TensorMapArg& map = run.data.tensor_maps.at(ps[i].name);
        TensorMapSpec spec = map.spec;
        spec.global_address = buffers_.at(map.buffer).address();
        maps_.push_back(runtime::TensorMap::tiled(spec, {.l2_promotion = l2_promotion(map)}));
        params_[i] = const_cast<std::byte*>(maps_.back().bytes());
      } else if (ps[i].pointer) {
        params_[i] = const_cast<std::uint64_t*>(buffers_.at(ps[i].name).address_slot());
      } else {
        const std::vector<std::byte> bits =
            tool::to_bytes({run.data.scalars.at(ps[i].name)}, ps[i].type, ps[i].name);
        std::memcpy(&scalars_[i], bits.data(), bits.size());
        params_[i] = &scalars_[i];
      }
    }
    function_ = runtime::Function(
        runtime::ModuleCache::global().get(ctx_, built.ptx, built.contract.entry), built.contract);
  }

  const runtime::Context& context() const { return ctx_; }

  void launch(runtime::StreamRef stream) {
    runtime::launch_raw(function_, built_.grid, built_.block, built_.contract.dynamic_shared_bytes,
                        stream, params_.data());
  }

  tool::Outputs outputs() const {
    tool::Outputs out;
    for (const ParamSpec& p : built_.contract.params) {
      if (!p.pointer || !run_.data.buffers.at(p.name).output) continue;
      out.emplace(p.name, tool::from_bytes(buffers_.at(p.name).to_host(),
                                           tool::buffer_element(run_.data, p)));
    }
    return out;
  }

 private:
  const tool::BuiltKernel& built_;
  const tool::PreparedRun& run_;
  runtime::Context ctx_;
  std::map<std::string, runtime::DeviceBuffer<std::byte>> buffers_;
  std::vector<runtime::TensorMap> maps_;
  std::vector<std::uint64_t> scalars_;
  std::vector<void*> params_;
  runtime::Function function_;
};

// Larger than any current GPU's L2 several times over (the H200's is 60 MB).
constexpr std::size_t kFlushWords = std::size_t{64} << 20;

}  // namespace

tool::Outputs run_on_gpu(const tool::BuiltKernel& built, const tool::PreparedRun& run, int ordinal,
                         std::string& where) {
  require_driver_one_line();
  GpuLaunch gpu(built, run, ordinal);
  where = describe_device(gpu.context().info());
  const runtime::Stream stream(gpu.context());
  gpu.launch(stream);
  stream.synchronize();
  return gpu.outputs();
}

BenchTimes bench_on_gpu(const tool::BuiltKernel& built, const tool::PreparedRun& run, int ordinal,
                        const BenchOptions& options, std::string& where) {
  require_driver_one_line();
  GpuLaunch gpu(built, run, ordinal);
  const runtime::Context& ctx = gpu.context();
  where = describe_device(ctx.info());
  const runtime::Stream stream(ctx);
  const runtime::DeviceBuffer<std::uint32_t> flush(ctx, kFlushWords);
  const auto flush_l2 = [&] {
    runtime::fill_u32_async(ctx, flush.address(), 0, kFlushWords, stream);
  };
  for (int i = 0; i < options.warmup; ++i) gpu.launch(stream);
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(options.warmup_ms)) {
    for (int i = 0; i < 8; ++i) {
      flush_l2();
      gpu.launch(stream);
    }
    stream.synchronize();
  }
  std::vector<runtime::Event> starts, ends;
  for (int i = 0; i < options.reps; ++i) {
    starts.emplace_back(ctx);
    ends.emplace_back(ctx);
  }
  for (int i = 0; i < options.reps; ++i) {
    flush_l2();
    starts[i].record(stream);
    gpu.launch(stream);
    ends[i].record(stream);
  }
  stream.synchronize();
  std::vector<double> us;
  for (int i = 0; i < options.reps; ++i) us.push_back(1000.0 * ends[i].elapsed_ms_since(starts[i]));
  std::sort(us.begin(), us.end());
  const std::size_t n = us.size();
  return {.median_us = n % 2 == 1 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2,
          .min_us = us.front(),
          .reps = options.reps};
}

}  // namespace ptxdsl::cli

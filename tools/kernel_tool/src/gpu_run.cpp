#include "ptxdsl/cli/gpu_run.hpp"

#include <cstring>
#include <map>

#include "ptxdsl/cli/device.hpp"
#include "ptxdsl/runtime/launch.hpp"
#include "ptxdsl/runtime/memory.hpp"
#include "ptxdsl/runtime/module.hpp"
#include "ptxdsl/runtime/stream.hpp"
#include "ptxdsl/runtime/tensor_map.hpp"

namespace ptxdsl::cli {

tool::Outputs run_on_gpu(const tool::BuiltKernel& built, const tool::PreparedRun& run, int ordinal,
                         std::string& where) {
  require_driver_one_line();
  const runtime::Context ctx(ordinal);
  where = describe_device(ctx.info());
  std::map<std::string, runtime::DeviceBuffer<std::byte>> buffers;
  for (const auto& [name, bytes] : run.bytes) {
    buffers.emplace(name, runtime::DeviceBuffer<std::byte>(ctx, std::span<const std::byte>(bytes)));
  }
  // cuLaunchKernel reads each parameter through a pointer to its value: addresses and scalar
  // bits (little-endian, so the low bytes are the parameter's).
  const std::vector<ParamSpec>& ps = built.contract.params;
  std::vector<std::uint64_t> scalars(ps.size());
  std::vector<void*> params(ps.size());
  std::vector<runtime::TensorMap> maps;
  maps.reserve(ps.size());  // params point into it: never reallocated
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (ps[i].tensor_map) {
      const tool::TensorMapArg& map = run.data.tensor_maps.at(ps[i].name);
      TensorMapSpec spec = map.spec;
      spec.global_address = buffers.at(map.buffer).address();
      maps.push_back(runtime::TensorMap::tiled(spec));
      params[i] = const_cast<std::byte*>(maps.back().bytes());
      continue;
    }
    if (ps[i].pointer) {
      params[i] = const_cast<std::uint64_t*>(buffers.at(ps[i].name).address_slot());
      continue;
    }
    const std::vector<std::byte> bits =
        tool::to_bytes({run.data.scalars.at(ps[i].name)}, ps[i].type, ps[i].name);
    std::memcpy(&scalars[i], bits.data(), bits.size());
    params[i] = &scalars[i];
  }
  const runtime::Function f(
      runtime::ModuleCache::global().get(ctx, built.ptx, built.contract.entry), built.contract);
  const runtime::Stream stream(ctx);
  runtime::launch_raw(f, built.grid, built.block, built.contract.dynamic_shared_bytes, stream,
                      params.data());
  stream.synchronize();
  tool::Outputs out;
  for (const ParamSpec& p : ps) {
    if (!p.pointer || !run.data.buffers.at(p.name).output) continue;
    out.emplace(p.name,
                tool::from_bytes(buffers.at(p.name).to_host(), tool::buffer_element(run.data, p)));
  }
  return out;
}

}  // namespace ptxdsl::cli

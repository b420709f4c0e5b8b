// Every plan fits the device it was made for: each kernel × dtype × weight dtype × width × preset,
// in both of the runtime's variants, against the preset's per-block and per-SM limits.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <string>

#include "ptxdsl/kernels/norm.hpp"
#include "spec_of.hpp"

using namespace ptxdsl;
using namespace ptxdsl::kernels;

namespace {

constexpr std::uint32_t kWidths[] = {1,     2,     3,      7,      31,    64,    100,   255,
                                     256,   1000,  1151,   2048,   3000,  4096,  4097,  5120,
                                     7168,  8190,  8192,   9999,   12288, 16384, 20000, 32768,
                                     49999, 65536, 100001, 131072, 262144};

void check_fits(const BuiltNorm& built, const DeviceModel& d, const std::string& label) {
  INFO(label);
  for (const LaunchStep& step : built.steps) {
    const KernelContract& c = step.contract;
    INFO(c.entry << ": " << c.block_threads << " threads, " << c.static_shared_bytes << " + "
                 << c.dynamic_shared_bytes << " bytes of shared memory");
    CHECK(c.block_threads >= 32);
    CHECK(c.block_threads <= d.max_threads_per_block);
    const std::uint32_t shared = c.static_shared_bytes + c.dynamic_shared_bytes;
    CHECK(shared <= d.shared_per_block_optin);
    if (step.grid.kind == GridRule::Kind::Persistent) {
      // The persistent grid's CTAs an SM must be resident together by threads and shared memory.
      const std::uint32_t per_sm = step.grid.max_ctas / built.chosen.sm_count.value();
      CHECK(built.chosen.sm_count.value() == d.sm_count);
      CHECK(per_sm <= d.max_blocks_per_sm);
      CHECK(per_sm * c.block_threads <= d.max_threads_per_sm);
      CHECK(per_sm * (shared + d.shared_reserved_per_block) <= d.shared_per_sm);
    }
  }
  // The row step's register ceiling for its block.
  const KernelContract& row = built.steps.front().contract;
  const std::uint32_t registers = built.chosen.max_registers.value();
  CHECK(registers <= d.max_registers_per_thread);
  CHECK(std::uint64_t{registers} * row.block_threads <= d.registers_per_block);
}

}  // namespace

TEST_CASE("every plan fits every device preset", "[kernels]") {
  for (const DeviceModel& device : device_presets()) {
    for (NormKind kind : {NormKind::LayerNormFwd, NormKind::LayerNormBwd, NormKind::RmsNormFwd,
                          NormKind::RmsNormBwd}) {
      for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
        for (DType weights : {dtype, DType::F32}) {
          if (dtype == DType::F32 && weights != dtype) continue;
          for (std::uint32_t width : kWidths) {
            NormSpec spec = spec_for_device(kind, dtype, weights, width, device);
            const std::string label =
                fmt::format("{} {} w{} {} on {}", kind_name(kind), dtype_name(dtype),
                            dtype_name(weights), width, device.name);
            check_fits(build_norm(spec), device, label);
            // The runtime's variant for small batches, as it would launch it.
            const NormSpec small = spec_for_batch(spec, 1);
            check_fits(build_norm(small), device, label + " (small-batch variant)");
          }
        }
      }
    }
  }
}

TEST_CASE("every variant's plans fit every device preset", "[kernels]") {
  // The residual add moves more per row (residual in, h out); a variant without weights or dw
  // loads or keeps less: each at the widths where the plans change shape.
  for (const DeviceModel& device : device_presets()) {
    for (NormKind kind : {NormKind::LayerNormFwd, NormKind::LayerNormBwd, NormKind::RmsNormFwd,
                          NormKind::RmsNormBwd}) {
      for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
        for (std::uint32_t width :
             {1u, 7u, 1151u, 4096u, 4097u, 8192u, 20000u, 65536u, 100001u, 262144u}) {
          const NormSpec base = spec_for_device(kind, dtype, dtype, width, device);
          for (const NormSpec& spec : variants_of(base)) {
            const std::string label =
                fmt::format("{} {} {} affine {} residual {} outputs {} on {}", kind_name(kind),
                            dtype_name(dtype), width, affine_name(spec.affine),
                            residual_name(spec.residual), outputs_name(spec.outputs), device.name);
            check_fits(build_norm(spec), device, label);
            check_fits(build_norm(spec_for_batch(spec, 1)), device,
                       label + " (small-batch variant)");
          }
        }
      }
    }
  }
}

TEST_CASE("the same kernel plans for the device it is given", "[kernels]") {
  // A 16-bit backward stages 208 KB of rows in the H200's 227 KB a block; an RTX 4090 has 99 KB,
  // so its plan stages less, and each fits its own device.
  NormSpec spec = spec_of(NormKind::LayerNormBwd, DType::F16, 32768);
  spec.arch = Arch::Sm80;
  const BuiltNorm h200 = build_norm(spec);
  spec.device = device_preset("rtx4090");
  const BuiltNorm rtx = build_norm(spec);
  CHECK(h200.steps.front().contract.dynamic_shared_bytes >
        device_preset("rtx4090").shared_per_block_optin);
  CHECK(rtx.steps.front().contract.dynamic_shared_bytes <=
        device_preset("rtx4090").shared_per_block_optin);
  CHECK(h200.ptx != rtx.ptx);
}

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "ptxdsl/dsl.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/runtime.hpp"

// The FP8 and 8-bit integer conversions on the GPU and on the CPU executor, bit for bit: every
// bf16 bit pattern as an f32 (both signs, every exponent, NaNs, infinities, subnormals) and a
// dense sweep over FP8's range (its ties included), through cvt.rn.satfinite.e4m3x2/e5m2x2.f32,
// cvt.rn.satfinite.e4m3x2.f16x2, cvt.rni.sat.s8.f32, cvt.rzi.sat.u8.f32, and every FP8 pair back
// through cvt.rn.f16x2.e4m3x2/e5m2x2. (FP4 and ue8m0 need sm_100a, which no lent GPU has.)
using namespace ptxdsl;

namespace {

constexpr std::uint32_t kPairs = 1u << 16;  // threads; each converts two f32 values
constexpr std::uint32_t kBlock = 256;

// Outputs, in parameter order after the input `x`: their element size in bytes, per thread.
struct Output {
  const char* name;
  std::size_t bytes;
};
constexpr Output kOutputs[] = {{"e4", 2}, {"e5", 2}, {"h8", 2}, {"s8", 2},
                               {"u8", 2}, {"w4", 4}, {"w5", 4}};

Kernel& build(Module& m) {
  Kernel& k = m.kernel("narrow_sweep");
  const GlobalPtr<F32> x = k.param_ptr<F32>("x");
  const GlobalPtr<E4M3x2> e4 = k.param_ptr<E4M3x2>("e4");
  const GlobalPtr<E5M2x2> e5 = k.param_ptr<E5M2x2>("e5");
  const GlobalPtr<E4M3x2> h8 = k.param_ptr<E4M3x2>("h8");
  const GlobalPtr<S8> s8 = k.param_ptr<S8>("s8");
  const GlobalPtr<U8> u8 = k.param_ptr<U8>("u8");
  const GlobalPtr<F16x2> w4 = k.param_ptr<F16x2>("w4");
  const GlobalPtr<F16x2> w5 = k.param_ptr<F16x2>("w5");
  k.require_threads(kBlock);
  const Reg<U32> i = k.mad(k.ctaid_x(), kBlock, k.tid_x());
  const Vec<F32, 2> v = k.ld_v<2>(k.index(x, k.shl(i, 1u)));
  k.st(k.index(e4, i), k.cvt_pack<E4M3x2>(v[0], v[1]));
  k.st(k.index(e5, i), k.cvt_pack<E5M2x2>(v[0], v[1]));
  k.st(k.index(h8, i), k.cvt_pack<E4M3x2>(k.cvt_pack<F16x2>(v[0], v[1])));
  const GlobalPtr<S8> s = k.index(s8, k.shl(i, 1u));
  k.st(s, k.cvt<S8>(v[0], Rounding::Rni, false, true));
  k.st(s + 1, k.cvt<S8>(v[1], Rounding::Rni, false, true));
  const GlobalPtr<U8> u = k.index(u8, k.shl(i, 1u));
  k.st(u, k.cvt<U8>(v[0], Rounding::Rzi, false, true));
  k.st(u + 1, k.cvt<U8>(v[1], Rounding::Rzi, false, true));
  // Every 16-bit pattern as an FP8 pair, widened.
  const Reg<U16> bits = k.cvt<U16>(i);
  k.st(k.index(w4, i), k.cvt_unpack(k.bitcast<E4M3x2>(bits)));
  k.st(k.index(w5, i), k.cvt_unpack(k.bitcast<E5M2x2>(bits)));
  k.finalize();
  return k;
}

std::vector<float> inputs() {
  std::vector<float> x(2 * kPairs);
  for (std::uint32_t i = 0; i < kPairs; ++i) {
    const std::uint32_t bf16 = i << 16;                     // every bf16 pattern
    const std::uint32_t sweep = 0x39000000u + i * 0x1000u;  // 2^-13 to 2^19, 4096 per binade
    std::memcpy(&x[2 * i], &bf16, 4);
    std::memcpy(&x[2 * i + 1], &sweep, 4);
  }
  return x;
}

}  // namespace

TEST_CASE("FP8 and u8/s8 conversions: the executor computes what the GPU computes",
          "[runtime][gpu][narrow]") {
  PTXDSL_REQUIRE_GPU(ctx);
  Module m(Arch::Sm90, {7, 8});
  Kernel& k = build(m);
  const std::string ptx = m.emit();
  const std::vector<float> x = inputs();

  // The GPU.
  const runtime::Function f(runtime::ModuleCache::global().get(ctx, ptx, "narrow_sweep"),
                            k.contract());
  runtime::DeviceBuffer<float> gx(ctx, std::span<const float>(x));
  std::vector<runtime::DeviceBuffer<std::byte>> gout;
  for (const Output& o : kOutputs) gout.emplace_back(ctx, o.bytes * kPairs);
  std::vector<void*> params = {const_cast<std::uint64_t*>(gx.address_slot())};
  for (const auto& b : gout) params.push_back(const_cast<std::uint64_t*>(b.address_slot()));
  runtime::Stream s(ctx);
  runtime::launch_raw(f, Dim3(kPairs / kBlock), Dim3(kBlock), 0, s, params.data());
  s.synchronize();

  // The executor.
  CpuDevice dev;
  std::vector<Arg> args = {Arg(dev.upload(std::span<const float>(x), "x"))};
  std::vector<ExecutorAddress> cout;
  for (const Output& o : kOutputs) {
    cout.push_back(dev.alloc(o.bytes * kPairs, o.name));
    args.emplace_back(cout.back());
  }
  dev.launch(k, {Dim3(kPairs / kBlock), Dim3(kBlock)}, std::span<const Arg>(args));

  for (std::size_t j = 0; j < std::size(kOutputs); ++j) {
    const std::vector<std::byte> gpu = gout[j].to_host();
    const std::vector<std::byte> cpu = dev.download<std::byte>(cout[j], gpu.size());
    std::size_t differ = 0;
    for (std::size_t b = 0; b < gpu.size(); ++b) {
      if (gpu[b] == cpu[b]) continue;
      if (++differ <= 8) {
        const std::size_t thread = b / kOutputs[j].bytes;
        std::uint32_t in0, in1;
        std::memcpy(&in0, &x[2 * thread], 4);
        std::memcpy(&in1, &x[2 * thread + 1], 4);
        UNSCOPED_INFO(kOutputs[j].name << " byte " << b << " (thread " << thread << ", inputs 0x"
                                       << std::hex << in0 << " 0x" << in1 << "): gpu 0x"
                                       << std::to_integer<int>(gpu[b]) << ", executor 0x"
                                       << std::to_integer<int>(cpu[b]) << std::dec);
      }
    }
    INFO(kOutputs[j].name << ": " << differ << " bytes differ");
    CHECK(differ == 0);
  }
}

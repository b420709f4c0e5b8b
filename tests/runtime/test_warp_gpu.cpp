#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "named_barriers_kernel.hpp"
#include "ptxdsl/dsl.hpp"
#include "ptxdsl/dsl/executor.hpp"
#include "ptxdsl/runtime.hpp"

// Warp collectives, named barriers and the approximate functions on the GPU against the CPU
// executor: the collectives and barriers bit for bit, the approximations within PTX's bounds.
using namespace ptxdsl;
using namespace ptxdsl::runtime;

namespace {

constexpr std::uint32_t kThreads = 128;
constexpr std::uint32_t kOutputs = 9;  // a thread's results in the collectives kernel

// Each thread's x[t]; nine results a thread: ballot, all/any/uni, match.any, match.all, redux
// add/min/xor, and (lanes 3-31 only) elect.sync's leader and flag, and activemask.
void build_collectives(Kernel& k) {
  auto x = k.param_ptr<U32>("x");
  auto out = k.param_ptr<U32>("out");
  const Reg<U32> t = k.tid_x();
  const Reg<U32> v = k.ld(k.index(x, t));
  const Pred odd = k.setp(Cmp::Ne, k.and_(v, 1u), 0u);
  const auto as_u32 = [&](Pred p) { return k.selp<U32>(1u, 0u, p); };
  const Reg<U32> base = k.mul(t, kOutputs);
  const auto put = [&](std::uint32_t j, Reg<U32> r) { k.st(k.index(out, k.add(base, j)), r); };
  put(0, k.bitcast<U32>(k.vote_ballot(odd)));
  put(1, k.or_(k.or_(as_u32(k.vote_all(odd)), k.shl(as_u32(k.vote_any(odd)), 1u)),
               k.shl(as_u32(k.vote_uni(odd)), 2u)));
  put(2, k.bitcast<U32>(k.match_any(k.and_(v, 7u))));
  const auto all = k.match_all(k.shr(t, 5u));
  put(3, k.or_(k.bitcast<U32>(all.lanes), as_u32(all.equal)));
  put(4, k.redux(ReduxOp::Add, v));
  put(5, k.bitcast<U32>(k.redux(ReduxOp::Min, k.sub(k.bitcast<S32>(v), 1000))));
  put(6, k.redux(ReduxOp::Xor, v));
  k.if_(k.setp(Cmp::Ge, k.laneid(), 3u), [&] {
    const auto e = k.elect_sync(0xFFFFFFF8u);
    put(7, k.or_(e.leader, k.shl(as_u32(e.is_leader), 8u)));
    put(8, k.bitcast<U32>(k.activemask()));
  });
}

// tanh, sin, cos of x[t]: out[3t], out[3t + 1], out[3t + 2].
void build_approx(Kernel& k) {
  auto x = k.param_ptr<F32>("x");
  auto out = k.param_ptr<F32>("out");
  const Reg<U32> t = k.tid_x();
  const Reg<F32> v = k.ld(k.index(x, t));
  const Reg<U32> base = k.mul(t, 3u);
  k.st(k.index(out, base), k.tanh(v));
  k.st(k.index(out, k.add(base, 1u)), k.sin(v));
  k.st(k.index(out, k.add(base, 2u)), k.cos(v));
}

struct Built {
  std::string ptx;
  KernelContract contract;
};

template <class T>
std::vector<T> on_gpu(const Context& ctx, const Built& b, std::span<const T> in,
                      std::size_t outputs) {
  const Function f(ModuleCache::global().get(ctx, b.ptx, b.contract.entry), b.contract);
  DeviceBuffer<T> out(ctx, outputs);
  Stream s(ctx);
  if (in.empty()) {
    launch(f, 1, kThreads, 0, s, out);
  } else {
    DeviceBuffer<T> x(ctx, in);
    launch(f, 1, kThreads, 0, s, x, out);
    s.synchronize();
    return out.to_host();
  }
  s.synchronize();
  return out.to_host();
}

}  // namespace

TEST_CASE("warp collectives and named barriers: the GPU computes what the executor computes",
          "[runtime][gpu][executor]") {
  PTXDSL_REQUIRE_GPU(ctx);
  std::vector<std::uint32_t> xs(kThreads);
  for (std::uint32_t i = 0; i < kThreads; ++i) xs[i] = (i * 2654435761u) >> 20;
  {
    Module m(Arch::Sm90, {8, 0});
    Kernel& k = m.kernel("collectives");
    build_collectives(k);
    const Built b{m.emit(), k.contract()};
    std::vector<std::uint32_t> cpu(kThreads * kOutputs, 0);
    CpuDevice dev;
    dev.launch(k, {1, kThreads},
               {dev.upload<std::uint32_t>(xs, "x"), dev.map<std::uint32_t>(cpu, "out")});
    const auto gpu = on_gpu<std::uint32_t>(ctx, b, xs, kThreads * kOutputs);
    for (std::uint32_t i = 0; i < kThreads * kOutputs; ++i) {
      if (i % kOutputs >= 7 && (i / kOutputs) % 32 < 3) continue;  // never written
      INFO("thread " << i / kOutputs << ", result " << i % kOutputs);
      CHECK(gpu[i] == cpu[i]);
    }
  }
  {
    Module m(Arch::Sm90);
    Kernel& k = m.kernel("named_barriers");
    test::build_named_barriers(k);
    const Built b{m.emit(), k.contract()};
    std::vector<std::uint32_t> cpu(64, 0);
    CpuDevice dev;
    dev.launch(k, {1, kThreads}, {dev.map<std::uint32_t>(cpu, "out")});
    const auto gpu = on_gpu<std::uint32_t>(ctx, b, std::span<const std::uint32_t>{}, 64);
    CHECK(gpu == cpu);
  }
}

TEST_CASE("tanh, sin and cos .approx on the GPU are within PTX's bounds of the executor's",
          "[runtime][gpu][executor]") {
  PTXDSL_REQUIRE_GPU(ctx);
  std::vector<float> xs(kThreads);
  for (std::uint32_t i = 0; i < kThreads; ++i) {
    xs[i] = static_cast<float>(4 * 3.14159265358979 * (static_cast<double>(i) / kThreads - 0.5));
  }
  Module m(Arch::Sm90);
  Kernel& k = m.kernel("approx");
  build_approx(k);
  const Built b{m.emit(), k.contract()};
  std::vector<float> cpu(3 * kThreads, 0.0f);
  CpuDevice dev;
  dev.launch(k, {1, kThreads}, {dev.upload<float>(xs, "x"), dev.map<float>(cpu, "out")});
  const auto gpu = on_gpu<float>(ctx, b, xs, 3 * kThreads);
  for (std::uint32_t i = 0; i < kThreads; ++i) {
    INFO("x = " << xs[i]);
    const double th = std::tanh(double{xs[i]});
    CHECK(std::fabs(gpu[3 * i] - th) <= std::ldexp(std::fabs(th), -11));
    CHECK(std::fabs(cpu[3 * i] - th) <= std::ldexp(std::fabs(th), -11));
    CHECK(std::fabs(gpu[3 * i + 1] - std::sin(double{xs[i]})) <= std::exp2(-20.5));
    CHECK(std::fabs(gpu[3 * i + 2] - std::cos(double{xs[i]})) <= std::exp2(-20.5));
    CHECK(std::fabs(gpu[3 * i + 1] - cpu[3 * i + 1]) <= 2 * std::exp2(-20.5));
  }
}

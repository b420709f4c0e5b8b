#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <ptxdsl/dsl.hpp>
#include <ptxdsl/dsl/executor.hpp>

// Tiny kernels for the executor's instruction tests: one thread computes a value, stores it, and
// the test reads the bits back.
namespace ptxdsl::test {

// Runs `body` in a one-thread kernel and returns the bits of the register it returns.
template <TypeTag T>
std::uint64_t eval(const std::function<Reg<T>(Kernel&)>& body) {
  Module m;
  Kernel& k = m.kernel("eval");
  auto out = k.param_ptr<T>("out");
  Reg<T> r = body(k);
  k.st(out, r);
  k.finalize();
  CpuDevice dev;
  const ExecutorAddress p = dev.alloc(8, "out");
  dev.launch(k, {1, 1}, {p});
  std::uint64_t bits = 0;
  dev.read(std::as_writable_bytes(std::span<std::uint64_t>(&bits, 1)).first(T::kBytes), p);
  return bits;
}

inline bool eval_pred(const std::function<Pred(Kernel&)>& body) {
  return eval<U32>([&](Kernel& k) { return k.selp<U32>(1u, 0u, body(k)); }) == 1;
}

inline float f32(std::uint64_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
}
inline std::uint32_t bits(float v) {
  return std::bit_cast<std::uint32_t>(v);
}
inline double f64(std::uint64_t bits) {
  return std::bit_cast<double>(bits);
}

// Float results compared by bits, so -0/+0 and NaN payloads count.
inline std::uint64_t eval_f32(const std::function<Reg<F32>(Kernel&)>& body) {
  return eval<F32>(body);
}

}  // namespace ptxdsl::test

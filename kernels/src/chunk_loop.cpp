#include "chunk_loop.hpp"

namespace ptxdsl::kernels::detail {

void for_each_chunk(Kernel& k, const std::vector<int>& key, std::uint32_t group,
                    const std::function<void(std::uint32_t, std::optional<Reg<U32>>)>& body,
                    std::optional<ChunkFence> fence) {
  const auto unrolled = [&](std::uint32_t j) {
    if (fence && key[j] < 0) {
      k.if_(fence->taken, [&] { body(j, std::nullopt); });
    } else {
      body(j, std::nullopt);
    }
  };
  const auto n = static_cast<std::uint32_t>(key.size());
  for (std::uint32_t start = 0; start < n;) {
    std::uint32_t end = start + 1;
    while (end < n && key[start] > 0 && key[end] == key[start]) ++end;
    const std::uint32_t looped = key[start] > 0 ? (end - start) / group * group : 0;
    if (looped >= 2 * group) {
      const Src<U32> end = fence ? Src<U32>(k.min(fence->bound, looped)) : Src<U32>(looped);
      k.for_range(0u, end, group, [&](Reg<U32> i) {
        for (std::uint32_t u = 0; u < group; ++u) body(start + u, i);
      });
      start += looped;
    }
    for (; start < end; ++start) unrolled(start);
  }
}

std::vector<int> fence_all(std::vector<int> keys) {
  if (keys.size() > 4) {
    for (int& key : keys) key = key == 0 ? -1 : key;
  }
  return keys;
}

GlobalDPtr shifted(Kernel& k, GlobalDPtr p, std::optional<Reg<U32>> shift,
                   std::uint32_t elements_per_chunk) {
  if (!shift) return p;
  return at(k, p, k.mul(*shift, elements_per_chunk));
}

SharedDPtr shifted(Kernel& k, SharedDPtr p, std::optional<Reg<U32>> shift,
                   std::uint32_t elements_per_chunk) {
  if (!shift) return p;
  return at(k, p, k.mul(*shift, elements_per_chunk));
}

}  // namespace ptxdsl::kernels::detail

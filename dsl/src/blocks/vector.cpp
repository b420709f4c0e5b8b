#include "ptxdsl/dsl/blocks/vector.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl {

std::uint32_t max_vector_elems(ScalarType t) {
  return kMaxVectorBytes / static_cast<std::uint32_t>(size_bytes(t));
}

void check_vector_elems(ScalarType t, std::uint32_t elems) {
  if (elems >= 1 && elems <= 8 && std::has_single_bit(elems) && elems <= max_vector_elems(t)) {
    return;
  }
  throw Error(
      fmt::format("vector of {} must have 1, 2, 4 or 8 elements, at most {} ({} bytes), "
                  "got {}",
                  ptx_name(t), std::min(8u, max_vector_elems(t)), kMaxVectorBytes, elems));
}

bool vector_aligned(ScalarType t, std::uint32_t elems, std::uint64_t address_bits) {
  const std::uint64_t bytes = std::uint64_t{elems} * static_cast<std::uint64_t>(size_bytes(t));
  return address_bits % std::min<std::uint64_t>(kMaxVectorBytes, bytes) == 0;
}

std::uint32_t vector_elems_for(ScalarType t, std::uint32_t stride, std::uint64_t address_bits) {
  for (std::uint32_t v = std::min(8u, max_vector_elems(t)); v > 1; v /= 2) {
    if (stride % v == 0 && vector_aligned(t, v, address_bits)) return v;
  }
  return 1;
}

}  // namespace ptxdsl

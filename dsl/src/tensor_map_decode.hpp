#pragma once

#include <cstddef>

#include "ptxdsl/dsl/tensor_map.hpp"

// Private to dsl/src: the executor reads a tensor map parameter back through this.
namespace ptxdsl::detail {

// The description back from executor_tensor_map's bytes; false where they are not its.
bool decode_tensor_map(const std::byte* bytes, TensorMapSpec& out);

}  // namespace ptxdsl::detail

#pragma once

#include <vector>

#include "ptxdsl/dsl/contract.hpp"
#include "ptxdsl/dsl/ir.hpp"

namespace ptxdsl::detail {

// Fills each parameter's alignment facts (ParamSpec::align_bytes, row_stride, multiple) from the
// kernel's own global-memory accesses, so a contract cannot claim less than its PTX needs.
//
// A register's provenance is tracked through the arithmetic that builds addresses (mov, cvt,
// cvta, add, sub, mul, mad, shl, selp, min, max; anything else keeps which parameters it came from
// but forgets the factor): which pointer parameters it is based on, and for each scalar
// parameter the largest power-of-two granularity g of its coefficient (the register = S·g·k + ...
// for some integer k). Then every ld/st/atom/red/cp.async on global memory of A bytes through an
// address based on pointer P needs P aligned to A; and when the address also moves by a scalar
// parameter S with granularity g, S must be a multiple of A / gcd(A, g) elements of the stride
// (P's rows start aligned only then): P's row_stride is S.
void derive_param_alignment(const std::vector<Instr>& body, std::vector<ParamSpec>& params);

}  // namespace ptxdsl::detail

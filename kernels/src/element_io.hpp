#pragma once

#include <string_view>

#include "ptxdsl/dsl.hpp"
#include "ptxdsl/kernels/norm.hpp"
#include "ptxdsl/kernels/params.hpp"

// The norms' dtypes on the DSL's element I/O (<ptxdsl/dsl/blocks/element_io.hpp>), which every
// norm kernel moves its rows with.
namespace ptxdsl::kernels::detail {

ScalarType element_type(DType d);
// `.param .u64 name`, a pointer to elements of a norm dtype, named by the argument it is.
GlobalDPtr param_dptr(Kernel& k, NormArg arg, DType d);

}  // namespace ptxdsl::kernels::detail

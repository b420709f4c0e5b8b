#include "element_io.hpp"

namespace ptxdsl::kernels::detail {

ScalarType element_type(DType d) {
  switch (d) {
    case DType::F16:
      return ScalarType::F16;
    case DType::BF16:
      return ScalarType::BF16;
    case DType::F32:
      break;
  }
  return ScalarType::F32;
}

GlobalDPtr param_dptr(Kernel& k, NormArg arg, DType d) {
  return ptxdsl::param_dptr(k, arg_name(arg), element_type(d));
}

}  // namespace ptxdsl::kernels::detail

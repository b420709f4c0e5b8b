#include "ptxdsl/kernels/params.hpp"

#include <fmt/format.h>

#include <array>

#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl::kernels {
namespace {

constexpr std::array<std::string_view, kNormArgCount> kNames = {"x",
                                                                "w",
                                                                "b",
                                                                "y",
                                                                "mean",
                                                                "rstd",
                                                                "dy",
                                                                "dx",
                                                                "dw",
                                                                "db",
                                                                "residual",
                                                                "h",
                                                                "dh",
                                                                "partial_dw",
                                                                "partial_db",
                                                                "y_scale",
                                                                "quant_scale_in",
                                                                "row_counter",
                                                                "batch",
                                                                "stride",
                                                                "partial_rows",
                                                                "eps"};

}  // namespace

std::string_view arg_name(NormArg a) {
  return kNames[static_cast<std::size_t>(a)];
}

ScalarType arg_type(NormArg a) {
  if (arg_is_pointer(a)) return ScalarType::U64;
  return a == NormArg::Eps ? ScalarType::F32 : ScalarType::U32;
}

std::vector<NormArg> args_of(const KernelContract& contract) {
  std::vector<NormArg> args;
  for (const ParamSpec& param : contract.params) {
    std::size_t i = 0;
    while (i < kNames.size() && kNames[i] != param.name) ++i;
    if (i == kNames.size()) {
      throw Error(fmt::format("kernel '{}' has a parameter '{}' that is no norm argument",
                              contract.entry, param.name));
    }
    const auto a = static_cast<NormArg>(i);
    if (param.pointer != arg_is_pointer(a) || (!param.pointer && param.type != arg_type(a))) {
      throw Error(fmt::format("kernel '{}' parameter '{}' is a {}; the norms pass it as {}",
                              contract.entry, param.name,
                              param.pointer ? "pointer" : ptx_name(param.type),
                              arg_is_pointer(a) ? "a pointer" : ptx_name(arg_type(a))));
    }
    args.push_back(a);
  }
  return args;
}

}  // namespace ptxdsl::kernels

#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptxdsl/dsl/arch.hpp"
#include "ptxdsl/dsl/dim3.hpp"
#include "ptxdsl/dsl/module.hpp"
#include "ptxdsl/dsl/tensor_map.hpp"
#include "ptxdsl/dsl/types.hpp"
#include "ptxdsl/tool/random.hpp"

// A kernel as a kernel tool knows it (docs/dsl.md, "Your own tool"): its name, the build-time
// parameters its builder takes, the builder, and optionally seeded inputs and a float64 reference
// so that `run` can say PASS or FAIL.
namespace ptxdsl::tool {

enum class ParamKind { Uint, DType, Choice };

// One build-time parameter: `--NAME VALUE` or `--param NAME=VALUE` on the command line.
struct Parameter {
  std::string name;  // a lower-case letter, then letters, digits, '-' or '_'
  ParamKind kind = ParamKind::Uint;
  std::string help;
  std::string default_value;  // as it would be given; empty: the parameter is required
  std::uint64_t min = 0;      // Uint: the allowed range
  std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::string> choices;  // DType: PTX type names (f32, f16, ...); Choice: the words

  // An unsigned integer in [min, max].
  static Parameter uint(std::string name, std::string help, std::uint64_t min, std::uint64_t max,
                        std::optional<std::uint64_t> default_value = {});
  // One of `allowed` element types, named as PTX names them.
  static Parameter dtype(std::string name, std::string help, std::vector<ScalarType> allowed,
                         std::optional<ScalarType> default_value = {});
  // One of `choices`.
  static Parameter choice(std::string name, std::string help, std::vector<std::string> choices,
                          std::optional<std::string> default_value = {});
};

struct KernelDefinition;

// The parameters of one build, checked against their definitions, plus the PTX target.
class Params {
 public:
  // `given` maps parameter names to their text; the others take their defaults. Empty `arch` or
  // `ptx_version`: sm_90 (or the definition's first target), and 7.8 or the target's least.
  // Throws ptxdsl::Error naming the parameter, the value and what is allowed.
  static Params parse(const KernelDefinition& def, const std::map<std::string, std::string>& given,
                      std::string_view arch = {}, std::string_view ptx_version = {});

  const std::string& kernel() const { return kernel_; }
  std::uint64_t uint(std::string_view name) const;
  std::uint32_t u32(std::string_view name) const;  // throws when the value does not fit
  ScalarType dtype(std::string_view name) const;
  const std::string& choice(std::string_view name) const;
  Arch arch() const { return arch_; }
  PtxVersion ptx_version() const { return ptx_version_; }
  // "n=4096 dtype=f16", in the definition's order.
  std::string describe() const;
  // {name, value} in the definition's order.
  const std::vector<std::pair<std::string, std::string>>& values() const { return values_; }

 private:
  const std::string& value(std::string_view name, ParamKind kind) const;

  std::string kernel_;
  std::vector<std::pair<std::string, std::string>> values_;
  std::vector<ParamKind> kinds_;
  Arch arch_ = Arch::Sm90;
  PtxVersion ptx_version_;
};

// How the built kernel is launched: what `emit --json` prints and `run` launches with.
struct Launch {
  Dim3 grid;
  std::optional<Dim3> block;  // unset: the kernel's require_threads / max_threads, (x, 1, 1)
  std::string entry;          // empty: the module's only kernel
};

// One run's arguments, by the kernel's parameter names: a buffer for every pointer parameter and
// a value for every scalar one. Values are doubles; the tool rounds them to the parameter's type
// (nearest even), and the reference sees them as the kernel did.
struct Buffer {
  std::vector<double> values;
  bool output = false;                // compared with the reference after the run
  bool poison = false;                // starts as all bits set (NaN) instead of `values`
  std::optional<ScalarType> element;  // the elements' type, where not the pointer's
};
// A tensor map parameter's description over one of the run's buffers (which need not be a
// parameter itself): the run fills in the buffer's address, on the executor and on a GPU alike.
struct TensorMapArg {
  std::string buffer;
  TensorMapSpec spec;  // global_address: ignored
  // How far past each box a GPU's L2 fetches: 0 (none), 64, 128 or 256 bytes (the executor has no
  // cache to fill).
  std::uint32_t l2_promotion_bytes = 0;
};
struct RunData {
  std::map<std::string, Buffer> buffers;
  std::map<std::string, double> scalars;
  std::map<std::string, TensorMapArg> tensor_maps;

  RunData& input(std::string name, std::vector<double> values);  // read by the kernel
  RunData& output(std::string name, std::size_t count);          // written; starts as NaN
  // An output compared as `count` elements of `element` whatever the pointer's type (a kernel that
  // stores e4m3 bytes through a b32 pointer): values, tolerance and messages in that type.
  RunData& output(std::string name, std::size_t count, ScalarType element);
  RunData& inout(std::string name, std::vector<double> values);  // read, then written
  RunData& scalar(std::string name, double value);
  // Tensor map parameter `name` over buffer `buffer` as `spec` describes it.
  RunData& tensor_map(std::string name, std::string buffer, TensorMapSpec spec);
  const std::vector<double>& values(std::string_view name) const;  // a buffer's
  double scalar(std::string_view name) const;
};

// The expected contents of every output buffer, by name.
using Expected = std::map<std::string, std::vector<double>>;

// An element passes when |got - want| <= abs + rel * |want|; NaN or infinity where the reference
// is finite fails.
struct Tolerance {
  double abs = 0;
  double rel = 0;
  // n units in the last place of 1.0 in `t`, absolute and relative (bf16: n * 2^-7); 0 for
  // integers and the byte formats, which compare exactly.
  static Tolerance ulps(ScalarType t, double n);
};
// Four units in the last place of 1.0 in `t`, absolute and relative: one rounding of an
// elementwise result with room to spare; 0 for integers. A reduction wants its own.
Tolerance default_tolerance(ScalarType t);

struct KernelDefinition {
  std::string name;         // what `list` shows and the commands take: a letter, then [a-z0-9_-]
  std::string description;  // one line
  std::vector<Parameter> params;
  std::vector<Arch> archs;  // the targets it can be built for; empty: every one
  // Builds the kernel into `module` (made for params.arch() and params.ptx_version()).
  std::function<Launch(Module& module, const Params& params)> build;
  // Optional: seeded arguments for `run`.
  std::function<RunData(const Params& params, Random& random)> inputs;
  // Optional, with `inputs`: what every output should hold, computed in float64.
  std::function<Expected(const Params& params, const RunData& inputs)> reference;
  // Optional: the tolerance of one output; unset: default_tolerance of its element type.
  std::function<Tolerance(const Params& params, std::string_view output)> tolerance;
  // Optional: the tensor map parameters, each over a buffer of the run (which fills in its
  // address); `run` and `bench` add them to the inputs' RunData, `emit --json` lists them.
  std::function<std::map<std::string, TensorMapArg>(const Params& params)> tensor_maps;
  // Optional: the floating-point operations of one launch, which `bench` reports per second.
  std::function<double(const Params& params)> flops;
};

}  // namespace ptxdsl::tool

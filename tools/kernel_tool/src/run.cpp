#include "ptxdsl/tool/run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/dsl/half.hpp"
#include "ptxdsl/dsl/narrow_float.hpp"

namespace ptxdsl::tool {
namespace {

template <class T>
void put(std::vector<std::byte>& out, std::size_t i, T v) {
  std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
}

template <class T>
T get(const std::vector<std::byte>& in, std::size_t i) {
  T v;
  std::memcpy(&v, in.data() + i * sizeof(T), sizeof(T));
  return v;
}

// `v` as an integer of [lo, hi], or an Error naming it.
template <class T>
T integer(double v, ScalarType t, std::string_view what, std::size_t i) {
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (!(v >= lo && v <= hi) || std::trunc(v) != v) {
    throw Error(fmt::format("{}[{}] is {}: not a value of {}", what, i, v, ptx_name(t)));
  }
  return static_cast<T>(v);
}

std::string names_of(const std::vector<ParamSpec>& params, bool pointers) {
  std::vector<std::string> names;
  for (const ParamSpec& p : params) {
    if (p.pointer == pointers) names.push_back(p.name);
  }
  return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::vector<std::byte> to_bytes(const std::vector<double>& values, ScalarType element,
                                std::string_view what) {
  std::vector<std::byte> out(values.size() * static_cast<std::size_t>(size_bytes(element)));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    switch (element) {
      case ScalarType::F64:
        put(out, i, v);
        break;
      case ScalarType::F32:
        put(out, i, static_cast<float>(v));
        break;
      case ScalarType::F16:
        put(out, i, f32_to_f16_bits(static_cast<float>(v)));
        break;
      case ScalarType::BF16:
        put(out, i, f32_to_bf16_bits(static_cast<float>(v)));
        break;
      case ScalarType::U16:
      case ScalarType::B16:
        put(out, i, integer<std::uint16_t>(v, element, what, i));
        break;
      case ScalarType::U32:
      case ScalarType::B32:
        put(out, i, integer<std::uint32_t>(v, element, what, i));
        break;
      case ScalarType::U64:
      case ScalarType::B64:
        put(out, i, integer<std::uint64_t>(v, element, what, i));
        break;
      case ScalarType::S32:
        put(out, i, integer<std::int32_t>(v, element, what, i));
        break;
      case ScalarType::S64:
        put(out, i, integer<std::int64_t>(v, element, what, i));
        break;
      // Byte types: integers, or float values rounded as cvt.rn.satfinite does; packed pairs
      // and FP4 bytes as their raw bits.
      case ScalarType::U8:
      case ScalarType::B8:
      case ScalarType::E2M1x2:
        put(out, i, integer<std::uint8_t>(v, element, what, i));
        break;
      case ScalarType::S8:
        put(out, i, integer<std::int8_t>(v, element, what, i));
        break;
      case ScalarType::E4M3:
        put(out, i, f32_to_e4m3_bits(static_cast<float>(v)));
        break;
      case ScalarType::E5M2:
        put(out, i, f32_to_e5m2_bits(static_cast<float>(v)));
        break;
      case ScalarType::UE8M0:
        put(out, i, f32_to_ue8m0_bits(static_cast<float>(v), false, true));
        break;
      case ScalarType::E4M3x2:
      case ScalarType::E5M2x2:
      case ScalarType::UE8M0x2:
        put(out, i, integer<std::uint16_t>(v, element, what, i));
        break;
      default:
        throw Error(fmt::format("{}: a run cannot hold values of {}", what, ptx_name(element)));
    }
  }
  return out;
}

std::vector<double> from_bytes(const std::vector<std::byte>& bytes, ScalarType element) {
  const std::size_t count = bytes.size() / static_cast<std::size_t>(size_bytes(element));
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    switch (element) {
      case ScalarType::F64:
        out[i] = get<double>(bytes, i);
        break;
      case ScalarType::F32:
        out[i] = get<float>(bytes, i);
        break;
      case ScalarType::F16:
        out[i] = f16_bits_to_f32(get<std::uint16_t>(bytes, i));
        break;
      case ScalarType::BF16:
        out[i] = bf16_bits_to_f32(get<std::uint16_t>(bytes, i));
        break;
      case ScalarType::U16:
      case ScalarType::B16:
        out[i] = get<std::uint16_t>(bytes, i);
        break;
      case ScalarType::U32:
      case ScalarType::B32:
        out[i] = get<std::uint32_t>(bytes, i);
        break;
      case ScalarType::U64:
      case ScalarType::B64:
        out[i] = static_cast<double>(get<std::uint64_t>(bytes, i));
        break;
      case ScalarType::S32:
        out[i] = get<std::int32_t>(bytes, i);
        break;
      case ScalarType::S64:
        out[i] = static_cast<double>(get<std::int64_t>(bytes, i));
        break;
      case ScalarType::U8:
      case ScalarType::B8:
      case ScalarType::E2M1x2:
        out[i] = get<std::uint8_t>(bytes, i);
        break;
      case ScalarType::S8:
        out[i] = get<std::int8_t>(bytes, i);
        break;
      case ScalarType::E4M3:
        out[i] = e4m3_bits_to_f32(get<std::uint8_t>(bytes, i));
        break;
      case ScalarType::E5M2:
        out[i] = e5m2_bits_to_f32(get<std::uint8_t>(bytes, i));
        break;
      case ScalarType::UE8M0:
        out[i] = ue8m0_bits_to_f32(get<std::uint8_t>(bytes, i));
        break;
      case ScalarType::E4M3x2:
      case ScalarType::E5M2x2:
      case ScalarType::UE8M0x2:
        out[i] = get<std::uint16_t>(bytes, i);
        break;
      default:
        throw Error(fmt::format("a run cannot hold values of {}", ptx_name(element)));
    }
  }
  return out;
}

BuiltKernel build_kernel(const KernelDefinition& def, const Params& params) {
  BuiltKernel b;
  b.module = std::make_unique<Module>(params.arch(), params.ptx_version());
  const Launch launch = def.build(*b.module, params);
  b.ptx = b.module->emit();
  const auto& kernels = b.module->kernels();
  std::vector<std::string> entries;
  for (const auto& k : kernels) entries.push_back(k->name());
  if (launch.entry.empty()) {
    if (kernels.size() != 1) {
      throw Error(kernels.empty()
                      ? fmt::format("kernel '{}': its build made no kernel in the module", def.name)
                      : fmt::format("kernel '{}': its build made {} kernels ({}); Launch::entry "
                                    "must name the one to launch",
                                    def.name, kernels.size(), fmt::join(entries, ", ")));
    }
    b.kernel = kernels.front().get();
  } else {
    const auto it = std::find(entries.begin(), entries.end(), launch.entry);
    if (it == entries.end()) {
      throw Error(fmt::format("kernel '{}': Launch::entry '{}' is not in the module (it has {})",
                              def.name, launch.entry, fmt::join(entries, ", ")));
    }
    b.kernel = kernels[static_cast<std::size_t>(it - entries.begin())].get();
  }
  b.contract = b.kernel->contract();
  const KernelContract& c = b.contract;
  if (launch.block) {
    b.block = *launch.block;
  } else if (c.block_threads != 0) {
    b.block = Dim3(c.block_threads);
  } else {
    throw Error(fmt::format(
        "kernel '{}': entry '{}' sets neither require_threads nor max_threads, so Launch::block "
        "must say the block",
        def.name, c.entry));
  }
  const auto shape = [](Dim3 d) { return fmt::format("({}, {}, {})", d.x, d.y, d.z); };
  if (b.block.count() == 0 || (c.block_required && b.block != Dim3(c.block_threads)) ||
      (c.block_threads != 0 && b.block.count() > c.block_threads)) {
    throw Error(fmt::format("kernel '{}': the block {} does not fit entry '{}', whose {} is {}",
                            def.name, shape(b.block), c.entry,
                            c.block_required ? ".reqntid" : ".maxntid", c.block_threads));
  }
  b.grid = launch.grid;
  if (b.grid.count() == 0) {
    throw Error(fmt::format("kernel '{}': the grid {} has no CTA", def.name, shape(b.grid)));
  }
  return b;
}

ScalarType buffer_element(const RunData& data, const ParamSpec& p) {
  const auto it = data.buffers.find(p.name);
  return it != data.buffers.end() && it->second.element ? *it->second.element : p.element;
}

PreparedRun prepare_run(const KernelDefinition& def, const Params& params, const BuiltKernel& built,
                        std::uint64_t seed) {
  if (!def.inputs) {
    throw Error(fmt::format(
        "kernel '{}' has no inputs (KernelDefinition::inputs): there is nothing to run it on",
        def.name));
  }
  Random random(seed);
  PreparedRun run{def.inputs(params, random), {}};
  if (def.tensor_maps) run.data.tensor_maps.merge(def.tensor_maps(params));
  const std::vector<ParamSpec>& ps = built.contract.params;
  const auto param = [&](const std::string& name) {
    return std::find_if(ps.begin(), ps.end(), [&](const ParamSpec& p) { return p.name == name; });
  };
  const auto mapped = [&](const std::string& buffer) {
    return std::any_of(run.data.tensor_maps.begin(), run.data.tensor_maps.end(),
                       [&](const auto& m) { return m.second.buffer == buffer; });
  };
  for (const auto& [name, buffer] : run.data.buffers) {
    const auto p = param(name);
    if ((p == ps.end() || !p->pointer) && !mapped(name)) {
      throw Error(fmt::format(
          "kernel '{}': its inputs give a buffer '{}', which is neither a pointer parameter of "
          "'{}' (its pointers: {}) nor under one of its tensor maps",
          def.name, name, built.contract.entry, names_of(ps, true)));
    }
  }
  for (const auto& [name, map] : run.data.tensor_maps) {
    const auto p = param(name);
    if (p == ps.end() || !p->tensor_map) {
      throw Error(fmt::format(
          "kernel '{}': its inputs give a tensor map '{}', which is not a tensor map parameter "
          "of '{}'",
          def.name, name, built.contract.entry));
    }
    if (!run.data.buffers.contains(map.buffer)) {
      throw Error(
          fmt::format("kernel '{}': tensor map '{}' is over buffer '{}', which the "
                      "inputs do not give",
                      def.name, name, map.buffer));
    }
  }
  for (const auto& [name, value] : run.data.scalars) {
    const auto p = param(name);
    if (p == ps.end() || p->pointer) {
      throw Error(fmt::format(
          "kernel '{}': its inputs give a scalar '{}', which is not a scalar parameter of '{}' "
          "(its scalars: {})",
          def.name, name, built.contract.entry, names_of(ps, false)));
    }
  }
  for (const ParamSpec& p : ps) {
    if (p.tensor_map) {
      if (!run.data.tensor_maps.contains(p.name)) {
        throw Error(
            fmt::format("kernel '{}': its inputs give no tensor map for tensor map parameter '{}'",
                        def.name, p.name));
      }
      continue;
    }
    if (!p.pointer) {
      const auto it = run.data.scalars.find(p.name);
      if (it == run.data.scalars.end()) {
        throw Error(fmt::format("kernel '{}': its inputs give no value for scalar parameter '{}'",
                                def.name, p.name));
      }
      // Rounded as the kernel takes it.
      it->second = from_bytes(to_bytes({it->second}, p.type, p.name), p.type).front();
      continue;
    }
    const auto it = run.data.buffers.find(p.name);
    if (it == run.data.buffers.end()) {
      throw Error(fmt::format("kernel '{}': its inputs give no buffer for pointer parameter '{}'",
                              def.name, p.name));
    }
    Buffer& buffer = it->second;
    if (buffer.values.empty()) {
      throw Error(fmt::format("kernel '{}': buffer '{}' is empty", def.name, p.name));
    }
    const ScalarType element = buffer_element(run.data, p);
    std::vector<std::byte> bytes =
        buffer.poison
            ? std::vector<std::byte>(buffer.values.size() * size_bytes(element), std::byte{0xFF})
            : to_bytes(buffer.values, element, p.name);
    buffer.values = from_bytes(bytes, element);
    run.bytes.emplace(p.name, std::move(bytes));
  }
  // Buffers only a tensor map reads, in its elements' type.
  for (const auto& [name, map] : run.data.tensor_maps) {
    Buffer& buffer = run.data.buffers.at(map.buffer);
    if (run.bytes.contains(map.buffer)) continue;
    const ScalarType element = buffer.element.value_or(map.spec.element);
    std::vector<std::byte> bytes = to_bytes(buffer.values, element, map.buffer);
    buffer.values = from_bytes(bytes, element);
    run.bytes.emplace(map.buffer, std::move(bytes));
  }
  return run;
}

Outputs run_on_cpu(const BuiltKernel& built, const PreparedRun& run, const ExecOptions& options,
                   LaunchStats* stats) {
  CpuDevice dev;
  std::map<std::string, ExecutorAddress> at;
  for (const auto& [name, bytes] : run.bytes) {
    at[name] = dev.alloc(bytes.size(), name);
    dev.write(at[name], std::span<const std::byte>(bytes));
  }
  std::vector<Arg> args;
  for (const ParamSpec& p : built.contract.params) {
    if (p.tensor_map) {
      const TensorMapArg& map = run.data.tensor_maps.at(p.name);
      TensorMapSpec spec = map.spec;
      spec.global_address = at.at(map.buffer).address;
      args.push_back(Arg::of_tensor_map(spec));
      continue;
    }
    if (p.pointer) {
      args.emplace_back(at.at(p.name));
      continue;
    }
    const std::vector<std::byte> bytes = to_bytes({run.data.scalars.at(p.name)}, p.type, p.name);
    std::uint64_t bits = 0;
    std::memcpy(&bits, bytes.data(), bytes.size());
    args.push_back(Arg::of(p.type, bits));
  }
  const LaunchStats s =
      dev.launch(*built.kernel, {built.grid, built.block, built.contract.dynamic_shared_bytes},
                 std::span<const Arg>(args), options);
  if (stats != nullptr) *stats = s;
  Outputs out;
  for (const ParamSpec& p : built.contract.params) {
    if (!p.pointer || !run.data.buffers.at(p.name).output) continue;
    const std::vector<std::byte> bytes =
        dev.download<std::byte>(at.at(p.name), run.bytes.at(p.name).size());
    out.emplace(p.name, from_bytes(bytes, buffer_element(run.data, p)));
  }
  return out;
}

bool Verdict::pass() const {
  return std::all_of(outputs.begin(), outputs.end(),
                     [](const OutputVerdict& o) { return o.pass(); });
}

std::string Verdict::summary() const {
  if (outputs.empty()) return "no outputs";
  const OutputVerdict* worst = &outputs.front();
  double max_abs = 0;
  for (const OutputVerdict& o : outputs) {
    max_abs = std::max(max_abs, o.max_abs);
    if (o.nonfinite > worst->nonfinite ||
        (o.nonfinite == worst->nonfinite && o.worst_ratio > worst->worst_ratio)) {
      worst = &o;
    }
  }
  if (worst->nonfinite > 0) {
    return fmt::format("{} has {} NaN or infinite element{} where the reference is finite",
                       worst->name, worst->nonfinite, worst->nonfinite == 1 ? "" : "s");
  }
  const std::string type =
      worst->element == ScalarType::F32 ? "" : fmt::format(" ({})", ptx_name(worst->element));
  return fmt::format(
      "max abs err {:.3e}, worst {}[{}]{}: {:.3e} of its bound {:.3e} (got {}, want {})", max_abs,
      worst->name, worst->worst, type, worst->worst_ratio, worst->worst_bound, worst->worst_got,
      worst->worst_want);
}

Verdict judge(const KernelDefinition& def, const Params& params, const BuiltKernel& built,
              const PreparedRun& run, const Outputs& got) {
  if (!def.reference) {
    throw Error(fmt::format(
        "kernel '{}' has no reference (KernelDefinition::reference): nothing to compare with",
        def.name));
  }
  const Expected want = def.reference(params, run.data);
  for (const auto& [name, values] : want) {
    if (!got.contains(name)) {
      throw Error(
          fmt::format("kernel '{}': its reference gives '{}', which is not an output of the run",
                      def.name, name));
    }
  }
  Verdict v;
  for (const ParamSpec& p : built.contract.params) {
    const auto g = got.find(p.name);
    if (g == got.end()) continue;
    const auto w = want.find(p.name);
    if (w == want.end()) {
      throw Error(fmt::format("kernel '{}': its reference gives no values for output '{}'",
                              def.name, p.name));
    }
    if (w->second.size() != g->second.size()) {
      throw Error(fmt::format("kernel '{}': its reference gives {} values for output '{}' of {}",
                              def.name, w->second.size(), p.name, g->second.size()));
    }
    OutputVerdict o;
    o.name = p.name;
    o.element = buffer_element(run.data, p);
    o.count = g->second.size();
    o.tolerance = def.tolerance ? def.tolerance(params, p.name) : default_tolerance(o.element);
    for (std::size_t i = 0; i < o.count; ++i) {
      const double want_i = w->second[i], got_i = g->second[i];
      const double bound = o.tolerance.abs + o.tolerance.rel * std::abs(want_i);
      double ratio = 0;
      if (!std::isfinite(want_i)) {
        // A reference that is not finite asks for the same value: NaN for NaN, the same infinity.
        const bool same = std::isnan(want_i) ? std::isnan(got_i) : got_i == want_i;
        ratio = same ? 0 : std::numeric_limits<double>::infinity();
      } else if (!std::isfinite(got_i)) {
        ++o.nonfinite;
        ratio = std::numeric_limits<double>::infinity();
      } else {
        const double d = std::abs(got_i - want_i);
        o.max_abs = std::max(o.max_abs, d);
        ratio = bound > 0 ? d / bound : (d > 0 ? std::numeric_limits<double>::infinity() : 0);
      }
      if (i == 0 || ratio > o.worst_ratio) {
        o.worst = i;
        o.worst_ratio = ratio;
        o.worst_bound = bound;
        o.worst_got = got_i;
        o.worst_want = want_i;
      }
    }
    v.outputs.push_back(o);
  }
  return v;
}

}  // namespace ptxdsl::tool

#include "ptxdsl/tool/definition.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl::tool {
namespace {

// "a, b or c".
std::string one_of(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

std::uint64_t parse_uint(const Parameter& p, std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  const bool digits = !text.empty() &&
                      std::all_of(text.begin() + (text[0] == '-'), text.end(),
                                  [](char c) { return c >= '0' && c <= '9'; }) &&
                      text != "-";
  if (!digits) {
    throw Error(
        fmt::format("--{} must be an integer in [{}, {}], got '{}'", p.name, p.min, p.max, text));
  }
  if (text[0] == '-' || ptr != end || ec != std::errc() || value < p.min || value > p.max) {
    throw Error(fmt::format("--{} must be in [{}, {}], got {}", p.name, p.min, p.max, text));
  }
  return value;
}

ScalarType dtype_of(std::string_view name) {
  constexpr ScalarType kTypes[] = {ScalarType::B16,  ScalarType::B32, ScalarType::B64,
                                   ScalarType::U16,  ScalarType::U32, ScalarType::U64,
                                   ScalarType::S32,  ScalarType::S64, ScalarType::F16,
                                   ScalarType::BF16, ScalarType::F32, ScalarType::F64};
  for (ScalarType t : kTypes) {
    if (ptx_name(t) == name) return t;
  }
  throw Error(fmt::format("'{}' is not an element type a buffer can hold", name));
}

// Checks `text` against `p`; returns it as stored.
std::string checked(const Parameter& p, std::string_view text) {
  if (p.kind == ParamKind::Uint) return fmt::format("{}", parse_uint(p, text));
  if (std::find(p.choices.begin(), p.choices.end(), text) == p.choices.end()) {
    throw Error(fmt::format("--{} must be {}, got '{}'", p.name, one_of(p.choices), text));
  }
  return std::string(text);
}

}  // namespace

Parameter Parameter::uint(std::string name, std::string help, std::uint64_t min, std::uint64_t max,
                          std::optional<std::uint64_t> default_value) {
  Parameter p;
  p.name = std::move(name);
  p.kind = ParamKind::Uint;
  p.help = std::move(help);
  p.min = min;
  p.max = max;
  if (default_value) p.default_value = fmt::format("{}", *default_value);
  return p;
}

Parameter Parameter::dtype(std::string name, std::string help, std::vector<ScalarType> allowed,
                           std::optional<ScalarType> default_value) {
  Parameter p;
  p.name = std::move(name);
  p.kind = ParamKind::DType;
  p.help = std::move(help);
  for (ScalarType t : allowed) p.choices.emplace_back(ptx_name(t));
  if (default_value) p.default_value = ptx_name(*default_value);
  return p;
}

Parameter Parameter::choice(std::string name, std::string help, std::vector<std::string> choices,
                            std::optional<std::string> default_value) {
  Parameter p;
  p.name = std::move(name);
  p.kind = ParamKind::Choice;
  p.help = std::move(help);
  p.choices = std::move(choices);
  if (default_value) p.default_value = std::move(*default_value);
  return p;
}

Params Params::parse(const KernelDefinition& def, const std::map<std::string, std::string>& given,
                     std::string_view arch, std::string_view ptx_version) {
  for (const auto& [name, text] : given) {
    const bool known = std::any_of(def.params.begin(), def.params.end(),
                                   [&](const Parameter& p) { return p.name == name; });
    if (known) continue;
    std::vector<std::string> names;
    for (const Parameter& p : def.params) names.push_back(p.name);
    throw Error(names.empty()
                    ? fmt::format("kernel '{}' takes no parameters, got '{}'", def.name, name)
                    : fmt::format("kernel '{}' has no parameter '{}' (its parameters: {})",
                                  def.name, name, fmt::join(names, ", ")));
  }
  Params out;
  out.kernel_ = def.name;
  for (const Parameter& p : def.params) {
    const auto it = given.find(p.name);
    if (it == given.end() && p.default_value.empty()) {
      throw Error(fmt::format("kernel '{}' needs --{} ({})", def.name, p.name,
                              p.kind == ParamKind::Uint
                                  ? fmt::format("{}, {} to {}", p.help, p.min, p.max)
                                  : fmt::format("{}: {}", p.help, one_of(p.choices))));
    }
    out.values_.emplace_back(p.name, checked(p, it == given.end() ? p.default_value : it->second));
    out.kinds_.push_back(p.kind);
  }
  const std::vector<Arch> allowed =
      def.archs.empty() ? std::vector<Arch>(all_archs().begin(), all_archs().end()) : def.archs;
  if (arch.empty()) {
    out.arch_ = std::find(allowed.begin(), allowed.end(), Arch::Sm90) != allowed.end()
                    ? Arch::Sm90
                    : allowed.front();
  } else {
    out.arch_ = parse_arch(arch);
    if (std::find(allowed.begin(), allowed.end(), out.arch_) == allowed.end()) {
      std::vector<std::string> names;
      for (Arch a : allowed) names.emplace_back(arch_name(a));
      throw Error(fmt::format("--arch must be {} for kernel '{}', got '{}'", one_of(names),
                              def.name, arch));
    }
  }
  const PtxVersion least = min_ptx_version(out.arch_);
  out.ptx_version_ =
      ptx_version.empty() ? std::max(PtxVersion{7, 8}, least) : parse_ptx_version(ptx_version);
  if (out.ptx_version_ < least) {
    throw Error(fmt::format("--ptx-version must be at least {}.{} for {}, got '{}'", least.major,
                            least.minor, arch_name(out.arch_), ptx_version));
  }
  return out;
}

const std::string& Params::value(std::string_view name, ParamKind kind) const {
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (values_[i].first != name) continue;
    if (kinds_[i] != kind) {
      constexpr const char* kKinds[] = {"uint", "dtype", "choice"};
      throw Error(fmt::format("kernel '{}': parameter '{}' is a {}, not a {}", kernel_, name,
                              kKinds[static_cast<int>(kinds_[i])], kKinds[static_cast<int>(kind)]));
    }
    return values_[i].second;
  }
  throw Error(fmt::format("kernel '{}' has no parameter '{}'", kernel_, name));
}

std::uint64_t Params::uint(std::string_view name) const {
  const std::string& text = value(name, ParamKind::Uint);
  std::uint64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

std::uint32_t Params::u32(std::string_view name) const {
  const std::uint64_t v = uint(name);
  if (v > 0xFFFFFFFFull) {
    throw Error(
        fmt::format("kernel '{}': parameter '{}' is {}, more than a u32 holds", kernel_, name, v));
  }
  return static_cast<std::uint32_t>(v);
}

ScalarType Params::dtype(std::string_view name) const {
  return dtype_of(value(name, ParamKind::DType));
}

const std::string& Params::choice(std::string_view name) const {
  return value(name, ParamKind::Choice);
}

std::string Params::describe() const {
  std::vector<std::string> parts;
  for (const auto& [name, text] : values_) parts.push_back(name + "=" + text);
  return fmt::format("{}", fmt::join(parts, " "));
}

RunData& RunData::input(std::string name, std::vector<double> values) {
  buffers[std::move(name)] = Buffer{std::move(values), false, false, std::nullopt};
  return *this;
}

RunData& RunData::output(std::string name, std::size_t count) {
  buffers[std::move(name)] =
      Buffer{std::vector<double>(count, std::nan("")), true, true, std::nullopt};
  return *this;
}

RunData& RunData::output(std::string name, std::size_t count, ScalarType element) {
  buffers[std::move(name)] = Buffer{std::vector<double>(count, std::nan("")), true, true, element};
  return *this;
}

RunData& RunData::inout(std::string name, std::vector<double> values) {
  buffers[std::move(name)] = Buffer{std::move(values), true, false, std::nullopt};
  return *this;
}

RunData& RunData::scalar(std::string name, double value) {
  scalars[std::move(name)] = value;
  return *this;
}

RunData& RunData::tensor_map(std::string name, std::string buffer, TensorMapSpec spec) {
  tensor_maps[std::move(name)] = TensorMapArg{std::move(buffer), std::move(spec)};
  return *this;
}

const std::vector<double>& RunData::values(std::string_view name) const {
  const auto it = buffers.find(std::string(name));
  if (it == buffers.end()) throw Error(fmt::format("the run has no buffer '{}'", name));
  return it->second.values;
}

double RunData::scalar(std::string_view name) const {
  const auto it = scalars.find(std::string(name));
  if (it == scalars.end()) throw Error(fmt::format("the run has no scalar '{}'", name));
  return it->second;
}

Tolerance Tolerance::ulps(ScalarType t, double n) {
  const auto of = [n](int mantissa_bits) {
    const double e = n * std::ldexp(1.0, -mantissa_bits);
    return Tolerance{e, e};
  };
  switch (t) {
    case ScalarType::F64:
      return of(52);
    case ScalarType::F32:
      return of(23);
    case ScalarType::F16:
    case ScalarType::F16x2:
      return of(10);
    case ScalarType::BF16:
    case ScalarType::BF16x2:
      return of(7);
    default:
      return {0, 0};
  }
}

Tolerance default_tolerance(ScalarType t) {
  return Tolerance::ulps(t, 4);
}

}  // namespace ptxdsl::tool

#include "ptxdsl/tool/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl::tool {
namespace {

// The options the commands take themselves: a parameter of the same name could not be given.
constexpr std::array<std::string_view, 14> kReserved = {
    "arch",  "ptx-version", "output", "json", "seed", "cpu",     "device",
    "trace", "trace-limit", "param",  "ptx",  "help", "version", "kernel"};

bool is_name(std::string_view s) {
  return !s.empty() && s[0] >= 'a' && s[0] <= 'z' && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

void check_parameter(const KernelDefinition& def, const Parameter& p) {
  const auto fail = [&](const std::string& what) {
    throw Error(fmt::format("kernel '{}', parameter '{}': {}", def.name, p.name, what));
  };
  if (!is_name(p.name)) fail("a name starts with a lower-case letter, then [a-z0-9_-]");
  if (std::find(kReserved.begin(), kReserved.end(), p.name) != kReserved.end())
    fail(fmt::format("the commands take --{} themselves; name it otherwise", p.name));
  if (p.kind == ParamKind::Uint && p.min > p.max)
    fail(fmt::format("its range [{}, {}] is empty", p.min, p.max));
  if (p.kind != ParamKind::Uint && p.choices.empty()) fail("it has no choices");
  if (p.default_value.empty()) return;
  // The default as the command line would give it: a definition that cannot take its own
  // default is a mistake of the definition's, reported when it is added.
  KernelDefinition alone;
  alone.name = def.name;
  alone.params = {p};
  try {
    (void)Params::parse(alone, {});
  } catch (const Error& e) {
    fail(fmt::format("its default: {}", e.what()));
  }
}

}  // namespace

void Registry::add(KernelDefinition def) {
  if (!is_name(def.name)) {
    throw Error(fmt::format(
        "kernel name '{}': a name starts with a lower-case letter, then [a-z0-9_-]", def.name));
  }
  if (std::any_of(kernels_.begin(), kernels_.end(),
                  [&](const KernelDefinition& k) { return k.name == def.name; })) {
    throw Error(fmt::format("kernel '{}' is registered twice", def.name));
  }
  if (!def.build) throw Error(fmt::format("kernel '{}' has no build function", def.name));
  if (def.reference && !def.inputs) {
    throw Error(fmt::format("kernel '{}' has a reference but no inputs to run it on", def.name));
  }
  for (std::size_t i = 0; i < def.params.size(); ++i) {
    check_parameter(def, def.params[i]);
    for (std::size_t j = 0; j < i; ++j) {
      if (def.params[j].name == def.params[i].name) {
        throw Error(
            fmt::format("kernel '{}' has parameter '{}' twice", def.name, def.params[i].name));
      }
    }
  }
  kernels_.push_back(std::move(def));
}

const KernelDefinition& Registry::find(std::string_view name) const {
  for (const KernelDefinition& k : kernels_) {
    if (k.name == name) return k;
  }
  std::vector<std::string> names;
  for (const KernelDefinition& k : kernels_) names.push_back(k.name);
  throw Error(names.empty() ? fmt::format("no kernel '{}': this tool registers none", name)
                            : fmt::format("kernel must be one of {}, got '{}'",
                                          fmt::join(names, ", "), name));
}

}  // namespace ptxdsl::tool

#include "ptxdsl/kernels/knobs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>

#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl::kernels {

std::span<const KnobInfo> knob_table() {
#define PTXDSL_KNOB_INFO(name, type, scope, rule, lo, hi, arch, ptx, planned, move, tried_for, \
                         help)                                                                 \
  KnobInfo{#name,                                                                              \
           KnobScope::scope,                                                                   \
           KnobRule::rule,                                                                     \
           lo,                                                                                 \
           hi,                                                                                 \
           Arch::arch,                                                                         \
           {ptx / 10, ptx % 10},                                                               \
           KnobMove::move,                                                                     \
           KnobScope::tried_for,                                                               \
           help},
  static const KnobInfo kTable[] = {PTXDSL_NORM_KNOBS(PTXDSL_KNOB_INFO)};
#undef PTXDSL_KNOB_INFO
  return kTable;
}

std::string KnobInfo::flag() const {
  std::string f = "--" + std::string(name);
  std::replace(f.begin(), f.end(), '_', '-');
  return f;
}

std::string KnobInfo::values() const {
  switch (rule) {
    case KnobRule::Range:
      return fmt::format("{}-{}", lo, hi);
    case KnobRule::PowerOfTwo: {
      std::string s;
      for (std::uint32_t v = lo; v <= hi; v *= 2) s += fmt::format("{}{}", s.empty() ? "" : "|", v);
      return s;
    }
    case KnobRule::ThreadsPerRow:
      return fmt::format("1|2|4|8|16|32|32k<={}", hi);
    case KnobRule::Switch:
      return "0|1";
    case KnobRule::Order:
      return "fixed|tickets";
    case KnobRule::Levels:
      return "0|1|portable";
  }
  return "?";
}

std::string_view row_order_name(RowOrder order) {
  return order == RowOrder::Tickets ? "tickets" : "fixed";
}

std::string_view determinism_name(Determinism d) {
  switch (d.level) {
    case Determinism::Off:
      return "0";
    case Determinism::RunToRun:
      return "1";
    case Determinism::Portable:
      return "portable";
  }
  return "?";
}

std::string format_knob(std::uint32_t value) {
  return fmt::format("{}", value);
}

std::string format_knob(bool value) {
  return value ? "1" : "0";
}

std::string format_knob(RowOrder value) {
  return std::string(row_order_name(value));
}

std::string format_knob(Determinism value) {
  return std::string(determinism_name(value));
}

namespace {

constexpr Determinism::Level kLevels[] = {Determinism::Off, Determinism::RunToRun,
                                          Determinism::Portable};

// What a counted knob takes, as the errors say it: one wording for a value and for text.
std::string allowed_counts(const KnobInfo& info) {
  switch (info.rule) {
    case KnobRule::PowerOfTwo:
      return fmt::format("a power of two in [{}, {}]", info.lo, info.hi);
    case KnobRule::ThreadsPerRow:
      return fmt::format("a power of two ≤ 32 or a multiple of 32 in [32, {}]", info.hi);
    default:
      return fmt::format("in [{}, {}]", info.lo, info.hi);
  }
}

}  // namespace

void check_knob(const KnobInfo& info, std::uint32_t v) {
  bool ok = v >= info.lo && v <= info.hi;
  if (info.rule == KnobRule::PowerOfTwo) ok = ok && std::has_single_bit(v);
  if (info.rule == KnobRule::ThreadsPerRow)
    ok = ok && (v <= 32 ? std::has_single_bit(v) : v % 32 == 0);
  if (!ok) throw Error(fmt::format("{} must be {}, got {}", info.name, allowed_counts(info), v));
}

void check_knob(const KnobInfo&, bool) {}

void check_knob(const KnobInfo& info, RowOrder v) {
  if (v != RowOrder::Fixed && v != RowOrder::Tickets) {
    throw Error(fmt::format("{} must be fixed or tickets, got enum value {}", info.name,
                            static_cast<int>(v)));
  }
}

void check_knob(const KnobInfo& info, Determinism v) {
  if (std::find(std::begin(kLevels), std::end(kLevels), v.level) == std::end(kLevels)) {
    throw Error(fmt::format("{} must be 0, 1 or portable, got level {}", info.name,
                            static_cast<int>(v.level)));
  }
}

void parse_knob(const KnobInfo& info, std::string_view text, std::optional<std::uint32_t>& field) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || v > info.hi) {
    throw Error(fmt::format("{} must be {}{}, got '{}'", info.name,
                            info.rule == KnobRule::Range ? "a number " : "", allowed_counts(info),
                            text));
  }
  check_knob(info, static_cast<std::uint32_t>(v));
  field = static_cast<std::uint32_t>(v);
}

void parse_knob(const KnobInfo& info, std::string_view text, std::optional<bool>& field) {
  if (text != "0" && text != "1") {
    throw Error(fmt::format("{} must be 0 or 1, got '{}'", info.name, text));
  }
  field = text == "1";
}

void parse_knob(const KnobInfo& info, std::string_view text, std::optional<RowOrder>& field) {
  for (RowOrder order : {RowOrder::Fixed, RowOrder::Tickets}) {
    if (text == row_order_name(order)) {
      field = order;
      return;
    }
  }
  throw Error(fmt::format("{} must be fixed or tickets, got '{}'", info.name, text));
}

void parse_knob(const KnobInfo& info, std::string_view text, std::optional<Determinism>& field) {
  for (Determinism::Level level : kLevels) {
    if (text == determinism_name(level)) {
      field = level;
      return;
    }
  }
  throw Error(fmt::format("{} must be 0, 1 or portable, got '{}'", info.name, text));
}

}  // namespace ptxdsl::kernels

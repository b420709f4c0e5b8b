#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <type_traits>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/kernels/norm.hpp"
#include "spec_of.hpp"

using namespace ptxdsl;
using namespace ptxdsl::kernels;

TEST_CASE("the knob table names each knob once, and its flags are the names", "[knobs]") {
  REQUIRE(knob_table().size() == kKnobCount);
  std::set<std::string_view> names;
  std::set<std::string> flags;
  for (const KnobInfo& info : knob_table()) {
    INFO(info.name);
    REQUIRE(names.insert(info.name).second);
    REQUIRE(flags.insert(info.flag()).second);
    REQUIRE_FALSE(info.help.empty());
    REQUIRE(info.lo <= info.hi);
  }
  REQUIRE(knob_table()[0].flag() == "--threads-per-row");
  REQUIRE(knob_table()[0].values() == "1|2|4|8|16|32|32k<=1024");
  // for_each_knob visits the struct's fields in the table's order, each with its own type.
  NormKnobs knobs;
  std::size_t i = 0;
  for_each_knob(knobs, [&](const KnobInfo& info, auto& field) {
    REQUIRE(info.name == knob_table()[i++].name);
    using T = typename std::decay_t<decltype(field)>::value_type;
    REQUIRE((info.rule == KnobRule::Switch) == std::is_same_v<T, bool>);
    REQUIRE((info.rule == KnobRule::Order) == std::is_same_v<T, RowOrder>);
    REQUIRE((info.rule == KnobRule::Levels) == std::is_same_v<T, Determinism>);
  });
  REQUIRE(i == kKnobCount);
}

TEST_CASE("knob values parse from text and print back as the same text", "[knobs]") {
  NormKnobs knobs;
  const std::map<std::string_view, std::string> texts = {
      {"threads_per_row", "64"},    {"prefetch_rows", "0"},
      {"single_launch", "1"},       {"row_nc", "0"},
      {"row_order", "tickets"},     {"reduce_slices", "16"},
      {"vector_elems", "8"},        {"accumulator_register_chunks", "0"},
      {"deterministic", "portable"}};
  for_each_knob(knobs, [&](const KnobInfo& info, auto& field) {
    const auto it = texts.find(info.name);
    if (it == texts.end()) return;
    parse_knob(info, it->second, field);
    REQUIRE(field);
    REQUIRE(format_knob(*field) == it->second);
  });
  REQUIRE(knobs.threads_per_row == 64u);
  REQUIRE(knobs.single_launch == true);
  REQUIRE(knobs.row_nc == false);
  REQUIRE(knobs.row_order == RowOrder::Tickets);
  REQUIRE(knobs.deterministic == Determinism::Portable);
  REQUIRE_FALSE(knobs.max_registers);
  // deterministic was a switch: 0 and 1 (and false, true) keep their meaning beside portable.
  const KnobInfo& det = *std::find_if(knob_table().begin(), knob_table().end(),
                                      [](const KnobInfo& i) { return i.name == "deterministic"; });
  REQUIRE(det.values() == "0|1|portable");
  for (const auto& [text, level] :
       {std::pair{"0", Determinism::Off}, {"1", Determinism::RunToRun}}) {
    std::optional<Determinism> d;
    parse_knob(det, text, d);
    REQUIRE(d == Determinism(level));
    REQUIRE(format_knob(*d) == text);
  }
  REQUIRE(Determinism(false) == Determinism::Off);
  REQUIRE(Determinism(true) == Determinism::RunToRun);
  REQUIRE(static_cast<bool>(Determinism(Determinism::Portable)));
}

TEST_CASE("knob text outside the table's rule is refused, naming the knob and what it takes",
          "[knobs]") {
  const auto refused = [](std::string_view name, std::string_view text) {
    NormKnobs knobs;
    std::string message;
    for_each_knob(knobs, [&](const KnobInfo& info, auto& field) {
      if (info.name != name) return;
      try {
        parse_knob(info, text, field);
      } catch (const Error& e) {
        message = e.what();
      }
      CHECK_FALSE(field);  // nothing half-parsed stays behind
    });
    return message;
  };
  CHECK(refused("threads_per_row", "48") ==
        "threads_per_row must be a power of two ≤ 32 or a multiple of 32 in [32, 1024], got 48");
  CHECK(refused("threads_per_row", "2048") ==
        "threads_per_row must be a power of two ≤ 32 or a multiple of 32 in [32, 1024], got "
        "'2048'");
  CHECK(refused("max_registers", "31") == "max_registers must be in [32, 255], got 31");
  CHECK(refused("max_registers", "x1") == "max_registers must be a number in [32, 255], got 'x1'");
  CHECK(refused("max_registers", "") == "max_registers must be a number in [32, 255], got ''");
  CHECK(refused("max_registers", "99999999999999999999") ==
        "max_registers must be a number in [32, 255], got '99999999999999999999'");
  CHECK(refused("cluster_ctas", "32") ==
        "cluster_ctas must be a power of two in [1, 16], got '32'");
  CHECK(refused("cluster_ctas", "two") ==
        "cluster_ctas must be a power of two in [1, 16], got 'two'");
  CHECK(refused("reduce_slices", "12") ==
        "reduce_slices must be a power of two in [1, 32], got 12");
  CHECK(refused("single_launch", "2") == "single_launch must be 0 or 1, got '2'");
  CHECK(refused("single_launch", "true") == "single_launch must be 0 or 1, got 'true'");
  CHECK(refused("row_order", "2") == "row_order must be fixed or tickets, got '2'");
  CHECK(refused("deterministic", "2") == "deterministic must be 0, 1 or portable, got '2'");
}

TEST_CASE("chosen reports every knob that applies to the kernel, and none that does not",
          "[knobs]") {
  // Persistent kernels report their grid and row order; a forward of one row group a CTA has none.
  for (NormKind kind : {NormKind::LayerNormFwd, NormKind::LayerNormBwd, NormKind::RmsNormFwd,
                        NormKind::RmsNormBwd}) {
    NormSpec spec = spec_of(kind, DType::F16, 4096);
    if (!is_backward(kind)) spec.knobs.prefetch_rows = 1;
    const BuiltNorm built = build_norm(spec);
    for_each_knob(built.chosen, [&](const KnobInfo& info, const auto& v) {
      INFO(kind_name(kind) << " " << info.name);
      const bool applies = knob_applies(info.scope, kind);
      CHECK(v.has_value() == applies);
    });
  }
}

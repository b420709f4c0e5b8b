#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/kernels/tuning.hpp"
#include "spec_of.hpp"

using namespace ptxdsl;
using namespace ptxdsl::kernels;

namespace {

const std::string kHeader = "device,kernel,dtype,weight_dtype,width,batch,us,heuristic_us,knobs\n";

}  // namespace

TEST_CASE("a tuning table reads from CSV and writes back the same text", "[tuning]") {
  const std::string csv = kHeader +
                          "NVIDIA H200,ln_fwd,f16,f16,4096,4096,22.90,23.10,register_chunks=0 "
                          "staged_chunks=0\n"
                          "NVIDIA H200,rms_bwd,bf16,f32,8192,4096,58.00,58.00,\n";
  const TuningTable t = TuningTable::parse_csv(csv, "t.csv");
  REQUIRE(t.entries.size() == 2);
  CHECK(t.entries[0].kind == NormKind::LayerNormFwd);
  CHECK(t.entries[0].knobs.register_chunks == 0u);
  CHECK(t.entries[0].knobs.staged_chunks == 0u);
  CHECK_FALSE(t.entries[0].knobs.threads_per_row);
  CHECK(t.entries[1].weight_dtype == DType::F32);
  CHECK(t.entries[1].knobs == NormKnobs{});
  CHECK(t.to_csv() == csv);
  // Several tables end to end (the built-in text) and comments read as one.
  CHECK(TuningTable::parse_csv("# two tables\n" + csv + csv, "t.csv").entries.size() == 4);
  // The built-in tables parse (kernels/tuning/).
  CHECK_NOTHROW(builtin_tuning());
}

TEST_CASE("a bad tuning table is refused with its source and line", "[tuning]") {
  const auto refused = [](const std::string& csv) {
    try {
      TuningTable::parse_csv(csv, "t.csv");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused("a,b\n") ==
        "t.csv:1: the header must be '" + kHeader.substr(0, kHeader.size() - 1) + "'");
  CHECK(refused(kHeader + "NVIDIA H200,ln_fwd,f16,f16,4096,4096,1,1\n") ==
        "t.csv:2: a row has 9 fields, this one 8");
  CHECK(refused(kHeader + "NVIDIA H200,ln_fwx,f16,f16,4096,4096,1,1,\n") ==
        "t.csv:2: kernel must be one of ln_fwd, ln_bwd, rms_fwd, rms_bwd, got 'ln_fwx'");
  CHECK(refused(kHeader + "NVIDIA H200,ln_fwd,f16,f16,0,4096,1,1,\n") ==
        "t.csv:2: width must be in [1, 262144], got 0");
  CHECK(refused(kHeader + "NVIDIA H200,ln_fwd,f16,f16,4096,4096,x,1,\n") ==
        "t.csv:2: us must be a number, got 'x'");
  CHECK(refused(kHeader + "NVIDIA H200,ln_fwd,f16,f16,4096,4096,1,1,no_such=1\n") ==
        "t.csv:2: there is no knob 'no_such' (ptxdsl list names them)");
  CHECK(refused(kHeader + "NVIDIA H200,ln_fwd,f16,f16,4096,4096,1,1,row_nc=2\n") ==
        "t.csv:2: row_nc must be 0 or 1, got '2'");
  CHECK(refused(kHeader + "NVIDIA H200,ln_fwd,f16,f16,4096,4096,1,1,row_nc=0 row_nc=1\n") ==
        "t.csv:2: knob row_nc is given twice");
  CHECK(refused(kHeader + ",ln_fwd,f16,f16,4096,4096,1,1,\n") == "t.csv:2: the device is empty");
}

TEST_CASE("the planner takes the nearest valid entry of its device, and only without knobs",
          "[tuning]") {
  // Entries for the H200's f16 RMS forward: 4096 reads its rows again, 16384 stages them at 1024
  // threads, 1024 is the heuristic's own plan.
  const TuningTable t = TuningTable::parse_csv(
      kHeader +
          "NVIDIA H200,rms_fwd,f16,f16,4096,4096,1,1,register_chunks=0 staged_chunks=0\n"
          "NVIDIA H200,rms_fwd,f16,f16,16384,4096,1,1,threads_per_row=1024 register_chunks=0\n"
          "NVIDIA H200,rms_fwd,f16,f16,1024,4096,1,1,\n",
      "t.csv");
  NormSpec spec = spec_of(NormKind::RmsNormFwd, DType::F16, 5000);
  REQUIRE(spec.device.product == "NVIDIA H200");
  const TuningEntry* e = t.find(spec);
  REQUIRE(e != nullptr);
  CHECK(e->width == 4096);  // 5000 / 4096 is nearer than 16384 / 5000
  CHECK(with_tuning(spec, t).knobs.staged_chunks == 0u);
  spec.width = 12000;
  CHECK(t.find(spec)->width == 16384);
  spec.width = 1400;
  CHECK(t.find(spec)->width == 1024);  // the heuristic's own entry: no knobs to apply
  CHECK(with_tuning(spec, t).knobs == NormKnobs{});
  CHECK(applied_tuning(spec, t) == nullptr);
  // Past a factor √2 of every row there is none: 16384 × 1.5 is another strategy's width.
  spec.width = 24576;
  CHECK(t.find(spec) == nullptr);
  spec.width = 724;
  CHECK(t.find(spec) == nullptr);
  // A row that ends in lone elements (5001 = 625 vectors of 8 and 1) takes no entry measured on
  // whole vectors: its registers differ.
  spec.width = 5001;
  CHECK(t.find(spec) == nullptr);
  // A spec that sets a knob plans by the heuristic and its knobs; deterministic 1 is no shape.
  spec.width = 4096;
  spec.knobs.deterministic = true;
  CHECK(applied_tuning(spec, t) != nullptr);
  CHECK(with_tuning(spec, t).knobs.deterministic == true);
  // The runtime sets the vector width of every call: the widest keeps the table, a narrower one
  // (a misaligned call, never timed) plans by the heuristic.
  spec.knobs.vector_elems = 8;
  REQUIRE(applied_tuning(spec, t) != nullptr);
  CHECK(with_tuning(spec, t).knobs.vector_elems == 8u);
  CHECK(with_tuning(spec, t).knobs.staged_chunks == 0u);
  spec.knobs.vector_elems = 4;
  CHECK(applied_tuning(spec, t) == nullptr);
  spec.knobs.vector_elems.reset();
  spec.knobs.prefetch_rows = 1;  // the small-batch variant
  CHECK(applied_tuning(spec, t) == nullptr);
  // Another product, or dtypes without entries: none.
  NormSpec other = spec_of(NormKind::RmsNormFwd, DType::F16, 4096);
  other.device = device_preset("a100");
  CHECK(t.find(other) == nullptr);
  other = spec_of(NormKind::RmsNormFwd, DType::BF16, 4096);
  CHECK(t.find(other) == nullptr);
}

TEST_CASE("an entry whose knobs do not fit the width is passed over for the next nearest",
          "[tuning]") {
  // 8 rows a CTA of 1024 threads each cannot be a block: invalid at every width.
  const TuningTable t =
      TuningTable::parse_csv(kHeader +
                                 "NVIDIA H200,ln_fwd,f32,f32,2048,4096,1,1,threads_per_row=1024 "
                                 "rows_per_cta=8\n"
                                 "NVIDIA H200,ln_fwd,f32,f32,2600,4096,1,1,l1_rereads=1\n",
                             "t.csv");
  const NormSpec spec = spec_of(NormKind::LayerNormFwd, DType::F32, 2048);
  REQUIRE(t.find(spec) != nullptr);
  CHECK(t.find(spec)->width == 2600);
}

TEST_CASE("the knobs a build reports give the same kernel when given back", "[tuning]") {
  // What a tuning entry records is what `chosen` reports: building with those knobs set must
  // reproduce the plan, or a table would not reproduce what was timed.
  for (NormKind kind : {NormKind::LayerNormFwd, NormKind::LayerNormBwd, NormKind::RmsNormFwd,
                        NormKind::RmsNormBwd}) {
    for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
      for (std::uint32_t width : {100u, 1003u, 4096u, 8192u, 12288u, 16384u, 32768u}) {
        NormSpec spec = spec_of(kind, dtype, width);
        const BuiltNorm built = build_norm(spec);
        spec.knobs = built.chosen;
        INFO(kind_name(kind) << " " << dtype_name(dtype) << " " << width);
        CHECK(build_norm(spec).ptx == built.ptx);
      }
    }
  }
}

TEST_CASE("tune's candidates are the knob table's moves, each knob alone, and the joint moves",
          "[tuning]") {
  // A knob without a move in the table never appears alone; each knob's move gives what its
  // row says; every candidate builds or is refused by a message (tune leaves those out).
  const NormSpec spec = spec_of(NormKind::RmsNormBwd, DType::F16, 16384);
  const BuiltNorm built = build_norm(spec);
  const std::vector<NormKnobs> candidates = tune_candidates(spec, built.chosen);
  std::size_t alone = 0;
  for (const NormKnobs& k : candidates) {
    std::size_t set = 0;
    const KnobInfo* which = nullptr;
    for_each_knob(k, [&](const KnobInfo& info, const auto& v) {
      if (!v) return;
      ++set;
      which = &info;
    });
    REQUIRE(set >= 1);
    if (set == 1) {
      ++alone;
      INFO(which->name);
      CHECK(which->move != KnobMove::None);
      CHECK(knob_applies(which->tried_for, spec.kind));
    }
  }
  CHECK(alone > 0);
  const std::uint32_t threads = *built.chosen.threads_per_row;
  const auto has = [&](const NormKnobs& want) {
    return std::find(candidates.begin(), candidates.end(), want) != candidates.end();
  };
  NormKnobs halved, pair;
  halved.threads_per_row = threads / 2;
  CHECK(has(halved));
  pair.partial_cluster = 2;
  CHECK(has(pair));
  // The forward's rows ahead are not searched (the table tries them for the backwards).
  const NormSpec fwd = spec_of(NormKind::RmsNormFwd, DType::F16, 16384);
  for (const NormKnobs& k : tune_candidates(fwd, build_norm(fwd).chosen)) {
    CHECK_FALSE((k.prefetch_rows && !k.shared_weights));
    CHECK_FALSE(k.partial_cluster);
  }
}

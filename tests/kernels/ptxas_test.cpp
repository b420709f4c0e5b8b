// Every norm kernel × dtype × weight dtype × width × device preset assembles with ptxas for the
// preset's arch, without spills.
// Kernels of one (kind, dtypes, arch) share a module so ptxas starts once per group; two groups
// assemble at a time.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <functional>
#include <future>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "ptxdsl/dsl/ptxas.hpp"
#include "ptxdsl/kernels/norm.hpp"
#include "spec_of.hpp"

using namespace ptxdsl;
using namespace ptxdsl::kernels;

namespace {

const std::vector<std::uint32_t> kWidths = {
    1,     2,     3,     7,     31,    32,    100,    127,    128,    255,
    256,   1000,  1024,  1151,  2048,  4096,  4097,   5120,   8191,   8192,
    12287, 12288, 16384, 32768, 65529, 65536, 100001, 131072, 262143, 262144};

// Several built modules as one: the header once, then every module's entries (their names and
// shared symbols are unique per spec).
std::string join_modules(const std::vector<BuiltNorm>& built) {
  std::string out;
  for (std::size_t i = 0; i < built.size(); ++i) {
    const std::string& ptx = built[i].ptx;
    const std::size_t body = ptx.find(".address_size 64");
    REQUIRE(body != std::string::npos);
    out += i == 0 ? ptx : ptx.substr(body + std::string(".address_size 64").size());
  }
  return out;
}

// The runtime's small-batch variant of either direction (1) or its default (0): the forward's
// persistent CTAs prefetching rows, the backward in one launch.
void set_alternate(NormSpec& spec, std::uint32_t alternate) {
  if (spec.kind == NormKind::LayerNormFwd || spec.kind == NormKind::RmsNormFwd) {
    spec.knobs.prefetch_rows = alternate;
  } else {
    spec.knobs.single_launch = alternate;
  }
}

struct Group {
  std::string label;
  std::vector<BuiltNorm> built;
};

// One spec of `kind`, `dtype` and `arch` at each width of kWidths from `min_width` on, its knobs
// set by `set`.
Group widths_group(std::string label, NormKind kind, DType dtype, Arch arch,
                   const std::function<void(NormSpec&)>& set, std::uint32_t min_width = 1) {
  Group g{std::move(label), {}};
  for (std::uint32_t width : kWidths) {
    if (width < min_width) continue;
    NormSpec spec = spec_of(kind, dtype, width);
    spec.arch = arch;
    set(spec);
    g.built.push_back(build_norm(spec));
  }
  return g;
}

struct Outcome {
  std::string label;
  PtxasResult result;
};

// A persistent grid is sized for ctas_per_sm CTAs an SM: the registers ptxas gave each of its
// entries, its threads and its shared memory must let that many stay resident, or the CTAs past
// them wait for a second wave.
void check_persistent_ctas_fit(const BuiltNorm& b, const PtxasResult& result) {
  const DeviceModel& d = b.spec.device;
  const std::uint32_t ctas_per_sm = b.chosen.ctas_per_sm.value_or(1);
  for (const LaunchStep& step : b.steps) {
    if (step.grid.kind != GridRule::Kind::Persistent) continue;
    for (const PtxasEntry& e : result.entries) {
      if (e.name != step.contract.entry) continue;
      // Registers are allocated a warp at a time in units of 256: 8 a thread.
      const std::uint32_t per_cta = (e.registers + 7) / 8 * 8 * step.contract.block_threads;
      INFO(e.name << " (" << d.name << "): " << e.registers << " registers × "
                  << step.contract.block_threads << " threads, grid sized for " << ctas_per_sm
                  << " CTAs an SM of " << d.registers_per_sm << " registers");
      CHECK(per_cta * ctas_per_sm <= d.registers_per_sm);
    }
    // And by threads and by shared memory: each CTA's static and dynamic bytes and the driver's
    // reserve.
    const KernelContract& c = step.contract;
    INFO(c.entry << " (" << d.name << "): " << c.block_threads << " threads, "
                 << c.static_shared_bytes << " + " << c.dynamic_shared_bytes
                 << " bytes of shared memory, grid sized for " << ctas_per_sm << " CTAs an SM");
    CHECK(c.block_threads * ctas_per_sm <= d.max_threads_per_sm);
    CHECK((c.static_shared_bytes + c.dynamic_shared_bytes + d.shared_reserved_per_block) *
              ctas_per_sm <=
          d.shared_per_sm);
  }
}

void assemble_all(std::vector<Group> groups, const char* arch_for_all = nullptr) {
  std::vector<Outcome> outcomes(groups.size());
  std::atomic<std::size_t> next{0};
  const auto worker = [&] {
    for (std::size_t i = next++; i < groups.size(); i = next++) {
      const std::string arch(arch_for_all ? arch_for_all : arch_name(groups[i].built[0].spec.arch));
      outcomes[i] = {groups[i].label, run_ptxas(join_modules(groups[i].built), arch)};
    }
  };
  auto a = std::async(std::launch::async, worker);
  auto b = std::async(std::launch::async, worker);
  a.get();
  b.get();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const Outcome& o = outcomes[i];
    INFO(o.label << "\n" << o.result.log.substr(0, 4000));
    REQUIRE(o.result.ok());
    std::size_t entries = 0;
    for (const BuiltNorm& b : groups[i].built) entries += b.steps.size();
    REQUIRE(o.result.entries.size() == entries);
    for (const PtxasEntry& e : o.result.entries) {
      INFO(o.label << ": " << e.name << " uses " << e.registers << " registers, "
                   << e.spill_store_bytes << " bytes of spill stores");
      CHECK(e.spill_store_bytes == 0);
      CHECK(e.spill_load_bytes == 0);
    }
    for (const BuiltNorm& b : groups[i].built) check_persistent_ctas_fit(b, o.result);
  }
}

// Every kernel of `kind` as planned for each of `presets`, for the preset's arch: each dtype and
// weight dtype at every width, also in the runtime's small-batch variant (same entry names for the
// forward, so a group of its own): the forward as persistent CTAs prefetching rows, the backward in
// one launch. Presets often plan alike: a module whose PTX an earlier preset produced already is
// assembled once.
// A preset and the widths its plans are assembled at.
struct PresetWidths {
  const char* preset;
  const std::vector<std::uint32_t>& widths;
};

void assemble_kind(NormKind kind, std::initializer_list<PresetWidths> presets) {
  std::vector<Group> groups;
  std::set<std::string> seen;
  const bool forward = !is_backward(kind);
  for (const auto& [preset, widths] : presets) {
    const DeviceModel& device = device_preset(preset);
    for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
      for (DType weights : {dtype, DType::F32}) {
        if (dtype == DType::F32 && weights != dtype) continue;
        for (const std::uint32_t alternate : {0u, 1u}) {
          Group g;
          g.label = fmt::format("{} {} w{} {} ({}) {} {}", kind_name(kind), dtype_name(dtype),
                                dtype_name(weights), preset, arch_name(device.arch()),
                                forward ? "prefetch_rows" : "single_launch", alternate);
          for (std::uint32_t width : widths) {
            NormSpec spec = spec_for_device(kind, dtype, weights, width, device);
            set_alternate(spec, alternate);
            // Forward prefetching only where the runtime would choose it.
            if (alternate == 1 && forward && forward_prefetch_batch_limit(spec) == 0) continue;
            BuiltNorm built = build_norm(spec);
            if (seen.insert(built.ptx).second) g.built.push_back(std::move(built));
          }
          if (!g.built.empty()) groups.push_back(std::move(g));
        }
      }
    }
  }
  assemble_all(std::move(groups));
}

// Widths for the presets whose limits another preset of their family shares but for the SM count
// and the L2 (h100, b200, l40s, rtx3090, a10): the edges, a ragged width and the widest rows.
const std::vector<std::uint32_t> kFewWidths = {1, 7, 100, 1151, 4097, 8192, 16384, 65536};

// Each family's presets: every width for one preset of each shape of limits (227 KB and 2048
// threads an SM; 163 KB; 99 KB and 1536 threads), fewer for the others.
const std::initializer_list<PresetWidths> kHopperAndLater = {
    {"h200", kWidths}, {"h100", kFewWidths}, {"b200", kFewWidths}};
const std::initializer_list<PresetWidths> kAmpereAndAda = {{"a100", kWidths},
                                                           {"rtx4090", kWidths},
                                                           {"l40s", kFewWidths},
                                                           {"rtx3090", kFewWidths},
                                                           {"a10", kFewWidths}};

}  // namespace

// One case per kernel and family of presets, so that CTest assembles them on every core.
TEST_CASE("every layer norm forward assembles without spills for the sm_90/sm_100 presets",
          "[ptxas][slow]") {
  assemble_kind(NormKind::LayerNormFwd, kHopperAndLater);
}
TEST_CASE("every layer norm forward assembles without spills for the sm_80 presets",
          "[ptxas][slow]") {
  assemble_kind(NormKind::LayerNormFwd, kAmpereAndAda);
}
TEST_CASE("every layer norm backward assembles without spills for the sm_90/sm_100 presets",
          "[ptxas][slow]") {
  assemble_kind(NormKind::LayerNormBwd, kHopperAndLater);
}
TEST_CASE("every layer norm backward assembles without spills for the sm_80 presets",
          "[ptxas][slow]") {
  assemble_kind(NormKind::LayerNormBwd, kAmpereAndAda);
}
TEST_CASE("every RMS norm forward assembles without spills for the sm_90/sm_100 presets",
          "[ptxas][slow]") {
  assemble_kind(NormKind::RmsNormFwd, kHopperAndLater);
}
TEST_CASE("every RMS norm forward assembles without spills for the sm_80 presets",
          "[ptxas][slow]") {
  assemble_kind(NormKind::RmsNormFwd, kAmpereAndAda);
}
TEST_CASE("every RMS norm backward assembles without spills for the sm_90/sm_100 presets",
          "[ptxas][slow]") {
  assemble_kind(NormKind::RmsNormBwd, kHopperAndLater);
}
TEST_CASE("every RMS norm backward assembles without spills for the sm_80 presets",
          "[ptxas][slow]") {
  assemble_kind(NormKind::RmsNormBwd, kAmpereAndAda);
}

namespace {

void assemble_l2_stream(NormKind kind) {
  std::vector<Group> groups;
  for (DType dtype : {DType::F32, DType::F16}) {
    for (Arch arch : {Arch::Sm80, Arch::Sm90}) {
      // f16 rows with L1 priorities on the rows read again as well.
      const bool l1 = dtype == DType::F16;
      groups.push_back(
          widths_group(fmt::format("{} {} {} l2_stream{}", kind_name(kind), dtype_name(dtype),
                                   arch_name(arch), l1 ? " l1_rereads" : ""),
                       kind, dtype, arch, [&](NormSpec& spec) {
                         spec.knobs.l2_stream = true;
                         if (l1) spec.knobs.l1_rereads = true;
                       }));
    }
  }
  assemble_all(std::move(groups));
}

}  // namespace

TEST_CASE("L2 cache policies (l2_stream) assemble without spills: layer norm forward",
          "[ptxas][slow]") {
  assemble_l2_stream(NormKind::LayerNormFwd);
}
TEST_CASE("L2 cache policies (l2_stream) assemble without spills: layer norm backward",
          "[ptxas][slow]") {
  assemble_l2_stream(NormKind::LayerNormBwd);
}
TEST_CASE("L2 cache policies (l2_stream) assemble without spills: RMS norm forward",
          "[ptxas][slow]") {
  assemble_l2_stream(NormKind::RmsNormFwd);
}
TEST_CASE("L2 cache policies (l2_stream) assemble without spills: RMS norm backward",
          "[ptxas][slow]") {
  assemble_l2_stream(NormKind::RmsNormBwd);
}

TEST_CASE("layer norm statistics in one pass (one_pass_stats) assemble without spills",
          "[ptxas][slow]") {
  // In the default placement, and read again from L2 (the shape it is for) at 32 registers,
  // 56 for f32 (ptxas 13.0 spills a word at 48 for 5120 and 12288), 8 more for a row that ends in
  // lone elements (as the planner reads rows again), on rows of ≥ 2048 elements.
  std::vector<Group> groups;
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    for (Arch arch : {Arch::Sm80, Arch::Sm90}) {
      for (const bool reread : {false, true}) {
        const auto set = [&](NormSpec& spec) {
          spec.knobs.one_pass_stats = 1;
          if (reread) {
            spec.knobs.register_chunks = 0;
            spec.knobs.staged_chunks = 0;
            spec.knobs.l2_stream = 1;
            const bool lone = spec.width % (16 / dtype_bytes(dtype)) != 0;
            spec.knobs.max_registers = (dtype == DType::F32 ? 56 : 32) + (lone ? 8 : 0);
          }
        };
        groups.push_back(
            widths_group(fmt::format("ln_fwd {} {} one_pass_stats{}", dtype_name(dtype),
                                     arch_name(arch), reread ? ", read again" : ""),
                         NormKind::LayerNormFwd, dtype, arch, set, reread ? 2048 : 1));
      }
    }
  }
  assemble_all(std::move(groups));
}

namespace {

// Every variant of `kind` (affine, residual add, outputs) at the widths where plans change shape,
// for sm_80 and sm_90, in the runtime's default and small-batch kernels.
void assemble_variants(NormKind kind) {
  std::vector<Group> groups;
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (Arch arch : {Arch::Sm80, Arch::Sm90}) {
      for (const NormSpec& variant : variants_of(spec_of(kind, dtype, 1))) {
        // The small-batch kernels in a group of their own (a forward's keep its entry names).
        for (const bool small : {false, true}) {
          Group g;
          g.label = fmt::format("{} {} {} affine {} residual {} outputs {}{}", kind_name(kind),
                                dtype_name(dtype), arch_name(arch), affine_name(variant.affine),
                                residual_name(variant.residual), outputs_name(variant.outputs),
                                small ? " (small-batch)" : "");
          std::set<std::string> seen;
          for (std::uint32_t width : {1u, 7u, 1151u, 4096u, 4097u, 8192u, 16384u, 65536u}) {
            NormSpec spec = variant;
            spec.width = width;
            spec.arch = arch;
            BuiltNorm built = build_norm(small ? spec_for_batch(spec, 1) : spec);
            if (seen.insert(built.ptx).second) g.built.push_back(std::move(built));
          }
          groups.push_back(std::move(g));
        }
      }
    }
  }
  assemble_all(std::move(groups));
}

}  // namespace

TEST_CASE("every variant assembles without spills: layer norm forward", "[ptxas]") {
  assemble_variants(NormKind::LayerNormFwd);
}
TEST_CASE("every variant assembles without spills: layer norm backward", "[ptxas]") {
  assemble_variants(NormKind::LayerNormBwd);
}
TEST_CASE("every variant assembles without spills: RMS norm forward", "[ptxas]") {
  assemble_variants(NormKind::RmsNormFwd);
}
TEST_CASE("every variant assembles without spills: RMS norm backward", "[ptxas]") {
  assemble_variants(NormKind::RmsNormBwd);
}

TEST_CASE("RMS forwards read again assemble without spills in loop groups of 2", "[ptxas]") {
  // The rows ≥ 4096 wide that the RMS forward reads again by default (32 registers), with two
  // chunks' loads issued together. (Groups of 4 spill a word for f16 16384 on ptxas 13.0.)
  std::vector<Group> groups;
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    for (Arch arch : {Arch::Sm80, Arch::Sm90}) {
      groups.push_back(widths_group(
          fmt::format("rms_fwd {} {} loop_group 2", dtype_name(dtype), arch_name(arch)),
          NormKind::RmsNormFwd, dtype, arch, [](NormSpec& spec) { spec.knobs.loop_group = 2; },
          4096));
    }
  }
  assemble_all(std::move(groups));
}

TEST_CASE("rings three and four rows deep (prefetch_rows 3, 4) assemble without spills",
          "[ptxas][slow]") {
  // The backwards whose rows sit whole in registers (the ring's condition), 16-bit rows (the
  // ring's default dtype), one group per depth and architecture.
  std::vector<Group> groups;
  for (const std::uint32_t depth : {3u, 4u}) {
    for (Arch arch : {Arch::Sm80, Arch::Sm90}) {
      Group g{fmt::format("backwards prefetch_rows {} {}", depth, arch_name(arch)), {}};
      for (NormKind kind : {NormKind::LayerNormBwd, NormKind::RmsNormBwd}) {
        for (DType dtype : {DType::F16, DType::BF16}) {
          for (std::uint32_t width : {1024u, 3000u, 4096u, 8192u}) {
            NormSpec spec = spec_of(kind, dtype, width);
            spec.arch = arch;
            spec.knobs.prefetch_rows = depth;
            g.built.push_back(build_norm(spec));
          }
        }
      }
      groups.push_back(std::move(g));
    }
  }
  assemble_all(std::move(groups));
}

TEST_CASE("partial rows added up over a cluster (partial_cluster) assemble without spills",
          "[ptxas]") {
  // Backwards of whole rows whose clusters of 2 and 4 CTAs add their partial rows up in
  // distributed shared memory, every dtype, to 16384 columns.
  std::vector<Group> groups;
  for (std::uint32_t cluster : {2u, 4u}) {  // a group a size: the kernels' names are the same
    Group g{fmt::format("backwards partial_cluster {} sm_90", cluster), {}};
    for (NormKind kind : {NormKind::LayerNormBwd, NormKind::RmsNormBwd}) {
      for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
        for (std::uint32_t width : {1024u, 3000u, 4096u, 8192u, 16384u}) {
          NormSpec spec = spec_of(kind, dtype, width);
          spec.knobs.partial_cluster = cluster;
          g.built.push_back(build_norm(spec));
          CHECK(g.built.back().chosen.partial_cluster == cluster);
        }
      }
    }
    groups.push_back(std::move(g));
  }
  assemble_all(std::move(groups));
}

TEST_CASE("deterministic portable's backwards assemble without spills on sm_80 and sm_90",
          "[ptxas]") {
  // Row slots writing their own partial rows, 32-slice column reduces, split rows' clusters.
  std::vector<Group> groups;
  for (const char* device : {"a100", "h100"}) {
    Group g{fmt::format("backwards deterministic portable, {}", device), {}};
    for (NormKind kind : {NormKind::LayerNormBwd, NormKind::RmsNormBwd}) {
      for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
        for (std::uint32_t width : {7u, 100u, 1151u, 4096u, 20000u}) {
          NormSpec spec = spec_for_device(kind, dtype, dtype, width, device_preset(device));
          spec.knobs.deterministic = Determinism::Portable;
          g.built.push_back(build_norm(spec));
          CHECK(g.built.back().chosen.deterministic == Determinism::Portable);
        }
      }
    }
    groups.push_back(std::move(g));
  }
  assemble_all(std::move(groups));
}

namespace {

void assemble_narrow_vectors(NormKind kind) {
  std::vector<Group> groups;
  const bool forward = !is_backward(kind);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    // Also the small-batch variants, where the runtime would launch them.
    for (const std::uint32_t alternate : {0u, 1u}) {
      Group g;
      g.label = fmt::format("{} {} narrow vectors, {} {}", kind_name(kind), dtype_name(dtype),
                            forward ? "prefetch_rows" : "single_launch", alternate);
      for (std::uint32_t vec : {1u, 2u, 4u, 8u}) {
        if (vec * static_cast<std::uint32_t>(dtype_bytes(dtype)) > 16) continue;
        for (std::uint32_t width : {3u, 7u, 127u, 1151u, 4097u}) {
          NormSpec spec = spec_of(kind, dtype, width);
          spec.knobs.vector_elems = vec;
          set_alternate(spec, alternate);
          if (alternate == 1 && forward && forward_prefetch_batch_limit(spec) == 0) continue;
          g.built.push_back(build_norm(spec));
          CHECK(g.built.back().chosen.vector_elems == vec);
        }
      }
      if (!g.built.empty()) groups.push_back(std::move(g));
    }
  }
  assemble_all(std::move(groups));
}

}  // namespace

TEST_CASE("narrower vectors assemble for odd widths: layer norm forward", "[ptxas][slow]") {
  assemble_narrow_vectors(NormKind::LayerNormFwd);
}
TEST_CASE("narrower vectors assemble for odd widths: layer norm backward", "[ptxas][slow]") {
  assemble_narrow_vectors(NormKind::LayerNormBwd);
}
TEST_CASE("narrower vectors assemble for odd widths: RMS norm forward", "[ptxas][slow]") {
  assemble_narrow_vectors(NormKind::RmsNormFwd);
}
TEST_CASE("narrower vectors assemble for odd widths: RMS norm backward", "[ptxas][slow]") {
  assemble_narrow_vectors(NormKind::RmsNormBwd);
}

namespace {

// A model's numerics (`numerics` sets them) on every kind, at the widths where plans change shape,
// for sm_80 and sm_90, with and without the residual add.
void assemble_numerics(const std::string& label, const std::function<void(NormSpec&)>& numerics) {
  std::vector<Group> groups;
  for (NormKind kind : {NormKind::LayerNormFwd, NormKind::LayerNormBwd, NormKind::RmsNormFwd,
                        NormKind::RmsNormBwd}) {
    for (const auto& [dtype, weights] : {std::pair{DType::F32, DType::F32},
                                         {DType::BF16, DType::BF16},
                                         {DType::F16, DType::F32}}) {
      for (Arch arch : {Arch::Sm80, Arch::Sm90}) {
        for (Residual residual : {Residual::None, Residual::Add}) {
          Group g;
          g.label =
              fmt::format("{}: {} {}/{} {} residual {}", label, kind_name(kind), dtype_name(dtype),
                          dtype_name(weights), arch_name(arch), residual_name(residual));
          for (std::uint32_t width : {1u, 1151u, 4097u, 16384u, 65536u}) {
            NormSpec spec = spec_of(kind, dtype, width);
            spec.weight_dtype = weights;
            spec.arch = arch;
            spec.residual = residual;
            numerics(spec);
            g.built.push_back(build_norm(spec));
          }
          groups.push_back(std::move(g));
        }
      }
    }
  }
  assemble_all(std::move(groups));
}

}  // namespace

TEST_CASE("the weight offset assembles without spills", "[ptxas]") {
  assemble_numerics("weight offset 1", [](NormSpec& s) { s.weight_offset = 1.0f; });
}
TEST_CASE("casting llama and gemma assemble without spills", "[ptxas]") {
  assemble_numerics("casting llama", [](NormSpec& s) { s.casting = Casting::Llama; });
  assemble_numerics("casting gemma, weight offset 1", [](NormSpec& s) {
    s.casting = Casting::Gemma;
    s.weight_offset = 1.0f;
  });
}
TEST_CASE("row groups assemble without spills", "[ptxas]") {
  assemble_numerics("row groups 8, 64 elements apart", [](NormSpec& s) {
    s.row_groups = 8;
    s.group_stride = (s.width + 7) / 8 * 8 + 64;
  });
}
TEST_CASE("quantized outputs assemble without spills", "[ptxas]") {
  std::vector<Group> groups;
  for (const Quant quant : {Quant::Fp8E4m3, Quant::Fp8E5m2, Quant::Int8}) {
    for (NormKind kind : {NormKind::LayerNormFwd, NormKind::RmsNormFwd}) {
      for (const DType dtype : {DType::F32, DType::F16, DType::BF16}) {
        for (Arch arch : {Arch::Sm80, Arch::Sm89, Arch::Sm90}) {
          if (arch != Arch::Sm90 && quant != Quant::Int8) continue;  // FP8: sm_90
          for (Residual residual : {Residual::None, Residual::Add}) {
            Group g;
            g.label =
                fmt::format("quant {}: {} {} {} residual {}", quant_name(quant), kind_name(kind),
                            dtype_name(dtype), arch_name(arch), residual_name(residual));
            // Up to the widest row one CTA holds (64 KiB).
            for (std::uint32_t width : {1u, 1151u, 4097u, 65536u / dtype_bytes(dtype)}) {
              NormSpec spec = spec_of(kind, dtype, width);
              spec.weight_dtype = dtype;
              spec.arch = arch;
              spec.ptx_version = default_ptx_version(arch);
              spec.residual = residual;
              spec.quant = quant;
              g.built.push_back(build_norm(spec));
            }
            groups.push_back(std::move(g));
          }
        }
      }
    }
  }
  assemble_all(std::move(groups));
}

TEST_CASE("quantized outputs with static and group128 scales assemble without spills", "[ptxas]") {
  std::vector<Group> groups;
  for (const QuantScale scale : {QuantScale::Static, QuantScale::Group128}) {
    for (NormKind kind : {NormKind::LayerNormFwd, NormKind::RmsNormFwd}) {
      for (const DType dtype : {DType::F32, DType::F16, DType::BF16}) {
        for (Arch arch : {Arch::Sm80, Arch::Sm90}) {
          const Quant quant = arch == Arch::Sm90 ? Quant::Fp8E4m3 : Quant::Int8;
          Group g;
          g.label =
              fmt::format("quant {} scale {}: {} {} {}", quant_name(quant), quant_scale_name(scale),
                          kind_name(kind), dtype_name(dtype), arch_name(arch));
          for (std::uint32_t width : {1u, 1151u, 4097u, 65536u / dtype_bytes(dtype)}) {
            NormSpec spec = spec_of(kind, dtype, width);
            spec.weight_dtype = dtype;
            spec.arch = arch;
            spec.ptx_version = default_ptx_version(arch);
            spec.residual = Residual::Add;
            spec.quant = quant;
            spec.quant_scale = scale;
            g.built.push_back(build_norm(spec));
          }
          groups.push_back(std::move(g));
        }
      }
    }
  }
  assemble_all(std::move(groups));
}

TEST_CASE("mxfp8 and nvfp4 outputs assemble for sm_100a without spills", "[ptxas]") {
  std::vector<Group> groups;
  for (const Quant quant : {Quant::Mxfp8, Quant::Nvfp4}) {
    for (NormKind kind : {NormKind::LayerNormFwd, NormKind::RmsNormFwd}) {
      for (const DType dtype : {DType::F32, DType::F16, DType::BF16}) {
        for (Residual residual : {Residual::None, Residual::Add}) {
          Group g;
          g.label = fmt::format("quant {}: {} {} sm_100a residual {}", quant_name(quant),
                                kind_name(kind), dtype_name(dtype), residual_name(residual));
          for (std::uint32_t width : {2u, 1150u, 4098u, 65536u / dtype_bytes(dtype)}) {
            NormSpec spec = spec_of(kind, dtype, width);
            spec.weight_dtype = dtype;
            spec.device = device_preset("b200");
            spec.arch = Arch::Sm100a;
            spec.ptx_version = default_ptx_version(Arch::Sm100a);
            spec.residual = residual;
            spec.quant = quant;
            g.built.push_back(build_norm(spec));
          }
          groups.push_back(std::move(g));
        }
      }
    }
  }
  assemble_all(std::move(groups));
}

// What build_norm promises a host: entries, parameters in order, blocks, grid rules, workspace;
// and that generating a kernel's PTX stays cheap.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "occurrences.hpp"
#include "ptxdsl/dsl/error.hpp"
#include "ptxdsl/kernels/norm.hpp"
#include "spec_of.hpp"

using namespace ptxdsl;
using namespace ptxdsl::kernels;

namespace {

std::vector<std::string> names(const KernelContract& c) {
  std::vector<std::string> out;
  for (const ParamSpec& p : c.params) out.push_back(p.name);
  return out;
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("forward contracts: parameters in order, types, rows a CTA", "[contract]") {
  const BuiltNorm ln = build_norm(spec_of(NormKind::LayerNormFwd, DType::F16, 4096));
  REQUIRE(ln.steps.size() == 1);
  const KernelContract& c = ln.steps[0].contract;
  REQUIRE(c.entry == "ln_fwd_f16_wf16_n4096");
  REQUIRE(names(c) == Names{"x", "w", "b", "y", "mean", "rstd", "batch", "stride", "eps"});
  REQUIRE(c.params[0].pointer);
  REQUIRE(c.params[0].element == ScalarType::F16);
  REQUIRE(c.params[4].element == ScalarType::F32);
  REQUIRE(c.params[6].type == ScalarType::U32);
  REQUIRE(c.params[8].type == ScalarType::F32);
  REQUIRE(c.block_required);
  REQUIRE(c.block_threads == *ln.chosen.threads_per_row * *ln.chosen.rows_per_cta);
  REQUIRE(ln.ptx.find(".entry ln_fwd_f16_wf16_n4096") != std::string::npos);
  REQUIRE(ln.workspace_bytes(1000) == 0);
  REQUIRE(ln.partial_rows(1000) == 0);

  const BuiltNorm rms = build_norm(spec_of(NormKind::RmsNormFwd, DType::BF16, 100));
  REQUIRE(names(rms.steps[0].contract) == Names{"x", "w", "y", "rstd", "batch", "stride", "eps"});
  const GridRule& g = rms.steps[0].grid;
  REQUIRE(g.kind == GridRule::Kind::RowsPerCta);
  REQUIRE(g.rows_per_cta == *rms.chosen.rows_per_cta);
  REQUIRE(g.grid(1, 100) == 1);
  REQUIRE(g.grid(g.rows_per_cta + 1, 100) == 2);
  REQUIRE(rms.module->find(rms.steps[0].contract.entry).finalized());
}

TEST_CASE("backward contracts: persistent step, column reduce, workspace", "[contract]") {
  NormSpec s = spec_of(NormKind::LayerNormBwd, DType::F16, 1151);
  s.weight_dtype = DType::F32;
  s.knobs.sm_count = 10;
  s.knobs.ctas_per_sm = 2;
  const BuiltNorm ln = build_norm(s);
  REQUIRE(ln.steps.size() == 2);
  const KernelContract& main = ln.steps[0].contract;
  REQUIRE(main.entry == "ln_bwd_f16_wf32_n1151");
  REQUIRE(names(main) == Names{"x", "w", "mean", "rstd", "dy", "dx", "partial_dw", "partial_db",
                               "batch", "stride"});
  REQUIRE(main.params[1].element == ScalarType::F32);
  const GridRule& g = ln.steps[0].grid;
  REQUIRE(g.kind == GridRule::Kind::Persistent);
  REQUIRE(g.max_ctas == 20);
  REQUIRE(g.grid(1, 1151) == 1);
  REQUIRE(g.grid(100000, 1151) == 20);
  const KernelContract& reduce = ln.steps[1].contract;
  REQUIRE(reduce.entry == "ln_bwd_dwdb_f16_wf32_n1151");
  REQUIRE(names(reduce) == Names{"partial_dw", "partial_db", "dw", "db", "partial_rows"});
  REQUIRE(reduce.params[2].element == ScalarType::F32);
  REQUIRE(ln.steps[1].grid.kind == GridRule::Kind::Columns);
  REQUIRE(ln.steps[1].grid.grid(5, 1151) == (1151 + 31) / 32);
  // One f32 partial row per CTA, 16-byte aligned rows, dw then db.
  REQUIRE(ln.partial_pitch == 1152);
  REQUIRE(ln.partial_rows(100000) == 20);
  REQUIRE(ln.partial_db_offset(100000) == 20ull * 1152 * 4);
  REQUIRE(ln.workspace_bytes(100000) == 2ull * 20 * 1152 * 4);
  REQUIRE(ln.workspace_bytes(1) == 2ull * 1152 * 4);

  const BuiltNorm rms = build_norm(spec_of(NormKind::RmsNormBwd, DType::F32, 8192));
  REQUIRE(names(rms.steps[0].contract) ==
          Names{"x", "w", "rstd", "dy", "dx", "partial_dw", "batch", "stride"});
  REQUIRE(names(rms.steps[1].contract) == Names{"partial_dw", "dw", "partial_rows"});
  REQUIRE(rms.workspace_bytes(4096) == std::uint64_t{rms.partial_rows(4096)} * 8192 * 4);
  REQUIRE(rms.partial_rows(4096) <= *rms.chosen.sm_count * *rms.chosen.ctas_per_sm);
  REQUIRE_FALSE(rms.ticketed_rows);
  REQUIRE(rms.partial_dw_offset() == 0u);

  // Rows from a counter (row_order tickets): its 16 bytes open the workspace, the partial rows
  // follow 256 bytes in, on whole L2 lines.
  NormSpec ticketed = spec_of(NormKind::LayerNormBwd, DType::F16, 1151);
  ticketed.knobs.row_order = RowOrder::Tickets;
  const BuiltNorm tk = build_norm(ticketed);
  REQUIRE(tk.ticketed_rows);
  REQUIRE(names(tk.steps[0].contract) == Names{"x", "w", "mean", "rstd", "dy", "dx", "partial_dw",
                                               "partial_db", "row_counter", "batch", "stride"});
  REQUIRE(names(tk.steps[1].contract) ==
          Names{"partial_dw", "partial_db", "dw", "db", "partial_rows"});
  REQUIRE(tk.partial_dw_offset() == 256u);
  const std::uint64_t rows = tk.partial_rows(100000);
  REQUIRE(tk.partial_db_offset(100000) == 256 + rows * 1152 * 4);
  REQUIRE(tk.workspace_bytes(100000) == 256 + 2 * rows * 1152 * 4);
}

TEST_CASE("deterministic portable: partial rows by the batch alone, pins refused by name",
          "[contract]") {
  // One row a CTA: Q = clamp(bit_ceil(ceil(batch / 16)), 8, 1024) partial rows, a walker each
  // (fewer where the batch has fewer rows), on every preset alike (the H100's 132 SMs and the
  // A100's 108 do not show).
  for (const DeviceModel& device : {device_preset("h100"), device_preset("a100")}) {
    NormSpec ln = spec_for_device(NormKind::LayerNormBwd, DType::F16, DType::F16, 4096, device);
    ln.knobs.deterministic = Determinism::Portable;
    const BuiltNorm b = build_norm(ln);
    INFO(device.name);
    REQUIRE(b.chosen.deterministic == Determinism::Portable);
    REQUIRE(b.plan.tuned_by.empty());
    REQUIRE(b.steps.size() == 2);
    for (const auto& [batch, rows] : {std::pair{1u, 1u},
                                      {5u, 5u},
                                      {16u, 8u},
                                      {130u, 16u},
                                      {300u, 32u},
                                      {4096u, 256u},
                                      {100000u, 1024u}}) {
      REQUIRE(b.partial_rows(batch) == rows);
      REQUIRE(b.workspace_bytes(batch) == std::uint64_t{rows} * 4096 * 4 * 2);
    }
    REQUIRE(b.steps[1].contract.block_threads == 32 * 32);  // the fixed 32 slices
    REQUIRE(small_batch_limit(ln) == 0);                    // no one-launch class
    REQUIRE(build_norm(b.plan.spec).ptx == b.ptx);
    NormSpec again = ln;
    again.knobs = b.chosen;
    REQUIRE(build_norm(again).ptx == b.ptx);
  }
  // Short rows share a CTA, each row slot its own partial row: at least 256 of them, so that any
  // rows_per_cta the rules give (256 / threads) divides them.
  NormSpec short_rows = spec_of(NormKind::RmsNormBwd, DType::F16, 7);
  short_rows.knobs.deterministic = Determinism::Portable;
  const BuiltNorm s = build_norm(short_rows);
  REQUIRE(s.plan.rows_per_cta == 256);
  REQUIRE(s.partial_rows(7) == 256);            // rows past the batch: zeros
  REQUIRE(s.steps[0].grid.grid(3000, 7) == 4);  // Q = bit_ceil(750), 256 slots a CTA
  REQUIRE(s.partial_rows(3000) == 1024);
  REQUIRE(s.partial_rows(5000) == 2048);
  REQUIRE(s.partial_rows(1000000) == 16384);
  REQUIRE(s.plan.dynamic_shared_bytes(s.spec) == 0);  // nothing merges
  // Pins that would make the order the plan's are refused, naming them.
  const auto refused = [&](NormSpec spec, const std::function<void(NormKnobs&)>& pin) {
    spec.knobs.deterministic = Determinism::Portable;
    pin(spec.knobs);
    try {
      validate(spec);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const NormSpec rms =
      spec_for_device(NormKind::RmsNormBwd, DType::BF16, DType::BF16, 4096, device_preset("h100"));
  CHECK_THAT(refused(rms, [](NormKnobs& k) { k.single_launch = true; }),
             Catch::Contains("single_launch 1 sums them by the device's tiles"));
  CHECK_THAT(refused(rms, [](NormKnobs& k) { k.row_order = RowOrder::Tickets; }),
             Catch::Contains("row_order tickets"));
  CHECK_THAT(refused(rms, [](NormKnobs& k) { k.partial_cluster = 2; }),
             Catch::Contains("partial_cluster 2"));
  CHECK_THAT(refused(rms, [](NormKnobs& k) { k.reduce_slices = 8; }),
             Catch::Contains("adds 32 slices, got reduce_slices 8"));
  CHECK_THAT(refused(rms,
                     [](NormKnobs& k) {
                       k.threads_per_row = 32;
                       k.rows_per_cta = 16;
                     }),
             Catch::EndsWith("a row of 8192 bytes takes rows_per_cta dividing 8, got 16"));
  CHECK(refused(rms, [](NormKnobs& k) { k.threads_per_row = 64; }).empty());  // 4 rows a CTA
  CHECK(refused(short_rows, [](NormKnobs& k) { k.rows_per_cta = 64; }).empty());
  // Forwards and dx alone have no dw/db: the level changes nothing there.
  for (NormSpec other : {spec_of(NormKind::RmsNormFwd, DType::F16, 4096),
                         spec_of(NormKind::RmsNormBwd, DType::F16, 4096)}) {
    if (is_backward(other.kind)) other.outputs = Outputs::Dx;
    const std::string ptx = build_norm(other).ptx;
    other.knobs.deterministic = Determinism::Portable;
    CHECK(build_norm(other).ptx == ptx);
  }
}

TEST_CASE("deterministic 0 lets the heuristic take rows from a counter where that measured faster",
          "[contract]") {
  // The RMS backward of 16-bit rows staged by cp.async: by default (and with deterministic 1) dw
  // is bit-identical run to run, its rows on the fixed walk.
  NormSpec rms = spec_of(NormKind::RmsNormBwd, DType::BF16, 16384);
  for (const std::optional<bool> det : {std::optional<bool>{}, {true}}) {
    rms.knobs.deterministic = det;
    const BuiltNorm fixed = build_norm(rms);
    REQUIRE_FALSE(fixed.ticketed_rows);
    REQUIRE(fixed.chosen.row_order == RowOrder::Fixed);
    REQUIRE(fixed.chosen.deterministic == true);
  }
  rms.knobs.deterministic = false;
  const BuiltNorm fast = build_norm(rms);
  REQUIRE(fast.ticketed_rows);
  REQUIRE(fast.chosen.row_order == RowOrder::Tickets);
  REQUIRE(fast.chosen.deterministic == false);
  REQUIRE(fast.ptx.find("atom.global.inc.u32") != std::string::npos);
  // An explicit row_order wins either way.
  rms.knobs.row_order = RowOrder::Fixed;
  REQUIRE_FALSE(build_norm(rms).ticketed_rows);
  rms.knobs.row_order = RowOrder::Tickets;
  rms.knobs.deterministic.reset();
  REQUIRE(build_norm(rms).chosen.deterministic == false);
  // Where tickets measured no faster, deterministic 0 changes nothing: layer norm, rows through
  // the ring, f32 rows, the one launch.
  for (NormSpec other : {spec_of(NormKind::LayerNormBwd, DType::F16, 12288),
                         spec_of(NormKind::RmsNormBwd, DType::BF16, 8192),
                         spec_of(NormKind::RmsNormBwd, DType::F32, 8192)}) {
    other.knobs.deterministic = false;
    const BuiltNorm b = build_norm(other);
    INFO(kind_name(other.kind) << " " << dtype_name(other.dtype) << " " << other.width);
    REQUIRE_FALSE(b.ticketed_rows);
    REQUIRE(b.chosen.deterministic == true);
  }
  NormSpec single = spec_of(NormKind::RmsNormBwd, DType::BF16, 16384);
  single.knobs.deterministic = false;
  single.knobs.single_launch = true;
  REQUIRE_FALSE(build_norm(single).ticketed_rows);
}

TEST_CASE("every knob can be set and is honoured", "[contract]") {
  NormSpec s = spec_of(NormKind::RmsNormFwd, DType::F16, 4096);
  s.knobs.threads_per_row = 256;
  s.knobs.rows_per_cta = 2;
  s.knobs.vector_elems = 4;
  s.knobs.register_chunks = 2;
  const BuiltNorm b = build_norm(s);
  REQUIRE(b.chosen.threads_per_row == 256u);
  REQUIRE(b.chosen.rows_per_cta == 2u);
  REQUIRE(b.chosen.vector_elems == 4u);
  REQUIRE(b.steps[0].contract.block_threads == 512);
  REQUIRE(b.steps[0].contract.entry == "rms_fwd_f16_wf16_n4096_v4");
  // 4096 / (256 × 4) = 4 chunks, 2 kept in registers: 2 staged for each of the 2 rows.
  REQUIRE(b.steps[0].contract.dynamic_shared_bytes == 2 * 2 * 256 * 4 * 2);
  REQUIRE(b.chosen.staged_chunks == 2u);
  // One of the two others staged, the last read again from global memory each pass.
  s.knobs.staged_chunks = 1;
  const BuiltNorm one = build_norm(s);
  REQUIRE(one.chosen.staged_chunks == 1u);
  REQUIRE(one.steps[0].contract.dynamic_shared_bytes == 2 * 1 * 256 * 4 * 2);

  // one_pass_stats: layer norm's two sums in one reduction (one barrier a row, not two); the
  // other kernels ignore it.
  const auto barriers = [](const std::string& ptx) { return occurrences(ptx, "bar.sync"); };
  NormSpec ln = spec_of(NormKind::LayerNormFwd, DType::F16, 8192);
  // The default for 16-bit layer norm rows; not for f32.
  REQUIRE(build_norm(ln).chosen.one_pass_stats == 1u);
  REQUIRE(build_norm(spec_of(NormKind::LayerNormFwd, DType::F32, 8192)).chosen.one_pass_stats ==
          0u);
  ln.knobs.one_pass_stats = 0;
  const BuiltNorm two_pass = build_norm(ln);
  REQUIRE(two_pass.chosen.one_pass_stats == 0u);
  ln.knobs.one_pass_stats = 1;
  const BuiltNorm one_pass = build_norm(ln);
  REQUIRE(one_pass.ptx == build_norm(spec_of(NormKind::LayerNormFwd, DType::F16, 8192)).ptx);
  REQUIRE(barriers(one_pass.ptx) + 1 == barriers(two_pass.ptx));
  NormSpec rms = spec_of(NormKind::RmsNormFwd, DType::F16, 8192);
  const std::string plain = build_norm(rms).ptx;
  rms.knobs.one_pass_stats = true;
  REQUIRE(build_norm(rms).ptx == plain);

  // overlap_reduce: the backward's reduce waits for the row step by griddepcontrol, and says so.
  // Two-launch backwards for sm_90 do by default (the rows signal as they end); sm_80 and
  // one-launch backwards have no reduce to overlap, and 0 turns it off.
  const BuiltNorm bwd_default = build_norm(spec_of(NormKind::RmsNormBwd, DType::F16, 8192));
  REQUIRE(bwd_default.chosen.overlap_reduce == true);
  REQUIRE(bwd_default.steps.size() == 2u);
  REQUIRE(bwd_default.steps[1].contract.waits_for_prior_grid);
  REQUIRE_FALSE(bwd_default.steps[0].contract.waits_for_prior_grid);
  REQUIRE(bwd_default.ptx.find("griddepcontrol.launch_dependents") != std::string::npos);
  NormSpec sm80 = spec_of(NormKind::RmsNormBwd, DType::F16, 8192);
  sm80.arch = Arch::Sm80;
  const BuiltNorm bwd_sm80 = build_norm(sm80);
  REQUIRE(bwd_sm80.chosen.overlap_reduce == false);
  REQUIRE(bwd_sm80.ptx.find("griddepcontrol") == std::string::npos);
  NormSpec serial = spec_of(NormKind::RmsNormBwd, DType::F16, 8192);
  serial.knobs.overlap_reduce = false;
  const BuiltNorm bwd_serial = build_norm(serial);
  REQUIRE(bwd_serial.ptx.find("griddepcontrol") == std::string::npos);
  REQUIRE_FALSE(bwd_serial.steps[1].contract.waits_for_prior_grid);
  NormSpec one_launch = spec_of(NormKind::RmsNormBwd, DType::F16, 8192);
  one_launch.knobs.single_launch = true;
  REQUIRE(build_norm(one_launch).chosen.overlap_reduce == false);

  // reduce_slices: warps of the column reduce. By default enough that each warp has at most 8 of
  // the partial rows (132 × 1 here: 32 warps); a knob sets it, and the CTA is 32 columns wide.
  REQUIRE(bwd_default.chosen.reduce_slices == 32u);
  REQUIRE(bwd_default.steps[1].contract.block_threads == 32 * 32);
  NormSpec few = spec_of(NormKind::RmsNormBwd, DType::F16, 8192);
  few.knobs.reduce_slices = 4;
  const BuiltNorm four = build_norm(few);
  REQUIRE(four.chosen.reduce_slices == 4u);
  REQUIRE(four.steps[1].contract.block_threads == 4 * 32);
  REQUIRE_FALSE(build_norm(one_launch).chosen.reduce_slices);

  // row_nc: .nc row loads unless set to 0 (x, dy, rstd plain; w and the partials keep .nc).
  const auto nc_loads = [](const std::string& ptx) { return occurrences(ptx, "ld.global.nc"); };
  NormSpec plain_spec = spec_of(NormKind::RmsNormBwd, DType::F16, 4096);
  const BuiltNorm nc_rows = build_norm(plain_spec);
  REQUIRE(nc_rows.chosen.row_nc == 1u);
  plain_spec.knobs.row_nc = 0;
  const BuiltNorm plain_rows = build_norm(plain_spec);
  REQUIRE(plain_rows.chosen.row_nc == 0u);
  REQUIRE(plain_rows.ptx.find("ld.global.L1::no_allocate.v4") != std::string::npos);
  REQUIRE(nc_loads(plain_rows.ptx) > 0u);
  REQUIRE(nc_loads(plain_rows.ptx) < nc_loads(nc_rows.ptx));

  // early_weights: the forwards' weights of register chunks loaded with the row. On by default
  // for layer norm rows held whole in registers by CTAs of ≥ 256 threads, one row a CTA, at 64
  // registers; off for the persistent (prefetching) forward, beside lone tail elements, for RMS,
  // and not a backward knob.
  NormSpec weights_early = spec_of(NormKind::LayerNormFwd, DType::F32, 8192);
  const BuiltNorm early_default = build_norm(weights_early);
  REQUIRE(early_default.chosen.early_weights == 1u);
  REQUIRE(early_default.chosen.max_registers == 64u);
  weights_early.knobs.early_weights = 0;
  REQUIRE(build_norm(weights_early).chosen.early_weights == 0u);
  weights_early.knobs.early_weights.reset();
  weights_early.knobs.prefetch_rows = 1;
  REQUIRE(build_norm(weights_early).chosen.early_weights == 0u);
  weights_early.knobs.prefetch_rows.reset();
  weights_early.width = 8190;
  REQUIRE(build_norm(weights_early).chosen.early_weights == 0u);
  weights_early.knobs.early_weights = 1;
  REQUIRE(build_norm(weights_early).chosen.early_weights == 1u);
  REQUIRE(build_norm(spec_of(NormKind::RmsNormFwd, DType::F16, 8192)).chosen.early_weights == 0u);
  REQUIRE(build_norm(spec_of(NormKind::LayerNormFwd, DType::F16, 1024)).chosen.early_weights == 0u);
  plain_spec.knobs.early_weights = 1;
  REQUIRE_FALSE(build_norm(plain_spec).chosen.early_weights);
}

TEST_CASE("max_registers and prefetch_rows are honoured; the forward's prefetch limit",
          "[contract]") {
  NormSpec s = spec_of(NormKind::LayerNormFwd, DType::F16, 8192);
  s.knobs.max_registers = 64;
  s.knobs.prefetch_rows = 1;
  s.knobs.sm_count = 10;
  s.knobs.ctas_per_sm = 3;
  const BuiltNorm b = build_norm(s);
  REQUIRE(b.chosen.max_registers == 64u);
  REQUIRE(b.chosen.prefetch_rows == 1u);
  REQUIRE(b.ptx.find(".maxnreg 64") != std::string::npos);
  // A prefetching forward walks rows on a persistent grid.
  const GridRule& g = b.steps[0].grid;
  REQUIRE(g.kind == GridRule::Kind::Persistent);
  REQUIRE(g.grid(100000, 8192) == 30);
  REQUIRE(g.grid(7, 8192) == 7);

  // One CTA a row by default; the runtime switches to the prefetching variant up to a batch that
  // scales with the SMs, and never where the next row fits neither registers nor shared memory.
  NormSpec fwd = spec_of(NormKind::LayerNormFwd, DType::F16, 8192);
  REQUIRE(build_norm(fwd).steps[0].grid.kind == GridRule::Kind::RowsPerCta);
  fwd.knobs.sm_count = 132;
  const std::uint32_t limit = forward_prefetch_batch_limit(fwd);
  REQUIRE(limit >= 132);
  fwd.knobs.sm_count = 66;
  REQUIRE(forward_prefetch_batch_limit(fwd) * 2 == limit);
  REQUIRE(forward_prefetch_batch_limit(spec_of(NormKind::LayerNormFwd, DType::F16, 65536)) == 0);
  NormSpec narrow = spec_of(NormKind::LayerNormFwd, DType::F16, 16384);
  narrow.knobs.vector_elems = 1;       // 2-byte vectors: too small for cp.async
  narrow.knobs.threads_per_row = 256;  // 64 values a thread: all staged
  REQUIRE(forward_prefetch_batch_limit(narrow) == 0);

  // Staged rows prefetch by cp.async into a second staging buffer; the runtime does not launch
  // that variant on its own (it measured no faster), the knob does.
  NormSpec staged = spec_of(NormKind::LayerNormFwd, DType::F16, 16384);
  staged.knobs.staged_chunks = 4;  // by default these rows are read again from L2
  const std::uint32_t one_buffer = build_norm(staged).steps[0].contract.dynamic_shared_bytes;
  REQUIRE(one_buffer > 0);
  REQUIRE(forward_prefetch_batch_limit(staged) == 0);
  staged.knobs.prefetch_rows = 1;
  const BuiltNorm two = build_norm(staged);
  REQUIRE(two.steps[0].contract.dynamic_shared_bytes == 2 * one_buffer);
  REQUIRE(two.ptx.find("cp.async.cg.shared.global") != std::string::npos);
  REQUIRE(two.ptx.find("cp.async.wait_group 1;") != std::string::npos);

  // The backward prefetches two rows through the shared ring by default where every chunk sits in
  // registers, one row otherwise, and as told.
  NormSpec bwd = spec_of(NormKind::RmsNormBwd, DType::F16, 8192);
  const BuiltNorm ringed = build_norm(bwd);
  REQUIRE(ringed.chosen.prefetch_rows == 2u);
  REQUIRE(ringed.steps[0].contract.dynamic_shared_bytes == 2 * 2 * 8192 * 2);  // 2 rows of x, dy
  REQUIRE(ringed.ptx.find("cp.async.cg.shared.global") != std::string::npos);
  // Deeper rings: a buffer a row, a wait that leaves the rows behind the next one in flight.
  for (const std::uint32_t depth : {3u, 4u}) {
    bwd.knobs.prefetch_rows = depth;
    const BuiltNorm deep = build_norm(bwd);
    REQUIRE(deep.chosen.prefetch_rows == depth);
    REQUIRE(deep.steps[0].contract.dynamic_shared_bytes == depth * 2 * 8192 * 2);
    REQUIRE(deep.ptx.find("cp.async.wait_group " + std::to_string(depth - 1) + ";") !=
            std::string::npos);
  }
  bwd.knobs.prefetch_rows = 1;
  const BuiltNorm one_ahead = build_norm(bwd);
  REQUIRE(one_ahead.chosen.prefetch_rows == 1u);
  REQUIRE(one_ahead.ptx.find("cp.async") == std::string::npos);
  bwd.knobs.prefetch_rows = 0;
  REQUIRE(build_norm(bwd).chosen.prefetch_rows == 0u);
  REQUIRE(build_norm(spec_of(NormKind::LayerNormBwd, DType::F16, 16384)).chosen.prefetch_rows ==
          1u);  // staged: the next row by cp.async into a second staging buffer
}

TEST_CASE("the variant the runtime builds for a batch (spec_for_batch)", "[contract]") {
  // The backward in one launch while its column pass takes ≤ 2 rounds of loads, or ≤ 16 while two
  // launches would leave a quarter of the SMs idle. RMS f32 4096: one CTA an SM, 8 warps, each
  // load covering 2 rows (8-byte loads: 4-byte ones would leave a warp one row a load), 8 loads in
  // flight, a tile a CTA (128 tiles, 132 CTAs): 2 rounds are 256 rows; two launches walk 3 rows
  // a CTA, so up to 99 × 3 rows fill ≤ 99 of 132 SMs.
  const NormSpec bwd = spec_of(NormKind::RmsNormBwd, DType::F32, 4096);
  const std::uint32_t limit = backward_single_launch_batch_limit(bwd);
  REQUIRE(limit == 99 * 3);
  NormSpec one_group = bwd;
  one_group.knobs.min_row_groups = 1;  // two launches fill 99 SMs at 99 rows: the rounds decide
  REQUIRE(backward_single_launch_batch_limit(one_group) == 2 * 8 * 2 * 8);
  NormSpec fewer_sms = bwd;
  fewer_sms.knobs.sm_count = 20;  // 20 CTAs take up to 4 of 64 tiles: 2 rounds hold no row
  REQUIRE(backward_single_launch_batch_limit(fewer_sms) == 15 * 3);
  // 16-bit 8192-wide layer norm rows walk 11 a CTA in two launches: 99 × 11 rows.
  REQUIRE(backward_single_launch_batch_limit(spec_of(NormKind::LayerNormBwd, DType::F16, 8192)) ==
          99 * 11);
  REQUIRE(small_batch_limit(bwd) == limit);
  const BuiltNorm one = build_norm(spec_for_batch(bwd, limit));
  REQUIRE(one.steps.size() == 1u);
  REQUIRE(one.steps[0].contract.entry == "rms_bwd_single_f32_wf32_n4096");
  REQUIRE(one.workspace_bytes(limit) == 0u);
  REQUIRE(one.steps[0].grid.grid(1, 4096) == 128u);  // a CTA for every tile of columns
  REQUIRE(build_norm(spec_for_batch(bwd, limit + 1)).steps.size() == 2u);
  // The one-launch backward takes one CTA an SM on every device (two would fit on most).
  for (const DeviceModel& device : device_presets()) {
    for (NormKind kind : {NormKind::LayerNormBwd, NormKind::RmsNormBwd}) {
      for (DType dtype : {DType::F32, DType::BF16}) {
        const NormSpec s = spec_for_device(kind, dtype, dtype, 4096, device);
        CAPTURE(device.name, kind_name(kind), dtype_name(dtype));
        const BuiltNorm single = build_norm(spec_for_batch(s, 1));
        REQUIRE(single.steps.size() == 1u);
        CHECK(single.chosen.ctas_per_sm == 1u);
      }
    }
  }
  // The forward prefetches rows up to its own limit.
  const NormSpec fwd = spec_of(NormKind::LayerNormFwd, DType::F16, 8192);
  REQUIRE(spec_for_batch(fwd, forward_prefetch_batch_limit(fwd)).knobs.prefetch_rows == 1u);
  REQUIRE(!spec_for_batch(fwd, forward_prefetch_batch_limit(fwd) + 1).knobs.prefetch_rows);
  // With partial rows, each CTA walks at least min_row_groups rows while the batch allows: 11 by
  // default for 16-bit 8192-wide rows (105 CTAs for 1151 rows), 1 fills the SMs first.
  NormSpec ln = spec_of(NormKind::LayerNormBwd, DType::F16, 8192);
  REQUIRE(build_norm(ln).chosen.min_row_groups == 11u);
  REQUIRE(build_norm(ln).steps[0].grid.grid(1151, 8192) == 105u);
  ln.knobs.min_row_groups = 1;
  const BuiltNorm filled = build_norm(ln);
  REQUIRE(filled.steps[0].grid.grid(1151, 8192) == 132u);
  REQUIRE(filled.workspace_bytes(1151) == 2u * 132 * 8192 * 4);
  // A knob that fixes the variant wins at every batch.
  NormSpec fixed = bwd;
  fixed.knobs.single_launch = 0;
  REQUIRE(small_batch_limit(fixed) == 0u);
  REQUIRE(spec_for_batch(fixed, 1).knobs.single_launch == 0u);
}

TEST_CASE("forwards that read their rows again from L2, with torch.compile's policies",
          "[contract]") {
  // RMS rows of ≥ 4096 elements and 16-bit layer norm rows too wide for registers: no chunk kept,
  // 32 registers, the first read evict_last, the last evict_first, the weights evict_last.
  for (const NormSpec& s : {spec_of(NormKind::RmsNormFwd, DType::BF16, 4096),
                            spec_of(NormKind::RmsNormFwd, DType::F32, 8192),
                            spec_of(NormKind::LayerNormFwd, DType::F16, 16384)}) {
    INFO(kind_name(s.kind) << " " << dtype_name(s.dtype) << " " << s.width);
    const BuiltNorm b = build_norm(s);
    REQUIRE(b.chosen.register_chunks == 0u);
    REQUIRE(b.chosen.staged_chunks == 0u);
    REQUIRE(b.chosen.l2_stream == 1u);
    REQUIRE(b.chosen.max_registers == 32u);
    REQUIRE(b.steps[0].contract.dynamic_shared_bytes == 0u);
    REQUIRE(b.ptx.find("createpolicy.fractional.L2::evict_last") != std::string::npos);
    REQUIRE(b.ptx.find("createpolicy.fractional.L2::evict_first") != std::string::npos);
    REQUIRE(b.ptx.find(".L2::cache_hint") != std::string::npos);
    REQUIRE(forward_prefetch_batch_limit(s) == 0u);  // nothing in registers to prefetch
  }
  // f32 weights beside 16-bit rows: 48 registers.
  NormSpec wide_w = spec_of(NormKind::RmsNormFwd, DType::F16, 8192);
  wide_w.weight_dtype = DType::F32;
  REQUIRE(build_norm(wide_w).chosen.max_registers == 48u);
  // Narrower RMS rows, ragged chunks, rows whose resident CTAs would hold more than 24 MiB (f32
  // 12288: 5 CTAs of 384 threads an SM, 48 KB a row), layer norm rows that fit registers, PTX
  // before 7.4 (no createpolicy) and any placement knob keep the rows.
  REQUIRE(build_norm(spec_of(NormKind::RmsNormFwd, DType::F16, 3000)).chosen.register_chunks > 0u);
  REQUIRE(build_norm(spec_of(NormKind::RmsNormFwd, DType::F16, 6000)).chosen.register_chunks > 0u);
  REQUIRE(build_norm(spec_of(NormKind::RmsNormFwd, DType::F32, 12288)).chosen.l2_stream == 0u);
  // Rows (and cluster slices) of 32-64 KiB are held in registers, 128 bytes a thread of 512;
  // 32 KiB rows are still read again.
  for (const NormKind kind : {NormKind::LayerNormFwd, NormKind::RmsNormFwd}) {
    for (const auto& [dtype, width] : {std::pair{DType::F16, 32768u},
                                       {DType::BF16, 20000u},
                                       {DType::BF16, 65536u},
                                       {DType::F32, 32768u},
                                       {DType::BF16, 262144u}}) {
      const BuiltNorm held = build_norm(spec_of(kind, dtype, width));
      INFO(kind_name(kind) << " " << dtype_name(dtype) << " " << width);
      REQUIRE(held.chosen.register_chunks.value_or(0) > 0u);
      REQUIRE(held.chosen.staged_chunks == 0u);
      REQUIRE(held.chosen.threads_per_row == 512u);
      REQUIRE(held.chosen.l2_stream == 0u);
    }
  }
  REQUIRE(build_norm(spec_of(NormKind::RmsNormFwd, DType::BF16, 16384)).chosen.l2_stream == 1u);
  REQUIRE(build_norm(spec_of(NormKind::LayerNormFwd, DType::F16, 8192)).chosen.l2_stream == 0u);
  NormSpec old_ptx = spec_of(NormKind::RmsNormFwd, DType::F16, 8192);
  old_ptx.arch = Arch::Sm80;
  old_ptx.ptx_version = {7, 3};
  REQUIRE(build_norm(old_ptx).chosen.register_chunks > 0u);
  NormSpec staged = spec_of(NormKind::LayerNormFwd, DType::F16, 16384);
  staged.knobs.prefetch_rows = 1;
  REQUIRE(build_norm(staged).chosen.staged_chunks > 0u);
  REQUIRE(build_norm(staged).chosen.l2_stream == 0u);
}

TEST_CASE("the widest rows stage in dynamic shared memory", "[contract]") {
  NormSpec wide = spec_of(NormKind::LayerNormFwd, DType::F16, 65536);
  wide.knobs.staged_chunks = 16;  // by default these rows are read again from L2
  const BuiltNorm f = build_norm(wide);
  REQUIRE(f.steps[0].contract.dynamic_shared_bytes > 48 * 1024);
  REQUIRE(f.steps[0].contract.dynamic_shared_bytes <= 227 * 1024);
  NormSpec s80 = spec_of(NormKind::LayerNormBwd, DType::F32, 65536);
  s80.device = device_preset("a100");
  s80.arch = Arch::Sm80;
  const BuiltNorm b = build_norm(s80);
  REQUIRE(b.steps[0].contract.dynamic_shared_bytes <= 163 * 1024);
}

TEST_CASE("the vectors a call's pointers allow build kernels whose contract those pointers meet",
          "[contract]") {
  // The runtime picks the vector width per call by vector_elems_for; the contract states what the
  // built kernel's accesses need (derived from its PTX). They must agree, or a call would fault.
  const auto is_row = [](const std::string& n) {
    return n == "x" || n == "y" || n == "dy" || n == "dx";
  };
  const auto is_residual = [](const std::string& n) {
    return n == "residual" || n == "h" || n == "dh";
  };
  const auto is_weight = [](const std::string& n) {
    return n == "w" || n == "b" || n == "dw" || n == "db";
  };
  std::size_t checked = 0;
  for (NormKind kind : {NormKind::LayerNormFwd, NormKind::LayerNormBwd, NormKind::RmsNormFwd,
                        NormKind::RmsNormBwd}) {
    for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
      for (std::uint32_t width : {31u, 100u, 1000u, 4100u, 8192u}) {
        NormSpec base = spec_of(kind, dtype, width);
        base.weight_dtype = width == 1000 ? DType::F32 : dtype;
        std::vector<NormSpec> specs = variants_of(base);
        specs.push_back(base);
        for (const NormSpec& variant : specs) {
          if (variant.affine != Affine::Full && variant.residual == Residual::None) continue;
          const std::uint32_t widest = *build_norm(variant).chosen.vector_elems;
          const std::uint32_t e = static_cast<std::uint32_t>(dtype_bytes(dtype));
          const std::uint32_t we = static_cast<std::uint32_t>(dtype_bytes(variant.weight_dtype));
          const DType rd = residual_dtype(variant);
          const std::uint32_t re = static_cast<std::uint32_t>(dtype_bytes(rd));
          for (std::uint32_t stride : {width, width + 1, (width + 7) / 8 * 8}) {
            for (std::uint32_t row_shift : {0u, 1u, 2u}) {
              const std::uint64_t row_at = 0x100000 + std::uint64_t{row_shift} * e;
              const std::uint64_t weight_at = 0x200000 + std::uint64_t{row_shift % 2} * we;
              const std::uint64_t residual_at = 0x300000 + std::uint64_t{row_shift / 2} * re;
              const std::uint32_t vec =
                  std::min(widest, vector_elems_for(dtype, variant.weight_dtype, stride, row_at,
                                                    weight_at, rd, residual_at));
              NormSpec s = variant;
              s.knobs.vector_elems = vec;
              const BuiltNorm built = build_norm(s);
              for (const LaunchStep& step : built.steps) {
                for (const ParamSpec& p : step.contract.params) {
                  INFO(step.contract.entry << " " << p.name << " vec " << vec << " stride "
                                           << stride << " row shift " << row_shift);
                  if (p.pointer) {
                    const std::uint64_t at = is_row(p.name)        ? row_at
                                             : is_residual(p.name) ? residual_at
                                             : is_weight(p.name)   ? weight_at
                                                                   : 0x400000;
                    CHECK(at % std::max(1u, p.align_bytes) == 0);
                    CHECK(p.align_bytes <= 16);
                  } else if (p.name == "stride") {
                    CHECK(stride % std::max(1u, p.multiple) == 0);
                  } else {
                    CHECK(p.multiple <= 1);  // batch, eps, partial_rows: any value
                  }
                  ++checked;
                }
              }
            }
          }
        }
      }
    }
  }
  CHECK(checked > 1000);
}

TEST_CASE("a cluster's staged backward slice keeps every dw/db chunk in registers", "[contract]") {
  // Layer norm's slices of 16384 16-bit columns (4 CTAs a cluster at 65536, 16 at 262144) hold
  // their x and dy in shared memory and all four chunks of dw and db in registers; one CTA a row of
  // the same width keeps half of them in shared memory, which measured faster there.
  for (std::uint32_t width : {65536u, 262144u}) {
    NormSpec spec = spec_of(NormKind::LayerNormBwd, DType::BF16, width);
    spec.weight_dtype = DType::F32;
    const BuiltNorm split = build_norm(spec);
    INFO("width " << width);
    REQUIRE(*split.chosen.cluster_ctas == width / 16384);
    REQUIRE(*split.chosen.register_chunks == 0u);
    REQUIRE(*split.chosen.accumulator_register_chunks == 4u);
  }
  const BuiltNorm one = build_norm(spec_of(NormKind::LayerNormBwd, DType::F16, 16384));
  REQUIRE(*one.chosen.cluster_ctas == 1u);
  REQUIRE(*one.chosen.accumulator_register_chunks == 2u);
}

TEST_CASE("wide forwards with f32 weights walk the rows with the weights in shared memory",
          "[contract]") {
  // Where the heuristic splits a 16-bit row over a cluster and the f32 weights' bytes a column
  // times its CTAs reach 32: clusters of twice as many CTAs, persistent, one row ahead, the
  // weights copied once. Layer norm (w and b: 8 bytes) from 131072 columns (4 CTAs), RMS norm (4
  // bytes) at 262144 (8 CTAs); never for 16-bit weights, the residual add, or without clusters.
  struct Case {
    NormKind kind;
    std::uint32_t width;
    bool walks;
  };
  for (const char* device : {"h100", "h200", "b200"}) {
    for (const Case c :
         {Case{NormKind::LayerNormFwd, 65536, false}, Case{NormKind::LayerNormFwd, 131072, true},
          Case{NormKind::LayerNormFwd, 262144, true}, Case{NormKind::RmsNormFwd, 131072, false},
          Case{NormKind::RmsNormFwd, 262144, true}}) {
      NormSpec spec = spec_of(c.kind, DType::BF16, c.width);
      spec.device = device_preset(device);
      spec.weight_dtype = DType::F32;
      INFO(device << " " << kind_name(c.kind) << " width " << c.width);
      const BuiltNorm built = build_norm(spec);
      const std::uint32_t held = c.width / 32768;  // 64 KiB slices held in registers
      REQUIRE(*built.chosen.shared_weights == c.walks);
      REQUIRE(*built.chosen.cluster_ctas == (c.walks ? 2 * held : held));
      REQUIRE(*built.chosen.prefetch_rows == (c.walks ? 1u : 0u));
      if (!c.walks) continue;
      REQUIRE(built.steps[0].grid.kind == GridRule::Kind::Persistent);
      // Its chosen knobs given back build the same kernel.
      NormSpec again = spec;
      again.knobs = built.chosen;
      REQUIRE(build_norm(again).ptx == built.ptx);
      NormSpec same_weights = spec;
      same_weights.weight_dtype = DType::BF16;
      REQUIRE_FALSE(*build_norm(same_weights).chosen.shared_weights);
      NormSpec residual = spec;
      residual.residual = Residual::Add;
      REQUIRE_FALSE(*build_norm(residual).chosen.shared_weights);
    }
  }
  NormSpec a100 = spec_of(NormKind::LayerNormFwd, DType::BF16, 131072);
  a100.device = device_preset("a100");
  a100.arch = Arch::Sm80;
  a100.ptx_version = default_ptx_version(Arch::Sm80);
  a100.weight_dtype = DType::F32;
  REQUIRE(*build_norm(a100).chosen.cluster_ctas == 1u);
  REQUIRE_FALSE(*build_norm(a100).chosen.shared_weights);
}

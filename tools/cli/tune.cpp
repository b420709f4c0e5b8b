// `ptxdsl tune`: measures, on the GPU at hand, the heuristic's plan against alternatives in the
// strategy space for a grid of widths, and writes the tuning table the planner reads
// (kernels/tuning/, one CSV a product): an entry's knobs are those of an alternative that beat
// the heuristic by more than the margin in every round, else none (the heuristic's plan).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "case_timer.hpp"
#include "cli.hpp"
#include "ptxdsl/cli/device.hpp"
#include "ptxdsl/cli/output_file.hpp"
#include "ptxdsl/kernels/tuning.hpp"

namespace ptxdsl::cli {
namespace {

using kernels::DType;
using kernels::NormKind;
using kernels::NormKnobs;

// Widths the table has rows for: the suite's, the LLM hidden sizes between, and the ends.
constexpr std::uint32_t kDefaultWidths[] = {256,  512,   1024,  2048,  3072,  4096,   6144,
                                            8192, 12288, 16384, 32768, 65536, 131072, 262144};
// Each shape moves at least this much of x, and gives every SM at least kRowsPerSm rows: the
// large-batch regime the table serves (a plan that won at 8 rows an SM lost at 31).
constexpr std::uint64_t kRowBytes = 32ull << 20;
constexpr std::uint32_t kRowsPerSm = 32;
constexpr std::uint32_t kMinBatch = 256, kMaxBatch = 65536;
// A row applies at every batch of its width, so a winner is also timed at this many rows an SM,
// where a plan that won with a full grid can lose (on the H100 rms_fwd f32 4096's
// threads_per_row=128 won by 2.9% at 4224 rows and lost 42% at 256).
constexpr std::uint32_t kCheckRowsPerSm = 2;
std::uint32_t tuning_batch(DType dtype, std::uint32_t width, std::uint32_t sm_count) {
  const std::uint64_t row = std::uint64_t{width} * kernels::dtype_bytes(dtype);
  const std::uint64_t rows =
      std::max<std::uint64_t>((kRowBytes + row - 1) / row, std::uint64_t{kRowsPerSm} * sm_count);
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(rows, kMinBatch, kMaxBatch));
}

// The items of a comma-separated option, given once or more; an empty one is refused, named (it
// would read as not given).
std::vector<std::string> comma_items(std::string_view flag, const std::vector<std::string>& given) {
  std::vector<std::string> items;
  for (const std::string& text : given) {
    std::size_t at = 0;
    for (std::size_t index = 1;; ++index) {
      const std::size_t comma = text.find(',', at);
      std::string item = text.substr(at, comma == std::string::npos ? comma : comma - at);
      if (item.empty()) {
        throw UsageError(fmt::format("{}: item {} of '{}' is empty", flag, index, text));
      }
      items.push_back(std::move(item));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
  }
  return items;
}

struct Candidate {
  NormKnobs knobs;                // none: the heuristic
  std::unique_ptr<GpuNorm> norm;  // its kernels and buffers, checked at the first timing
  std::vector<double> us;         // each round's median
  double best() const { return us.empty() ? 0 : *std::min_element(us.begin(), us.end()); }
};

class Progress {
 public:
  explicit Progress(std::size_t total) : total_(total), tty_(isatty(STDERR_FILENO) == 1) {}
  void show(std::size_t done, const std::string& what) const {
    constexpr std::size_t kBar = 30;
    const std::size_t filled = total_ == 0 ? kBar : done * kBar / total_;
    const std::string bar = std::string(filled, '#') + std::string(kBar - filled, '-');
    if (tty_) {
      fmt::print(stderr, "\r[{}] {}/{} {:<60}", bar, done, total_, what.substr(0, 60));
    } else {
      fmt::print(stderr, "[{}] {}/{} {}\n", bar, done, total_, what);
    }
  }
  void finish() const {
    if (tty_) fmt::print(stderr, "\n");
  }

 private:
  std::size_t total_;
  bool tty_;
};

struct Shape {
  bool layer_norm;
  DType dtype, weight_dtype;
  std::uint32_t width;
};

class TuneCommand : public Command {
 public:
  explicit TuneCommand(CLI::App& sub) {
    sub.add_option("kernels", kernels_, "ln_fwd, ln_bwd, rms_fwd, rms_bwd (default: all four)");
    sub.add_option("--dtype", dtypes_, "f32, f16, bf16, comma-separated (default: all three)");
    sub.add_option("--weight-dtype", weights_,
                   "same (the input's; default), f32, or both: which weight dtypes to tune");
    sub.add_option("--widths", widths_,
                   fmt::format("comma-separated widths (default: {} to {}, {} of them)",
                               std::begin(kDefaultWidths)[0], std::end(kDefaultWidths)[-1],
                               std::size(kDefaultWidths)));
    sub.add_option("--out", out_, "write the table to FILE (default: stdout)");
    sub.add_option("--rounds", rounds_,
                   "rounds the best alternative and the heuristic are timed, "
                   "1 to 10 (default 3)");
    sub.add_option("--margin", margin_,
                   "percent an alternative must beat the heuristic by in every round, 0 to 50 "
                   "(default 2)");
    sub.add_option("--reps", reps_, "timed repetitions per timing, 100 to 100000 (default 100)");
    sub.add_option("--seed", seed_, "input seed (default 1)");
    sub.add_option("--device", device_, "GPU ordinal (default 0)");
  }

  bool sized_by_options() const override { return true; }

  int run() override {
    const std::vector<Shape> shapes = plan();
    const std::set<NormKind> kinds = selected_kinds();
    Timing timing;
    timing.reps = static_cast<int>(parse_uint("--reps", reps_, 100, 100000));
    const auto rounds = static_cast<int>(parse_uint("--rounds", rounds_, 1, 10));
    const double margin = static_cast<double>(parse_uint("--margin", margin_, 0, 50)) / 100.0;
    const std::uint64_t seed =
        parse_uint("--seed", seed_, 0, std::numeric_limits<std::uint64_t>::max());
    const int device = static_cast<int>(parse_uint("--device", device_, 0, 1023));
    std::optional<OutputFile> out_file;
    if (!out_.empty()) out_file.emplace(out_);
    require_driver_one_line();

    CaseTimer timer(device, timing);
    const DeviceModel& model = timer.ctx().info().model;
    fmt::print(stderr, "tune: {}; {} shapes, {} rounds, margin {:.0f}%\n",
               describe_device(timer.ctx().info()), shapes.size(), rounds, margin * 100);

    const std::string comment = fmt::format(
        "# ptxdsl tune on {}: {} rounds, margin {:.0f}%, {} reps a timing. Knobs: the "
        "alternative that beat the heuristic; none: the heuristic's plan.\n",
        model.product, rounds, margin * 100, timing.reps);
    if (!out_file) fmt::print("{}{}", comment, kernels::TuningTable{}.to_csv());
    kernels::TuningTable table;
    std::vector<std::future<NormData>> data(shapes.size());
    const auto prepare = [&](std::size_t i) {
      if (i >= shapes.size()) return;
      const Shape& s = shapes[i];
      kernels::NormSpec spec =
          spec_of(s, s.layer_norm ? NormKind::LayerNormBwd : NormKind::RmsNormBwd, model);
      data[i] = std::async(std::launch::async, [spec, s, seed] {
        return make_norm_data(spec, tuning_batch(s.dtype, s.width, spec.device.sm_count), seed,
                              true);
      });
    };
    // The float64 references take longer than the timings: several shapes in preparation at once.
    const std::size_t ahead =
        std::clamp<std::size_t>(std::thread::hardware_concurrency() / 2, 3, 8);
    for (std::size_t i = 0; i < ahead; ++i) prepare(i);
    Progress progress(shapes.size());
    bool all_pass = true;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const Shape& s = shapes[i];
      const NormData d = data[i].get();
      prepare(i + ahead);
      for (NormKind kind : s.layer_norm
                               ? std::vector{NormKind::LayerNormFwd, NormKind::LayerNormBwd}
                               : std::vector{NormKind::RmsNormFwd, NormKind::RmsNormBwd}) {
        if (!kinds.contains(kind)) continue;
        progress.show(
            i, fmt::format("{} {}/{} {}", kernels::kind_name(kind), kernels::dtype_name(s.dtype),
                           kernels::dtype_name(s.weight_dtype), s.width));
        try {
          table.entries.push_back(
              tune_one(timer, d, spec_of(s, kind, model), rounds, margin, seed));
          // Without --out each row goes out as it is measured: a run cut short keeps its rows.
          if (!out_file) {
            const std::string csv = kernels::TuningTable{{table.entries.back()}}.to_csv();
            fmt::print("{}", csv.substr(csv.find('\n') + 1));  // the row, not the header
            std::fflush(stdout);
          }
        } catch (const std::exception& e) {
          all_pass = false;
          fmt::print(stderr, "\ntune: {} {} {}: {}\n", kernels::kind_name(kind),
                     kernels::dtype_name(s.dtype), s.width, e.what());
        }
      }
    }
    progress.show(shapes.size(), "done");
    progress.finish();
    if (out_file) {
      out_file->commit(fmt::format("{}{}", comment, table.to_csv()));
    }
    return all_pass ? kExitOk : kExitFailure;
  }

 private:
  static kernels::NormSpec spec_of(const Shape& s, NormKind kind, const DeviceModel& model) {
    kernels::NormSpec spec = make_spec(kind, s.dtype, s.width);
    spec.weight_dtype = s.weight_dtype;
    spec.device = model;
    spec.arch = model.arch();
    return spec;
  }

  // Every alternative timed once beside the heuristic; then the fastest and the heuristic,
  // alternately, for the other rounds.
  kernels::TuningEntry tune_one(CaseTimer& timer, const NormData& data,
                                const kernels::NormSpec& spec, int rounds, double margin,
                                std::uint64_t seed) const {
    kernels::NormSpec heuristic_spec = spec;
    heuristic_spec.tuning = false;
    const kernels::BuiltNorm heuristic = kernels::build_norm(heuristic_spec);
    std::vector<Candidate> candidates(1);  // [0]: the heuristic
    std::set<std::string> seen{heuristic.ptx};
    for (const NormKnobs& k : kernels::tune_candidates(spec, heuristic.chosen)) {
      kernels::NormSpec alt = heuristic_spec;
      alt.knobs = k;
      try {
        kernels::check_knobs_apply(alt);
        if (!seen.insert(kernels::build_norm(alt).ptx).second) continue;  // the same kernel
      } catch (const Error&) {
        continue;  // not a valid plan at this width
      }
      candidates.push_back({k, nullptr, {}});
    }
    // The first timing checks the outputs against float64; later rounds only time.
    const auto time = [&](Candidate& c) {
      if (c.norm) {
        c.us.push_back(timer.time_case(*c.norm, spec.kind).median);
        return;
      }
      c.norm = checked_norm(timer, data, spec.kind, c.knobs, format_knobs(c.knobs), c.us);
    };
    for (Candidate& c : candidates) time(c);
    std::size_t best = 0;
    for (std::size_t i = 1; i < candidates.size(); ++i) {
      if (candidates[i].us[0] < candidates[best].us[0]) best = i;
    }
    for (std::size_t i = 1; i < candidates.size(); ++i) {
      if (i != best) candidates[i].norm.reset();  // their buffers go back before the rounds
    }
    for (int round = 1; round < rounds && best != 0; ++round) {
      time(candidates[0]);
      time(candidates[best]);
    }
    kernels::TuningEntry e;
    e.device = spec.device.product;
    e.kind = spec.kind;
    e.dtype = spec.dtype;
    e.weight_dtype = spec.weight_dtype;
    e.width = spec.width;
    e.batch = data.batch;
    // The heuristic's rounds against the alternative's: it must win each by the margin.
    bool wins = best != 0;
    for (std::size_t r = 0; wins && r < candidates[0].us.size(); ++r) {
      wins = candidates[best].us[r] < candidates[0].us[r] * (1 - margin);
    }
    std::string verdict = best == 0 ? "kept the heuristic"
                          : wins    ? fmt::format("{:.2f} µs, taken", candidates[best].best())
                                 : fmt::format("{:.2f} µs, within the margin: kept the heuristic",
                                               candidates[best].best());
    if (wins) {
      if (const auto small =
              time_small_batch(timer, spec, data.batch, candidates[best].knobs, seed)) {
        const auto [winner_us, heuristic_us] = *small;
        if (winner_us > heuristic_us * (1 + margin)) {
          wins = false;
          verdict = fmt::format(
              "{:.2f} µs, but at {} rows {:.2f} against the heuristic's {:.2f}: kept the "
              "heuristic",
              candidates[best].best(), small_batch(spec), winner_us, heuristic_us);
        }
      }
    }
    e.heuristic_us = candidates[0].best();
    e.us = wins ? candidates[best].best() : e.heuristic_us;
    if (wins) e.knobs = candidates[best].knobs;
    fmt::print(stderr, "{}tune: {} {}/{} {} (batch {}): heuristic {:.2f} µs, {} of {}: {}\n",
               isatty(STDERR_FILENO) == 1 ? "\n" : "", kernels::kind_name(spec.kind),
               kernels::dtype_name(spec.dtype), kernels::dtype_name(spec.weight_dtype), spec.width,
               data.batch, e.heuristic_us,
               best == 0 ? "none faster" : format_knobs(candidates[best].knobs),
               candidates.size() - 1, verdict);
    return e;
  }

  static std::uint32_t small_batch(const kernels::NormSpec& spec) {
    return kCheckRowsPerSm * spec.device.sm_count;
  }

  // `knobs` (none: the heuristic's plan) built for `data` without the tuning table, and its first
  // timing, checked against float64, appended to `us`. Throws naming `what` where it does not
  // match.
  static std::unique_ptr<GpuNorm> checked_norm(CaseTimer& timer, const NormData& data,
                                               NormKind kind, const NormKnobs& knobs,
                                               const std::string& what, std::vector<double>& us) {
    runtime::NormOptions options;
    options.tuning_table = false;
    if (kernels::is_backward(kind)) {
      options.backward_knobs = knobs;
    } else {
      options.knobs = knobs;
    }
    auto norm = std::make_unique<GpuNorm>(timer.ctx(), data, options);
    const CaseTimer::Checked r = timer.run_case(*norm, data, kind);
    if (!r.pass) throw std::runtime_error(fmt::format("{}: {}", what, r.error));
    us.push_back(r.times.median);
    return norm;
  }

  // The winner's knobs and the heuristic timed at small_batch(spec) rows, as the runtime would
  // plan them there with the winner in the table: {winner µs, heuristic µs}; nothing where that
  // batch takes the small-batch variant (which no table row plans) or is no smaller than
  // `tuned_batch`, the batch the winner won at.
  std::optional<std::pair<double, double>> time_small_batch(CaseTimer& timer,
                                                            const kernels::NormSpec& spec,
                                                            std::uint32_t tuned_batch,
                                                            const NormKnobs& winner,
                                                            std::uint64_t seed) const {
    kernels::NormSpec plain = spec;
    plain.tuning = false;
    const std::uint32_t batch = small_batch(spec);
    if (batch >= tuned_batch || batch <= kernels::small_batch_limit(plain)) return std::nullopt;
    const NormData data = make_norm_data(spec, batch, seed, true);
    // The table's plan: the winner's knobs on the main variant, as the runtime takes them.
    NormKnobs as_tabled = winner;
    if (kernels::is_backward(spec.kind)) {
      if (!as_tabled.single_launch) as_tabled.single_launch = false;
    } else if (!as_tabled.prefetch_rows) {
      as_tabled.prefetch_rows = 0;
    }
    std::vector<double> us;
    checked_norm(timer, data, spec.kind, {}, fmt::format("at {} rows, the heuristic", batch), us);
    checked_norm(timer, data, spec.kind, as_tabled,
                 fmt::format("at {} rows, {}", batch, format_knobs(winner)), us);
    return std::pair{us[1], us[0]};
  }

  std::set<NormKind> selected_kinds() const {
    std::set<NormKind> kinds;
    for (const std::string& k : kernels_) {
      try {
        kinds.insert(kernels::parse_kind(k));
      } catch (const Error& e) {
        throw UsageError(e.what());
      }
    }
    if (kinds.empty()) {
      kinds = {NormKind::LayerNormFwd, NormKind::LayerNormBwd, NormKind::RmsNormFwd,
               NormKind::RmsNormBwd};
    }
    return kinds;
  }

  std::vector<Shape> plan() const {
    const std::set<NormKind> kinds = selected_kinds();
    std::vector<DType> dtypes;
    for (const std::string& d : comma_items("--dtype", dtypes_)) {
      try {
        dtypes.push_back(kernels::parse_dtype(d));
      } catch (const Error& e) {
        throw UsageError(fmt::format("--dtype: {}", e.what()));
      }
    }
    if (dtypes.empty()) dtypes = {DType::F32, DType::F16, DType::BF16};
    if (weights_ != "same" && weights_ != "f32" && weights_ != "both") {
      throw UsageError(fmt::format("--weight-dtype must be same, f32 or both, got '{}'", weights_));
    }
    std::vector<std::uint32_t> widths;
    for (const std::string& w : comma_items("--widths", widths_)) {
      widths.push_back(
          static_cast<std::uint32_t>(parse_uint("--widths", w, 1, kernels::kMaxWidth)));
    }
    if (widths.empty()) widths.assign(std::begin(kDefaultWidths), std::end(kDefaultWidths));
    std::vector<Shape> shapes;
    for (bool layer : {true, false}) {
      const bool wanted =
          layer ? kinds.contains(NormKind::LayerNormFwd) || kinds.contains(NormKind::LayerNormBwd)
                : kinds.contains(NormKind::RmsNormFwd) || kinds.contains(NormKind::RmsNormBwd);
      if (!wanted) continue;
      for (DType d : dtypes) {
        std::vector<DType> weights;
        if (weights_ != "f32") weights.push_back(d);
        if (weights_ != "same" && d != DType::F32) weights.push_back(DType::F32);
        for (DType w : weights) {
          for (std::uint32_t width : widths) shapes.push_back({layer, d, w, width});
        }
      }
    }
    if (shapes.empty()) throw UsageError("--weight-dtype f32 with --dtype f32 alone tunes nothing");
    return shapes;
  }

  std::vector<std::string> kernels_;
  std::vector<std::string> dtypes_;
  std::vector<std::string> widths_;
  std::string weights_ = "same";
  std::string out_;
  std::string rounds_ = "3";
  std::string margin_ = "2";
  std::string reps_ = std::to_string(Timing{}.reps);
  std::string seed_ = "1";
  std::string device_ = "0";
};

}  // namespace

Registered add_tune(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "tune", "time the heuristic's plans against alternatives on this GPU; write a tuning table");
  return {sub, std::make_unique<TuneCommand>(*sub)};
}

}  // namespace ptxdsl::cli

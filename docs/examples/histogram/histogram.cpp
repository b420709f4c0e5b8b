// A histogram of u32 keys: a kernel tool built by ptxdsl_add_kernel_tool (docs/dsl.md, "Write your
// own kernel"). The keys are `batch` rows of `width` (the tool's row shape): one CTA a row counts
// its keys into `bins` shared-memory bins (BlockHistogram: red.shared.add.u32), then adds them to
// the `bins` global counts with one red.global.add.u32 per bin it saw. Keys at or past `bins` are
// ignored (counted nowhere), as torch.histc ignores values outside its range.
#include <cmath>
#include <ptxdsl/tool.hpp>
#include <string>

namespace {

using namespace ptxdsl;

constexpr std::uint32_t kBlock = 256;

tool::Launch build(Module& m, const tool::Params& p) {
  const std::uint32_t width = p.u32("width"), bins = p.u32("bins");
  Kernel& k = m.kernel("histogram_u32");
  const GlobalPtr<U32> keys = k.param_ptr<U32>("keys");
  const GlobalPtr<U32> counts = k.param_ptr<U32>("counts");
  // A row shorter than the block leaves the rest of the block idle: a warp multiple is enough.
  const std::uint32_t block = std::min(kBlock, (width + 31) / 32 * 32);
  k.require_threads(block);
  const Reg<U32> tid = k.tid_x();
  const BlockHistogram histogram(k, bins, block, tid);
  const GlobalPtr<U32> row = k.row(keys, k.ctaid_x(), width);
  k.for_range(tid, width, block,
              [&](Reg<U32> i) { histogram.count(k, k.ld(k.index(row, i), kNc)); });
  histogram.flush(k, counts);
  return {.grid = p.u32("batch"), .block = {}, .entry = {}};
}

}  // namespace

void ptxdsl::tool::register_kernels(Registry& registry) {
  KernelDefinition d;
  d.name = "histogram";
  d.description = "counts[b] += keys equal to b, for b < bins (keys >= bins ignored)";
  d.params = {
      tool::Parameter::uint("width", "keys a row (one CTA each)", 1, 1u << 20, 4096),
      tool::Parameter::uint("batch", "rows", 1, 1u << 20, 3),
      tool::Parameter::uint("bins", "counters (shared memory: 4 bytes each)", 1, 12288, 256)};
  d.build = build;
  // Keys spread over the bins and a quarter past them, which must not be counted; the counts
  // start at zero (the kernel adds to them).
  d.inputs = [](const Params& p, Random& random) {
    const std::size_t n = p.uint("width") * p.uint("batch");
    const double past = static_cast<double>(p.uint("bins") + p.uint("bins") / 4 + 1);
    std::vector<double> keys = random.uniform_values(n, 0, past);
    for (double& key : keys) key = std::floor(key);
    RunData data;
    data.input("keys", std::move(keys)).inout("counts", std::vector<double>(p.uint("bins"), 0.0));
    return data;
  };
  d.reference = [](const Params& p, const RunData& in) {
    std::vector<double> counts(p.uint("bins"), 0.0);
    for (const double key : in.values("keys")) {
      if (key < static_cast<double>(counts.size())) counts[static_cast<std::size_t>(key)] += 1;
    }
    return Expected{{"counts", counts}};
  };
  registry.add(std::move(d));
}

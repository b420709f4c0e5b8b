// ptxdsl-timeline: runs a backward's two steps from a module that stamp.py gave %globaltimer
// stamps, and prints thread 0's stamps of every CTA (ns since an arbitrary origin), for
// analyze.py. A measuring tool for the GPU machine (docs/performance.md), not part
// of the library: arguments unchecked beyond their count, buffers filled with one bit pattern
// (0x3800 halves: 0.5 in f16, 3e-5 in bf16 and as f32 words) rather than real inputs.
//
//   ptxdsl-timeline PTX ROW_ENTRY REDUCE_ENTRY ROW_GRID ROW_BLOCK ROW_SHARED REDUCE_GRID
//                   REDUCE_BLOCK BATCH WIDTH REPS [EARLY]
//
// EARLY 1 launches the reduce as the library does when it waits for the grid before it
// (programmatic dependent launch); 0, the default, launches it plainly.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/launch.hpp"
#include "ptxdsl/runtime/memory.hpp"
#include "ptxdsl/runtime/module.hpp"

namespace rt = ptxdsl::runtime;

namespace {

constexpr std::uint32_t kRowSlots = 64;  // as stamp.py: entry, smid, loop end, ret, then trips
constexpr std::size_t kFlushBytes = 256u << 20;

struct Param {
  std::string name;
  bool pointer = false;
};

std::vector<Param> params_of(const std::string& ptx, const std::string& entry) {
  const std::size_t at = ptx.find(".entry " + entry + "(");
  const std::string decl = ptx.substr(at, ptx.find(')', at) - at);
  std::vector<Param> out;
  const std::regex param(R"(\.param \.(u64|u32) (\w+))");
  for (std::sregex_iterator it(decl.begin(), decl.end(), param), end; it != end; ++it) {
    out.push_back({(*it)[2], (*it)[1] == "u64"});
  }
  return out;
}

struct Launch {
  rt::Function function;
  std::uint32_t grid, block, shared;
  std::vector<std::uint64_t> values;  // a u32 parameter is the low half (little-endian)
  std::vector<void*> pointers;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 12 && argc != 13) {
    fmt::print(stderr,
               "usage: {} PTX ROW_ENTRY REDUCE_ENTRY ROW_GRID ROW_BLOCK ROW_SHARED "
               "REDUCE_GRID REDUCE_BLOCK BATCH WIDTH REPS [EARLY]\n",
               argv[0]);
    return 2;
  }
  std::stringstream text;
  text << std::ifstream(argv[1]).rdbuf();
  const std::string ptx = text.str();
  const auto number = [&](int i) { return static_cast<std::uint32_t>(std::stoul(argv[i])); };
  const std::uint32_t batch = number(9), width = number(10), reps = number(11);

  rt::Context ctx(0);
  const auto module = std::make_shared<const rt::LoadedModule>(ctx, ptx, "timeline");
  // launch_raw launches early what its contract says waits for the grid before it.
  ptxdsl::KernelContract reduce;
  reduce.entry = argv[3];
  reduce.waits_for_prior_grid = argc == 13 && number(12) == 1;
  Launch steps[2] = {{rt::Function(module, argv[2]), number(4), number(5), number(6), {}, {}},
                     {rt::Function(module, reduce), number(7), number(8), 0, {}, {}}};
  steps[0].function.reserve_dynamic_shared(steps[0].shared);

  const std::size_t tl_words = std::size_t{steps[0].grid} * kRowSlots + steps[1].grid * 2;
  const std::size_t tensor_bytes = std::size_t{batch} * width * 4 + 4096;
  std::map<std::string, rt::detail::RawBuffer> buffers;
  const auto buffer = [&](const std::string& name) {
    auto it = buffers.find(name);
    if (it == buffers.end()) {
      const std::size_t bytes = name == "tl" ? tl_words * 8 : tensor_bytes;
      it = buffers.emplace(name, rt::detail::RawBuffer(ctx, bytes)).first;
      rt::fill_u32(ctx, it->second.address(), 0x38003800u, bytes / 4);
    }
    return it->second.address();
  };
  for (Launch& s : steps) {
    const std::vector<Param> params = params_of(ptx, s.function.name());
    for (const Param& p : params) {
      std::uint64_t v = 0;
      if (p.pointer) {
        v = buffer(p.name);
      } else if (p.name == "batch") {
        v = batch;
      } else if (p.name == "stride") {
        v = width;
      } else if (p.name == "partial_rows") {
        v = steps[0].grid;
      } else {
        fmt::print(stderr, "{}: no value for parameter {}\n", s.function.name(), p.name);
        return 2;
      }
      s.values.push_back(v);
    }
    for (std::uint64_t& v : s.values) s.pointers.push_back(&v);
  }

  rt::detail::RawBuffer flush(ctx, kFlushBytes);
  std::vector<std::uint64_t> tl(tl_words);
  for (std::uint32_t r = 0; r < reps; ++r) {
    rt::fill_u32(ctx, flush.address(), r, kFlushBytes / 4);
    rt::fill_u32(ctx, buffers.at("tl").address(), 0, tl_words * 2);
    for (Launch& s : steps) {
      rt::launch_raw(s.function, s.grid, s.block, s.shared, nullptr, s.pointers.data());
    }
    ctx.synchronize();
    rt::copy_to_host(ctx, tl.data(), buffers.at("tl").address(), tl_words * 8);
    std::uint64_t first = ~std::uint64_t{0}, row_end = 0, reduce_end = 0;
    for (std::uint32_t c = 0; c < steps[0].grid; ++c) {
      first = std::min(first, tl[c * kRowSlots]);
      row_end = std::max(row_end, tl[c * kRowSlots + 3]);
    }
    for (std::uint32_t c = 0; c < steps[1].grid; ++c) {
      reduce_end = std::max(reduce_end, tl[steps[0].grid * kRowSlots + c * 2 + 1]);
    }
    fmt::print("rep {} row_step_us {:.3f} total_us {:.3f}\n", r, (row_end - first) / 1e3,
               (reduce_end - first) / 1e3);
  }
  for (std::uint32_t c = 0; c < steps[0].grid; ++c) {
    fmt::print("row {}", c);
    for (std::uint32_t s = 0; s < kRowSlots; ++s) fmt::print(" {}", tl[c * kRowSlots + s]);
    fmt::print("\n");
  }
  for (std::uint32_t c = 0; c < steps[1].grid; ++c) {
    const std::size_t at = std::size_t{steps[0].grid} * kRowSlots + c * 2;
    fmt::print("red {} {} {}\n", c, tl[at], tl[at + 1]);
  }
  return 0;
}

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../instruction_table.hpp"
#include "mma_fragments.hpp"
#include "numeric.hpp"
#include "program.hpp"
#include "ptxdsl/dsl/mma.hpp"

// wgmma (sm_90a): a warpgroup's D = A·B (+ D), A and B read from shared memory through matrix
// descriptors (or A from registers), and its ordering: wgmma.fence before registers feed a
// product, commit_group and wait_group before its results may be read. Each warp of the
// warpgroup computes its own 16 rows of D (which is all the ISA's fragment maps give it), at
// issue; the results reach the registers at the wait_group that completes their group.
namespace ptxdsl::detail {
namespace {

constexpr std::uint32_t kWarpsPerWarpgroup = 4;

// A matrix descriptor's fields (the PTX ISA's "Matrix Descriptor Format").
struct Descriptor {
  std::uint32_t start = 0, leading = 0, stride = 0, base_offset = 0;
  Swizzle swizzle = Swizzle::None;
};

Descriptor decode_descriptor(std::uint64_t bits) {
  static constexpr Swizzle kSwizzles[] = {Swizzle::None, Swizzle::B128, Swizzle::B64, Swizzle::B32};
  return {static_cast<std::uint32_t>(bits & 0x3FFFu) << 4,
          static_cast<std::uint32_t>((bits >> 16) & 0x3FFFu) << 4,
          static_cast<std::uint32_t>((bits >> 32) & 0x3FFFu) << 4,
          static_cast<std::uint32_t>((bits >> 49) & 0x7u), kSwizzles[bits >> 62]};
}

constexpr std::uint32_t swizzle_bytes(Swizzle s) {
  return s == Swizzle::B128 ? 128 : s == Swizzle::B64 ? 64 : s == Swizzle::B32 ? 32 : 16;
}

// The shared address of element (mn, k) of a tile: mn along M (A) or N (B), k along K, elements
// of `bytes` bytes. The canonical layouts of the ISA ("Shared Memory Matrix Layout"), in bytes,
// with T = 16 / bytes elements a 16-byte chunk and W the swizzle's width (16 without one):
//   K-major:  ((8, m), (T, 2k)) : ((W, SBO), (1, LBO)), the K chunks 16 bytes apart when swizzled
//   MN-major: ((T, W/16, m), (8, k)) : ((1, 16, LBO), (W, SBO)) swizzled,
//             ((T, 1, m), (8, k)) : ((1, -, SBO), (16, LBO)) without,
// then the swizzle on the whole address (mma.hpp's swizzled_address).
std::uint32_t tile_address(const Descriptor& d, bool mn_major, std::uint32_t mn, std::uint32_t k,
                           std::uint32_t bytes) {
  const std::uint32_t w = swizzle_bytes(d.swizzle);
  const std::uint32_t t = 16 / bytes;
  const bool swizzled = d.swizzle != Swizzle::None;
  std::uint32_t offset = 0;
  if (!mn_major) {
    offset = mn % 8 * w + mn / 8 * d.stride + k % t * bytes + k / t * (swizzled ? 16 : d.leading);
  } else {
    const std::uint32_t chunks = w / 16;
    offset = mn % t * bytes + mn / t % chunks * 16 +
             mn / (t * chunks) * (swizzled ? d.leading : d.stride) + k % 8 * w +
             k / 8 * (swizzled ? d.stride : d.leading);
  }
  return swizzled_address(d.swizzle, d.start + offset);
}

double element_of(MmaInput t, std::uint32_t bits) {
  switch (t) {
    case MmaInput::F16:
      return element_value<MmaInput::F16>(bits);
    case MmaInput::BF16:
      return element_value<MmaInput::BF16>(bits);
    case MmaInput::TF32:
      return element_value<MmaInput::TF32>(bits);
    case MmaInput::E4M3:
      return element_value<MmaInput::E4M3>(bits);
    case MmaInput::E5M2:
      return element_value<MmaInput::E5M2>(bits);
    default:
      return 0;
  }
}

// The in-flight product whose D (or A) register `slot` is, newest first: for messages.
const WgmmaInFlight* in_flight_of(const Warp& w, std::uint32_t slot) {
  for (auto it = w.wgmma.rbegin(); it != w.wgmma.rend(); ++it) {
    const WgmmaForm& f = *it->form;
    for (std::uint32_t s : f.d) {
      if (s == slot) return &*it;
    }
    if (f.a_in_registers) {
      for (std::uint32_t s : f.a_regs) {
        if (s == slot) return &*it;
      }
    }
  }
  return nullptr;
}

[[noreturn]] void fault_in_flight(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint32_t slot,
                                  std::string_view access) {
  const WgmmaInFlight* f = in_flight_of(*c.w, slot);
  fault(
      c, in, lane,
      fmt::format(
          "{} register {}, which the wgmma.mma_async in flight ({}) {}: a "
          "wgmma.wait_group that completes its group must come first",
          access, describe_slot(*c.prog, slot), f ? describe_instr(c, f->instr) : std::string("?"),
          c.w->wgmma_d_busy[slot] != 0 ? "writes as its accumulator" : "reads as its A fragment"));
}

// Every thread of the warp executes it together, and the warpgroup's four warps are whole.
void check_warpgroup(Ctx& c, const DInstr& in, std::uint32_t exec) {
  check_aligned(c, in, exec);
  const std::uint32_t group = c.w->index / kWarpsPerWarpgroup;
  for (std::uint32_t i = 0; i < kWarpsPerWarpgroup; ++i) {
    const std::uint32_t wi = group * kWarpsPerWarpgroup + i;
    if (wi >= c.warps.size() || c.warps[wi].exists != kFullMask) {
      fault(c, in, static_cast<std::uint32_t>(std::countr_zero(exec)),
            fmt::format("wgmma needs the four whole warps of warpgroup {} (threads {} to {}), "
                        "but the CTA has {} threads",
                        group, group * 128, group * 128 + 127, c.launch->config.block.count()));
    }
  }
  if ((c.w->exists & ~c.w->exited) != kFullMask) {
    fault(c, in, static_cast<std::uint32_t>(std::countr_zero(exec)),
          fmt::format("wgmma needs all 32 lanes of its warp, but lane {} has exited",
                      std::countr_zero(c.w->exited)));
  }
}

// The value of a register the warp holds in every lane (a descriptor, scale-d): the ISA asks all
// threads of the warpgroup for the same.
std::uint64_t uniform_value(Ctx& c, const DInstr& in, std::uint32_t slot, std::string_view what) {
  const std::uint64_t* r = c.row(slot);
  for (std::uint32_t lane = 1; lane < kLanes; ++lane) {
    if (r[lane] != r[0]) {
      fault(c, in, lane,
            fmt::format("holds {:#x} in {} ({}), lane 0 {:#x}: it must be the same across the "
                        "warpgroup",
                        r[lane], what, describe_slot(*c.prog, slot), r[0]));
    }
  }
  return r[0];
}

Descriptor descriptor_of(Ctx& c, const DInstr& in, std::uint32_t slot, std::string_view what) {
  const Descriptor d = decode_descriptor(uniform_value(c, in, slot, what));
  if (d.base_offset != 0) {
    fault(c, in, 0,
          fmt::format("{} has the base offset {}: the executor models only base offset 0 (the "
                      "swizzle pattern aligned to its 256/512/1024 bytes)",
                      what, d.base_offset));
  }
  return d;
}

// Elements (mn0 .. mn0 + mn_count, 0 .. k_count) of the tile `d` describes, into `m`: by rows of
// K (A: m[mn * k_count + k]) or, with k_rows, by rows of MN (B: m[k * mn_count + mn]).
void read_tile(Ctx& c, const DInstr& in, const Descriptor& d, bool mn_major, MmaInput t,
               std::uint32_t mn0, std::uint32_t mn_count, std::uint32_t k_count, bool k_rows,
               std::vector<double>& m) {
  const std::uint32_t bytes = element_bits(t) / 8;
  m.assign(std::size_t{mn_count} * k_count, 0.0);
  for (std::uint32_t mn = 0; mn < mn_count; ++mn) {
    for (std::uint32_t k = 0; k < k_count; ++k) {
      const std::uint32_t address = tile_address(d, mn_major, mn0 + mn, k, bytes);
      const std::byte* p = shared_bytes(c, c, in, 0, address, bytes, false);
      check_async_proxy_read(c, in, 0, address, bytes);
      std::uint32_t bits = 0;
      std::memcpy(&bits, p, bytes);
      m[k_rows ? std::size_t{k} * mn_count + mn : std::size_t{mn} * k_count + k] =
          element_of(t, bits);
    }
  }
}

// Registers the product reads or writes must have been written before the warp's last
// wgmma.fence, and must not be another product's in flight in the other role.
void check_operand_registers(Ctx& c, const DInstr& in, const WgmmaForm& f) {
  Warp& w = *c.w;
  if (w.wgmma_fence == 0) {
    fault(c, in, 0, "no wgmma.fence before the warp's first wgmma.mma_async");
  }
  const auto fenced = [&](std::uint32_t slot) {
    if (w.written_at[slot] > w.wgmma_fence) {
      fault(c, in, 0,
            fmt::format("register {} was written after the warp's last wgmma.fence: a "
                        "wgmma.fence must separate a register's writes from the wgmma.mma_async "
                        "that uses it",
                        describe_slot(*c.prog, slot)));
    }
  };
  for (std::uint32_t s : f.d) {
    fenced(s);
    if (w.wgmma_a_busy[s] != 0) fault_in_flight(c, in, 0, s, "writes");
  }
  if (f.a_in_registers) {
    for (std::uint32_t s : f.a_regs) {
      fenced(s);
      if (w.wgmma_d_busy[s] != 0) fault_in_flight(c, in, 0, s, "reads");
    }
  }
}

void mark_busy(Warp& w, std::vector<std::uint16_t>& busy, std::uint32_t slot, int delta) {
  const bool was = w.wgmma_d_busy[slot] != 0 || w.wgmma_a_busy[slot] != 0;
  busy[slot] = static_cast<std::uint16_t>(busy[slot] + delta);
  const bool is = w.wgmma_d_busy[slot] != 0 || w.wgmma_a_busy[slot] != 0;
  if (was != is) w.wgmma_busy_slots += is ? 1 : -1;
}

// wgmma.mma_async: this warp's 16 rows of D = A·B (+ D). The products are exact in double and
// summed there with D, then rounded once to f32 (NaN as the GPU writes it); the tensor core sums
// in an order and precision of its own, so results may differ from the GPU's in the last bits.
void wgmma_mma(Ctx& c, const DInstr& in, std::uint32_t exec) {
  check_warpgroup(c, in, exec);
  Warp& w = *c.w;
  const WgmmaForm& f = c.prog->wgmma[in.aux];
  check_operand_registers(c, in, f);
  const bool accumulate =
      f.scale_d == kNoSlot ? f.scale_d_imm : uniform_value(c, in, f.scale_d, "scale-d") != 0;
  const std::uint32_t row0 = 16 * (w.index % kWarpsPerWarpgroup);
  const double scale = (f.negate_a ? -1.0 : 1.0) * (f.negate_b ? -1.0 : 1.0);

  std::vector<double> a(std::size_t{16} * f.k), b;
  if (f.a_in_registers) {
    const std::uint32_t bits = element_bits(f.a);
    const std::uint32_t per_reg = 32 / bits;
    const std::uint32_t mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1u;
    for (std::uint32_t i = 0; i < 4 * per_reg; ++i) {
      const std::uint64_t* r = c.row(f.a_regs[i / per_reg]);
      for (std::uint32_t lane = 0; lane < kLanes; ++lane) {
        const Cell at = a_cell(f.a, lane, i);
        const auto v = (static_cast<std::uint32_t>(r[lane]) >> (i % per_reg * bits)) & mask;
        a[at.row * f.k + at.col] = element_of(f.a, v);
      }
    }
  } else {
    read_tile(c, in, descriptor_of(c, in, f.a_desc, "a-desc"), f.transpose_a, f.a, row0, 16, f.k,
              false, a);
  }
  read_tile(c, in, descriptor_of(c, in, f.b_desc, "b-desc"), f.transpose_b, f.b, 0, f.n, f.k, true,
            b);

  for (std::uint32_t i = 0; i < f.d.size(); ++i) {
    const std::uint32_t slot = f.d[i];
    const bool chained = w.wgmma_d_busy[slot] != 0;
    if (accumulate && !chained && w.init[slot] != kFullMask) {
      fault(c, in, static_cast<std::uint32_t>(std::countr_zero(~w.init[slot])),
            fmt::format("adds to accumulator register {}, which this thread never wrote (a first "
                        "product writes D with accumulate = false)",
                        describe_slot(*c.prog, slot)));
    }
    std::uint32_t* result = &w.wgmma_result[std::size_t{slot} * kLanes];
    const std::uint64_t* held = c.row(slot);
    for (std::uint32_t lane = 0; lane < kLanes; ++lane) {
      const std::uint32_t row = group_of(lane) + 8 * ((i >> 1) & 1);
      const std::uint32_t col = 2 * thread_in_group(lane) + (i & 1) + 8 * (i >> 2);
      double sum = 0;
      if (accumulate) sum = f32_of(chained ? result[lane] : held[lane]);
      for (std::uint32_t k = 0; k < f.k; ++k) sum += scale * a[row * f.k + k] * b[k * f.n + col];
      const auto v = static_cast<float>(sum);
      result[lane] = std::isnan(v) ? kCanonicalNanF32 : static_cast<std::uint32_t>(bits_of(v));
    }
  }
  for (std::uint32_t s : f.d) mark_busy(w, w.wgmma_d_busy, s, 1);
  if (f.a_in_registers) {
    for (std::uint32_t s : f.a_regs) mark_busy(w, w.wgmma_a_busy, s, 1);
  }
  w.wgmma.push_back({w.wgmma_groups, in.index, &f});
  ++w.wgmma_issued;
}

// The product lands: D's registers take their values once no product in flight still writes them.
void complete(Ctx& c, const WgmmaInFlight& done) {
  Warp& w = *c.w;
  for (std::uint32_t s : done.form->d) {
    mark_busy(w, w.wgmma_d_busy, s, -1);
    if (w.wgmma_d_busy[s] != 0) continue;
    std::uint64_t* r = c.row(s);
    const std::uint32_t* result = &w.wgmma_result[std::size_t{s} * kLanes];
    for (std::uint32_t lane = 0; lane < kLanes; ++lane) r[lane] = result[lane];
    w.init[s] = kFullMask;
  }
  if (done.form->a_in_registers) {
    for (std::uint32_t s : done.form->a_regs) mark_busy(w, w.wgmma_a_busy, s, -1);
  }
}

void wgmma_fence(Ctx& c, const DInstr& in, std::uint32_t exec) {
  check_aligned(c, in, exec);
  c.w->wgmma_fence = c.warp_instructions;
}

void wgmma_commit(Ctx& c, const DInstr& in, std::uint32_t exec) {
  check_aligned(c, in, exec);
  ++c.w->wgmma_groups;
}

// wgmma.wait_group N: the groups but the newest N complete, in order.
void wgmma_wait(Ctx& c, const DInstr& in, std::uint32_t exec) {
  check_aligned(c, in, exec);
  Warp& w = *c.w;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < w.wgmma.size(); ++i) {
    if (w.wgmma[i].group + in.aux < w.wgmma_groups) {
      complete(c, w.wgmma[i]);
    } else {
      w.wgmma[kept++] = w.wgmma[i];
    }
  }
  w.wgmma.resize(kept);
}

}  // namespace

void check_wgmma_registers(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const Warp& w = *c.w;
  const auto lane = static_cast<std::uint32_t>(std::countr_zero(exec));
  const auto busy = [&](std::uint32_t s) {
    return s < w.wgmma_d_busy.size() && (w.wgmma_d_busy[s] != 0 || w.wgmma_a_busy[s] != 0);
  };
  for (std::uint32_t i = 0; i < in.nsrc; ++i) {
    if (busy(in.src[i])) fault_in_flight(c, in, lane, in.src[i], "reads");
  }
  for (std::uint32_t i = 0; i < in.ndst; ++i) {
    if (busy(in.dst[i])) fault_in_flight(c, in, lane, in.dst[i], "writes");
  }
}

void note_register_writes(Ctx& c, const DInstr& in) {
  for (std::uint32_t i = 0; i < in.ndst; ++i) c.w->written_at[in.dst[i]] = c.warp_instructions;
}

void check_warpgroups_agree(Ctx& c) {
  for (std::size_t first = 0; first + 1 < c.warps.size(); first += kWarpsPerWarpgroup) {
    for (std::size_t i = first + 1; i < std::min(first + kWarpsPerWarpgroup, c.warps.size()); ++i) {
      if (c.warps[i].wgmma_issued != c.warps[first].wgmma_issued) {
        throw Error(fmt::format(
            "kernel '{}', CTA ({}, {}, {}): warp {} issued {} wgmma.mma_async and warp {} of the "
            "same warpgroup {}: the four warps of a warpgroup execute each one together",
            c.prog->kernel->name(), c.cta.x, c.cta.y, c.cta.z, first, c.warps[first].wgmma_issued,
            i, c.warps[i].wgmma_issued));
      }
    }
  }
}

void reset_wgmma(Warp& w, const Program& p) {
  w.wgmma.clear();
  w.wgmma_groups = 0;
  w.wgmma_issued = 0;
  w.wgmma_fence = 0;
  w.wgmma_busy_slots = 0;
  if (p.wgmma.empty()) return;
  w.written_at.assign(p.slots, 0);
  w.wgmma_d_busy.assign(p.slots, 0);
  w.wgmma_a_busy.assign(p.slots, 0);
  w.wgmma_result.assign(std::size_t{p.slots} * kLanes, 0);
}

Handler select_wgmma(const Instr&) {
  return &wgmma_mma;
}
Handler select_wgmma_fence(const Instr&) {
  return &wgmma_fence;
}
Handler select_wgmma_commit(const Instr&) {
  return &wgmma_commit;
}
Handler select_wgmma_wait(const Instr&) {
  return &wgmma_wait;
}

}  // namespace ptxdsl::detail

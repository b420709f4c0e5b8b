#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "../instruction_table.hpp"
#include "../tensor_map_decode.hpp"
#include "program.hpp"
#include "ptxdsl/dsl/mma.hpp"
#include "ptxdsl/dsl/tensor_map.hpp"

// The TMA unit's tensor copies (cp.async.bulk.tensor, tiled mode) through the executor's tensor
// maps (tensor_map.hpp): a box of the tensor into shared memory, landing as a bulk copy does
// (unreadable until a thread has waited for its mbarrier phase), multicast into the cluster's
// CTAs, or out of shared memory into the tensor; their bulk groups and prefetch.tensormap.
namespace ptxdsl::detail {
namespace {

// The tensor map a generic address names: a kernel parameter's bytes (cvta.param), encoded by
// executor_tensor_map.
TensorMapSpec tensor_map_at(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint64_t address) {
  const std::vector<std::byte>& params = c.launch->params;
  if (address < kParamWindow || address - kParamWindow + kTensorMapBytes > params.size()) {
    fault(c, in, lane,
          fmt::format("the tensor map address {:#x} is not a kernel parameter's: the executor "
                      "reads tensor maps from parameters declared by param_tensor_map",
                      address));
  }
  TensorMapSpec spec;
  if (!detail::decode_tensor_map(params.data() + (address - kParamWindow), spec)) {
    fault(c, in, lane,
          "the tensor map parameter does not hold a map the executor knows: pass "
          "Arg::of_tensor_map(spec)");
  }
  return spec;
}

std::uint32_t shared_address(Ctx& c, std::uint32_t slot, std::uint32_t offset, std::uint32_t lane) {
  return static_cast<std::uint32_t>(c.row(slot)[lane]) + offset;
}

// The box's elements in order (dimension 0 fastest): their coordinates in the tensor, whether
// they are inside it and their global address.
struct BoxWalk {
  const TensorMapSpec& spec;
  std::array<std::int64_t, kTensorMapMaxRank> start{};
  std::uint32_t bytes = 0;

  std::uint64_t elements() const {
    std::uint64_t n = 1;
    for (std::uint32_t b : spec.box) n *= b;
    return n;
  }
  // Element `linear` of the box: inside the tensor (and its address there), or not.
  bool at(std::uint64_t linear, std::uint64_t& address) const {
    address = spec.global_address;
    for (std::size_t i = 0; i < spec.box.size(); ++i) {
      const std::int64_t g = start[i] + static_cast<std::int64_t>(linear % spec.box[i]);
      linear /= spec.box[i];
      if (g < 0 || static_cast<std::uint64_t>(g) >= spec.dims[i]) return false;
      address += static_cast<std::uint64_t>(g) * (i == 0 ? bytes : spec.strides_bytes[i - 1]);
    }
    return true;
  }
};

BoxWalk walk_of(Ctx& c, const DInstr& in, std::uint32_t lane, const TensorMapSpec& spec,
                std::uint32_t first_coord) {
  if (spec.dims.size() != in.vec) {
    fault(c, in, lane,
          fmt::format("copies a {}-D box through a map of rank {}", in.vec, spec.dims.size()));
  }
  BoxWalk w{spec};
  w.bytes = static_cast<std::uint32_t>(size_bytes(spec.element));
  for (std::uint32_t i = 0; i < in.vec; ++i) {
    w.start[i] = static_cast<std::int32_t>(c.row(in.src[first_coord + i])[lane]);
  }
  // An H100 traps (illegal instruction) on a box whose first row does not start on 16 bytes.
  if ((static_cast<std::int64_t>(w.start[0]) * w.bytes) % 16 != 0) {
    fault(c, in, lane,
          fmt::format("copies a box at innermost coordinate {} ({} bytes): it must start on a "
                      "multiple of 16 bytes ({} elements)",
                      w.start[0], static_cast<std::int64_t>(w.start[0]) * w.bytes,
                      16 / std::max<std::uint32_t>(w.bytes, 1)));
  }
  return w;
}

// The fill of an element outside the tensor: zero, or the element type's NaN.
std::uint64_t fill_of(const TensorMapSpec& spec) {
  if (!spec.nan_fill) return 0;
  switch (size_bytes(spec.element)) {
    case 2:
      return 0x7FFF;
    case 4:
      return 0x7FFFFFFF;
    default:
      return 0x7FFFFFFFFFFFFFFFull;
  }
}

// Load: src = destination, map, mbarrier, coordinates{, mask}.
void tensor_load(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint32_t mask_src = 3 + in.vec;
  each_lane(exec, [&](std::uint32_t l) {
    const TensorMapSpec spec = tensor_map_at(c, in, l, c.row(in.src[1])[l]);
    const BoxWalk box = walk_of(c, in, l, spec, 3);
    const std::uint32_t dst = shared_address(c, in.src[0], in.aux, l);
    const auto bar = shared_address(c, in.src[2], static_cast<std::uint32_t>(in.offset2), l);
    const auto total = static_cast<std::uint32_t>(box.elements() * box.bytes);
    std::uint32_t targets = 1u << c.rank;
    if (in.nsrc > mask_src) {
      targets = static_cast<std::uint16_t>(c.row(in.src[mask_src])[l]);
      if (targets == 0 || targets >> c.cluster->ctas.size() != 0) {
        fault(c, in, l,
              fmt::format("the CTA mask {:#x} must name CTAs of the cluster's {}", targets,
                          c.cluster->ctas.size()));
      }
    }
    // Staged once, then written into each target CTA's shared memory.
    std::vector<std::byte> staged(total);
    const std::uint64_t fill = fill_of(spec);
    for (std::uint64_t e = 0; e < box.elements(); ++e) {
      std::uint64_t from = 0;
      std::byte* to = staged.data() + e * box.bytes;
      if (box.at(e, from)) {
        std::memcpy(to, global_span(c, in, l, from, box.bytes, false), box.bytes);
      } else {
        std::memcpy(to, &fill, box.bytes);
      }
    }
    each_lane(targets, [&](std::uint32_t rank) {
      Ctx& owner = *c.cluster->ctas[rank];
      Mbarrier& m = find_mbarrier(c, owner, in, l, bar);
      const SharedRange& range = shared_range(c, in, l, dst, total, true, 128);
      check_not_in_flight(c, owner, in, l, range, dst, total, true);
      for (std::uint32_t b = 0; b < total; b += box.bytes) {
        std::memcpy(owner.shared.data() + swizzled_address(spec.swizzle, dst + b),
                    staged.data() + b, box.bytes);
      }
      std::memset(owner.shared_init.data() + dst, 0xFF, total);
      std::memset(owner.shared_pending.data() + dst, kPendingBulk, total);
      note_async_proxy_write(owner, dst, total);
      ++owner.copies_in_flight;
      owner.bulk_copies.push_back(BulkCopy{bar, m.phase, dst, total});
      m.tx -= static_cast<std::int64_t>(total);
      complete_if_done(m);
    });
  });
}

// Store: src = map, shared source, coordinates. The box is read (through the async proxy) and
// written into the tensor when the copy is issued.
void tensor_store(Ctx& c, const DInstr& in, std::uint32_t exec) {
  each_lane(exec, [&](std::uint32_t l) {
    const TensorMapSpec spec = tensor_map_at(c, in, l, c.row(in.src[0])[l]);
    const BoxWalk box = walk_of(c, in, l, spec, 2);
    const std::uint32_t src = shared_address(c, in.src[1], in.aux, l);
    if (src % 128 != 0) {
      fault(c, in, l, fmt::format("the shared box at {:#x} must be 128-byte aligned", src));
    }
    for (std::uint64_t e = 0; e < box.elements(); ++e) {
      const auto at =
          swizzled_address(spec.swizzle, src + static_cast<std::uint32_t>(e * box.bytes));
      const std::byte* from = shared_bytes(c, c, in, l, at, box.bytes, false);
      check_async_proxy_read(c, in, l, at, box.bytes);
      std::uint64_t to = 0;
      if (box.at(e, to)) std::memcpy(global_span(c, in, l, to, box.bytes, true), from, box.bytes);
    }
  });
}

// prefetch.tensormap: only checks that the address is a tensor map's.
void prefetch_tensormap(Ctx& c, const DInstr& in, std::uint32_t exec) {
  each_lane(exec, [&](std::uint32_t l) {
    tensor_map_at(c, in, l, c.row(in.src[0])[l] + static_cast<std::uint64_t>(in.offset));
  });
}

// cp.async.bulk.commit_group and wait_group: a store's bytes are read and written when it is
// issued, so there is nothing left to wait for.
void bulk_group(Ctx&, const DInstr&, std::uint32_t) {}

}  // namespace

Handler select_bulk_tensor(const Instr& in) {
  return in.op == Op::BulkTensorLoad ? &tensor_load : &tensor_store;
}
Handler select_bulk_group(const Instr& in) {
  return in.op == Op::PrefetchTensormap ? &prefetch_tensormap : &bulk_group;
}

}  // namespace ptxdsl::detail

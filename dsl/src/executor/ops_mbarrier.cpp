#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "program.hpp"

// mbarriers and bulk copies (cp.async.bulk). A bulk copy reads its source and writes shared memory
// when it is issued, but its bytes stay pending (a thread touching them faults) until a thread
// waits for the mbarrier phase the copy completes on. Waits block in the CTA's scheduler (Flow::
// MbarWait) rather than spin.
namespace ptxdsl::detail {
namespace {

std::uint32_t shared_address(Ctx& c, std::uint32_t base_slot, std::int64_t offset,
                             std::uint32_t lane) {
  return static_cast<std::uint32_t>(
      static_cast<std::int64_t>(static_cast<std::uint32_t>(c.row(base_slot)[lane]) + offset));
}

Mbarrier& find_mbarrier(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint32_t address) {
  return find_mbarrier(c, c, in, lane, address);
}

void mbarrier_init(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* count = c.row(in.src[1]);
  each_lane(exec, [&](std::uint32_t l) {
    const std::uint32_t address = shared_address(c, in.src[0], in.offset, l);
    shared_range(c, in, l, address, 8, true);
    const std::uint64_t n = static_cast<std::uint32_t>(count[l]);
    if (n == 0 || n > kMbarrierMaxCount) {
      fault(c, in, l,
            fmt::format("arrival count must be in [1, {}], got {}", kMbarrierMaxCount, n));
    }
    for (const BulkCopy& b : c.bulk_copies) {
      if (b.bar == address) {
        fault(c, in, l,
              fmt::format("initializes the mbarrier at shared {:#x} while a bulk copy completes "
                          "on it",
                          address));
      }
    }
    c.mbarriers[address] =
        Mbarrier{static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(n), 0, 0};
  });
}

void arrive(Ctx& c, const DInstr& in, std::uint32_t lane, Mbarrier& m, std::uint32_t address) {
  if (m.pending == 0) {
    fault(c, in, lane,
          fmt::format("arrives on the mbarrier at shared {:#x} after its phase's {} arrivals "
                      "have all come",
                      address, m.count));
  }
  --m.pending;
  complete_if_done(m);
}

// Announced bytes (expect_tx) and landed ones (complete_tx), with no arrival.
void add_tx(Ctx& c, const DInstr& in, std::uint32_t lane, Mbarrier& m, std::uint64_t bytes,
            bool expect) {
  if (bytes > kBulkCopyMaxBytes) {
    fault(c, in, lane,
          fmt::format("transaction bytes must be at most {}, got {}", kBulkCopyMaxBytes, bytes));
  }
  m.tx += expect ? static_cast<std::int64_t>(bytes) : -static_cast<std::int64_t>(bytes);
  complete_if_done(m);
}

// The mbarrier an operation names: in this CTA, or through a `.shared::cluster` address in a
// peer's.
Mbarrier& named_mbarrier(Ctx& c, const DInstr& in, std::uint32_t lane) {
  const auto address = shared_address(c, in.src[0], in.offset, lane);
  if (in.space != Space::SharedCluster) return find_mbarrier(c, in, lane, address);
  const ClusterAddress a = resolve_cluster(c, in, lane, address);
  return find_mbarrier(c, *a.owner, in, lane, a.offset);
}

template <bool kExpect>
void mbarrier_tx(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* tx = c.row(in.src[1]);
  each_lane(exec, [&](std::uint32_t l) {
    add_tx(c, in, l, named_mbarrier(c, in, l), static_cast<std::uint32_t>(tx[l]), kExpect);
  });
}

void mbarrier_arrive_remote(Ctx& c, const DInstr& in, std::uint32_t exec) {
  each_lane(exec, [&](std::uint32_t l) {
    arrive(c, in, l, named_mbarrier(c, in, l), shared_address(c, in.src[0], in.offset, l));
  });
}

void mbarrier_arrive(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* tx = in.nsrc > 1 ? c.row(in.src[1]) : nullptr;
  each_lane(exec, [&](std::uint32_t l) {
    const std::uint32_t address = shared_address(c, in.src[0], in.offset, l);
    Mbarrier& m = find_mbarrier(c, in, l, address);
    if (tx != nullptr) add_tx(c, in, l, m, static_cast<std::uint32_t>(tx[l]), true);
    arrive(c, in, l, m, address);
  });
}

// src: destination base, mbarrier base, source base, size; offsets: aux (destination), offset2
// (mbarrier), offset (source).
void cp_async_bulk(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* src = c.row(in.src[2]);
  const std::uint64_t* size = c.row(in.src[3]);
  each_lane(exec, [&](std::uint32_t l) {
    const std::uint32_t to = shared_address(c, in.src[0], static_cast<std::int32_t>(in.aux), l);
    const std::uint32_t bar = shared_address(c, in.src[1], in.offset2, l);
    const std::uint64_t from = src[l] + static_cast<std::uint64_t>(in.offset);
    const auto bytes = static_cast<std::uint32_t>(size[l]);
    if (bytes == 0 || bytes % 16 != 0 || bytes > kBulkCopyMaxBytes) {
      fault(c, in, l,
            fmt::format("size must be a multiple of 16 in [16, {}], got {}", kBulkCopyMaxBytes,
                        bytes));
    }
    if (from % 16 != 0) {
      fault(c, in, l,
            fmt::format("misaligned bulk copy source {:#x} ({}): it must be 16-byte aligned", from,
                        where_global(c, from, bytes)));
    }
    Mbarrier& m = find_mbarrier(c, in, l, bar);
    const SharedRange& range = shared_range(c, in, l, to, bytes, true, 16);
    check_not_in_flight(c, in, l, range, to, bytes, true);
    std::memcpy(c.shared.data() + to, global_span(c, in, l, from, bytes, false), bytes);
    std::memset(c.shared_init.data() + to, 0xFF, bytes);
    std::memset(c.shared_pending.data() + to, kPendingBulk, bytes);
    note_async_proxy_write(c, to, bytes);
    ++c.copies_in_flight;
    c.bulk_copies.push_back(BulkCopy{bar, m.phase, to, bytes});
    m.tx -= static_cast<std::int64_t>(bytes);
    complete_if_done(m);
  });
}

// Lanes whose phase has completed (the scheduler runs only those): the predicate is set and the
// bulk copies of that phase become visible.
void mbarrier_wait(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* done = c.row(in.dst[0]);
  each_lane(exec, [&](std::uint32_t l) {
    done[l] = 1;
    const std::uint32_t address = shared_address(c, in.src[0], in.offset, l);
    const Mbarrier& m = c.mbarriers.at(address);
    const std::uint32_t parity = static_cast<std::uint32_t>(c.row(in.src[1])[l]);
    std::vector<BulkCopy>& copies = c.bulk_copies;
    const auto landed = [&](const BulkCopy& b) {
      return b.bar == address && b.phase < m.phase && (b.phase & 1u) == parity;
    };
    bool any = false;
    for (const BulkCopy& b : copies) {
      if (!landed(b)) continue;
      std::memset(c.shared_pending.data() + b.shared_address, 0, b.bytes);
      --c.copies_in_flight;
      any = true;
    }
    if (!any) return;
    copies.erase(std::remove_if(copies.begin(), copies.end(), landed), copies.end());
    // Bytes that red.async of a later phase also update stay unreadable.
    for (const BulkCopy& b : copies) {
      std::memset(c.shared_pending.data() + b.shared_address, b.kind, b.bytes);
    }
  });
}

void fence_mbarrier_init(Ctx&, const DInstr&, std::uint32_t) {}

}  // namespace

Mbarrier& find_mbarrier(Ctx& c, Ctx& owner, const DInstr& in, std::uint32_t lane,
                        std::uint32_t address) {
  shared_range(c, in, lane, address, 8, false);
  const auto it = owner.mbarriers.find(address);
  if (it == owner.mbarriers.end()) {
    fault(c, in, lane,
          fmt::format("uses the mbarrier at shared {:#x}, which no mbarrier.init of {} initialized",
                      address, &owner == &c ? std::string("this CTA") : describe_rank(owner)));
  }
  return it->second;
}

void complete_if_done(Mbarrier& m) {
  if (m.pending == 0 && m.tx == 0) {
    ++m.phase;
    m.pending = m.count;
  }
}

bool mbarrier_phase_done(Ctx& c, const DInstr& in, std::uint32_t lane) {
  const std::uint32_t address = shared_address(c, in.src[0], in.offset, lane);
  const Mbarrier& m = find_mbarrier(c, in, lane, address);
  const std::uint64_t parity = static_cast<std::uint32_t>(c.row(in.src[1])[lane]);
  if (parity > 1) fault(c, in, lane, fmt::format("phase parity must be 0 or 1, got {}", parity));
  // The phase of that parity has completed once the current phase has the other parity.
  return (m.phase & 1u) != parity;
}

std::string describe_mbarrier_wait(Ctx& c, const DInstr& in, std::uint32_t lane) {
  const std::uint32_t address = shared_address(c, in.src[0], in.offset, lane);
  const Mbarrier& m = c.mbarriers.at(address);
  return fmt::format(
      "waits for phase parity {} of the mbarrier at shared {:#x}, whose phase still waits for {} "
      "of its {} arrivals and {} transaction bytes",
      c.row(in.src[1])[lane], address, m.pending, m.count, m.tx);
}

// The semantics the instruction table names.
Handler select_mbarrier_init(const Instr&) {
  return &mbarrier_init;
}
Handler select_mbarrier_arrive(const Instr& in) {
  return in.space == Space::SharedCluster ? &mbarrier_arrive_remote : &mbarrier_arrive;
}
Handler select_mbarrier_expect_tx(const Instr&) {
  return &mbarrier_tx<true>;
}
Handler select_mbarrier_complete_tx(const Instr&) {
  return &mbarrier_tx<false>;
}
Handler select_mbarrier_wait(const Instr&) {
  return &mbarrier_wait;
}
Handler select_fence_mbarrier_init(const Instr&) {
  return &fence_mbarrier_init;
}
Handler select_cp_async_bulk(const Instr&) {
  return &cp_async_bulk;
}

}  // namespace ptxdsl::detail

#include <fmt/format.h>

#include <cstring>

#include "program.hpp"

// Thread-block clusters: mapa, loads and stores in `.shared::cluster` (distributed shared memory,
// a peer CTA's bytes checked as a CTA's own are, its race records shared by the cluster), the
// cluster barrier's arrive (its wait blocks in the scheduler, Flow::ClusterWait), and st.async /
// red.async, whose bytes stay unreadable until their mbarrier phase is waited for.
namespace ptxdsl::detail {
namespace {

const char* verb(bool write) {
  return write ? "write" : "read";
}

std::uint32_t cluster_address(Ctx& c, std::uint32_t base_slot, std::int64_t offset,
                              std::uint32_t lane) {
  return static_cast<std::uint32_t>(
      static_cast<std::int64_t>(static_cast<std::uint32_t>(c.row(base_slot)[lane]) + offset));
}

// The peer's declared array holding [offset, +bytes), aligned to `bytes`; faults naming the CTA.
void check_peer_range(Ctx& c, const DInstr& in, std::uint32_t lane, const ClusterAddress& a,
                      std::uint32_t bytes, bool write) {
  for (const SharedRange& r : c.shared_ranges) {
    if (a.offset >= r.begin && std::uint64_t{a.offset} + bytes <= r.end) return;
  }
  std::string arrays;
  for (const SharedRange& r : c.shared_ranges) {
    arrays +=
        fmt::format("{}'{}' [{:#x}, {:#x})", arrays.empty() ? "" : ", ", r.name, r.begin, r.end);
  }
  fault(c, in, lane,
        fmt::format("out-of-bounds shared::cluster {} of {} bytes at offset {:#x} of {}; shared "
                    "arrays: {}",
                    verb(write), bytes, a.offset, describe_rank(*a.owner),
                    arrays.empty() ? std::string("none") : arrays));
}

std::byte* cluster_bytes(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint32_t address,
                         std::uint32_t bytes, bool write) {
  const ClusterAddress a = resolve_cluster(c, in, lane, address);
  if (a.owner != &c) check_peer_range(c, in, lane, a, bytes, write);
  return shared_bytes(c, *a.owner, in, lane, a.offset, bytes, write);
}

void mapa(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* a = c.row(in.src[0]);
  const std::uint64_t* rank = c.row(in.src[1]);
  std::uint64_t* d = c.row(in.dst[0]);
  const auto ctas = static_cast<std::uint32_t>(c.cluster->ctas.size());
  each_lane(exec, [&](std::uint32_t l) {
    const auto r = static_cast<std::uint32_t>(rank[l]);
    if (r >= ctas) {
      fault(c, in, l,
            fmt::format("maps to CTA rank {}, outside the cluster of {} CTA{} (%cluster_nctarank)",
                        r, ctas, ctas == 1 ? "" : "s"));
    }
    const std::uint32_t offset = static_cast<std::uint32_t>(a[l]) & ((1u << kClusterRankShift) - 1);
    d[l] = ((r + 1) << kClusterRankShift) | offset;
  });
}

void ld_cluster(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint32_t elem = in.elem_bytes, bytes = elem * in.vec;
  each_lane(exec, [&](std::uint32_t l) {
    const std::byte* p =
        cluster_bytes(c, in, l, cluster_address(c, in.src[0], in.offset, l), bytes, false);
    for (std::uint32_t i = 0; i < in.vec; ++i) {
      std::uint64_t v = 0;
      std::memcpy(&v, p + i * elem, elem);
      c.row(in.dst[i])[l] = v;
    }
  });
}

void st_cluster(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint32_t elem = in.elem_bytes, bytes = elem * in.vec;
  each_lane(exec, [&](std::uint32_t l) {
    std::byte* p =
        cluster_bytes(c, in, l, cluster_address(c, in.src[0], in.offset, l), bytes, true);
    for (std::uint32_t i = 0; i < in.vec; ++i) {
      const std::uint64_t v = c.row(in.src[1 + i])[l];
      std::memcpy(p + i * elem, &v, elem);
    }
  });
}

void barrier_cluster_arrive(Ctx& c, const DInstr& in, std::uint32_t exec) {
  if (in.aligned) check_aligned(c, in, exec);
  each_lane(exec, [&](std::uint32_t l) {
    if (c.w->cluster_arrival[l] != 0) {
      fault(c, in, l,
            "arrives at barrier.cluster again before its barrier.cluster.wait (each arrive must "
            "be followed by a wait)");
    }
    c.w->cluster_arrival[l] = c.cluster->phase + 1;
  });
}

// The scheduler runs barrier.cluster.wait (Flow::ClusterWait); the fences order nothing here, as
// a cluster's CTAs run on one host thread in the order the executor picks.
void no_effect(Ctx&, const DInstr&, std::uint32_t) {}

// st.async / red.async: the destination and the mbarrier it completes on must be in one CTA.
template <bool kRed>
void async_remote(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint32_t bytes = in.elem_bytes;
  const std::uint8_t kind = kRed ? kPendingRedAsync : kPendingStAsync;
  each_lane(exec, [&](std::uint32_t l) {
    const ClusterAddress to =
        resolve_cluster(c, in, l, cluster_address(c, in.src[0], in.offset, l));
    const ClusterAddress bar =
        resolve_cluster(c, in, l, cluster_address(c, in.src[2], in.offset2, l));
    if (to.owner != bar.owner) {
      fault(c, in, l,
            fmt::format("writes the shared memory of {} but completes on an mbarrier of {}: both "
                        "must be in the same CTA",
                        describe_rank(*to.owner), describe_rank(*bar.owner)));
    }
    Ctx& owner = *to.owner;
    if (&owner != &c) check_peer_range(c, in, l, to, bytes, true);
    const SharedRange& range = shared_range(c, in, l, to.offset, bytes, true);
    Mbarrier& m = find_mbarrier(c, owner, in, l, bar.offset);
    std::byte* p = owner.shared.data() + to.offset;
    std::uint8_t* pending = owner.shared_pending.data() + to.offset;
    const std::uint64_t v = c.row(in.src[1])[l];
    if (kRed && pending[0] == kPendingRedAsync) {
      // Another red.async in flight updates these bytes: the adds are atomic.
    } else {
      check_not_in_flight(c, owner, in, l, range, to.offset, bytes, true);
    }
    if (kRed) {
      if (owner.shared_init[to.offset] != 0xFF && c.launch->options.check_uninitialized_shared) {
        fault(c, in, l,
              fmt::format("adds to shared memory at offset {:#x} ('{}' + {}) of {} that no thread "
                          "wrote yet",
                          to.offset, range.name, to.offset - range.begin, describe_rank(owner)));
      }
      std::uint32_t old;
      std::memcpy(&old, p, 4);
      const std::uint32_t sum = old + static_cast<std::uint32_t>(v);
      std::memcpy(p, &sum, 4);
    } else {
      std::memcpy(p, &v, bytes);
    }
    std::memset(owner.shared_init.data() + to.offset, 0xFF, bytes);
    std::memset(pending, kind, bytes);
    ++owner.copies_in_flight;
    owner.bulk_copies.push_back(BulkCopy{bar.offset, m.phase, to.offset, bytes, kind});
    m.tx -= bytes;
    complete_if_done(m);
  });
}

}  // namespace

std::string describe_rank(const Ctx& c) {
  return fmt::format("CTA rank {} (CTA ({}, {}, {}))", c.rank, c.cta.x, c.cta.y, c.cta.z);
}

ClusterAddress resolve_cluster(Ctx& c, const DInstr& in, std::uint32_t lane,
                               std::uint32_t address) {
  const std::uint32_t field = address >> kClusterRankShift;
  if (field == 0) return {&c, address};
  const std::uint32_t rank = field - 1;
  const auto ctas = static_cast<std::uint32_t>(c.cluster->ctas.size());
  if (rank >= ctas) {
    fault(c, in, lane,
          fmt::format("shared::cluster address {:#x} names CTA rank {}, outside the cluster of {} "
                      "CTA{}",
                      address, rank, ctas, ctas == 1 ? "" : "s"));
  }
  Ctx& owner = *c.cluster->ctas[rank];
  if (&owner != &c && ((c.w->cluster_waited >> lane) & 1u) == 0) {
    fault(c, in, lane,
          fmt::format("accesses the shared memory of {} before its first barrier.cluster.wait: "
                      "the peer may not have started yet (arrive at the kernel's start and wait "
                      "before the first access to a peer, as ClusterStart does)",
                      describe_rank(owner)));
  }
  bool live = false;
  for (const Warp& w : owner.warps) live = live || (w.exists & ~w.exited) != 0;
  if (!live) {
    fault(c, in, lane,
          fmt::format("accesses the shared memory of {}, whose threads have all exited: a CTA's "
                      "shared memory is gone once it exits (a barrier.cluster before the exit "
                      "is missing)",
                      describe_rank(owner)));
  }
  return {&owner, address & ((1u << kClusterRankShift) - 1)};
}

// The semantics the instruction table names.
Handler select_mapa(const Instr&) {
  return &mapa;
}
Handler select_ld_cluster(const Instr&) {
  return &ld_cluster;
}
Handler select_st_cluster(const Instr&) {
  return &st_cluster;
}
Handler select_barrier_cluster_arrive(const Instr&) {
  return &barrier_cluster_arrive;
}
// barrier.cluster.wait (the scheduler blocks it) and fence.acq_rel.cluster: the executor's memory
// is coherent, which these order nothing further in.
Handler select_cluster_ordering(const Instr&) {
  return &no_effect;
}
// fence.proxy.async: this thread's generic writes so far are visible to the async proxy (the
// async-proxy rule, ops_memory.cpp).
void fence_proxy_async(Ctx& c, const DInstr&, std::uint32_t exec) {
  if (c.proxy_fenced.empty()) return;
  each_lane(exec,
            [&](std::uint32_t l) { c.proxy_fenced[c.w->index * kLanes + l] = c.generic_writes; });
}
Handler select_fence_proxy_async(const Instr&) {
  return &fence_proxy_async;
}
Handler select_st_async(const Instr& in) {
  return size_bytes(in.type) == 4 || size_bytes(in.type) == 8 ? &async_remote<false> : nullptr;
}
Handler select_red_async(const Instr& in) {
  return size_bytes(in.type) == 4 ? &async_remote<true> : nullptr;
}

}  // namespace ptxdsl::detail

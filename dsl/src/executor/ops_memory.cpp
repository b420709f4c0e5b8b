#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "numeric.hpp"
#include "program.hpp"

// ld / st in global, shared and param space (scalar, v2, v4; cache hints have no effect here),
// atom and red in global and shared memory. Every access is checked: alignment, bounds, and in
// shared memory, that some thread wrote the bytes before they are read.
namespace ptxdsl::detail {
namespace {

const char* verb(bool write) {
  return write ? "write" : "read";
}

std::string shared_map(const Ctx& c) {
  std::string s;
  for (const SharedRange& r : c.shared_ranges) {
    s += fmt::format("{}'{}' [{:#x}, {:#x})", s.empty() ? "" : ", ", r.name, r.begin, r.end);
  }
  return s.empty() ? std::string("the kernel declares no shared memory") : "shared arrays: " + s;
}

[[noreturn]] void global_fault(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint64_t address,
                               std::uint32_t bytes, bool write) {
  fault(c, in, lane,
        fmt::format("out-of-bounds global {} of {} byte{} at {:#x}: {}", verb(write), bytes,
                    bytes == 1 ? "" : "s", address, where_global(c, address, bytes)));
}

// The shared array `address` falls in, for a fault.
std::string where_shared(const Ctx& c, std::int64_t address) {
  for (const SharedRange& r : c.shared_ranges) {
    if (address >= r.begin && address < r.end) {
      return fmt::format("'{}' + {}", r.name, address - r.begin);
    }
  }
  return "in no declared array; " + shared_map(c);
}

inline std::uint32_t access_bytes(const DInstr& in) {
  return std::uint32_t{in.elem_bytes} * in.vec;
}

// Accesses of one warp are ordered (its lanes run in program order); accesses of two warps of a
// CTA only by a barrier between them (bar.sync or barrier.cluster); accesses of two CTAs of a
// cluster only by a barrier.cluster. `owner` holds the bytes and their records; c accesses them.
// An atomic is checked as a write against the plain accesses recorded and leaves no record, so
// that atomics never race with each other (a plain access after them is then not checked).
void check_race(Ctx& c, Ctx& owner, const DInstr& in, std::uint32_t lane, const SharedRange& range,
                std::size_t offset, std::uint32_t bytes, bool write, bool atomic) {
  const auto me = static_cast<std::uint16_t>(c.w->index * kLanes + lane);
  const std::uint32_t warp = c.w->index, epoch = c.epoch, cluster_epoch = c.cluster->epoch;
  const auto rank = static_cast<std::uint8_t>(c.rank);
  // Whether an access recorded at (epoch, cluster epoch, rank, thread) is unordered with this one.
  const auto unordered = [&](std::uint32_t e, std::uint32_t ce, std::uint8_t r, std::uint16_t t) {
    if (ce != cluster_epoch) return false;
    if (r != rank) return true;
    return e == epoch && (t == kManyReaders || t / kLanes != warp);
  };
  // The earlier access is named by its thread and its instruction; the fault names this one's.
  const auto race = [&](std::size_t at, std::uint16_t thread, std::uint8_t by_rank,
                        std::uint32_t instr, const char* what) {
    const bool across = by_rank != rank || &owner != &c;
    const Dim3 t = c.thread_of(thread / kLanes, thread % kLanes);
    const std::string of_cta =
        across && by_rank != kManyRanks ? " of " + describe_rank(*c.cluster->ctas[by_rank]) : "";
    const std::string who =
        thread == kManyReaders
            ? std::string(what) +
                  (by_rank == kManyRanks ? " threads of several CTAs" : " threads of several warps")
            : fmt::format("{} thread ({}, {}, {}) of warp {}{}", what, t.x, t.y, t.z,
                          thread / kLanes, of_cta);
    fault(c, in, lane,
          fmt::format("shared memory race at {:#x} ('{}' + {}){}: {} ({}) with no {} in between "
                      "({} run in no fixed order on a GPU)",
                      at, range.name, at - range.begin,
                      &owner != &c ? " of " + describe_rank(owner) : std::string(), who,
                      thread == kManyReaders ? "the last at " + describe_instr(c, instr)
                                             : "at " + describe_instr(c, instr),
                      across ? "barrier.cluster" : "bar.sync",
                      across ? "the CTAs of a cluster" : "warps"));
  };
  for (std::size_t i = offset; i < offset + bytes; ++i) {
    if (unordered(owner.write_epoch[i], owner.write_cluster_epoch[i], owner.write_rank[i],
                  owner.writer[i])) {
      race(i, owner.writer[i], owner.write_rank[i], owner.write_instr[i],
           write ? "this write follows a write by" : "this read follows a write by");
    }
    if (write) {
      if (unordered(owner.read_epoch[i], owner.read_cluster_epoch[i], owner.read_rank[i],
                    owner.reader[i])) {
        race(i, owner.reader[i], owner.read_rank[i], owner.read_instr[i],
             "this write follows a read by");
      }
      if (atomic) continue;
      owner.write_epoch[i] = epoch;
      owner.write_cluster_epoch[i] = cluster_epoch;
      owner.write_rank[i] = rank;
      owner.writer[i] = me;
      owner.write_instr[i] = in.index;
    } else if (owner.read_cluster_epoch[i] != cluster_epoch ||
               (owner.read_rank[i] == rank && owner.read_epoch[i] != epoch)) {
      owner.read_epoch[i] = epoch;
      owner.read_cluster_epoch[i] = cluster_epoch;
      owner.read_rank[i] = rank;
      owner.reader[i] = me;
      owner.read_instr[i] = in.index;
    } else if (owner.read_rank[i] != rank) {
      owner.read_rank[i] = kManyRanks;
      owner.reader[i] = kManyReaders;
      owner.read_instr[i] = in.index;
    } else if (owner.reader[i] != kManyReaders && owner.reader[i] / kLanes != warp) {
      owner.reader[i] = kManyReaders;
      owner.read_instr[i] = in.index;
    }
  }
}

}  // namespace

std::byte* shared_bytes(Ctx& c, Ctx& owner, const DInstr& in, std::uint32_t lane,
                        std::int64_t address, std::uint32_t bytes, bool write, bool atomic) {
  const SharedRange* range = &shared_range(c, in, lane, address, bytes, write);
  const auto offset = static_cast<std::size_t>(address);
  if (owner.copies_in_flight > 0) {
    check_not_in_flight(c, owner, in, lane, *range, offset, bytes, write);
  }
  if (c.launch->options.check_shared_races) {
    check_race(c, owner, in, lane, *range, offset, bytes, write, atomic);
  }
  if (write && &owner == &c && !c.generic_write.empty()) {
    std::fill_n(c.generic_write.begin() + static_cast<std::ptrdiff_t>(offset), bytes,
                ++c.generic_writes);
    std::fill_n(c.generic_writer.begin() + static_cast<std::ptrdiff_t>(offset), bytes,
                static_cast<std::uint16_t>(c.w->index * kLanes + lane));
  }
  std::uint8_t* init = owner.shared_init.data() + offset;
  if (write && !atomic) {
    std::memset(init, 0xFF, bytes);
  } else if (c.launch->options.check_uninitialized_shared) {
    for (std::uint32_t i = 0; i < bytes; ++i) {
      if (init[i] == 0xFF) continue;
      if (&owner != &c) {
        fault(c, in, lane,
              fmt::format("reads shared memory at {:#x} ('{}' + {}) of {} that no thread wrote "
                          "yet: if a thread of the cluster writes it, a barrier.cluster is "
                          "missing between that write and this read",
                          address + i, range->name, address + i - range->begin,
                          describe_rank(owner)));
      }
      fault(c, in, lane,
            fmt::format("reads shared memory at {:#x} ('{}' + {}) that no thread of the CTA "
                        "wrote yet: if another thread writes it, a bar.sync is missing between "
                        "that write and this read",
                        address + i, range->name, address + i - range->begin));
    }
  }
  if (atomic) std::memset(init, 0xFF, bytes);
  return owner.shared.data() + offset;
}

void note_async_proxy_write(Ctx& c, std::uint32_t address, std::uint32_t bytes) {
  if (c.generic_write.empty()) return;
  std::fill_n(c.generic_write.begin() + address, bytes, 0u);
}

void check_async_proxy_read(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint32_t address,
                            std::uint32_t bytes) {
  if (c.generic_write.empty()) return;
  const std::uint32_t reader = c.w->index * kLanes + lane;
  for (std::uint32_t a = address; a < address + bytes; ++a) {
    const std::uint32_t written = c.generic_write[a];
    if (written == 0 || c.proxy_fenced[c.generic_writer[a]] >= written ||
        c.proxy_fenced[reader] >= written) {
      continue;
    }
    const std::uint32_t writer = c.generic_writer[a];
    const Dim3 t = c.thread_of(writer / kLanes, writer % kLanes);
    fault(c, in, lane,
          fmt::format("reads shared memory at {:#x} through the async proxy, which thread ({}, {}, "
                      "{}) wrote with an ordinary (generic-proxy) store and no fence.proxy.async "
                      "since, by the writer or this thread: the async proxy may not see it",
                      a, t.x, t.y, t.z));
  }
}

namespace {

// ld.s8 sign-extends the byte into its 16-bit register; every other load zero-extends.
inline std::uint64_t loaded(const DInstr& in, std::uint64_t v) {
  return in.type == ScalarType::S8 ? static_cast<std::uint16_t>(static_cast<std::int8_t>(v)) : v;
}

std::byte* shared_bytes(Ctx& c, const DInstr& in, std::uint32_t lane, std::int64_t address,
                        std::uint32_t bytes, bool write) {
  return shared_bytes(c, c, in, lane, address, bytes, write);
}

inline std::uint64_t load_elem(const std::byte* p, std::uint32_t bytes) {
  switch (bytes) {
    case 1:
      return std::to_integer<std::uint64_t>(*p);
    case 2: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      std::uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

inline void store_elem(std::byte* p, std::uint64_t v, std::uint32_t bytes) {
  switch (bytes) {
    case 1:
      *p = static_cast<std::byte>(v);
      break;
    case 2: {
      const auto x = static_cast<std::uint16_t>(v);
      std::memcpy(p, &x, 2);
      break;
    }
    case 4: {
      const auto x = static_cast<std::uint32_t>(v);
      std::memcpy(p, &x, 4);
      break;
    }
    default:
      std::memcpy(p, &v, 8);
      break;
  }
}

void ld_global(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* base = c.row(in.src[0]);
  const std::uint32_t bytes = access_bytes(in), elem = in.elem_bytes;
  each_lane(exec, [&](std::uint32_t l) {
    const std::uint64_t address = base[l] + static_cast<std::uint64_t>(in.offset);
    const std::byte* p = global_bytes(c, in, l, address, bytes, false);
    for (std::uint32_t i = 0; i < in.vec; ++i) {
      c.row(in.dst[i])[l] = loaded(in, load_elem(p + i * elem, elem));
    }
  });
}

// A hint on hardware; here the address must lie in an allocation, as a load's must, so that a
// kernel's prefetches are masked like its loads.
void prefetch_global(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* base = c.row(in.src[0]);
  each_lane(exec, [&](std::uint32_t l) {
    global_span(c, in, l, base[l] + static_cast<std::uint64_t>(in.offset), 1, false);
  });
}

void st_global(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* base = c.row(in.src[0]);
  const std::uint32_t bytes = access_bytes(in), elem = in.elem_bytes;
  each_lane(exec, [&](std::uint32_t l) {
    const std::uint64_t address = base[l] + static_cast<std::uint64_t>(in.offset);
    std::byte* p = global_bytes(c, in, l, address, bytes, true);
    for (std::uint32_t i = 0; i < in.vec; ++i)
      store_elem(p + i * elem, c.row(in.src[1 + i])[l], elem);
  });
}

void ld_shared(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* base = c.row(in.src[0]);
  const std::uint32_t bytes = access_bytes(in), elem = in.elem_bytes;
  each_lane(exec, [&](std::uint32_t l) {
    const std::int64_t address =
        static_cast<std::int64_t>(static_cast<std::uint32_t>(base[l])) + in.offset;
    const std::byte* p = shared_bytes(c, in, l, address, bytes, false);
    for (std::uint32_t i = 0; i < in.vec; ++i) {
      c.row(in.dst[i])[l] = loaded(in, load_elem(p + i * elem, elem));
    }
  });
}

void st_shared(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* base = c.row(in.src[0]);
  const std::uint32_t bytes = access_bytes(in), elem = in.elem_bytes;
  each_lane(exec, [&](std::uint32_t l) {
    const std::int64_t address =
        static_cast<std::int64_t>(static_cast<std::uint32_t>(base[l])) + in.offset;
    std::byte* p = shared_bytes(c, in, l, address, bytes, true);
    for (std::uint32_t i = 0; i < in.vec; ++i)
      store_elem(p + i * elem, c.row(in.src[1 + i])[l], elem);
  });
}

void ld_param(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t v = loaded(in, load_elem(c.launch->params.data() + in.aux, in.elem_bytes));
  std::uint64_t* d = c.row(in.dst[0]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = v; });
}

// A read-modify-write of a 32- or 64-bit word, *p = next(old), returning old: atomic where the
// host bytes are aligned for std::atomic_ref (CTAs may run on several host threads; the warps of
// one cluster run on one, so shared memory needs nothing more).
template <typename Word, typename Next>
Word atomic_update(std::byte* p, Next next) {
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(Word) == 0) {
    std::atomic_ref<Word> ref(*reinterpret_cast<Word*>(p));
    Word old = ref.load(std::memory_order_relaxed);
    while (!ref.compare_exchange_weak(old, next(old), std::memory_order_relaxed)) {
    }
    return old;
  }
  Word old;
  std::memcpy(&old, p, sizeof(Word));
  const Word value = next(old);
  std::memcpy(p, &value, sizeof(Word));
  return old;
}

// atom/red add.f32: round to nearest even. In global memory subnormal inputs and results are
// flushed to sign-preserving zero, as PTX documents; in shared memory the GPU keeps them
// (measured on an H100 by tests/runtime/test_executor_vs_gpu.cpp).
std::uint64_t add_f32(std::uint64_t old_bits, std::uint64_t b_bits, bool flush) {
  float old = f32_of(old_bits), b = f32_of(b_bits);
  if (flush && is_subnormal(old, kF32)) old = std::copysign(0.0f, old);
  if (flush && is_subnormal(b, kF32)) b = std::copysign(0.0f, b);
  float r = old + b;
  if (flush && is_subnormal(r, kF32)) r = std::copysign(0.0f, r);
  return r != r ? kCanonicalNanF32 : bits_of(r);
}

// add.noftz.f16x2 / .bf16x2: each half rounded to nearest even, subnormals kept.
template <Fmt F>
std::uint64_t add_pair(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out = 0;
  for (int s = 0; s < 32; s += 16) {
    const Exact sum = exact_add(decode(F, (a >> s) & 0xFFFF), decode(F, (b >> s) & 0xFFFF));
    const double r = std::isfinite(sum.x)
                         ? round_to_format(sum.x, sum.sticky, Rounding::Rn, format_of(F))
                         : sum.x;
    out |= (encode(F, r) & 0xFFFF) << s;
  }
  return out;
}

template <typename Int>
Int as_int(std::uint64_t bits) {
  return static_cast<Int>(bits);
}

// The new value of an atomic word: op(old, b), or for cas old == b ? c : old. Integers compare
// signed or unsigned by the instruction's type; u32 inc/dec wrap at b. `global`: the word is in
// global memory (the f32 add flushes subnormals there only).
std::uint64_t atomic_result(const DInstr& in, std::uint64_t old, std::uint64_t b, std::uint64_t c,
                            bool global) {
  const bool wide = size_bytes(in.type) == 8;
  const std::uint64_t mask = wide ? ~std::uint64_t{0} : 0xFFFFFFFFull;
  const bool is_signed = is_signed_int(in.type);
  const auto less = [&](std::uint64_t x, std::uint64_t y) {
    if (!is_signed) return x < y;
    return wide ? as_int<std::int64_t>(x) < as_int<std::int64_t>(y)
                : as_int<std::int32_t>(x) < as_int<std::int32_t>(y);
  };
  switch (in.atom) {
    case AtomOp::Add:
      switch (in.type) {
        case ScalarType::F32:
          return add_f32(old, b, global);
        case ScalarType::F64: {
          const double r = f64_of(old) + f64_of(b);
          return r != r ? kCanonicalNanF64 : bits_of(r);
        }
        case ScalarType::F16x2:
          return add_pair<Fmt::F16>(old, b);
        case ScalarType::BF16x2:
          return add_pair<Fmt::BF16>(old, b);
        default:
          return (old + b) & mask;
      }
    case AtomOp::Inc:
      return old >= b ? 0 : old + 1;
    case AtomOp::Dec:
      return old == 0 || old > b ? b : old - 1;
    case AtomOp::Min:
      return less(b, old) ? b : old;
    case AtomOp::Max:
      return less(old, b) ? b : old;
    case AtomOp::And:
      return old & b;
    case AtomOp::Or:
      return old | b;
    case AtomOp::Xor:
      return old ^ b;
    case AtomOp::Exch:
      return b;
    case AtomOp::Cas:
      return old == b ? c : old;
  }
  return old;
}

std::uint64_t atomic_update_word(std::byte* p, const DInstr& in, std::uint64_t b, std::uint64_t c,
                                 bool global) {
  if (size_bytes(in.type) == 8) {
    return atomic_update<std::uint64_t>(
        p, [&](std::uint64_t old) { return atomic_result(in, old, b, c, global); });
  }
  return atomic_update<std::uint32_t>(p, [&](std::uint32_t old) {
    return static_cast<std::uint32_t>(
        atomic_result(in, old, b & 0xFFFFFFFFu, c & 0xFFFFFFFFu, global));
  });
}

// atom and red in global, shared or cluster shared memory: every lane in turn, each one
// indivisible step (the lanes of a warp run in lane order, as one interleaving the GPU may
// choose). atom writes each lane's old value; red (`kResult` false) has no destination. cas reads
// b and c.
template <Space S, bool kResult>
void atomic_rmw(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* base = c.row(in.src[0]);
  const std::uint64_t* b = c.row(in.src[1]);
  const std::uint64_t* value = in.nsrc > 2 ? c.row(in.src[2]) : b;
  std::uint64_t* d = kResult ? c.row(in.dst[0]) : nullptr;
  const auto bytes = static_cast<std::uint32_t>(size_bytes(in.type));
  each_lane(exec, [&](std::uint32_t l) {
    std::byte* p;
    if constexpr (S == Space::Shared) {
      const std::int64_t address =
          static_cast<std::int64_t>(static_cast<std::uint32_t>(base[l])) + in.offset;
      p = shared_bytes(c, c, in, l, address, bytes, true, true);
    } else if constexpr (S == Space::SharedCluster) {
      const auto address = static_cast<std::uint32_t>(
          static_cast<std::int64_t>(static_cast<std::uint32_t>(base[l])) + in.offset);
      const ClusterAddress a = resolve_cluster(c, in, l, address);
      p = shared_bytes(c, *a.owner, in, l, a.offset, bytes, true, true);
    } else {
      p = global_bytes(c, in, l, base[l] + static_cast<std::uint64_t>(in.offset), bytes, true);
    }
    const std::uint64_t old = atomic_update_word(p, in, b[l], value[l], S == Space::Global);
    if constexpr (kResult) d[l] = old;
  });
}

// cp.async: reads src-size bytes of the source now (none when it is 0), zero-fills the rest, and
// holds them until a wait_group of this thread completes the group.
void cp_async(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint64_t* dst = c.row(in.src[0]);
  const std::uint64_t* src = c.row(in.src[1]);
  const std::uint64_t* src_size = in.nsrc > 2 ? c.row(in.src[2]) : nullptr;
  const std::uint32_t bytes = in.elem_bytes;
  each_lane(exec, [&](std::uint32_t l) {
    const std::int64_t to = static_cast<std::int64_t>(static_cast<std::uint32_t>(dst[l])) +
                            static_cast<std::int32_t>(in.aux);
    const std::uint64_t from = src[l] + static_cast<std::uint64_t>(in.offset);
    const std::uint64_t reads = src_size ? static_cast<std::uint32_t>(src_size[l]) : bytes;
    if (reads > bytes) {
      fault(c, in, l, fmt::format("source size {} exceeds the {}-byte copy size", reads, bytes));
    }
    if (from % bytes != 0) {
      fault(c, in, l,
            fmt::format("misaligned cp.async source {:#x} ({}): it must be {}-byte aligned", from,
                        where_global(c, from, bytes), bytes));
    }
    const SharedRange& range = shared_range(c, in, l, to, bytes, true);
    const auto offset = static_cast<std::size_t>(to);
    check_not_in_flight(c, in, l, range, offset, bytes, true);
    // The copy may land any time from now: a write, for the race check, from here as well as at
    // the wait that completes it.
    if (c.launch->options.check_shared_races)
      check_race(c, c, in, l, range, offset, bytes, true, false);
    AsyncCopy copy;
    copy.lane = l;
    copy.group = c.w->committed[l];
    copy.shared_address = static_cast<std::uint32_t>(to);
    copy.bytes = bytes;
    if (reads > 0) {
      std::memcpy(copy.data.data(),
                  global_span(c, in, l, from, static_cast<std::uint32_t>(reads), false), reads);
    }
    std::memset(c.shared_pending.data() + offset, kPendingCpAsync, bytes);
    ++c.copies_in_flight;
    c.w->copies.push_back(copy);
  });
}

void cp_async_commit(Ctx& c, const DInstr&, std::uint32_t exec) {
  each_lane(exec, [&](std::uint32_t l) { ++c.w->committed[l]; });
}

// Completes, for each lane, every copy of its committed groups but the newest `aux`.
void cp_async_wait(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::vector<AsyncCopy>& copies = c.w->copies;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    const AsyncCopy& copy = copies[i];
    const std::uint32_t committed = c.w->committed[copy.lane];
    const bool done =
        ((exec >> copy.lane) & 1u) != 0 && committed > in.aux && copy.group < committed - in.aux;
    if (!done) {
      copies[kept++] = copy;
      continue;
    }
    std::memset(c.shared_pending.data() + copy.shared_address, 0, copy.bytes);
    --c.copies_in_flight;
    std::byte* p = shared_bytes(c, in, copy.lane, copy.shared_address, copy.bytes, true);
    std::memcpy(p, copy.data.data(), copy.bytes);
  }
  copies.resize(kept);
}

}  // namespace

std::string where_global(const Ctx& c, std::uint64_t address, std::uint32_t bytes) {
  const Allocation* a = allocation_of(*c.launch->allocations, address);
  if (a == nullptr) return "it is in no allocation's address range";
  const std::string name = a->name.empty() ? std::string("(unnamed)") : a->name;
  const std::uint64_t end = a->base + a->size;
  if (address < a->base) {
    return fmt::format("{} bytes before the start of allocation '{}' [{:#x}, +{})",
                       a->base - address, name, a->base, a->size);
  }
  if (address >= end) {
    return fmt::format("{} bytes past the end of allocation '{}' [{:#x}, +{})", address - end, name,
                       a->base, a->size);
  }
  if (address + bytes > end) {
    return fmt::format("it runs {} bytes past the end of allocation '{}' [{:#x}, +{})",
                       address + bytes - end, name, a->base, a->size);
  }
  return fmt::format("offset {} of allocation '{}' [{:#x}, +{})", address - a->base, name, a->base,
                     a->size);
}

const SharedRange& shared_range(Ctx& c, const DInstr& in, std::uint32_t lane, std::int64_t address,
                                std::uint32_t bytes, bool write, std::uint32_t align) {
  if (align == 0) align = bytes;
  if (address % align != 0) {
    fault(c, in, lane,
          fmt::format("misaligned shared {} of {} bytes at {:#x} ({}): it must be {}-byte aligned",
                      verb(write), bytes, address, where_shared(c, address), align));
  }
  for (const SharedRange& r : c.shared_ranges) {
    if (address >= r.begin && address + bytes <= r.end) return r;
  }
  fault(c, in, lane,
        fmt::format("out-of-bounds shared {} of {} bytes at {:#x}; {}", verb(write), bytes, address,
                    shared_map(c)));
}

void check_not_in_flight(Ctx& c, const Ctx& owner, const DInstr& in, std::uint32_t lane,
                         const SharedRange& range, std::size_t offset, std::uint32_t bytes,
                         bool write) {
  for (std::size_t i = offset; i < offset + bytes; ++i) {
    const std::uint8_t pending = owner.shared_pending[i];
    if (pending == kPendingStAsync || pending == kPendingRedAsync) {
      fault(c, in, lane,
            fmt::format("{} shared memory at {:#x} ('{}' + {}){} that a {} in flight writes: wait "
                        "for its mbarrier phase first (mbarrier.try_wait)",
                        write ? "writes" : "reads", i, range.name, i - range.begin,
                        &owner != &c ? " of " + describe_rank(owner) : std::string(),
                        pending == kPendingStAsync ? "st.async" : "red.async"));
    }
    if (pending == kPendingCpAsync) {
      fault(c, in, lane,
            fmt::format("{} shared memory at {:#x} ('{}' + {}) that a cp.async in flight will "
                        "write: wait for its group first (cp.async.wait_group)",
                        write ? "writes" : "reads", i, range.name, i - range.begin));
    }
    if (pending == kPendingBulk) {
      fault(c, in, lane,
            fmt::format("{} shared memory at {:#x} ('{}' + {}) that a bulk copy in flight "
                        "writes: wait for its mbarrier phase first (mbarrier.try_wait)",
                        write ? "writes" : "reads", i, range.name, i - range.begin));
    }
  }
}

std::byte* global_bytes(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint64_t address,
                        std::uint32_t bytes, bool write) {
  if (address % bytes != 0) {
    fault(c, in, lane,
          fmt::format("misaligned global {} of {} bytes at {:#x} ({}): it must be {}-byte aligned",
                      verb(write), bytes, address, where_global(c, address, bytes), bytes));
  }
  return global_span(c, in, lane, address, bytes, write);
}

std::byte* global_span(Ctx& c, const DInstr& in, std::uint32_t lane, std::uint64_t address,
                       std::uint32_t bytes, bool write) {
  const auto inside = [&](const Allocation* a) {
    return a != nullptr && address - a->base < a->size && a->size - (address - a->base) >= bytes;
  };
  const Allocation* a = c.last_alloc;
  if (!inside(a)) {
    a = allocation_of(*c.launch->allocations, address);
    if (!inside(a)) global_fault(c, in, lane, address, bytes, write);
    c.last_alloc = a;
  }
  return a->host + (address - a->base);
}

namespace {

// Scalar and vector accesses of 1-, 2-, 4- and 8-byte elements.
bool plain_access(const Instr& in) {
  const int elem = size_bytes(in.type);
  return (elem == 1 || elem == 2 || elem == 4 || elem == 8) &&
         (in.vec == 1 || in.vec == 2 || in.vec == 4);
}

}  // namespace

// The semantics the instruction table names.
Handler select_ld(const Instr& in) {
  if (in.space == Space::SharedCluster) return select_ld_cluster(in);
  if (!plain_access(in)) return nullptr;
  if (in.space == Space::Global) return &ld_global;
  if (in.space == Space::Shared) return &ld_shared;
  if (in.space == Space::Param) return &ld_param;
  return nullptr;
}
Handler select_st(const Instr& in) {
  if (in.space == Space::SharedCluster) return select_st_cluster(in);
  if (!plain_access(in)) return nullptr;
  if (in.space == Space::Global) return &st_global;
  if (in.space == Space::Shared) return &st_shared;
  return nullptr;
}
Handler select_atom(const Instr& in) {
  if (in.space == Space::Global) return &atomic_rmw<Space::Global, true>;
  if (in.space == Space::Shared) return &atomic_rmw<Space::Shared, true>;
  if (in.space == Space::SharedCluster) return &atomic_rmw<Space::SharedCluster, true>;
  return nullptr;
}
Handler select_red(const Instr& in) {
  if (in.space == Space::Global) return &atomic_rmw<Space::Global, false>;
  if (in.space == Space::Shared) return &atomic_rmw<Space::Shared, false>;
  if (in.space == Space::SharedCluster) return &atomic_rmw<Space::SharedCluster, false>;
  return nullptr;
}
Handler select_cp_async(const Instr&) {
  return &cp_async;
}
Handler select_cp_async_commit(const Instr&) {
  return &cp_async_commit;
}
Handler select_cp_async_wait(const Instr&) {
  return &cp_async_wait;
}
Handler select_prefetch(const Instr& in) {
  return in.space == Space::Global ? &prefetch_global : nullptr;
}

}  // namespace ptxdsl::detail

#include <fmt/format.h>

#include <bit>
#include <cstdint>

#include "program.hpp"

// The warp collectives: vote.sync, match.sync, redux.sync, activemask and elect.sync. Each runs
// over the lanes of its member mask, which must all execute it together.
namespace ptxdsl::detail {
namespace {

// The member mask (source `mask_src`), checked as PTX requires: it is the same in every executing
// lane, every executing lane is in it, and every live lane in it executes this instruction now.
// Returns the lanes that take part: the executing ones.
std::uint32_t members(Ctx& c, const DInstr& in, std::uint32_t exec, std::uint32_t mask_src) {
  const auto name = [&] { return mnemonic_of(c.prog->kernel->instructions()[in.index]); };
  const std::uint64_t* mm = c.row(in.src[mask_src]);
  const auto first = static_cast<std::uint32_t>(std::countr_zero(exec));
  const auto member = static_cast<std::uint32_t>(mm[first]);
  each_lane(exec, [&](std::uint32_t lane) {
    if (static_cast<std::uint32_t>(mm[lane]) != member) {
      fault(c, in, lane,
            fmt::format("member mask {:#x} differs from lane {}'s {:#x}",
                        static_cast<std::uint32_t>(mm[lane]), first, member));
    }
  });
  if ((exec & ~member) != 0) {
    fault(c, in, static_cast<std::uint32_t>(std::countr_zero(exec & ~member)),
          fmt::format("executes {} but is not in its member mask {:#010x}", name(), member));
  }
  const Warp& w = *c.w;
  const std::uint32_t missing = member & w.exists & ~w.exited & ~exec;
  if (missing != 0) {
    fault(c, in, first,
          fmt::format("{} with member mask {:#010x}, but lane {} of the warp is not executing it "
                      "with this thread (divergent, waiting, or guard false)",
                      name(), member, std::countr_zero(missing)));
  }
  return exec;
}

template <VoteMode kMode>
void vote(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint32_t lanes = members(c, in, exec, 1);
  const std::uint64_t* a = c.row(in.src[0]);
  std::uint32_t ballot = 0;
  each_lane(lanes, [&](std::uint32_t l) { ballot |= (a[l] != 0 ? 1u : 0u) << l; });
  std::uint64_t result = ballot;
  if constexpr (kMode == VoteMode::All) result = ballot == lanes ? 1 : 0;
  if constexpr (kMode == VoteMode::Any) result = ballot != 0 ? 1 : 0;
  if constexpr (kMode == VoteMode::Uni) result = ballot == 0 || ballot == lanes ? 1 : 0;
  std::uint64_t* d = c.row(in.dst[0]);
  each_lane(lanes, [&](std::uint32_t l) { d[l] = result; });
}

// match.any: each lane gets the lanes whose value equals its own; match.all: every lane gets the
// member lanes when all values are equal (and a true predicate), else 0 (and false).
template <bool kAll, class U>
void match(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint32_t lanes = members(c, in, exec, 1);
  const std::uint64_t* a = c.row(in.src[0]);
  std::uint64_t* d = c.row(in.dst[0]);
  if constexpr (kAll) {
    const U first = static_cast<U>(a[std::countr_zero(lanes)]);
    bool equal = true;
    each_lane(lanes, [&](std::uint32_t l) { equal = equal && static_cast<U>(a[l]) == first; });
    std::uint64_t* p = c.row(in.dst[1]);
    each_lane(lanes, [&](std::uint32_t l) {
      d[l] = equal ? lanes : 0;
      p[l] = equal ? 1 : 0;
    });
  } else {
    std::uint32_t same[kLanes] = {};
    each_lane(lanes, [&](std::uint32_t l) {
      each_lane(lanes, [&](std::uint32_t o) {
        if (static_cast<U>(a[l]) == static_cast<U>(a[o])) same[l] |= 1u << o;
      });
    });
    each_lane(lanes, [&](std::uint32_t l) { d[l] = same[l]; });
  }
}

template <ReduxOp kOp, class T>
T combine(T r, T v) {
  if constexpr (kOp == ReduxOp::Add) return static_cast<T>(r + v);  // wraps (T is unsigned)
  if constexpr (kOp == ReduxOp::Min) return v < r ? v : r;
  if constexpr (kOp == ReduxOp::Max) return v > r ? v : r;
  if constexpr (kOp == ReduxOp::And) return r & v;
  if constexpr (kOp == ReduxOp::Or) return r | v;
  if constexpr (kOp == ReduxOp::Xor) return r ^ v;
}

// T: std::int32_t for redux.sync.min/max.s32, else std::uint32_t (an s32 add wraps the same way).
template <ReduxOp kOp, class T>
void redux(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint32_t lanes = members(c, in, exec, 1);
  const std::uint64_t* a = c.row(in.src[0]);
  const auto first = static_cast<std::uint32_t>(std::countr_zero(lanes));
  auto r = static_cast<T>(a[first]);
  each_lane(lanes & ~(1u << first),
            [&](std::uint32_t l) { r = combine<kOp, T>(r, static_cast<T>(a[l])); });
  std::uint64_t* d = c.row(in.dst[0]);
  each_lane(lanes, [&](std::uint32_t l) { d[l] = static_cast<std::uint32_t>(r); });
}

// The lanes executing this instruction now: converged with this thread and not predicated off.
void activemask(Ctx& c, const DInstr& in, std::uint32_t exec) {
  std::uint64_t* d = c.row(in.dst[0]);
  each_lane(exec, [&](std::uint32_t l) { d[l] = exec; });
}

// PTX elects "one" member lane; the executor (as the GPU does) elects the lowest one.
void elect(Ctx& c, const DInstr& in, std::uint32_t exec) {
  const std::uint32_t lanes = members(c, in, exec, 0);
  const auto leader = static_cast<std::uint32_t>(std::countr_zero(lanes));
  std::uint64_t* d = c.row(in.dst[0]);
  std::uint64_t* p = c.row(in.dst[1]);
  each_lane(lanes, [&](std::uint32_t l) {
    d[l] = leader;
    p[l] = l == leader ? 1 : 0;
  });
}

template <ReduxOp kOp>
Handler redux_of(const Instr& in) {
  return in.type == ScalarType::S32 ? &redux<kOp, std::int32_t> : &redux<kOp, std::uint32_t>;
}

}  // namespace

// The semantics the instruction table names.
Handler select_vote(const Instr& in) {
  switch (in.vote) {
    case VoteMode::All:
      return &vote<VoteMode::All>;
    case VoteMode::Any:
      return &vote<VoteMode::Any>;
    case VoteMode::Uni:
      return &vote<VoteMode::Uni>;
    case VoteMode::Ballot:
      return &vote<VoteMode::Ballot>;
  }
  return nullptr;
}
Handler select_match_any(const Instr& in) {
  return in.type == ScalarType::B64 ? &match<false, std::uint64_t> : &match<false, std::uint32_t>;
}
Handler select_match_all(const Instr& in) {
  return in.type == ScalarType::B64 ? &match<true, std::uint64_t> : &match<true, std::uint32_t>;
}
Handler select_redux(const Instr& in) {
  switch (in.redux) {
    case ReduxOp::Add:
      return &redux<ReduxOp::Add, std::uint32_t>;
    case ReduxOp::Min:
      return redux_of<ReduxOp::Min>(in);
    case ReduxOp::Max:
      return redux_of<ReduxOp::Max>(in);
    case ReduxOp::And:
      return &redux<ReduxOp::And, std::uint32_t>;
    case ReduxOp::Or:
      return &redux<ReduxOp::Or, std::uint32_t>;
    case ReduxOp::Xor:
      return &redux<ReduxOp::Xor, std::uint32_t>;
  }
  return nullptr;
}
Handler select_activemask(const Instr&) {
  return &activemask;
}
Handler select_elect(const Instr&) {
  return &elect;
}

}  // namespace ptxdsl::detail

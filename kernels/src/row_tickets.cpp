#include "row_tickets.hpp"

namespace ptxdsl::kernels::detail {

namespace {
constexpr std::uint32_t kTicketLimit = 0xFFFFFFFEu;  // 0xFFFFFFFF would make it an add again
}  // namespace

RowTickets::RowTickets(Kernel& k, GlobalPtr<U32> counter, Reg<U32> tid, Reg<U32> first,
                       Reg<U32> grid, std::uint32_t depth)
    : counter_(counter),
      first_(first),
      grid_(grid),
      fixed_(k.mov<U32>(depth + 1)),
      slots_(k.shared_array<U32>("tickets", 2)) {
  leader_ = k.setp(Cmp::Eq, tid, 0u);
  slot_ = k.mov<U32>(0u);
  ticket_ = k.mov<U32>(0u);
  fresh_ = k.mov<U32>(0u);
  arriving_ = k.mov<U32>(depth + 1);
  queue_.push_back(k.mov<U32>(first));
  for (std::uint32_t i = 1; i <= depth; ++i) queue_.push_back(k.mad(grid, i, first));
  // The first trip posts this ticket (if its group is past the fixed ones); each trip takes the
  // one the next trip posts.
  take_if_ticketed(k, arriving_, ticket_);
}

void RowTickets::take_if_ticketed(Kernel& k, Reg<U32> index, Reg<U32> into) {
  // Thread 0, and only for a group past the fixed ones: a ticket taken is a group handed out.
  const Reg<U32> gate = k.selp<U32>(index, 0u, leader_);
  // Straight into `into`: a mov of the result would wait for the atomic's round trip here. An
  // inc that never wraps (tickets stay below the batch) rather than add 1: ptxas makes an add a
  // warp-aggregated atomic whose result shuffle waits the round trip out in the loop.
  k.predicated(k.setp(Cmp::Ge, gate, fixed_), [&] { k.atom_inc(into, counter_, kTicketLimit); });
}

void RowTickets::for_each(Kernel& k, Reg<U32> count, const std::function<void(Reg<U32>)>& body) {
  k.while_([&] { return k.setp(Cmp::Lt, queue_[0], count); }, [&] { body(queue_[0]); });
}

void RowTickets::take(Kernel& k) {
  take_if_ticketed(k, k.add(arriving_, 1u), fresh_);
}

void RowTickets::post(Kernel& k) {
  const Reg<U32> fixed_group = k.mad(grid_, arriving_, first_);
  const Reg<U32> ticketed_group = k.mad(grid_, fixed_, ticket_);
  const Reg<U32> next =
      k.selp<U32>(ticketed_group, fixed_group, k.setp(Cmp::Ge, arriving_, fixed_));
  k.predicated(leader_, [&] { k.st(k.index(slots_, slot_), next); });
}

void RowTickets::receive(Kernel& k) {
  const Reg<U32> next = k.ld(k.index(slots_, slot_));
  k.mov(slot_, k.xor_(slot_, 1u));
  for (std::size_t i = 0; i + 1 < queue_.size(); ++i) k.mov(queue_[i], queue_[i + 1]);
  k.mov(queue_.back(), next);
  k.predicated(leader_, [&] { k.mov(ticket_, fresh_); });
  k.add(arriving_, arriving_, 1u);
}

void RowTickets::finish(Kernel& k) {
  k.if_(leader_, [&] {
    // This CTA's tickets are taken before it says it is done; the last CTA's reset comes after
    // every other CTA said so.
    k.fence_gpu();
    const Reg<U32> finished = k.atom_add(counter_ + 1, 1u);
    k.fence_gpu();
    k.if_(k.setp(Cmp::Eq, finished, k.sub(grid_, 1u)), [&] {
      k.st(counter_, 0u);
      k.st(counter_ + 1, 0u);
    });
  });
}

}  // namespace ptxdsl::kernels::detail

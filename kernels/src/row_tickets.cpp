#include "row_tickets.hpp"

namespace ptxdsl::kernels::detail {

RowTickets::RowTickets(Kernel& k, GlobalPtr<U32> counter, SharedPtr<U32> slots, Reg<U32> tid,
                       Reg<U32> first, Reg<U32> grid, std::uint32_t depth)
    : counter_(counter), slots_(slots), tid_(tid), grid_(grid) {
  leader_ = k.setp(Cmp::Eq, tid, 0u);
  slot_ = k.mov<U32>(0u);
  ticket_ = k.mov<U32>(0u);
  fresh_ = k.mov<U32>(0u);
  queue_.push_back(k.mov<U32>(first));
  for (std::uint32_t i = 1; i <= depth; ++i) queue_.push_back(k.mad(grid, i, first));
  // The first trip posts this ticket; each trip takes the one the next trip posts.
  k.predicated(leader_, [&] { k.mov(ticket_, k.atom_add(counter_, 1u)); });
}

void RowTickets::for_each(Kernel& k, Reg<U32> count, const std::function<void(Reg<U32>)>& body) {
  k.while_([&] { return k.setp(Cmp::Lt, queue_[0], count); }, [&] { body(queue_[0]); });
}

void RowTickets::take(Kernel& k) {
  k.predicated(leader_, [&] { k.mov(fresh_, k.atom_add(counter_, 1u)); });
}

void RowTickets::post(Kernel& k) {
  const auto first_taken = static_cast<std::uint32_t>(queue_.size());
  k.predicated(leader_, [&] { k.st(k.index(slots_, slot_), k.mad(grid_, first_taken, ticket_)); });
}

void RowTickets::receive(Kernel& k) {
  const Reg<U32> next = k.ld(k.index(slots_, slot_));
  k.mov(slot_, k.xor_(slot_, 1u));
  for (std::size_t i = 0; i + 1 < queue_.size(); ++i) k.mov(queue_[i], queue_[i + 1]);
  k.mov(queue_.back(), next);
  k.predicated(leader_, [&] { k.mov(ticket_, fresh_); });
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

#include "row_tile.hpp"

namespace ptxdsl::kernels::detail {
namespace {

// The source for the chunks at `chunks.place()`, by the plan's strategy for that place.
std::unique_ptr<RowSource> source_for(Kernel& k, const Plan& plan, const SharedLayout& layout,
                                      ChunkSet chunks, const TileBuffers& buffers,
                                      ScalarType dtype) {
  const int s = size_bytes(dtype);
  switch (chunks.place()) {
    case Place::Registers:
      switch (plan.lookahead) {
        case Lookahead::None:
          return registers_each_row(std::move(chunks));
        case Lookahead::NextRow:
          return registers_next_row(std::move(chunks));
        case Lookahead::Ring:
          return registers_from_ring(k, std::move(chunks), buffers.ring.value(),
                                     layout.ring_buffer_bytes / s, plan.ring_rows);
      }
      break;
    case Place::Shared:
      switch (plan.staging) {
        case Staging::Loads:
          return staged(std::move(chunks), buffers.staging.value());
        case Staging::Async:
          return staged_async(k, std::move(chunks), buffers.staging.value(),
                              layout.staging_buffer_bytes / s);
      }
      break;
    case Place::Global:
      return reread(std::move(chunks));
  }
  throw Error("a row source for an unknown strategy");
}

}  // namespace

RowTile::RowTile(Kernel& k, const Plan& plan, const SharedLayout& layout, GlobalDPtr thread_row,
                 const TileBuffers& buffers, MemHints hints)
    : row_(thread_row), loop_group_(plan.loop_group), holder_(plan.chunks, nullptr) {
  const RowMap map = row_map(plan);
  for (Place place : {Place::Registers, Place::Shared, Place::Global}) {
    ChunkSet chunks(map, plan.data, place, hints, plan.loop_group);
    if (chunks.held().empty()) continue;
    sources_.push_back(source_for(k, plan, layout, std::move(chunks), buffers, thread_row.dtype));
    for (std::uint32_t j : sources_.back()->chunks().held()) holder_[j] = sources_.back().get();
  }
}

std::vector<int> RowTile::loop_keys() const {
  std::vector<int> keys;
  for (std::uint32_t j = 0; j < holder_.size(); ++j) keys.push_back(holder_[j]->chunks().key(j));
  return keys;
}

void RowTile::load(Kernel& k, const RowMasks& m, const FirstUse& first_use,
                   std::optional<ChunkFence> fence) {
  std::vector<int> keys = loop_keys();
  std::vector<bool> in_pass;
  for (std::uint32_t j = 0; j < holder_.size(); ++j) {
    in_pass.push_back(holder_[j]->in_load_pass(static_cast<bool>(first_use)));
    if (!in_pass[j]) keys[j] = 0;
  }
  for_each_chunk(
      k, keys, loop_group_,
      [&](std::uint32_t j, std::optional<Reg<U32>> shift) {
        if (in_pass[j]) holder_[j]->load_chunk(k, m, row_, j, shift, first_use);
      },
      fence);
  for (const auto& source : sources_) source->after_load_pass(k, m, row_, first_use);
}

void RowTile::reread_with(MemHints h) {
  for (const auto& source : sources_) source->reread_with(h);
}

Values RowTile::get(Kernel& k, const RowMasks& m, std::uint32_t j, std::optional<Reg<U32>> shift) {
  return holder_[j]->get(k, m, row_, j, shift);
}

void RowTile::fetch(Kernel& k, const RowMasks& m, GlobalDPtr row) {
  for (const auto& source : sources_) source->fetch(k, m, row);
}

// The staging buffers turn before the registers take the row fetched ahead: the reverse order.
void RowTile::advance(Kernel& k) {
  for (auto s = sources_.rbegin(); s != sources_.rend(); ++s) (*s)->advance(k);
}

bool RowTile::copies() const {
  for (const auto& source : sources_) {
    if (source->copies()) return true;
  }
  return false;
}

namespace {

// This thread's first element in a [slot][chunk][lane][V] layout of `chunks` chunks a slot.
SharedDPtr slot_start(Kernel& k, SharedDPtr base, const Plan& plan, std::uint32_t chunks,
                      Reg<U32> slot, Reg<U32> first_element) {
  const std::uint32_t per_slot = chunks * plan.threads_per_row * plan.vec;
  if (plan.rows_per_cta == 1) return at(k, base, first_element);
  return at(k, base, k.mad(slot, per_slot, first_element));
}

}  // namespace

SharedDPtr staging_for(Kernel& k, SharedDPtr base, const Plan& plan, Reg<U32> slot,
                       Reg<U32> first_element) {
  return slot_start(k, base, plan, plan.staged_chunks(), slot, first_element);
}

SharedDPtr ring_for(Kernel& k, SharedDPtr base, const Plan& plan, Reg<U32> slot,
                    Reg<U32> first_element) {
  return slot_start(k, base, plan, plan.register_chunks(), slot, first_element);
}

}  // namespace ptxdsl::kernels::detail

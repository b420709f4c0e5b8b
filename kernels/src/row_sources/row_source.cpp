#include "row_source.hpp"

#include "../chunk_loop.hpp"

namespace ptxdsl::kernels::detail {

ChunkSet::ChunkSet(const RowMap& map, const std::vector<Place>& places, Place place, MemHints hints,
                   std::uint32_t loop_group)
    : map_(map), place_(place), hints_(hints), loop_group_(loop_group) {
  for (std::uint32_t j = 0; j < places.size(); ++j) {
    index_.push_back(places[j] == place ? static_cast<std::uint32_t>(held_.size()) : kNotHeld);
    if (places[j] == place) held_.push_back(j);
  }
}

int ChunkSet::key(std::uint32_t j) const {
  if (place_ == Place::Registers) return 0;
  return map_.complete(j) ? 1 + static_cast<int>(place_) : -1;
}

std::vector<int> ChunkSet::keys() const {
  std::vector<int> keys(index_.size(), 0);
  for (std::uint32_t j : held_) keys[j] = key(j);
  return keys;
}

SharedDPtr ChunkSet::in_buffer(Kernel& k, SharedDPtr buffer, std::uint32_t j,
                               std::optional<Reg<U32>> shift) const {
  return shifted(k, buffer, shift, per_chunk()) +
         static_cast<std::int64_t>(index_[j]) * per_chunk();
}

}  // namespace ptxdsl::kernels::detail

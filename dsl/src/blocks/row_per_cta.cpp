#include "ptxdsl/dsl/blocks/row_per_cta.hpp"

namespace ptxdsl {
namespace {

Reg<U32> required_tid(Kernel& k, std::uint32_t threads) {
  k.require_threads(threads);
  return k.tid_x();
}

}  // namespace

RowPerCta::RowPerCta(Kernel& k, const RowMap& map, std::uint32_t max_values)
    : tid_(required_tid(k, map.threads)),
      row_(k.ctaid_x()),
      lanes_(k, map, tid_),
      masks_(k, lanes_, std::nullopt),
      reducer_(Reducer::block(k, map.threads, tid_, max_values)) {}

GlobalDPtr RowPerCta::thread_row(Kernel& k, GlobalDPtr p, const RowLayout& layout) const {
  const std::uint32_t stride = layout.stride_for(map().width, map().vec);
  return at(k, row_of(k, p, row_, stride), lanes_.first_element()) + layout.offset;
}

std::vector<Values> RowPerCta::load(Kernel& k, GlobalDPtr p, MemHints h) const {
  return load(k, p, RowLayout{}, h);
}

std::vector<Values> RowPerCta::load(Kernel& k, GlobalDPtr p, const RowLayout& layout,
                                    MemHints h) const {
  const GlobalDPtr mine = thread_row(k, p, layout);
  std::vector<Values> chunks;
  for (std::uint32_t j = 0; j < map().chunks; ++j)
    chunks.push_back(load_chunk(k, masks_, mine, j, h));
  return chunks;
}

void RowPerCta::store(Kernel& k, GlobalDPtr p, const std::vector<Values>& chunks,
                      MemHints h) const {
  store(k, p, RowLayout{}, chunks, h);
}

void RowPerCta::store(Kernel& k, GlobalDPtr p, const RowLayout& layout,
                      const std::vector<Values>& chunks, MemHints h) const {
  const GlobalDPtr mine = thread_row(k, p, layout);
  for (std::uint32_t j = 0; j < map().chunks; ++j) store_chunk(k, masks_, mine, j, chunks.at(j), h);
}

Reg<F32> RowPerCta::reduce(Kernel& k, const std::vector<Values>& chunks, const Reduction& op) {
  Values partial;
  for (std::uint32_t j = 0; j < chunks.size(); ++j) {
    partial.push_back(tree_reduce(k, mask_past_width(k, lanes_, j, chunks[j], op.identity()), op));
  }
  return reducer_.reduce(k, tree_reduce(k, partial, op), op);
}

}  // namespace ptxdsl

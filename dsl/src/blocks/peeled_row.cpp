#include "ptxdsl/dsl/blocks/peeled_row.hpp"

#include <fmt/format.h>

#include <bit>

#include "ptxdsl/dsl/blocks/vector.hpp"
#include "ptxdsl/dsl/error.hpp"

namespace ptxdsl {
namespace {

Reg<U32> required_tid(Kernel& k, std::uint32_t threads) {
  if (threads < 32 || threads > 1024 || !std::has_single_bit(threads)) {
    throw Error(
        fmt::format("kernel '{}': PeeledRow: threads must be a power of two in [32, 1024], "
                    "got {}",
                    k.name(), threads));
  }
  k.require_threads(threads);
  return k.tid_x();
}

}  // namespace

PeeledRow::PeeledRow(Kernel& k, std::uint32_t width, ScalarType dtype, std::uint32_t threads,
                     const RowLayout& layout, std::uint32_t max_values)
    : width_(width),
      vec_(max_vector_elems(dtype)),
      threads_(threads),
      stride_(layout.stride_for(width, 1)),
      offset_(layout.offset),
      tid_(required_tid(k, threads)),
      row_(k.ctaid_x()),
      reducer_(Reducer::block(k, threads, tid_, max_values)) {
  check_element_type(dtype, "a peeled row's element type");
  // The row's first element mod the vector (the product's low bits are exact in 32 bits): the
  // head runs to the next multiple, at most the whole row.
  const Reg<U32> start = k.mad(row_, stride_, offset_);
  const Reg<U32> misaligned = k.and_(start, vec_ - 1);
  const Reg<U32> head = k.min(k.and_(k.sub(k.mov<U32>(vec_), misaligned), vec_ - 1), width_);
  const Reg<U32> rest = k.sub(k.mov<U32>(width_), head);
  const Reg<U32> vector_elements = k.and_(rest, ~(vec_ - 1));
  const Reg<U32> edge = k.add(head, k.and_(rest, vec_ - 1));
  // Threads below the head take its elements; the next ones the tail's, past the vectors. The
  // layout's offset rides in the run-time index: a constant one would look misaligned.
  const Reg<U32> skip =
      k.selp<U32>(offset_, k.add(vector_elements, offset_), k.setp(Cmp::Lt, tid_, head));
  edge_index_ = k.add(tid_, skip);
  ok_.push_back(k.setp(Cmp::Lt, tid_, edge));
  first_vector_ = k.mad(tid_, vec_, offset_ == 0 ? head : k.add(head, offset_));
  const std::uint32_t rounds = (width / vec_ + threads - 1) / threads;
  const Reg<U32> vectors = k.shr(rest, static_cast<std::uint32_t>(std::countr_zero(vec_)));
  for (std::uint32_t j = 0; j < rounds; ++j) {
    ok_.push_back(k.setp(Cmp::Lt, k.add(tid_, j * threads), vectors));
  }
}

GlobalDPtr PeeledRow::chunk_ptr(Kernel& k, GlobalDPtr p, std::uint32_t j) const {
  const GlobalDPtr row = row_of(k, p, row_, stride_);
  if (j == 0) return at(k, row, edge_index_);
  return at(k, row, first_vector_) + std::int64_t{j - 1} * threads_ * vec_;
}

std::vector<Values> PeeledRow::load(Kernel& k, GlobalDPtr p, MemHints h) const {
  std::vector<Values> chunks;
  for (std::uint32_t j = 0; j < ok_.size(); ++j) {
    chunks.push_back(load_values(k, chunk_ptr(k, p, j), j == 0 ? 1 : vec_, ok_[j], h));
  }
  return chunks;
}

void PeeledRow::store(Kernel& k, GlobalDPtr p, const std::vector<Values>& chunks,
                      MemHints h) const {
  for (std::uint32_t j = 0; j < ok_.size(); ++j) {
    store_values(k, chunk_ptr(k, p, j), std::span<const Reg<F32>>(chunks.at(j)), ok_[j], h);
  }
}

Reg<F32> PeeledRow::reduce(Kernel& k, const std::vector<Values>& chunks, const Reduction& op) {
  Values partial;
  for (std::uint32_t j = 0; j < chunks.size(); ++j) {
    Values masked = chunks[j];
    for (Reg<F32>& v : masked) v = k.selp<F32>(v, op.identity(), ok_.at(j));
    partial.push_back(tree_reduce(k, masked, op));
  }
  return reducer_.reduce(k, tree_reduce(k, partial, op), op);
}

}  // namespace ptxdsl

#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "../row_map.hpp"

// How a thread holds chunks of its row between the passes over the row. The plan places each
// chunk (Place) and picks one strategy for each place (Lookahead for registers, Staging for
// shared memory); each pairing is one RowSource type, in a file of its own here, and a RowTile
// hands every chunk to the source that holds it.
namespace ptxdsl::kernels::detail {

// A chunk's f32 values handed to the row's first pass (may be empty).
using FirstUse = std::function<void(std::uint32_t, const Values&)>;

// The chunks of a row one source holds: those the plan placed at `place`.
class ChunkSet {
 public:
  ChunkSet(const RowMap& map, const std::vector<Place>& places, Place place, MemHints hints,
           std::uint32_t loop_group);
  const RowMap& map() const { return map_; }
  Place place() const { return place_; }
  MemHints hints() const { return hints_; }  // of the row's first read
  std::uint32_t loop_group() const { return loop_group_; }
  // Elements between chunk j and chunk j + 1 of one thread.
  std::uint32_t per_chunk() const { return map_.threads * map_.vec; }
  bool holds(std::uint32_t j) const { return index_[j] != kNotHeld; }
  const std::vector<std::uint32_t>& held() const { return held_; }
  // Chunk j's for_each_chunk key in a pass over the whole row: register chunks unroll (registers
  // cannot be indexed), the last chunk when it runs past the width is fenced, and runs of other
  // chunks of one place may loop.
  int key(std::uint32_t j) const;
  // The keys of a pass over the held chunks only (0 for the rest).
  std::vector<int> keys() const;
  // Chunk j in a buffer that holds the set's chunks in order, T·V elements apart, from `buffer`
  // (this thread's first element); `shift` as for_each_chunk passes it.
  SharedDPtr in_buffer(Kernel& k, SharedDPtr buffer, std::uint32_t j,
                       std::optional<Reg<U32>> shift) const;

 private:
  static constexpr std::uint32_t kNotHeld = ~0u;
  RowMap map_;
  Place place_;
  MemHints hints_;
  std::uint32_t loop_group_;
  std::vector<std::uint32_t> index_;  // per chunk of the row: its index among the held ones
  std::vector<std::uint32_t> held_;
};

// Chunk j's f32 values from a staging buffer laid out as ChunkSet::in_buffer says.
Values read_staged(Kernel& k, const ChunkSet& chunks, SharedDPtr buffer, std::uint32_t j,
                   std::optional<Reg<U32>> shift);

class RowSource {
 public:
  explicit RowSource(ChunkSet chunks) : chunks_(std::move(chunks)) {}
  virtual ~RowSource() = default;
  RowSource(const RowSource&) = delete;
  RowSource& operator=(const RowSource&) = delete;
  const ChunkSet& chunks() const { return chunks_; }

  // The row's load pass, `row` this thread's row pointer: whether the held chunks take part in
  // its loop over chunks (with a first use or without), and chunk j's turn in it.
  virtual bool in_load_pass(bool first_use) const = 0;
  virtual void load_chunk(Kernel& k, const RowMasks& m, GlobalDPtr row, std::uint32_t j,
                          std::optional<Reg<U32>> shift, const FirstUse& use) = 0;
  // After that loop: what waits for every load of the row to be in flight (register chunks).
  virtual void after_load_pass(Kernel& k, const RowMasks& m, GlobalDPtr row,
                               const FirstUse& use) = 0;
  // Chunk j's f32 values for a later pass over the row.
  virtual Values get(Kernel& k, const RowMasks& m, GlobalDPtr row, std::uint32_t j,
                     std::optional<Reg<U32>> shift) = 0;

  // A persistent row loop with rows ahead (RowsAhead): `fetch` starts loading `row` (masked by
  // `m`) for a later iteration, the first fetch for the loop's first row; `advance` makes the
  // oldest row fetched the current one. Sources that load a row in its own iteration do nothing.
  virtual void fetch(Kernel& k, const RowMasks& m, GlobalDPtr row) = 0;
  virtual void advance(Kernel& k) = 0;
  // Its fetches are cp.async copies, which the row loop commits as groups and waits for.
  virtual bool copies() const = 0;
  // Hints of a later pass's reads from global memory (sources that read the row again).
  virtual void reread_with(MemHints) {}

 protected:
  ChunkSet chunks_;
};

// The sources, one for each way of holding chunks; RowTile picks them from the plan.
//
// Registers: loaded with the row's own pass (Lookahead::None).
std::unique_ptr<RowSource> registers_each_row(ChunkSet chunks);
// Registers with the next row's loads in flight in a second set (Lookahead::NextRow).
std::unique_ptr<RowSource> registers_next_row(ChunkSet chunks);
// Registers filled from a ring of `rows` shared buffers that cp.async copies the rows ahead into
// (Lookahead::Ring): `ring` is this thread's first element in the first buffer, each next one
// `buffer_elements` further.
std::unique_ptr<RowSource> registers_from_ring(Kernel& k, ChunkSet chunks, SharedDPtr ring,
                                               std::int64_t buffer_elements, std::uint32_t rows);
// Shared memory, loaded and stored by the row's own pass (Staging::Loads); `staging` as for
// registers_from_ring's `ring`.
std::unique_ptr<RowSource> staged(ChunkSet chunks, SharedDPtr staging);
// Shared memory, copied by cp.async a row ahead into the second of two buffers, `buffer_elements`
// apart (Staging::Async).
std::unique_ptr<RowSource> staged_async(Kernel& k, ChunkSet chunks, SharedDPtr staging,
                                        std::int64_t buffer_elements);
// Nowhere: each pass reads the chunks from global memory again (Place::Global).
std::unique_ptr<RowSource> reread(ChunkSet chunks);

}  // namespace ptxdsl::kernels::detail

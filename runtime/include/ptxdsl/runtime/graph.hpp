#pragma once

#include <memory>

#include "ptxdsl/runtime/context.hpp"
#include "ptxdsl/runtime/handles.hpp"

namespace ptxdsl::runtime {

// How a capture treats calls that are unsafe while it runs (CUstreamCaptureMode): Global refuses
// them on every thread, ThreadLocal on the capturing thread, Relaxed nowhere.
enum class CaptureMode : int { Global = 0, ThreadLocal = 1, Relaxed = 2 };

// Whether work enqueued on `stream` is being captured into a graph rather than run.
bool is_capturing(StreamRef stream);

// Work captured from a stream once and launched many times (a CUDA graph): begin_capture, the
// calls to capture (norm forwards and backwards, launches, copies), end_capture, instantiate,
// then launch as often as needed. A capture of the same calls with new arguments (other buffers,
// another batch of the same launch shape) updates the executable graph in place. Move-only.
//
// The norms' backward takes its workspace from a stream-ordered pool: captured, that is a graph
// memory node, so a graph holds only one executable instance at a time (the driver's rule for
// graphs that allocate), which this class keeps to.
class Graph {
 public:
  explicit Graph(const Context& ctx);
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  // Starts capturing `stream`, which must be a stream of its own (not the legacy default stream).
  void begin_capture(StreamRef stream, CaptureMode mode = CaptureMode::Global);
  // Ends the capture begun on the stream; what was captured replaces the graph held before.
  // Throws if a call during the capture invalidated it (the error says which driver call failed).
  void end_capture();
  // Makes the captured graph launchable, replacing any executable graph held before.
  void instantiate();
  // Brings the executable graph to the last capture: in place where only arguments changed (true),
  // else by instantiating it anew (false). Instantiates when nothing was instantiated yet.
  bool update();
  // Launches the executable graph on `stream` (any stream of the context).
  void launch(StreamRef stream) const;

  bool captured() const { return graph_ != nullptr; }
  bool instantiated() const { return exec_ != nullptr; }
  bool capturing() const { return capture_stream_ != nullptr; }

 private:
  void destroy_graph() noexcept;
  void destroy_exec() noexcept;
  std::shared_ptr<const detail::ContextState> ctx_;
  CUgraph_st* graph_ = nullptr;
  CUgraphExec_st* exec_ = nullptr;
  CUstream_st* capture_stream_ = nullptr;
};

}  // namespace ptxdsl::runtime

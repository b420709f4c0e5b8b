#include "ptxdsl/runtime/graph.hpp"

#include <utility>

#include <fmt/format.h>

#include "driver_api.hpp"

namespace ptxdsl::runtime {

bool is_capturing(StreamRef stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  PTXDSL_CU_CHECK("asking whether a stream is capturing", cuStreamIsCapturing, stream.handle(),
                  &status);
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

Graph::Graph(const Context& ctx) : ctx_(ctx.state()) {}

Graph::Graph(Graph&& other) noexcept
    : ctx_(std::move(other.ctx_)),
      graph_(std::exchange(other.graph_, nullptr)),
      exec_(std::exchange(other.exec_, nullptr)),
      capture_stream_(std::exchange(other.capture_stream_, nullptr)) {}

Graph& Graph::operator=(Graph&& other) noexcept {
  if (this != &other) {
    destroy_exec();
    destroy_graph();
    ctx_ = std::move(other.ctx_);
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
    capture_stream_ = std::exchange(other.capture_stream_, nullptr);
  }
  return *this;
}

Graph::~Graph() {
  // A capture left open would leave its stream unusable: end it and drop what it held.
  if (capture_stream_ != nullptr) {
    if (const detail::DriverApi* d = detail::loaded_driver()) {
      CUgraph abandoned = nullptr;
      if (d->cuStreamEndCapture(capture_stream_, &abandoned) == CUDA_SUCCESS && abandoned) {
        d->cuGraphDestroy(abandoned);
      }
    }
  }
  destroy_exec();
  destroy_graph();
}

void Graph::destroy_graph() noexcept {
  if (graph_ != nullptr) {
    if (const detail::DriverApi* d = detail::loaded_driver()) d->cuGraphDestroy(graph_);
    graph_ = nullptr;
  }
}

void Graph::destroy_exec() noexcept {
  if (exec_ != nullptr) {
    if (const detail::DriverApi* d = detail::loaded_driver()) d->cuGraphExecDestroy(exec_);
    exec_ = nullptr;
  }
}

void Graph::begin_capture(StreamRef stream, CaptureMode mode) {
  if (capture_stream_ != nullptr) {
    throw Error(
        "Graph::begin_capture: this graph is already capturing a stream (end_capture "
        "first)");
  }
  if (stream.handle() == nullptr) {
    throw Error(
        "Graph::begin_capture: the legacy default stream cannot be captured; capture a "
        "Stream of its own");
  }
  if (mode != CaptureMode::Global && mode != CaptureMode::ThreadLocal &&
      mode != CaptureMode::Relaxed) {
    throw Error(
        fmt::format("Graph::begin_capture: capture mode must be Global (0), ThreadLocal "
                    "(1) or Relaxed (2), got {}",
                    static_cast<int>(mode)));
  }
  detail::make_current(ctx_->context);
  PTXDSL_CU_CHECK("beginning the capture of a stream", cuStreamBeginCapture, stream.handle(),
                  static_cast<CUstreamCaptureMode>(mode));
  capture_stream_ = stream.handle();
}

void Graph::end_capture() {
  if (capture_stream_ == nullptr) {
    throw Error("Graph::end_capture: no capture was begun (begin_capture first)");
  }
  CUstream stream = std::exchange(capture_stream_, nullptr);
  CUgraph captured = nullptr;
  detail::make_current(ctx_->context);
  PTXDSL_CU_CHECK(
      "ending the capture of a stream (an invalidated capture means a call during it was not "
      "allowed while capturing)",
      cuStreamEndCapture, stream, &captured);
  destroy_graph();
  graph_ = captured;
}

void Graph::instantiate() {
  if (graph_ == nullptr)
    throw Error("Graph::instantiate: nothing was captured (end_capture first)");
  // The graph's memory nodes allow one executable instance at a time: the old one goes first.
  destroy_exec();
  detail::make_current(ctx_->context);
  CUgraphExec exec = nullptr;
  PTXDSL_CU_CHECK("instantiating a graph", cuGraphInstantiateWithFlags, &exec, graph_, 0);
  exec_ = exec;
}

bool Graph::update() {
  if (graph_ == nullptr) throw Error("Graph::update: nothing was captured (end_capture first)");
  if (exec_ == nullptr) {
    instantiate();
    return false;
  }
  detail::make_current(ctx_->context);
  CUgraphNode error_node = nullptr;
  CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  const CUresult r = detail::driver().cuGraphExecUpdate(exec_, graph_, &error_node, &result);
  if (r == CUDA_SUCCESS) return true;
  if (r != CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
    detail::check(r, "cuGraphExecUpdate", "updating an executable graph");
  }
  instantiate();  // the topology or a node's kind changed: no update in place
  return false;
}

void Graph::launch(StreamRef stream) const {
  if (exec_ == nullptr)
    throw Error("Graph::launch: the graph is not instantiated (instantiate first)");
  detail::make_current(ctx_->context);
  PTXDSL_CU_CHECK("launching a graph", cuGraphLaunch, exec_, stream.handle());
}

}  // namespace ptxdsl::runtime

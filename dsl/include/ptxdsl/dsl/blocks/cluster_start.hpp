#pragma once

#include "ptxdsl/dsl/kernel.hpp"

// A CTA may read or write a peer's shared memory only once it knows the peer has started (PTX
// ISA, "Distributed shared memory"): made at the kernel's start, ClusterStart arrives at the
// cluster barrier, and `await` waits for that phase before the first access to a peer, so that
// whatever the kernel issues in between (its first loads) hides the barrier.
namespace ptxdsl {

class ClusterStart {
 public:
  // barrier.cluster.arrive.aligned by every thread of the CTA; MemSem::Relaxed (PTX 8.0) where
  // the target has it: nothing before the kernel's start needs releasing.
  explicit ClusterStart(Kernel& k, MemSem arrive = MemSem::None);

  // barrier.cluster.wait.aligned the first time it is emitted, nothing after: every thread of the
  // cluster must run that first wait exactly once (not in a loop), before its first access to a
  // peer's shared memory.
  void await(Kernel& k);

 private:
  bool awaited_ = false;
};

}  // namespace ptxdsl

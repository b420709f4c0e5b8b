#include "ptxdsl/dsl/blocks/cluster_start.hpp"

namespace ptxdsl {

ClusterStart::ClusterStart(Kernel& k, MemSem arrive) {
  k.barrier_cluster_arrive(arrive);
}

void ClusterStart::await(Kernel& k) {
  if (awaited_) return;
  k.barrier_cluster_wait();
  awaited_ = true;
}

}  // namespace ptxdsl

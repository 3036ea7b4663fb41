#pragma once
// Test helper shared by the suites that place work on a machine other than this one.
#include "hympi/core/topology.hpp"

namespace hympi::test {

/// Two packages of two NUMA nodes of four 2-way SMT cores (4 NUMA nodes, 16 cores, 32 PUs), built once: hwloc's
/// synthetic description, so placements are checked on a NUMA machine whatever this one is.
inline const Topology& four_numa_machine() {
  static const Topology topology = Topology::from_synthetic("pack:2 numa:2 core:4 pu:2");
  return topology;
}

}  // namespace hympi::test

#pragma once
// Every node's own topology, gathered on rank 0: one leader rank per (possibly virtual) node exports
// its hwloc topology as XML, so a job sees unlike nodes instead of assuming the launch node's.
#include <mpi.h>

#include <span>
#include <string>
#include <vector>

#include "hympi/core/environment.hpp"

namespace hympi {

/// One node's topology as its leader (node rank 0) exported it.
struct NodeTopology {
  int node = 0;        ///< NodeMap::node_id(): nodes in order of their lowest rank
  std::string host;    ///< the leader's host name ("/vnN" appended on virtual nodes, as Environment::host())
  int ranks = 0;       ///< ranks on the node
  std::string source;  ///< what the leader loaded: "this" or its HYMPI_NODE_TOPOLOGY entry
  std::string xml;     ///< the topology as hwloc XML
};

/// Splits HYMPI_NODE_TOPOLOGY's text at ';' into topology specs (this | synthetic:<description> |
/// <file.xml>), blanks around each trimmed; "" gives none (every node loads its own hardware).
/// Throws InvalidArgument naming the text when an entry is empty.
std::vector<std::string> parse_node_topology_specs(const std::string& text);

/// The spec node `node` of `nodes` loads: "this" without specs, the only one when one is given, else
/// specs[node]. Throws InvalidArgument when more than one spec is given and their count is not `nodes`.
std::string node_topology_spec(std::span<const std::string> specs, int node, int nodes);

/// Gathers each node's topology on rank 0 of `comm` (collective over `comm`; `nodes` must be a NodeMap of
/// `comm`): every node's leader loads node_topology_spec(specs, ...) and exports it as XML, rank 0 receives
/// one NodeTopology per node in node order; the other ranks get an empty vector. `host` is this rank's host
/// name. When any leader cannot load its spec, every rank throws TopologyError (rank 0's names the node
/// and hwloc's reason), so no rank waits for a node that failed; InvalidArgument for a spec count that is
/// neither 1 nor the number of nodes (on every rank); MpiError when an MPI call fails.
std::vector<NodeTopology> gather_node_topologies(MPI_Comm comm, const NodeMap& nodes, const std::string& host,
                                                 std::span<const std::string> specs);

}  // namespace hympi

#include "hympi/core/node_topologies.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <exception>

#include "hympi/core/error.hpp"
#include "hympi/core/topology.hpp"

namespace hympi {

namespace {
// What every rank sends rank 0 first: whether it leads a node, and the lengths of the bytes that follow.
enum Field { kLeader, kNode, kRanks, kLoaded, kHostBytes, kSourceBytes, kPayloadBytes, kFields };

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\n") - first + 1);
}
}  // namespace

std::vector<std::string> parse_node_topology_specs(const std::string& text) {
  std::vector<std::string> out;
  if (trimmed(text).empty()) return out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(';', start);
    std::string spec = trimmed(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (spec.empty())
      throw InvalidArgument("node topology list '" + text + "' has an empty entry " + std::to_string(out.size()) +
                            " (expected this | synthetic:<description> | <file.xml> between the ';')");
    out.push_back(std::move(spec));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::string node_topology_spec(std::span<const std::string> specs, int node, int nodes) {
  if (specs.empty()) return "this";
  if (specs.size() == 1) return specs.front();
  if (static_cast<int>(specs.size()) != nodes)
    throw InvalidArgument(std::to_string(specs.size()) + " node topologies given for " + std::to_string(nodes) +
                          " node(s) (give one per node, or one for all)");
  if (node < 0 || node >= nodes)
    throw InvalidArgument("node " + std::to_string(node) + " out of range 0.." + std::to_string(nodes - 1));
  return specs[static_cast<std::size_t>(node)];
}

std::vector<NodeTopology> gather_node_topologies(MPI_Comm comm, const NodeMap& nodes, const std::string& host,
                                                 std::span<const std::string> specs) {
  // Every rank knows num_nodes(), so a count mismatch fails on every rank alike, before any message.
  (void)node_topology_spec(specs, 0, nodes.num_nodes());
  int rank = 0, size = 1;
  HYMPI_MPI(MPI_Comm_rank(comm, &rank));
  HYMPI_MPI(MPI_Comm_size(comm, &size));
  const bool leader = nodes.node_rank() == 0;
  std::string source, payload;  // payload: the XML, or why it could not be loaded
  bool loaded = true;
  if (leader) {
    source = node_topology_spec(specs, nodes.node_id(), nodes.num_nodes());
    try {
      payload = Topology::from_spec(source).to_xml();
    } catch (const std::exception& e) {
      // Keep going: rank 0 waits for this node's message, and it must learn why there is no XML.
      loaded = false;
      payload = e.what();
    }
    if (payload.size() > static_cast<std::size_t>(INT_MAX / 2)) {
      loaded = false;
      payload = "its XML has " + std::to_string(payload.size()) + " bytes, more than one message carries";
    }
  }
  // Host names and specs are short, and the payload was capped above: every length fits an int.
  const auto length = [](const std::string& s) { return static_cast<int>(s.size()); };
  const std::string mine = leader ? host + source + payload : std::string();
  const std::array<int, kFields> header = {leader ? 1 : 0,    nodes.node_id(), nodes.node_size(), loaded ? 1 : 0,
                                           length(host),     length(source),  length(payload)};
  std::vector<int> headers(rank == 0 ? static_cast<std::size_t>(size) * kFields : 0);
  HYMPI_MPI(MPI_Gather(header.data(), kFields, MPI_INT, headers.data(), kFields, MPI_INT, 0, comm));

  std::vector<int> counts, displs;
  long long total = 0;
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      const int* h = headers.data() + static_cast<std::size_t>(r) * kFields;
      counts.push_back(h[kLeader] != 0 ? h[kHostBytes] + h[kSourceBytes] + h[kPayloadBytes] : 0);
      displs.push_back(static_cast<int>(std::min<long long>(total, INT_MAX)));
      total += counts.back();
    }
  }
  // Rank 0 alone can tell whether everything fits one MPI_Gatherv; the others must stop with it, not send.
  long long agreed_total = total;
  HYMPI_MPI(MPI_Bcast(&agreed_total, 1, MPI_LONG_LONG, 0, comm));
  if (agreed_total > INT_MAX)
    throw TopologyError("node topologies total " + std::to_string(agreed_total) +
                        " bytes, more than one MPI_Gatherv carries");
  std::vector<char> bytes(static_cast<std::size_t>(total));
  HYMPI_MPI(MPI_Gatherv(mine.data(), length(mine), MPI_CHAR, bytes.data(), counts.data(), displs.data(), MPI_CHAR,
                        0, comm));

  std::vector<NodeTopology> out;
  // {the first node that failed or -1, 1 when it failed on a user's spec (bad input) else 0}
  std::array<int, 2> verdict = {-1, 0};
  std::string why;
  if (rank == 0) {
    out.resize(static_cast<std::size_t>(nodes.num_nodes()));
    std::vector<bool> seen(out.size(), false);
    for (int r = 0; r < size && verdict[0] < 0; ++r) {
      const int* h = headers.data() + static_cast<std::size_t>(r) * kFields;
      if (h[kLeader] == 0) continue;
      // NodeMap numbers nodes 0..num_nodes()-1 with one leader each; anything else is a broken NodeMap.
      if (h[kNode] < 0 || h[kNode] >= nodes.num_nodes() || seen[static_cast<std::size_t>(h[kNode])]) {
        verdict = {0, 0};
        why = "node index " + std::to_string(h[kNode]) + " from rank " + std::to_string(r) +
              " is out of range or given twice";
        break;
      }
      const char* at = bytes.data() + displs[static_cast<std::size_t>(r)];
      seen[static_cast<std::size_t>(h[kNode])] = true;
      NodeTopology& node = out[static_cast<std::size_t>(h[kNode])];
      node.node = h[kNode];
      node.ranks = h[kRanks];
      node.host.assign(at, static_cast<std::size_t>(h[kHostBytes]));
      node.source.assign(at + h[kHostBytes], static_cast<std::size_t>(h[kSourceBytes]));
      std::string text(at + h[kHostBytes] + h[kSourceBytes], static_cast<std::size_t>(h[kPayloadBytes]));
      if (h[kLoaded] != 0) {
        node.xml = std::move(text);
      } else {
        verdict = {node.node, node.source == "this" ? 0 : 1};
        why = "node " + std::to_string(node.node) + " (" + node.host + ") cannot load topology '" + node.source +
              "': " + text;
      }
    }
  }
  HYMPI_MPI(MPI_Bcast(verdict.data(), 2, MPI_INT, 0, comm));
  if (verdict[0] >= 0) {
    if (rank != 0) why = "node " + std::to_string(verdict[0]) + " could not report its topology (rank 0 says why)";
    if (verdict[1] == 1) throw InvalidArgument(why);
    throw TopologyError(why);
  }
  return out;
}

}  // namespace hympi

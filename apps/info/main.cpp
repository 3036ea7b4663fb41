// hympi-info: the machine's topology as hwloc sees it (no MPI needed); with --all-nodes, launched under
// MPI, every node's own topology, gathered on rank 0.
#include <iostream>
#include <optional>

#include "hympi/app/app.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/node_topologies.hpp"
#include "hympi/core/topology.hpp"

namespace {

nlohmann::json summary_of(const hympi::Topology& topology) {
  auto summary = topology.summary();
  summary["hash"] = topology.hash();
  summary["hwloc_api_version"] = HWLOC_API_VERSION;
  return summary;
}

void print_text(const hympi::Topology& topology) {
  std::cout << "packages " << topology.packages() << ", NUMA domains " << topology.numa_nodes() << ", cores "
            << topology.cores() << ", PUs " << topology.pus() << "\n";
  for (const auto& c : topology.caches())
    std::cout << "L" << c.level << ": " << c.count << " x " << c.size_bytes / 1024 << " KiB\n";
}

// Every node's leader loads its topology (its hardware, or its HYMPI_NODE_TOPOLOGY entry); rank 0 prints
// them all. Bad input: exit 2, runtime failure: 1, the message from rank 0 only (every rank fails alike).
int all_nodes(int argc, char** argv, const std::string& config_path, bool json) {
  std::vector<std::string> specs;
  int virtual_nodes = 1;
  try {
    const auto settings = hympi::Settings::load(config_path);
    specs = settings.parse("node_topology", hympi::parse_node_topology_specs);
    virtual_nodes = settings.positive_int("virtual_nodes");
  } catch (const std::exception& e) {
    return hympi::error_exit_code("hympi-info", e);
  }
  std::optional<hympi::Environment> env;
  try {
    env.emplace(argc, argv, hympi::EnvironmentOptions{hympi::ThreadLevel::single, virtual_nodes});
  } catch (const std::exception& e) {
    return hympi::error_exit_code("hympi-info", e);
  }
  try {
    const hympi::NodeMap nodes(env->world(), env->virtual_nodes());
    const auto all = hympi::gather_node_topologies(env->world(), nodes, env->host(), specs);
    if (env->rank() != 0) return 0;
    nlohmann::json out = nlohmann::json::array();
    for (const auto& node : all) {
      const auto topology = hympi::Topology::from_xml_text(node.xml);
      if (!json) {
        std::cout << "node " << node.node << " (" << node.host << ", " << node.ranks << " rank(s), " << node.source
                  << "): hash " << topology.hash() << "\n";
        print_text(topology);
        continue;
      }
      out.push_back({{"node", node.node},
                     {"host", node.host},
                     {"ranks", node.ranks},
                     {"source", node.source},
                     {"summary", summary_of(topology)},
                     {"xml", node.xml}});
    }
    if (json) std::cout << nlohmann::json{{"nodes", out}}.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    const int code = dynamic_cast<const hympi::InvalidArgument*>(&e) != nullptr ? 2 : 1;
    if (env->rank() == 0) hympi::print_error("hympi-info", e.what());
    return code;
  }
}

/// The command, before its output is flushed.
int run(int argc, char** argv) {
  hympi::CommandLine command_line("Topology summary of this machine, an hwloc XML file or a synthetic description",
                                  "hympi-info");
  hympi::OptionSet& cli = command_line.options();
  std::string spec = "this", config_path;
  bool json = false, xml = false, every_node = false;
  cli.add("--topology", spec, "this | synthetic:<description> | <file.xml>").show_default();
  cli.flag("--json", json, "print the summary as JSON");
  cli.flag("--xml", xml, "print the topology as hwloc XML");
  cli.flag("--all-nodes", every_node,
           "under MPI: every node's topology, one leader rank per (virtual) node (HYMPI_VIRTUAL_NODES); "
           "HYMPI_NODE_TOPOLOGY replaces the hardware per node");
  cli.add("--config", config_path, "config file (default: ./hympi.toml when present; env HYMPI_CONFIG)");
  if (const auto stop = command_line.parse(argc, argv)) return *stop;
  if (every_node) {
    if (cli.given("--topology") || xml) {
      if (hympi::launched_rank() == 0)
        hympi::print_error("hympi-info",
                           "--all-nodes takes no --topology or --xml (each node's topology comes from its hardware or "
                           "HYMPI_NODE_TOPOLOGY; --json includes its XML)");
      return 2;
    }
    return all_nodes(argc, argv, config_path, json);
  }
  try {
    // Nothing here reads a setting, but a bad config file is refused by every command, this one too: it was
    // ignored without --all-nodes, a missing --config included.
    (void)hympi::Settings::load(config_path);
    const auto topology = hympi::Topology::from_spec(spec);
    if (xml) {
      std::cout << topology.to_xml();
      return 0;
    }
    if (json) {
      std::cout << summary_of(topology).dump() << "\n";
      return 0;
    }
    print_text(topology);
    return 0;
  } catch (const hympi::Error& e) {  // a bad --topology or config file: bad input
    if (hympi::launched_rank() == 0) hympi::print_error("hympi-info", e.what());
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) { return hympi::flushed_output("hympi-info", run(argc, argv)); }

// hympi-info: the machine's topology as hwloc sees it (no MPI needed).
#include <CLI/CLI.hpp>
#include <iostream>

#include "hympi/app/app.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/topology.hpp"

int main(int argc, char** argv) {
  CLI::App cli{"Topology summary of this machine, an hwloc XML file or a synthetic description", "hympi-info"};
  std::string spec = "this";
  bool json = false, xml = false;
  cli.add_option("--topology", spec, "this | synthetic:<description> | <file.xml>")->capture_default_str();
  cli.add_flag("--json", json, "print the summary as JSON");
  cli.add_flag("--xml", xml, "print the topology as hwloc XML");
  if (const auto stop = hympi::parse_command_line(cli, argc, argv, "hympi-info")) return *stop;
  try {
    const auto topology = hympi::Topology::from_spec(spec);
    if (xml) {
      std::cout << topology.to_xml();
      return 0;
    }
    auto summary = topology.summary();
    summary["hash"] = topology.hash();
    summary["hwloc_api_version"] = HWLOC_API_VERSION;
    if (json) {
      std::cout << summary.dump() << "\n";
      return 0;
    }
    std::cout << "packages " << topology.packages() << ", NUMA domains " << topology.numa_nodes() << ", cores "
              << topology.cores() << ", PUs " << topology.pus() << "\n";
    for (const auto& c : topology.caches())
      std::cout << "L" << c.level << ": " << c.count << " x " << c.size_bytes / 1024 << " KiB\n";
    return 0;
  } catch (const hympi::Error& e) {
    std::cerr << "hympi-info: error: " << e.what() << "\n";
    return 2;
  }
}

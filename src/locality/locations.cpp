#include "hympi/locality/locations.hpp"

#include <charconv>
#include <sstream>

#include "hympi/core/error.hpp"

namespace hympi::locality {

std::string LocationRange::to_string() const {
  return first == last ? std::to_string(first) : std::to_string(first) + ":" + std::to_string(last);
}

void check_range(const LocationRange& range) {
  if (range.last < range.first)
    throw InvalidArgument("location range " + range.to_string() + " is empty (m:n needs n >= m)");
}

LocationsSpec parse_num_locs(std::string_view text) {
  if (text.empty()) return {};
  if (text.front() >= '0' && text.front() <= '9') {
    int count = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (ec == std::errc() && end == text.data() + text.size() && count >= 1) return {count, LocationLevel::numa};
  } else if (text.front() != '-' && text.front() != '+') {
    try {
      return {0, parse_enum<LocationLevel>(text)};
    } catch (const InvalidArgument&) {  // one message for every bad spelling, below
    }
  }
  throw InvalidArgument("number of locations must be an integer >= 1 or numa, package or l3, got '" +
                        std::string(text) + "'");
}

namespace {

/// One location per object of a level: (cpuset, nodeset) pairs, CPU-less objects left out.
std::vector<Location> level_locations(const Topology& topo, LocationLevel level) {
  std::vector<Location> out;
  const auto add = [&](Bitmap cpuset, Bitmap nodeset) {
    if (cpuset.weight() <= 0) return;  // memory-only NUMA node (HBM, CXL): no thread can run there
    out.push_back({static_cast<int>(out.size()), std::move(cpuset), std::move(nodeset)});
  };
  switch (level) {
    case LocationLevel::numa:
      // The node itself, not the nodes near its PUs: a memory-only node sharing them must not
      // receive this location's pages.
      for (int i = 0; i < topo.numa_nodes(); ++i) add(topo.numa_set(i), topo.numa_nodeset(i));
      break;
    case LocationLevel::package:
      for (int i = 0; i < topo.packages(); ++i) {
        Bitmap set = topo.package_set(i);
        Bitmap nodes = topo.nodeset_of(set);
        add(std::move(set), std::move(nodes));
      }
      break;
    case LocationLevel::l3:
      for (int i = 0; i < topo.l3_caches(); ++i) {
        Bitmap set = topo.l3_set(i);
        Bitmap nodes = topo.nodeset_of(set);
        add(std::move(set), std::move(nodes));
      }
      break;
  }
  if (out.empty()) {
    // No object of that level (no L3 reported, a synthetic machine without packages): one
    // location spanning the machine is still a valid mapping, and every program runs.
    Bitmap set = topo.machine_set();
    if (set.weight() <= 0) throw TopologyError("the topology has no PU to put a location on");
    out.push_back({0, set, topo.machine_nodeset()});
  }
  return out;
}

}  // namespace

Locations Locations::by_level(const Topology& topology, LocationLevel level) {
  return Locations(topology, level_locations(topology, level), hympi::to_string(level));
}

Locations Locations::by_count(const Topology& topology, int nlocs) {
  if (nlocs <= 0) throw InvalidArgument("number of locations must be >= 1, got " + std::to_string(nlocs));
  const int cores = topology.cores();
  const int pus = topology.pus();
  if (nlocs > pus)
    throw InvalidArgument("number of locations " + std::to_string(nlocs) + " exceeds the " + std::to_string(pus) +
                          " PUs of the topology");
  // Cores first, so a location never splits a core's hyperthreads between two locations; PUs
  // only when there are more locations than cores.
  const bool by_core = nlocs <= cores;
  const int units = by_core ? cores : pus;
  std::vector<Bitmap> unit_sets;
  if (by_core) {
    for (int c = 0; c < cores; ++c) unit_sets.push_back(topology.core_set(c));
  } else {
    const Bitmap all = topology.machine_set();
    for (int pu = hwloc_bitmap_first(all.get()); pu >= 0; pu = hwloc_bitmap_next(all.get(), pu)) {
      Bitmap one;
      hwloc_bitmap_only(one.get(), static_cast<unsigned>(pu));
      unit_sets.push_back(std::move(one));
    }
  }
  std::vector<Location> out;
  for (int l = 0; l < nlocs; ++l) {
    Bitmap set;
    for (long long u = block_begin(units, nlocs, l); u < block_begin(units, nlocs, l + 1); ++u)
      set.add(unit_sets[static_cast<std::size_t>(u)]);
    Bitmap nodes = topology.nodeset_of(set);
    out.push_back({l, std::move(set), std::move(nodes)});
  }
  return Locations(topology, std::move(out), "count");
}

Locations Locations::from_spec(const Topology& topology, const LocationsSpec& spec) {
  return spec.count > 0 ? by_count(topology, spec.count) : by_level(topology, spec.level);
}

int Locations::wrap(long long index) const noexcept {
  const long long n = size();
  const long long r = index % n;
  return static_cast<int>(r < 0 ? r + n : r);
}

std::string Locations::describe() const {
  std::ostringstream os;
  for (const Location& l : locations_)
    os << "location " << l.index << ": PUs " << l.cpuset.to_list() << ", NUMA nodes " << l.nodeset.to_list() << "\n";
  return os.str();
}

}  // namespace hympi::locality

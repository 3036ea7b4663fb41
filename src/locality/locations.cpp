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

/// The PUs locations may use: the machine's, or those of `within`; throws when none is left.
Bitmap usable_pus(const Topology& topo, const Bitmap* within) {
  Bitmap set = topo.machine_set();
  if (within != nullptr) hwloc_bitmap_and(set.get(), set.get(), within->get());
  if (set.weight() <= 0)
    throw InvalidArgument("no PU of the topology is in " +
                          (within != nullptr ? "the set " + within->to_list() : std::string("the machine")));
  return set;
}

void require_pus_for(int nlocs, int pus) {
  if (nlocs > pus)
    throw InvalidArgument("number of locations " + std::to_string(nlocs) + " exceeds the " + std::to_string(pus) +
                          " PUs available");
}

Bitmap intersection(const Bitmap& a, const Bitmap& b) {
  Bitmap out;
  hwloc_bitmap_and(out.get(), a.get(), b.get());
  return out;
}

/// One location per object of a level: (cpuset, nodeset) pairs, objects without usable PUs left out.
std::vector<Location> level_locations(const Topology& topo, LocationLevel level, const Bitmap& usable) {
  std::vector<Location> out;
  const auto add = [&](const Bitmap& object_set, Bitmap nodeset) {
    Bitmap cpuset = intersection(object_set, usable);
    // A memory-only NUMA node (HBM, CXL) or an object outside `within`: no thread can run there.
    if (cpuset.weight() <= 0) return;
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
        const Bitmap set = topo.package_set(i);
        add(set, topo.nodeset_of(intersection(set, usable)));
      }
      break;
    case LocationLevel::l3:
      for (int i = 0; i < topo.l3_caches(); ++i) {
        const Bitmap set = topo.l3_set(i);
        add(set, topo.nodeset_of(intersection(set, usable)));
      }
      break;
  }
  if (out.empty()) {
    // No object of that level (no L3 reported, a synthetic machine without packages): one
    // location spanning the usable PUs is still a valid mapping, and every program runs.
    out.push_back({0, usable, topo.nodeset_of(usable)});
  }
  return out;
}

}  // namespace

Locations Locations::by_level(const Topology& topology, LocationLevel level, const Bitmap* within) {
  return Locations(topology, level_locations(topology, level, usable_pus(topology, within)),
                   hympi::to_string(level));
}

void Locations::check_count(const Topology& topology, int nlocs, const Bitmap* within) {
  require_pus_for(nlocs, usable_pus(topology, within).weight());
}

Locations Locations::by_count(const Topology& topology, int nlocs, const Bitmap* within) {
  if (nlocs <= 0) throw InvalidArgument("number of locations must be >= 1, got " + std::to_string(nlocs));
  const Bitmap usable = usable_pus(topology, within);
  std::vector<Bitmap> cores;
  for (int c = 0; c < topology.cores(); ++c)
    if (Bitmap set = intersection(topology.core_set(c), usable); set.weight() > 0) cores.push_back(std::move(set));
  const int pus = usable.weight();
  require_pus_for(nlocs, pus);
  // Cores first, so a location never splits a core's hyperthreads between two locations; PUs
  // only when there are more locations than cores.
  std::vector<Bitmap> units;
  if (nlocs <= static_cast<int>(cores.size())) {
    units = std::move(cores);
  } else {
    for (int pu = hwloc_bitmap_first(usable.get()); pu >= 0; pu = hwloc_bitmap_next(usable.get(), pu)) {
      Bitmap one;
      hwloc_bitmap_only(one.get(), static_cast<unsigned>(pu));
      units.push_back(std::move(one));
    }
  }
  const auto count = static_cast<long long>(units.size());
  std::vector<Location> out;
  for (int l = 0; l < nlocs; ++l) {
    Bitmap set;
    for (long long u = block_begin(count, nlocs, l); u < block_begin(count, nlocs, l + 1); ++u)
      set.add(units[static_cast<std::size_t>(u)]);
    Bitmap nodes = topology.nodeset_of(set);
    out.push_back({l, std::move(set), std::move(nodes)});
  }
  return Locations(topology, std::move(out), "count");
}

Locations Locations::from_spec(const Topology& topology, const LocationsSpec& spec, const Bitmap* within) {
  return spec.count > 0 ? by_count(topology, spec.count, within) : by_level(topology, spec.level, within);
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

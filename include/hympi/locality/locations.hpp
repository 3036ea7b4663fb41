#pragma once
// Locations (Jin et al., "High performance computing using MPI and OpenMP on multi-core parallel systems",
// §5.1): `nlocs` virtual execution engines, each a set of PUs and the NUMA memory near them, mapped onto the
// machine's topology. Threads, tasks and array blocks are
// placed on locations; hwloc then binds threads to a location's cpuset and pages to its nodeset.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "hympi/core/enum_names.hpp"
#include "hympi/core/topology.hpp"

namespace hympi::locality {

/// Which hwloc object one location is when locations follow the hardware.
enum class LocationLevel { numa, package, l3 };

contract::LocationLevelNames<LocationLevel> enum_names(LocationLevel);

/// One location: the PUs its threads run on and the NUMA nodes (OS indexes) its memory lives on.
struct Location {
  int index = 0;   ///< position in its Locations, 0 .. nlocs-1
  Bitmap cpuset;   ///< PUs (OS indexes) threads on this location are bound to
  Bitmap nodeset;  ///< NUMA nodes (OS indexes) memory of this location is bound to
};

/// A range m:n of locations, both ends included (Jin et al.'s `location(m:n)`; one location is m:m).
///
/// The range is the sequence m, m+1, ..., n; each value is taken modulo nlocs (negative values
/// too: -1 is nlocs-1), so 2:5 over 4 locations is 2, 3, 0, 1 and 0:7 visits every location
/// twice. Jin et al. (§5.1.1) make out-of-range values wrap rather than fail, "to support some level of fault
/// tolerance".
struct LocationRange {
  int first = 0;
  int last = 0;
  /// The single location `m`.
  [[nodiscard]] static LocationRange single(int m) { return {m, m}; }
  /// Number of slots in the range (n - m + 1); may exceed nlocs, then locations repeat.
  [[nodiscard]] long long count() const { return static_cast<long long>(last) - first + 1; }
  /// "m:n", or "m" for one location.
  [[nodiscard]] std::string to_string() const;
};

/// How to build Locations: a count, or one per object of a level (what HYMPI_NUM_LOCS says).
struct LocationsSpec {
  int count = 0;                             ///< > 0: this many locations; 0: one per `level` object
  LocationLevel level = LocationLevel::numa;
};

/// Parses the num_locs option (HYMPI_NUM_LOCS): "" -> one location per NUMA node; "numa",
/// "package", "l3" -> one per such object; a decimal N >= 1 -> N locations. Throws
/// InvalidArgument naming the text for anything else, including N <= 0 (the options layer puts
/// the variable's or flag's name in front: `settings.parse("num_locs", [](const std::string& t) {
/// return parse_num_locs(t); })`).
LocationsSpec parse_num_locs(std::string_view text);

/// The machine's locations. Holds a pointer to `topology`, which must outlive it.
///
/// By level: one location per NUMA node (CPU-less memory nodes skipped: no thread can run
/// there), package or L3 cache; a NUMA location's nodeset is its own node, a package's or L3's the
/// nodes near its PUs; a topology without objects of that
/// level (no L3 reported, no Package objects) is one location spanning the machine. By count N:
/// the cores in logical order are cut into N contiguous blocks (sizes differ by at most one,
/// larger blocks first), so N equal to the NUMA or package count gives the same sets as the
/// level; with more locations than cores the PUs are cut instead; each location's nodeset is the
/// NUMA nodes near its PUs.
///
/// `within` (optional) keeps the locations inside a set of PUs, e.g. the cpuset an MPI rank was
/// bound to, so that a rank's threads never leave it: objects are cut down to their PUs in
/// `within` and dropped when none is left, and a count splits only the cores (PUs) in `within`.
class Locations {
 public:
  /// One location per object of `level` (inside `within` when given). Throws InvalidArgument when
  /// `within` holds no PU of the topology.
  static Locations by_level(const Topology& topology, LocationLevel level, const Bitmap* within = nullptr);
  /// `nlocs` locations (inside `within` when given). Throws InvalidArgument when nlocs <= 0 or
  /// nlocs exceeds the PUs available.
  static Locations by_count(const Topology& topology, int nlocs, const Bitmap* within = nullptr);
  /// Throws as by_count does when nlocs exceeds the PUs available, without building the locations: for a program
  /// to refuse the count before anything runs rather than inside the run, once per rank.
  static void check_count(const Topology& topology, int nlocs, const Bitmap* within = nullptr);
  /// By `spec.count` when > 0, else by `spec.level`; throws as those do.
  static Locations from_spec(const Topology& topology, const LocationsSpec& spec, const Bitmap* within = nullptr);

  /// nlocs, the number of locations (>= 1).
  [[nodiscard]] int size() const noexcept { return static_cast<int>(locations_.size()); }
  /// `index` taken modulo nlocs into 0 .. nlocs-1 (Jin et al.'s wrap-around; negative values too).
  [[nodiscard]] int wrap(long long index) const noexcept;
  /// The location `index` after wrap(); never throws.
  [[nodiscard]] const Location& at(long long index) const noexcept {
    return locations_[static_cast<std::size_t>(wrap(index))];
  }
  /// Every location, in order.
  [[nodiscard]] const std::vector<Location>& all() const noexcept { return locations_; }
  /// The range 0 : nlocs-1 (Jin et al.'s default when a region names no location).
  [[nodiscard]] LocationRange everywhere() const noexcept { return {0, size() - 1}; }
  /// The location of slot `slot` (0-based) of `range`: wrap(range.first + slot).
  [[nodiscard]] int location_of_slot(const LocationRange& range, long long slot) const noexcept {
    return wrap(static_cast<long long>(range.first) + slot);
  }
  /// The topology the locations were cut from.
  [[nodiscard]] const Topology& topology() const noexcept { return *topology_; }
  /// "numa", "package", "l3" or "count" (how they were built).
  [[nodiscard]] const std::string& origin() const noexcept { return origin_; }
  /// One line per location: index, cpuset and nodeset lists.
  [[nodiscard]] std::string describe() const;

 private:
  Locations(const Topology& topology, std::vector<Location> locations, std::string origin)
      : topology_(&topology), locations_(std::move(locations)), origin_(std::move(origin)) {}
  const Topology* topology_;
  std::vector<Location> locations_;
  std::string origin_;
};

/// Throws InvalidArgument naming the range when it is empty (last < first).
void check_range(const LocationRange& range);

/// Block distribution, Jin et al.'s rule for threads over locations and array indexes over blocks:
/// `n` items over `parts` parts, the first n % parts parts one item larger. Part `p` holds
/// [block_begin(n, parts, p), block_begin(n, parts, p + 1)). Needs parts >= 1 (not checked: callers do).
[[nodiscard]] constexpr long long block_begin(long long n, long long parts, long long p) noexcept {
  const long long q = n / parts, r = n % parts;
  return p * q + (p < r ? p : r);
}

/// The part of [0, parts) that item `i` of `n` falls in under block_begin's rule.
[[nodiscard]] constexpr long long block_owner(long long n, long long parts, long long i) noexcept {
  const long long q = n / parts, r = n % parts;
  const long long big = r * (q + 1);  // items in the larger parts
  return i < big ? i / (q + 1) : r + (i - big) / q;
}

}  // namespace hympi::locality

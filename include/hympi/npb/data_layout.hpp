#pragma once
// Where the zone arrays of BT-MZ and SP-MZ live, and which team sweeps them: the four data layouts of Jin et al.,
// "High performance computing using MPI and OpenMP on multi-core parallel systems", §5.3 (Fig. 9: first touch,
// one location, access pattern, random), on the locality layer.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hympi/core/enum_names.hpp"
#include "hympi/core/topology.hpp"
#include "hympi/locality/distributed_array.hpp"
#include "hympi/locality/locations.hpp"
#include "hympi/locality/membind.hpp"
#include "hympi/locality/region.hpp"

namespace hympi::npb {

/// Where the pages of every zone array go (`--data-layout`).
///
/// first_touch: nobody binds anything; the arrays are untouched until the solver's team writes
/// them with the static schedule of its sweeps, so the kernel's first-touch policy puts each page
/// on the node of the thread that sweeps it. one_location: every page bound to location 0.
/// access_pattern: each array a DistributedArray distributed (block, *) over the rank's
/// locations along its rows (the (k, j) rows the static schedule splits), and the sweeping threads
/// bound once to the same locations by the locality layer's mapping (TeamBinding), so each thread
/// sweeps rows on its own node.
/// random: each page bound to a location drawn from a seeded generator (reproducible).
enum class DataLayout { first_touch, one_location, access_pattern, random };

contract::DataLayoutNames<DataLayout> enum_names(DataLayout);

/// Parses "first-touch|one-location|access-pattern|random"; throws InvalidArgument naming the value.
inline DataLayout parse_data_layout(std::string_view text) { return parse_enum<DataLayout>(text); }

/// The seed of the random layout when none is given.
inline constexpr std::uint64_t kDefaultLayoutSeed = 20100913;

/// How a rank's zone arrays are laid out.
struct DataLayoutOptions {
  DataLayout layout = DataLayout::first_touch;
  std::uint64_t seed = kDefaultLayoutSeed;  ///< random: page p of array a of zone z goes to hash(seed, z, a, p)
  locality::LocationsSpec locations;        ///< the locations (HYMPI_NUM_LOCS; default one per NUMA node)
  /// {"layout", "seed"} (the seed only for random).
  [[nodiscard]] nlohmann::json to_json() const;
};

/// The location of page `page` of array `array` of zone `zone` under the random layout: uniform over
/// `nlocs` (>= 1), a pure function of its arguments (splitmix64), so every run draws the same pages.
[[nodiscard]] int random_owner(std::uint64_t seed, int zone, int array, std::size_t page, int nlocs) noexcept;

/// One zone array of doubles: page-aligned, zeros, placed as its ZonePlacement says. Move-only.
class ZoneArray {
 public:
  ZoneArray() = default;
  ZoneArray(const ZoneArray&) = delete;
  ZoneArray& operator=(const ZoneArray&) = delete;
  ZoneArray(ZoneArray&& other) noexcept { *this = std::move(other); }
  ZoneArray& operator=(ZoneArray&& other) noexcept {
    pages_ = std::move(other.pages_);
    blocks_ = std::move(other.blocks_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    topology_ = other.topology_;
    owners_in_ = other.owners_in_;
    page_owner_ = std::move(other.page_owner_);
    return *this;
  }
  ~ZoneArray() = default;
  [[nodiscard]] double* data() noexcept { return data_; }
  [[nodiscard]] const double* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] double& operator[](std::size_t i) noexcept { return data_[i]; }
  [[nodiscard]] const double& operator[](std::size_t i) const noexcept { return data_[i]; }
  [[nodiscard]] double* begin() noexcept { return data_; }
  [[nodiscard]] double* end() noexcept { return data_ + size_; }
  /// The array's bytes.
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {reinterpret_cast<const std::byte*>(data_), size_ * sizeof(double)};
  }
  /// The location each page was meant for (empty under first touch, which intends nothing).
  [[nodiscard]] const std::vector<int>& page_owners() const noexcept { return page_owner_; }
  /// Where the kernel put the pages; with the owners' nodesets as intent unless first touch. Throws
  /// TopologyError when the topology is not this machine (or there is none) or the kernel refuses.
  [[nodiscard]] locality::PagePlacement placement() const;

 private:
  friend class ZonePlacement;
  std::unique_ptr<locality::PageBuffer> pages_;                     ///< first touch, one location, random
  std::unique_ptr<locality::DistributedArray<double, 2>> blocks_;   ///< access pattern
  double* data_ = nullptr;
  std::size_t size_ = 0;
  const Topology* topology_ = nullptr;
  const locality::Locations* owners_in_ = nullptr;  ///< the locations page_owner_ indexes
  std::vector<int> page_owner_;
};

/// What made a rank's zone arrays and runs the teams that sweep them (built once per run, before the
/// zones). Holds pointers to `topology`, which must outlive it, and is pointed to by every array
/// and zone it made, which it must outlive. Neither copied nor moved.
///
/// Locations: `machine` are the machine's (options.locations, e.g. one per NUMA node): one location's
/// node is location 0 of these, and random draws over all of them. `team` are the rank's: the
/// same level cut down to the PUs its OpenMP threads are bound to (a rank never leaves its binding),
/// and the access pattern distributes over the first min(threads, size) of them, where the
/// locality layer's mapping puts its threads (plan_threads: blocks of threads per location).
class ZonePlacement {
 public:
  /// First touch, plain OpenMP teams, no topology (zones built alone, e.g. in tests).
  ZonePlacement() = default;
  /// For `threads` OpenMP threads (>= 1) of this rank on `topology` (this machine: threads are bound
  /// and pages placed; synthetic or XML: arrays only, nothing bound). Reads each thread's binding
  /// (a plain OpenMP region of `threads` threads); for access_pattern binds the threads to their
  /// locations until it is destroyed (TeamBinding). Throws InvalidArgument when threads < 1, the
  /// locations cannot be built (options.locations), or, for access_pattern, the threads are bound
  /// so that the locality layer's block mapping would move them to other locations (e.g. 12 threads
  /// bound 8 + 4 over two NUMA nodes, where the mapping puts 6 + 6): the message names both splits;
  /// TopologyError when binding fails.
  ZonePlacement(const Topology& topology, const DataLayoutOptions& options, int threads);
  ZonePlacement(const ZonePlacement&) = delete;
  ZonePlacement& operator=(const ZonePlacement&) = delete;

  /// The placement every zone built without one uses (first touch, plain OpenMP).
  [[nodiscard]] static const ZonePlacement& plain();

  [[nodiscard]] DataLayout layout() const noexcept { return options_.layout; }
  [[nodiscard]] const Topology* topology() const noexcept { return topology_; }
  /// Whether the sweeping threads were placed on locations by the locality layer (access pattern),
  /// not only by the frame's binding.
  [[nodiscard]] bool located() const noexcept { return team_binding_.has_value(); }

  /// Runs body() on every thread of the team that sweeps the zones (worksharing loops inside
  /// `body` are orphaned and bind to it): a plain `#pragma omp parallel` of the OpenMP thread count
  /// the caller set, on the threads the frame bound, which for access_pattern the constructor
  /// bound to their locations (once: a locality::parallel region per zone step would cost as much
  /// as a small zone's step). `body` must not throw out of the region.
  template <class Body>
  void run(Body&& body) const {
#pragma omp parallel
    body();
  }

  /// For access_pattern: checks that the team still runs on the threads bound to their locations
  /// (TeamBinding::check; call outside a region, e.g. after the timed loop); else nothing. Throws
  /// TopologyError naming the first thread that left its location.
  void check_team() const;

  /// A zone array of `rows` x `row_len` doubles (row-major: a zone field's (k, j) rows of nxmax x
  /// components), zeros, placed by the layout; `zone` and `array` number it for the random draw.
  /// Empty when rows x row_len is 0. Throws std::bad_alloc, TopologyError as placing pages does.
  [[nodiscard]] ZoneArray array(std::size_t rows, std::size_t row_len, int zone, int array) const;

  /// {"layout", "seed" (random), "locations" (machine), "team_locations", "team" ("openmp" |
  /// "locality"), "placed_by" {how: arrays}}: what a result records of the layout.
  [[nodiscard]] nlohmann::json to_json() const;

 private:
  DataLayoutOptions options_;
  int threads_ = 0;
  const Topology* topology_ = nullptr;
  std::optional<locality::Locations> machine_;
  std::optional<locality::Locations> team_;
  locality::LocationRange team_range_{0, 0};
  std::optional<locality::TeamBinding> team_binding_;  ///< access pattern; after team_, which it points to
  mutable std::vector<std::pair<std::string, int>> placed_by_;  ///< how arrays were placed, counted
  mutable std::mutex placed_by_mutex_;  ///< zones are built on their own threads (ThreadWork::zones)
  void count(const std::string& how) const;
};

/// `mine` summed over the ranks of `comm` (collective; every rank gets the sum). Throws MpiError.
[[nodiscard]] locality::PagePlacement sum_over_ranks(const locality::PagePlacement& mine, MPI_Comm comm);

}  // namespace hympi::npb

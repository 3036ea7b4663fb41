#include "hympi/npb/data_layout.hpp"

#include <omp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hympi/core/error.hpp"

namespace hympi::npb {

using locality::Locations;
using locality::PagePlacement;
using locality::PlacedBy;

nlohmann::json DataLayoutOptions::to_json() const {
  nlohmann::json out = {{"layout", hympi::to_string(layout)}};
  if (layout == DataLayout::random) out["seed"] = seed;
  return out;
}

namespace {

std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

const char* placed_by_name(PlacedBy how) noexcept {
  switch (how) {
    case PlacedBy::membind: return "membind";
    case PlacedBy::first_touch: return "first_touch";
    case PlacedBy::unplaced: return "unplaced";
  }
  return "unplaced";
}

/// "8 + 4": threads per location, for the message that refuses a mismatched binding.
std::string split_text(const std::vector<int>& counts) {
  std::string out;
  for (std::size_t l = 0; l < counts.size(); ++l) out += (l == 0 ? "" : " + ") + std::to_string(counts[l]);
  return out;
}

}  // namespace

int random_owner(std::uint64_t seed, int zone, int array, std::size_t page, int nlocs) noexcept {
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<std::uint64_t>(zone));
  h = splitmix64(h ^ static_cast<std::uint64_t>(array));
  h = splitmix64(h ^ static_cast<std::uint64_t>(page));
  return static_cast<int>(h % static_cast<std::uint64_t>(std::max(nlocs, 1)));
}

PagePlacement ZoneArray::placement() const {
  if (empty()) return {};
  if (topology_ == nullptr) throw TopologyError("a zone array made without a topology cannot say where its pages are");
  if (blocks_) return blocks_->placement();
  if (owners_in_ != nullptr) return locality::owner_placement(*owners_in_, bytes(), page_owner_);
  return locality::page_placement(*topology_, bytes());
}

const ZonePlacement& ZonePlacement::plain() {
  static const ZonePlacement placement;
  return placement;
}

ZonePlacement::ZonePlacement(const Topology& topology, const DataLayoutOptions& options, int threads)
    : options_(options), threads_(threads), topology_(&topology) {
  if (threads < 1) throw InvalidArgument("a zone team needs at least 1 thread, got " + std::to_string(threads));
  machine_.emplace(Locations::from_spec(topology, options.locations));
  // The rank's PUs are those its OpenMP threads are bound to (the frame bound them); on another
  // topology than this machine nothing is bound, and the rank has the whole machine.
  std::vector<Bitmap> bound(static_cast<std::size_t>(threads));
  Bitmap rank_set;
  if (topology.is_this_system()) {
    ParallelErrors errors;
#pragma omp parallel num_threads(threads)
    errors.capture([&] {
      Bitmap set;
      if (hwloc_get_cpubind(topology.get(), set.get(), HWLOC_CPUBIND_THREAD) < 0)
        throw TopologyError(std::string("cannot read thread binding: ") + std::strerror(errno));
      bound[static_cast<std::size_t>(omp_get_thread_num())] = set;
    });
    errors.rethrow();
    for (const Bitmap& set : bound) rank_set.add(set);
  } else {
    rank_set = topology.machine_set();
  }
  team_.emplace(Locations::from_spec(topology, options.locations, &rank_set));
  team_range_ = {0, std::min(threads, team_->size()) - 1};
  if (options.layout != DataLayout::access_pattern) return;
  if (!topology.is_this_system()) {
    team_binding_.emplace(*team_, team_range_, threads);  // the mapping only: nothing to bind
    return;
  }

  // The locality layer maps thread t to the location plan_threads gives it. A thread the frame
  // bound inside another location would move, and the data would follow the mapping, not where the
  // other layouts' threads run: refuse rather than compare different thread placements.
  const std::vector<int> plan = locality::plan_threads(*team_, team_range_, threads);
  std::vector<int> planned(static_cast<std::size_t>(team_->size()), 0);
  std::vector<int> placed(static_cast<std::size_t>(team_->size()), 0);
  bool moved = false;
  for (std::size_t t = 0; t < plan.size(); ++t) {
    ++planned[static_cast<std::size_t>(plan[t])];
    for (const locality::Location& loc : team_->all()) {
      if (!loc.cpuset.includes(bound[t])) continue;
      ++placed[static_cast<std::size_t>(loc.index)];
      moved = moved || loc.index != plan[t];
      break;
    }
  }
  if (moved) {
    throw InvalidArgument("--data-layout access-pattern: the locality layer maps the " + std::to_string(threads) +
                          " threads " + split_text(planned) + " on the rank's " + std::to_string(team_->size()) +
                          " locations, but they are bound " + split_text(placed) +
                          "; use a thread count that fills whole locations (or fits in one), or --bind none");
  }
  team_binding_.emplace(*team_, team_range_, threads);
}

void ZonePlacement::check_team() const {
  if (team_binding_) team_binding_->check();
}

void ZonePlacement::count(const std::string& how) const {
  const std::lock_guard lock(placed_by_mutex_);
  for (auto& [name, n] : placed_by_) {
    if (name == how) {
      ++n;
      return;
    }
  }
  placed_by_.emplace_back(how, 1);
}

ZoneArray ZonePlacement::array(std::size_t rows, std::size_t row_len, int zone, int array) const {
  ZoneArray out;
  const std::size_t n = rows * row_len;
  if (n == 0) return out;
  out.topology_ = topology_;
  out.size_ = n;
  if (options_.layout == DataLayout::access_pattern) {
    // #pragma omp distribute(BLOCK, *: A) location(0 : threads-1): the rows in blocks over the
    // locations the region's threads are on, as the static schedule splits them.
    out.blocks_ = std::make_unique<locality::DistributedArray<double, 2>>(
        *team_, locality::DistributedArray<double, 2>::Index{rows, row_len},
        std::vector<locality::DimDistribution>{locality::DimDistribution::block, locality::DimDistribution::none},
        team_range_);
    out.data_ = out.blocks_->data();
    out.owners_in_ = &*team_;
    out.page_owner_ = out.blocks_->page_owners();
    count(placed_by_name(out.blocks_->placed_by()));
    return out;
  }
  out.pages_ = std::make_unique<locality::PageBuffer>(n * sizeof(double));
  out.data_ = reinterpret_cast<double*>(out.pages_->data());
  if (options_.layout == DataLayout::first_touch) {
    // The first write is the team's, row by row with the sweeps' static schedule: the kernel puts
    // each page on the node of the thread that will sweep it (the NPB reference's first touch).
    double* data = out.data_;
    run([data, rows, row_len] {
#pragma omp for schedule(static)
      for (std::size_t r = 0; r < rows; ++r) std::fill_n(data + r * row_len, row_len, 0.0);
    });
    count(topology_ != nullptr && topology_->is_this_system() ? "first_touch" : "unplaced");
    return out;
  }
  const std::size_t page = locality::page_bytes();
  out.page_owner_.assign((n * sizeof(double) + page - 1) / page, 0);
  if (options_.layout == DataLayout::random) {
    for (std::size_t p = 0; p < out.page_owner_.size(); ++p)
      out.page_owner_[p] = random_owner(options_.seed, zone, array, p, machine_->size());
  }
  out.owners_in_ = &*machine_;
  count(placed_by_name(
      locality::place_pages(*machine_, machine_->everywhere(), out.pages_->bytes(), out.page_owner_)));
  return out;
}

nlohmann::json ZonePlacement::to_json() const {
  nlohmann::json out = options_.to_json();
  out["locations"] = machine_ ? machine_->size() : 1;
  out["team_locations"] = team_ ? team_range_.count() : 1;
  out["team"] = located() ? "locality" : "openmp";
  nlohmann::json how = nlohmann::json::object();
  for (const auto& [name, n] : placed_by_) how[name] = n;
  out["placed_by"] = how;
  return out;
}

PagePlacement sum_over_ranks(const PagePlacement& mine, MPI_Comm comm) {
  // Sizes first (the largest node number, the page size), then every count at once.
  long long sizes[2] = {mine.per_node.empty() ? -1 : static_cast<long long>(mine.per_node.rbegin()->first),
                        static_cast<long long>(mine.page_bytes)};
  HYMPI_MPI(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_LONG_LONG, MPI_MAX, comm));
  int intent = mine.pages == 0 || mine.has_intent ? 1 : 0;  // a rank without pages intends nothing either way
  HYMPI_MPI(MPI_Allreduce(MPI_IN_PLACE, &intent, 1, MPI_INT, MPI_MIN, comm));
  const std::size_t nodes = static_cast<std::size_t>(sizes[0] + 1);
  std::vector<unsigned long long> counts(3 + nodes, 0);
  counts[0] = mine.pages;
  counts[1] = mine.absent;
  counts[2] = mine.on_intended;
  for (const auto& [node, n] : mine.per_node) counts[3 + static_cast<std::size_t>(node)] = n;
  HYMPI_MPI(MPI_Allreduce(MPI_IN_PLACE, counts.data(), static_cast<int>(counts.size()), MPI_UNSIGNED_LONG_LONG,
                          MPI_SUM, comm));
  PagePlacement out;
  out.page_bytes = static_cast<std::size_t>(sizes[1]);
  out.pages = counts[0];
  out.absent = counts[1];
  out.on_intended = counts[2];
  out.has_intent = intent == 1 && out.pages > 0;
  for (std::size_t node = 0; node < nodes; ++node)
    if (counts[3 + node] > 0) out.per_node[static_cast<int>(node)] = counts[3 + node];
  return out;
}

}  // namespace hympi::npb

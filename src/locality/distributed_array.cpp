#include "hympi/locality/distributed_array.hpp"

#include <omp.h>

#include <algorithm>

#include "hympi/locality/region.hpp"

namespace hympi::locality {

namespace {

/// Each bound run of pages becomes a kernel memory area of its own, and a process may hold only
/// vm.max_map_count of them (65530 by default); past this many runs (arrays whose inner
/// dimension is distributed, pages scattered at random) the owners' first touch places the pages
/// instead.
constexpr std::size_t kMaxBoundRuns = 16384;

/// Binds each maximal run of pages with one owner to that owner's nodeset; false when the kernel
/// refuses (the caller falls back to first touch, which needs no permission).
bool bind_pages(const Locations& locations, std::span<std::byte> storage, std::size_t page,
                std::span<const int> owner) {
  const Topology& topo = locations.topology();
  std::size_t runs = owner.empty() ? 0 : 1;
  for (std::size_t p = 1; p < owner.size(); ++p) runs += owner[p] != owner[p - 1];
  if (runs > kMaxBoundRuns) return false;
  std::size_t p = 0;
  while (p < owner.size()) {
    std::size_t q = p + 1;
    while (q < owner.size() && owner[q] == owner[p]) ++q;
    const Bitmap& nodes = locations.at(owner[p]).nodeset;
    const std::size_t len = std::min(q * page, storage.size()) - p * page;
    if (nodes.weight() <= 0 || hwloc_set_area_membind(topo.get(), storage.data() + p * page, len, nodes.get(),
                                                      HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET) < 0)
      return false;
    p = q;
  }
  return true;
}

std::size_t pages_of_storage(std::size_t bytes, std::size_t page) { return (bytes + page - 1) / page; }

void check_owners(const Locations& locations, std::size_t bytes, std::span<const int> page_owner) {
  const std::size_t pages = pages_of_storage(bytes, page_bytes());
  if (page_owner.size() != pages)
    throw InvalidArgument("page placement: " + std::to_string(page_owner.size()) + " page owners for " +
                          std::to_string(pages) + " pages");
  for (int owner : page_owner)
    if (owner < 0 || owner >= locations.size())
      throw InvalidArgument("page owner " + std::to_string(owner) + " is not a location (there are " +
                            std::to_string(locations.size()) + ")");
}

}  // namespace

PlacedBy place_pages(const Locations& locations, const LocationRange& range, std::span<std::byte> storage,
                     std::span<const int> page_owner, ArrayPlacement placement) {
  check_range(range);
  check_owners(locations, storage.size(), page_owner);
  const std::size_t page = page_bytes();
  const bool this_system = locations.topology().is_this_system();
  PlacedBy how = !this_system ? PlacedBy::unplaced : PlacedBy::first_touch;
  if (this_system && placement == ArrayPlacement::membind && bind_pages(locations, storage, page, page_owner))
    how = PlacedBy::membind;

  // Pages per location, in address order, for the owners' threads to touch.
  std::vector<std::vector<std::size_t>> pages_of(static_cast<std::size_t>(locations.size()));
  for (std::size_t p = 0; p < page_owner.size(); ++p)
    pages_of[static_cast<std::size_t>(page_owner[p])].push_back(p);
  // Enough threads that every location of the range gets one (plan_threads gives the first
  // min(slots, nlocs) slots a thread as soon as there are that many threads).
  const long long wanted = std::min<long long>(range.count(), locations.size());
  const int nthreads = static_cast<int>(std::max<long long>(omp_get_max_threads(), wanted));
  parallel(locations, range, nthreads, [&](Here& here) {
    // Zero is what the fresh page holds already; writing it makes the kernel give the page a
    // frame now, on the node of this thread (first touch) or of the policy (membind).
    const auto touch = [&](std::size_t p) { storage[p * page] = std::byte{0}; };
    const auto& mine = pages_of[static_cast<std::size_t>(here.location())];
    for (std::size_t i = static_cast<std::size_t>(here.rank_in_location()); i < mine.size();
         i += static_cast<std::size_t>(here.threads_in_location()))
      touch(mine[i]);
    // Locations without a thread in this team (a nested team OpenMP shrank): everyone shares
    // their pages, which then sit where the policy says, or wherever the toucher runs.
    std::size_t k = 0;
    for (int l = 0; l < locations.size(); ++l) {
      if (here.threads_on(l) > 0) continue;
      for (std::size_t p : pages_of[static_cast<std::size_t>(l)])
        if (k++ % static_cast<std::size_t>(here.num_threads()) == static_cast<std::size_t>(here.thread())) touch(p);
    }
  });
  return how;
}

PagePlacement owner_placement(const Locations& locations, std::span<const std::byte> storage,
                              std::span<const int> page_owner) {
  check_owners(locations, storage.size(), page_owner);
  std::vector<const Bitmap*> intended(page_owner.size());
  for (std::size_t p = 0; p < page_owner.size(); ++p) intended[p] = &locations.at(page_owner[p]).nodeset;
  return page_placement(locations.topology(), storage, intended);
}

namespace detail {

PlacedBy place_pages(const ArrayDistribution& distribution, std::span<std::byte> storage, std::size_t element_bytes,
                     ArrayPlacement placement, std::vector<int>& page_owner) {
  page_owner = distribution.page_owners(element_bytes, page_bytes());
  return locality::place_pages(distribution.locations(), distribution.range(), storage, page_owner, placement);
}

PagePlacement array_placement(const ArrayDistribution& distribution, std::span<const std::byte> storage,
                              const std::vector<int>& page_owner) {
  return owner_placement(distribution.locations(), storage, page_owner);
}

}  // namespace detail

}  // namespace hympi::locality

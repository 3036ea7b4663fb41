#pragma once
// DistributedArray<T, Rank>: one shared array, globally indexed, whose blocks live on the NUMA
// memory of the locations that own them (Jin et al., "High performance computing using MPI and OpenMP on
// multi-core parallel systems", §5.2).
#include <array>
#include <concepts>
#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

#include "hympi/locality/distribution.hpp"
#include "hympi/locality/locations.hpp"
#include "hympi/locality/membind.hpp"

namespace hympi::locality {

/// How the pages of a distributed array are put on their owners' memory.
enum class ArrayPlacement {
  membind,      ///< hwloc_set_area_membind (HWLOC_MEMBIND_BIND, by nodeset) per owner, then touched
  first_touch,  ///< no policy: each owner's threads, bound to its cpuset, touch its pages first
};

/// What placing the pages actually did.
enum class PlacedBy {
  membind,      ///< bound by policy (and touched by the owners' threads)
  first_touch,  ///< touched first by the owners' threads (asked for, the kernel refused membind, or
                ///< more than 16384 runs of pages alternate owners, too many kernel memory areas)
  unplaced,     ///< the topology is not this machine: nothing bound, pages wherever the OS put them
};

/// Options of a distributed array.
struct ArrayOptions {
  ArrayPlacement placement = ArrayPlacement::membind;
};

/// Puts page p of `storage` (page-aligned, untouched; the pages of page_bytes()) on location
/// `page_owner[p]` (0 .. nlocs-1) and touches every page: each maximal run of pages with one owner
/// is bound to its nodeset (membind; past 16384 runs, or when the kernel refuses, first touch
/// instead), then a thread of a region over `range`, bound to the owner's cpuset, writes the page.
/// This is what DistributedArray does for its blocks, for any owner per page (e.g. pages scattered
/// at random). Every location owning a page must lie in `range`. Returns what placed the pages
/// (unplaced on a topology that is not this machine: nothing bound, the pages still touched).
/// Throws InvalidArgument when `page_owner` has another length than the pages of `storage` or
/// names a location outside 0 .. nlocs-1; TopologyError when binding the touching threads fails.
PlacedBy place_pages(const Locations& locations, const LocationRange& range, std::span<std::byte> storage,
                     std::span<const int> page_owner, ArrayPlacement placement = ArrayPlacement::membind);

/// page_placement() of `storage` with the nodeset of page p's owner `page_owner[p]` as its intent.
/// Throws as page_placement() does, InvalidArgument when the lengths differ.
PagePlacement owner_placement(const Locations& locations, std::span<const std::byte> storage,
                              std::span<const int> page_owner);

namespace detail {
/// Puts the pages of `storage` (page-aligned, untouched) on their owners and touches every page;
/// returns what it did and the owner of each page. Throws TopologyError when binding the
/// touching threads fails.
PlacedBy place_pages(const ArrayDistribution& distribution, std::span<std::byte> storage, std::size_t element_bytes,
                     ArrayPlacement placement, std::vector<int>& page_owner);
/// page_placement() of `storage` with each page's owner's nodeset as its intent.
PagePlacement array_placement(const ArrayDistribution& distribution, std::span<const std::byte> storage,
                              const std::vector<int>& page_owner);
}  // namespace detail

/// A Rank-dimensional array of trivial T, row-major (last index fastest), indexed globally as an
/// ordinary array, whose dimensions are `block`- or `none`-distributed over a location range
/// (see ArrayDistribution for the rule). Its pages are placed on their owners' NUMA nodes when
/// it is built, every element reads as zero, and placement() asks the kernel where they are.
///
/// A page straddling two owners' blocks goes to the owner of most of its bytes (the lower block
/// on a tie). Holds a pointer to `locations`, which must outlive it. Move-only.
template <class T, std::size_t Rank>
class DistributedArray {
  static_assert(Rank >= 1, "a distributed array has at least one dimension");
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>,
                "distributed arrays hold trivial types (their pages start as zeros)");

 public:
  static constexpr std::size_t rank = Rank;
  using value_type = T;
  using Index = std::array<std::size_t, Rank>;

  /// An array of `extents` distributed as `dims` (one entry per dimension) over `range`.
  ///
  /// Throws InvalidArgument, allocating nothing, when dims.size() != Rank, an extent is 0, the
  /// size overflows or the range is empty; std::bad_alloc when the kernel has no room;
  /// TopologyError when the owners' threads cannot be bound to touch their pages. When the
  /// kernel refuses membind (e.g. mbind forbidden in a container) the owners' threads place the
  /// pages by first touch instead, and placed_by() says so.
  DistributedArray(const Locations& locations, const Index& extents, const std::vector<DimDistribution>& dims,
                   const LocationRange& range, ArrayOptions options = {})
      : distribution_(locations, std::vector<std::size_t>(extents.begin(), extents.end()), dims, range),
        extents_(extents),
        storage_(checked_bytes(distribution_.size())) {
    placed_by_ = detail::place_pages(distribution_, storage_.bytes(), sizeof(T), options.placement, page_owner_);
  }
  /// Distributed over every location (Jin et al.'s default without a location clause).
  DistributedArray(const Locations& locations, const Index& extents, const std::vector<DimDistribution>& dims,
                   ArrayOptions options = {})
      : DistributedArray(locations, extents, dims, locations.everywhere(), options) {}

  /// The element at `index...` (global indexes; not bounds-checked, as a plain array).
  template <std::integral... I>
    requires(sizeof...(I) == Rank)
  [[nodiscard]] T& operator()(I... index) noexcept {
    return data()[offset(Index{static_cast<std::size_t>(index)...})];
  }
  template <std::integral... I>
    requires(sizeof...(I) == Rank)
  [[nodiscard]] const T& operator()(I... index) const noexcept {
    return data()[offset(Index{static_cast<std::size_t>(index)...})];
  }
  [[nodiscard]] T& operator[](const Index& index) noexcept { return data()[offset(index)]; }
  [[nodiscard]] const T& operator[](const Index& index) const noexcept { return data()[offset(index)]; }

  /// The location owning element `index` (Jin et al.'s onloc target). Throws InvalidArgument when
  /// the index lies outside the array.
  [[nodiscard]] int where(const Index& index) const { return distribution_.where(index); }
  template <std::integral... I>
    requires(sizeof...(I) == Rank)
  [[nodiscard]] int where(I... index) const {
    return where(Index{static_cast<std::size_t>(index)...});
  }

  /// Row-major offset of `index`.
  [[nodiscard]] std::size_t offset(const Index& index) const noexcept {
    std::size_t out = 0;
    for (std::size_t d = 0; d < Rank; ++d) out = out * extents_[d] + index[d];
    return out;
  }
  [[nodiscard]] T* data() noexcept { return reinterpret_cast<T*>(storage_.data()); }
  [[nodiscard]] const T* data() const noexcept { return reinterpret_cast<const T*>(storage_.data()); }
  [[nodiscard]] std::span<T> span() noexcept { return {data(), size()}; }
  [[nodiscard]] std::span<const T> span() const noexcept { return {data(), size()}; }
  [[nodiscard]] std::size_t size() const noexcept { return distribution_.size(); }
  [[nodiscard]] const Index& extents() const noexcept { return extents_; }
  [[nodiscard]] const ArrayDistribution& distribution() const noexcept { return distribution_; }
  [[nodiscard]] const Locations& locations() const noexcept { return distribution_.locations(); }
  [[nodiscard]] const LocationRange& range() const noexcept { return distribution_.range(); }
  /// How the pages were placed.
  [[nodiscard]] PlacedBy placed_by() const noexcept { return placed_by_; }
  /// The location each page was meant for (page p holds bytes [p * page_bytes(), ...) of data()).
  [[nodiscard]] const std::vector<int>& page_owners() const noexcept { return page_owner_; }
  /// Asks the kernel where every page is: pages per NUMA node and the share on its owner's
  /// nodes. Throws TopologyError when the topology is not this machine or the kernel refuses.
  [[nodiscard]] PagePlacement placement() const {
    return detail::array_placement(distribution_, {storage_.data(), storage_.size()}, page_owner_);
  }

 private:
  static std::size_t checked_bytes(std::size_t elements) {
    if (elements > static_cast<std::size_t>(-1) / sizeof(T))
      throw InvalidArgument("distributed array of " + std::to_string(elements) + " elements is too large");
    return elements * sizeof(T);
  }
  ArrayDistribution distribution_;
  Index extents_;
  PageBuffer storage_;
  std::vector<int> page_owner_;
  PlacedBy placed_by_ = PlacedBy::unplaced;
};

}  // namespace hympi::locality

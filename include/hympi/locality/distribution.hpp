#pragma once
// How an array's index space is spread over a range of locations (Jin et al., "High performance computing using
// MPI and OpenMP on multi-core parallel systems", §5.2.1: `#pragma omp distribute(BLOCK, *: A) location(m:n)`),
// independent of the element type.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hympi/core/enum_names.hpp"
#include "hympi/locality/locations.hpp"

namespace hympi::locality {

/// How one dimension of an array is spread: in blocks over locations, or not at all (Jin et al.'s `*`).
enum class DimDistribution { block, none };

contract::DimDistributionNames<DimDistribution> enum_names(DimDistribution);

/// Parses a comma-separated list such as "block,*" or "block,none" (one entry per dimension,
/// blanks allowed); throws InvalidArgument naming the bad entry.
std::vector<DimDistribution> parse_dim_distributions(std::string_view text);

/// "block,none", the list as parse_dim_distributions reads it.
std::string to_string(const std::vector<DimDistribution>& dims);

/// The split of an array's row-major index space (last index fastest) over a location range.
///
/// The range's slots form a grid with one axis per `block` dimension: the slot count is factored
/// as evenly as possible, larger factors first (6 slots over two block dimensions: 3 x 2); a
/// `none` dimension has one part. Along each block dimension the indexes are block-distributed
/// (block_begin: 10 over 4 parts is 3, 3, 2, 2). Grid coordinates give the slot row-major, the
/// slot gives the location modulo nlocs. Without any block dimension the whole array belongs to
/// the range's first location. Holds a pointer to `locations`, which must outlive it.
class ArrayDistribution {
 public:
  /// Throws InvalidArgument, before anything is allocated, when `dims` has another length than
  /// `extents` (the array's rank), an extent is 0, the element count overflows, or the range is
  /// empty.
  ArrayDistribution(const Locations& locations, std::vector<std::size_t> extents, std::vector<DimDistribution> dims,
                    const LocationRange& range);

  [[nodiscard]] std::size_t rank() const noexcept { return extents_.size(); }
  [[nodiscard]] const std::vector<std::size_t>& extents() const noexcept { return extents_; }
  [[nodiscard]] const std::vector<DimDistribution>& dims() const noexcept { return dims_; }
  /// Parts per dimension (1 for `none`); their product is the range's slot count.
  [[nodiscard]] const std::vector<long long>& grid() const noexcept { return grid_; }
  [[nodiscard]] const LocationRange& range() const noexcept { return range_; }
  [[nodiscard]] const Locations& locations() const noexcept { return *locations_; }
  /// Elements in the array.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// The location owning the element at `index` (one entry per dimension). Throws InvalidArgument
  /// when the index has the wrong rank or lies outside the array.
  [[nodiscard]] int where(std::span<const std::size_t> index) const;
  /// The location owning the element at row-major offset `linear` (< size(); not checked).
  [[nodiscard]] int where_linear(std::size_t linear) const noexcept;

  /// Calls run(first, count, location) for the maximal runs of consecutive elements (row-major)
  /// with one owner, in address order.
  void for_each_run(const std::function<void(std::size_t first, std::size_t count, int location)>& run) const;

  /// The location each page of the array is attributed to, the array starting at a page boundary:
  /// the owner of most of the page's bytes (ties: the owner of the lower address), since a page
  /// lives on one node. Throws InvalidArgument when element_bytes or page_bytes is 0.
  [[nodiscard]] std::vector<int> page_owners(std::size_t element_bytes, std::size_t page_bytes) const;

 private:
  const Locations* locations_;
  std::vector<std::size_t> extents_;
  std::vector<DimDistribution> dims_;
  LocationRange range_;
  std::vector<long long> grid_;
  std::vector<long long> slot_stride_;  ///< slot = sum(coordinate[d] * slot_stride_[d])
  std::size_t size_ = 1;
};

/// `slots` factored into `axes` factors as evenly as possible, non-increasing (MPI_Dims_create's
/// rule). Needs slots >= 1 and axes >= 1 (not checked).
[[nodiscard]] std::vector<long long> balanced_grid(long long slots, std::size_t axes);

}  // namespace hympi::locality

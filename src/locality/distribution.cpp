#include "hympi/locality/distribution.hpp"

#include <algorithm>
#include <limits>

#include "hympi/core/error.hpp"

namespace hympi::locality {

std::vector<DimDistribution> parse_dim_distributions(std::string_view text) {
  std::vector<DimDistribution> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::string_view item = text.substr(start, comma - start);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (item.empty()) throw InvalidArgument("empty entry in distribution '" + std::string(text) + "'");
    out.push_back(parse_enum<DimDistribution>(item));
    if (comma == text.size()) return out;
    start = comma + 1;
  }
}

std::string to_string(const std::vector<DimDistribution>& dims) {
  std::string out;
  for (std::size_t i = 0; i < dims.size(); ++i) out += (i > 0 ? "," : "") + hympi::to_string(dims[i]);
  return out;
}

std::vector<long long> balanced_grid(long long slots, std::size_t axes) {
  std::vector<long long> primes;
  for (long long p = 2; p * p <= slots; ++p)
    while (slots % p == 0) {
      primes.push_back(p);
      slots /= p;
    }
  if (slots > 1) primes.push_back(slots);
  std::vector<long long> grid(axes, 1);
  // Largest primes first, each onto the axis with the smallest product so far.
  for (auto it = primes.rbegin(); it != primes.rend(); ++it) *std::min_element(grid.begin(), grid.end()) *= *it;
  std::sort(grid.begin(), grid.end(), std::greater<>());
  return grid;
}

ArrayDistribution::ArrayDistribution(const Locations& locations, std::vector<std::size_t> extents,
                                     std::vector<DimDistribution> dims, const LocationRange& range)
    : locations_(&locations), extents_(std::move(extents)), dims_(std::move(dims)), range_(range) {
  if (dims_.size() != extents_.size())
    throw InvalidArgument("distribution '" + locality::to_string(dims_) + "' has " + std::to_string(dims_.size()) +
                          " entries but the array has rank " + std::to_string(extents_.size()));
  if (extents_.empty()) throw InvalidArgument("a distributed array needs at least one dimension");
  check_range(range_);
  for (std::size_t d = 0; d < extents_.size(); ++d) {
    if (extents_[d] == 0) throw InvalidArgument("extent of dimension " + std::to_string(d) + " is 0");
    if (size_ > std::numeric_limits<std::size_t>::max() / extents_[d])
      throw InvalidArgument("array of " + std::to_string(extents_.size()) + " dimensions has too many elements");
    size_ *= extents_[d];
  }
  const std::size_t blocks = static_cast<std::size_t>(std::count(dims_.begin(), dims_.end(), DimDistribution::block));
  const std::vector<long long> factors = blocks > 0 ? balanced_grid(range_.count(), blocks) : std::vector<long long>{};
  grid_.assign(rank(), 1);
  for (std::size_t d = 0, f = 0; d < rank(); ++d)
    if (dims_[d] == DimDistribution::block) grid_[d] = factors[f++];
  slot_stride_.assign(rank(), 0);
  long long stride = 1;
  for (std::size_t d = rank(); d-- > 0;) {
    slot_stride_[d] = stride;
    stride *= grid_[d];
  }
}

int ArrayDistribution::where(std::span<const std::size_t> index) const {
  if (index.size() != rank())
    throw InvalidArgument("index of rank " + std::to_string(index.size()) + " for an array of rank " +
                          std::to_string(rank()));
  long long slot = 0;
  for (std::size_t d = 0; d < rank(); ++d) {
    if (index[d] >= extents_[d])
      throw InvalidArgument("index " + std::to_string(index[d]) + " of dimension " + std::to_string(d) +
                            " is outside 0.." + std::to_string(extents_[d] - 1));
    slot += block_owner(static_cast<long long>(extents_[d]), grid_[d], static_cast<long long>(index[d])) *
            slot_stride_[d];
  }
  return locations_->location_of_slot(range_, slot);
}

int ArrayDistribution::where_linear(std::size_t linear) const noexcept {
  long long slot = 0;
  for (std::size_t d = rank(); d-- > 0;) {
    const std::size_t i = linear % extents_[d];
    linear /= extents_[d];
    slot += block_owner(static_cast<long long>(extents_[d]), grid_[d], static_cast<long long>(i)) * slot_stride_[d];
  }
  return locations_->location_of_slot(range_, slot);
}

void ArrayDistribution::for_each_run(
    const std::function<void(std::size_t first, std::size_t count, int location)>& run) const {
  // Dimensions after the last block one are not distributed: each block of that dimension is
  // one contiguous chunk of `inner` elements per index of the dimensions before it.
  std::size_t last_block = rank();
  for (std::size_t d = 0; d < rank(); ++d)
    if (dims_[d] == DimDistribution::block) last_block = d;
  if (last_block == rank()) {
    run(0, size_, locations_->location_of_slot(range_, 0));
    return;
  }
  std::size_t inner = 1;
  for (std::size_t d = last_block + 1; d < rank(); ++d) inner *= extents_[d];
  std::size_t outer = 1;
  for (std::size_t d = 0; d < last_block; ++d) outer *= extents_[d];
  const auto n = static_cast<long long>(extents_[last_block]);
  const long long parts = grid_[last_block];
  std::vector<std::size_t> index(last_block, 0);  // odometer over the outer dimensions
  std::size_t pending_first = 0, pending_count = 0;
  int pending_location = -1;
  const auto emit = [&](std::size_t first, std::size_t count, int location) {
    if (count == 0) return;
    if (location == pending_location && pending_first + pending_count == first) {
      pending_count += count;
      return;
    }
    if (pending_count > 0) run(pending_first, pending_count, pending_location);
    pending_first = first;
    pending_count = count;
    pending_location = location;
  };
  for (std::size_t o = 0; o < outer; ++o) {
    long long base_slot = 0;
    for (std::size_t d = 0; d < last_block; ++d)
      base_slot += block_owner(static_cast<long long>(extents_[d]), grid_[d], static_cast<long long>(index[d])) *
                   slot_stride_[d];
    const std::size_t row = o * static_cast<std::size_t>(n) * inner;
    for (long long p = 0; p < parts; ++p) {
      const auto begin = static_cast<std::size_t>(block_begin(n, parts, p));
      const auto end = static_cast<std::size_t>(block_begin(n, parts, p + 1));
      emit(row + begin * inner, (end - begin) * inner,
           locations_->location_of_slot(range_, base_slot + p * slot_stride_[last_block]));
    }
    for (std::size_t d = last_block; d-- > 0;) {
      if (++index[d] < extents_[d]) break;
      index[d] = 0;
    }
  }
  if (pending_count > 0) run(pending_first, pending_count, pending_location);
}

std::vector<int> ArrayDistribution::page_owners(std::size_t element_bytes, std::size_t page_bytes) const {
  if (element_bytes == 0 || page_bytes == 0) throw InvalidArgument("page owners need element and page sizes > 0");
  const std::size_t total = size_ * element_bytes;
  std::vector<int> owners((total + page_bytes - 1) / page_bytes, -1);
  // Bytes of the current page per location, and the order locations appeared in it (for ties).
  std::vector<std::size_t> bytes_in_page(static_cast<std::size_t>(locations_->size()), 0);
  std::vector<int> seen;
  std::size_t page = 0;
  const auto close_page = [&] {
    int best = -1;
    std::size_t best_bytes = 0;
    for (int l : seen) {
      if (bytes_in_page[static_cast<std::size_t>(l)] > best_bytes) {
        best = l;
        best_bytes = bytes_in_page[static_cast<std::size_t>(l)];
      }
      bytes_in_page[static_cast<std::size_t>(l)] = 0;
    }
    seen.clear();
    owners[page++] = best;
  };
  for_each_run([&](std::size_t first, std::size_t count, int location) {
    std::size_t b = first * element_bytes;
    const std::size_t e = (first + count) * element_bytes;
    while (b < e) {
      const std::size_t page_end = (page + 1) * page_bytes;
      const std::size_t take = std::min(e, page_end) - b;
      std::size_t& slot = bytes_in_page[static_cast<std::size_t>(location)];
      if (slot == 0) seen.push_back(location);
      slot += take;
      b += take;
      if (b == page_end) close_page();
    }
  });
  if (page < owners.size()) close_page();  // the last, partly filled page
  return owners;
}

}  // namespace hympi::locality

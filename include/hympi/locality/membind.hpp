#pragma once
// Memory policies (`--membind local|interleave|location|none`) applied with hwloc, and what the
// kernel says about where a buffer's pages really are.
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "hympi/core/enum_names.hpp"
#include "hympi/core/topology.hpp"
#include "hympi/locality/locations.hpp"

namespace hympi::locality {

/// Where pages of an allocation go.
///
/// local: bound (HWLOC_MEMBIND_BIND) to the NUMA node of the PU the calling thread runs on;
/// interleave: spread page by page over every NUMA node (HWLOC_MEMBIND_INTERLEAVE);
/// location: bound to a location's nodeset; none: nothing is set, the kernel's default policy
/// places each page on the node of the thread that first touches it.
enum class MemoryPolicy { local, interleave, location, none };

contract::MemoryPolicyNames<MemoryPolicy> enum_names(MemoryPolicy);

/// Parses "local|interleave|location|none"; throws InvalidArgument naming the value otherwise.
inline MemoryPolicy parse_memory_policy(std::string_view text) { return parse_enum<MemoryPolicy>(text); }

/// The NUMA nodes `policy` binds to, from the calling thread for local, `where` for location
/// (nullptr for none). Throws InvalidArgument when location has no `where`, TopologyError when
/// the topology is not this machine (local) or hwloc cannot tell where the thread runs.
Bitmap policy_nodeset(const Topology& topology, MemoryPolicy policy, const Location* where);

/// Applies `policy` to the pages of `area` (hwloc_set_area_membind, by nodeset). Pages already
/// touched stay where they are (no migration): call it before the first touch. `area` is widened
/// to whole pages, as the kernel binds pages. none does nothing.
///
/// Throws InvalidArgument, with one line naming the policy, nodes and the kernel's reason, when
/// the kernel refuses (a node that does not exist, mbind forbidden in a container: EPERM/ENOSYS)
/// or location comes without `where`; TopologyError when the topology is not this machine.
void bind_memory(const Topology& topology, std::span<std::byte> area, MemoryPolicy policy,
                 const Location* where = nullptr);

/// Sets `policy` as the default of every allocation that the calling thread and each thread of
/// the next OpenMP team (omp_get_max_threads() threads) touch from now on (hwloc_set_membind,
/// HWLOC_MEMBIND_THREAD: Linux keeps memory policies per thread, and threads created later
/// inherit their creator's). For local, each thread binds to the node it runs on (bind threads
/// first). This is what the app frame calls for `--membind` after binding threads and before the
/// app allocates; none leaves every thread's policy alone. Call outside a parallel region.
/// Throws as bind_memory().
void set_memory_policy(const Topology& topology, MemoryPolicy policy, const Location* where = nullptr);

/// Where the kernel put a buffer's pages (hwloc_get_area_memlocation per page, by nodeset).
struct PagePlacement {
  std::size_t page_bytes = 0;  ///< the granularity the kernel was asked at (the base page size)
  std::size_t pages = 0;       ///< pages of the buffer
  std::size_t absent = 0;      ///< pages the kernel has no frame for yet (never touched)
  std::map<int, std::size_t> per_node;  ///< NUMA node (OS index) -> pages there
  std::size_t on_intended = 0;  ///< pages on one of the nodes they were meant for
  bool has_intent = false;      ///< false: nothing was meant, on_intended is 0
  /// on_intended / pages (0 for an empty buffer or without intent).
  [[nodiscard]] double share_on_intended() const noexcept;
  /// {"page_bytes", "pages", "absent", "per_node": {"0": n, ...}, "on_intended", "share_on_intended"}
  /// (the last two only with intent): the HYMPI_RESULT summary.
  [[nodiscard]] nlohmann::json to_json() const;
  /// One line, e.g. "4096 pages of 4096 B: node 0 4096 (100.0 % where intended)".
  [[nodiscard]] std::string to_string() const;
  /// Adds the counts of `other` (another buffer's pages) to these, e.g. to sum the arrays of a field.
  /// The sum has an intent when every summed part with pages had one. Throws InvalidArgument when
  /// the page sizes differ (both non-empty).
  void merge(const PagePlacement& other);
};

/// Asks the kernel where each page of `area` is. `intended`: the nodes every page was meant for
/// (nullptr: no intent). Costs about a microsecond per page (one move_pages query each). Throws
/// TopologyError when the topology is not this machine or the kernel refuses the query.
PagePlacement page_placement(const Topology& topology, std::span<const std::byte> area,
                             const Bitmap* intended = nullptr);

/// page_placement() with a different intent per page: `intended[p]` for page p of `area` (the
/// pages of `area` widened to whole pages). Throws InvalidArgument when the sizes differ, else as
/// page_placement().
PagePlacement page_placement(const Topology& topology, std::span<const std::byte> area,
                             std::span<const Bitmap* const> intended);

/// The base page size of this machine (sysconf(_SC_PAGESIZE)).
std::size_t page_bytes() noexcept;

/// A page-aligned anonymous mapping (mmap), untouched, released by the destructor.
class PageBuffer {
 public:
  PageBuffer() = default;
  /// `bytes` (> 0) of fresh zero pages. Throws std::bad_alloc when the kernel has no room,
  /// InvalidArgument for 0 bytes.
  explicit PageBuffer(std::size_t bytes);
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  PageBuffer(PageBuffer&& other) noexcept;
  PageBuffer& operator=(PageBuffer&& other) noexcept;
  ~PageBuffer();
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }
  [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {data_, bytes_}; }

 private:
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// `bytes` of pages under `policy` (see bind_memory), not touched yet. Nothing stays allocated
/// when it throws; throws as PageBuffer and bind_memory do.
PageBuffer allocate_with_policy(const Topology& topology, std::size_t bytes, MemoryPolicy policy,
                                const Location* where = nullptr);

}  // namespace hympi::locality

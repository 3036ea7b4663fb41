#pragma once
// The node's hierarchy as hwloc sees it: packages, NUMA domains, caches, cores, PUs.
#include <hwloc.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "hympi/core/owned.hpp"

namespace hympi {

/// Owns an hwloc bitmap (a cpuset).
class Bitmap {
 public:
  /// An empty set.
  Bitmap();
  /// A copy of `set` (hwloc keeps ownership of the original).
  explicit Bitmap(hwloc_const_bitmap_t set);
  Bitmap(const Bitmap& other);
  Bitmap& operator=(const Bitmap& other);
  Bitmap(Bitmap&& other) noexcept = default;
  Bitmap& operator=(Bitmap&& other) noexcept = default;
  ~Bitmap() = default;

  [[nodiscard]] hwloc_bitmap_t get() const noexcept { return set_.get(); }
  /// Number of indexes set.
  [[nodiscard]] int weight() const;
  [[nodiscard]] bool contains(unsigned index) const;
  [[nodiscard]] bool includes(const Bitmap& other) const;
  [[nodiscard]] bool intersects(const Bitmap& other) const;
  [[nodiscard]] bool operator==(const Bitmap& other) const;
  /// Adds every index of `other`.
  void add(const Bitmap& other);
  /// hwloc list syntax, e.g. "0-3,8".
  [[nodiscard]] std::string to_list() const;

 private:
  Owned<hwloc_bitmap_t, hwloc_bitmap_free> set_;
};

/// Size and count of one cache level.
struct CacheInfo {
  int level = 0;
  std::uint64_t size_bytes = 0;
  int count = 0;
};

/// Where one PU sits in the hierarchy (logical indexes, as lstopo numbers them).
struct PuLocation {
  int pu_os = -1;
  int pu = -1;
  int core = -1;
  int numa = -1;
  int package = -1;
};

/// Loaded hwloc topology (this machine, an XML file or a synthetic description).
///
/// Throws TopologyError when hwloc cannot load or parse the source.
class Topology {
 public:
  /// An hwloc topology that is destroyed with its owner.
  using Handle = Owned<hwloc_topology_t, hwloc_topology_destroy>;

  /// The machine this process runs on.
  static Topology this_machine();
  /// A topology recorded with `lstopo file.xml`.
  static Topology from_xml_file(const std::string& path);
  /// A synthetic description such as "pack:2 numa:2 core:4 pu:2"; throws TopologyError for an invalid one or one
  /// of more PUs than contract.toml's [node_pus] allows.
  static Topology from_synthetic(const std::string& description);
  /// "this", "synthetic:<description>" or the path of an XML file.
  static Topology from_spec(const std::string& spec);
  /// A topology from hwloc XML text (what to_xml() returns, e.g. received from another node).
  static Topology from_xml_text(const std::string& xml);

  [[nodiscard]] hwloc_topology_t get() const noexcept { return topo_.get(); }
  /// True when this topology describes the running machine, so binding can be applied.
  [[nodiscard]] bool is_this_system() const;
  [[nodiscard]] int packages() const;
  [[nodiscard]] int numa_nodes() const;
  [[nodiscard]] int cores() const;
  [[nodiscard]] int pus() const;
  /// Data/unified caches from L1 up, one entry per level.
  [[nodiscard]] std::vector<CacheInfo> caches() const;
  /// Total bytes of the last-level caches (STREAM sizes its arrays from this).
  [[nodiscard]] std::uint64_t last_level_cache_bytes() const;
  /// The PUs of core `index` (logical); throws InvalidArgument when out of range.
  [[nodiscard]] Bitmap core_set(int index) const;
  [[nodiscard]] Bitmap numa_set(int index) const;
  [[nodiscard]] Bitmap package_set(int index) const;
  /// Number of L3 caches (unified or data); 0 when hwloc reports none (some VMs, most synthetic topologies).
  [[nodiscard]] int l3_caches() const;
  /// The PUs under L3 cache `index` (logical); throws InvalidArgument when out of range.
  [[nodiscard]] Bitmap l3_set(int index) const;
  /// The NUMA node set (OS indexes, as the kernel numbers nodes) of NUMA node `index` (logical);
  /// throws InvalidArgument when out of range.
  [[nodiscard]] Bitmap numa_nodeset(int index) const;
  /// The NUMA nodes (OS indexes) whose PUs intersect `cpuset` (hwloc_cpuset_to_nodeset): where memory
  /// is local to threads bound to `cpuset`. Empty when `cpuset` holds none of this topology's PUs.
  [[nodiscard]] Bitmap nodeset_of(const Bitmap& cpuset) const;
  /// The whole machine's PUs.
  [[nodiscard]] Bitmap machine_set() const;
  /// Every NUMA node of the machine (OS indexes).
  [[nodiscard]] Bitmap machine_nodeset() const;
  /// Package (logical index) of core `index`.
  [[nodiscard]] int package_of_core(int index) const;
  /// Locates a PU given its OS index; throws TopologyError if there is no such PU.
  [[nodiscard]] PuLocation locate_pu(unsigned os_index) const;
  /// Counts and caches as JSON (what `hympi info` prints).
  [[nodiscard]] nlohmann::json summary() const;
  /// Short stable hash of the summary, to tell machines apart in results.
  [[nodiscard]] std::string hash() const;
  /// The topology exported as hwloc XML.
  [[nodiscard]] std::string to_xml() const;

 private:
  explicit Topology(Handle topo) noexcept : topo_(std::move(topo)) {}
  [[nodiscard]] Bitmap set_of(hwloc_obj_type_t type, int index, const char* what) const;
  Handle topo_;
};

}  // namespace hympi

#pragma once
// Internal to the app frame: --membind applied to the rank's threads, and the page placement of the
// arrays apps observe, summed over ranks for HYMPI_RESULT.
#include <mpi.h>

#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "hympi/core/affinity.hpp"
#include "hympi/core/metrics.hpp"
#include "hympi/core/topology.hpp"
#include "hympi/locality/membind.hpp"

namespace hympi {

/// Sets `policy` for the calling thread and the threads of its next OpenMP team (after binding, before the
/// app allocates) and returns the NUMA nodes this rank's pages are meant to land on. `location` binds to
/// the NUMA domain of the rank's binding. Throws InvalidArgument when the kernel refuses the policy.
Bitmap apply_memory_policy(const Topology& topology, locality::MemoryPolicy policy, const BindingPlan& plan);

/// The frame's MemoryProbe: where the pages of every observed array are (hwloc), summed per array name.
class PagePlacementProbe final : public MemoryProbe {
 public:
  /// `intended`: the nodes pages are meant for (apply_memory_policy's answer).
  PagePlacementProbe(const Topology& topology, Bitmap intended);
  void observe(const std::string& name, std::span<const std::byte> area) override;
  /// Every rank's observations summed per array, on rank 0 of `comm` (null elsewhere and when no rank
  /// observed anything): {"u": {"pages", "absent", "per_node": {"0": n}, "on_intended", "share_on_intended"}}.
  /// Collective.
  [[nodiscard]] nlohmann::json gather(MPI_Comm comm) const;

 private:
  const Topology& topology_;
  Bitmap intended_;
  nlohmann::json observed_ = nlohmann::json::object();
};

}  // namespace hympi

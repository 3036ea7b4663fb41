#include "memory.hpp"

#include "hympi/core/error.hpp"
#include "hympi/locality/locations.hpp"

namespace hympi {

namespace {

/// Adds the counts of summary `from` into `into` (both in the shape observed_ keeps).
void add_counts(nlohmann::json& into, const nlohmann::json& from) {
  if (!into.is_object()) into = nlohmann::json::object();
  for (const char* key : {"pages", "absent", "on_intended"})
    into[key] = into.value(key, std::size_t{0}) + from.value(key, std::size_t{0});
  nlohmann::json& nodes = into["per_node"];
  if (!nodes.is_object()) nodes = nlohmann::json::object();
  const auto per_node = from.find("per_node");
  if (per_node == from.end()) return;
  for (const auto& [node, pages] : per_node->items())
    nodes[node] = nodes.value(node, std::size_t{0}) + pages.get<std::size_t>();
}

}  // namespace

Bitmap apply_memory_policy(const Topology& topology, locality::MemoryPolicy policy, const BindingPlan& plan) {
  using locality::MemoryPolicy;
  if (policy == MemoryPolicy::location) {
    // The rank's location: the NUMA domain its binding lies in (the first, should it span several).
    const auto locations = locality::Locations::by_level(topology, locality::LocationLevel::numa, &plan.rank_set);
    locality::set_memory_policy(topology, policy, &locations.at(0));
    return locations.at(0).nodeset;
  }
  locality::set_memory_policy(topology, policy);
  return policy == MemoryPolicy::interleave ? topology.machine_nodeset() : topology.nodeset_of(plan.rank_set);
}

PagePlacementProbe::PagePlacementProbe(const Topology& topology, Bitmap intended)
    : topology_(topology), intended_(std::move(intended)) {}

void PagePlacementProbe::observe(const std::string& name, std::span<const std::byte> area) {
  const locality::PagePlacement placement = locality::page_placement(topology_, area, &intended_);
  add_counts(observed_[name], placement.to_json());
}

nlohmann::json PagePlacementProbe::gather(MPI_Comm comm) const {
  int rank = 0, size = 1;
  HYMPI_MPI(MPI_Comm_rank(comm, &rank));
  HYMPI_MPI(MPI_Comm_size(comm, &size));
  const std::string mine = observed_.dump();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(rank == 0 ? std::size_t(size) : 0), offsets(lengths.size());
  HYMPI_MPI(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm));
  std::string all;
  if (rank == 0) {
    int total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = total;
      total += lengths[r];
    }
    all.resize(std::size_t(total));
  }
  HYMPI_MPI(MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, comm));
  if (rank != 0) return nullptr;
  nlohmann::json summed = nlohmann::json::object();
  for (std::size_t r = 0; r < lengths.size(); ++r)
  {
    const nlohmann::json observed = nlohmann::json::parse(all.substr(std::size_t(offsets[r]), std::size_t(lengths[r])));
    for (const auto& [name, counts] : observed.items()) add_counts(summed[name], counts);
  }
  if (summed.empty()) return nullptr;
  for (auto& [name, counts] : summed.items()) {
    const double pages = counts["pages"].get<double>();
    counts["share_on_intended"] = pages > 0 ? counts["on_intended"].get<double>() / pages : 0.0;
  }
  return summed;
}

}  // namespace hympi

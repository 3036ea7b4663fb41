#pragma once
// MPI + OpenMP start-up: thread level, node-local communicators, virtual nodes.
#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "hympi/core/comm.hpp"
#include "hympi/core/enum_names.hpp"

namespace hympi {

/// MPI thread support levels, in increasing order.
enum class ThreadLevel { single, funneled, serialized, multiple };

contract::ThreadLevelNames<ThreadLevel> enum_names(ThreadLevel);
/// Parses "single|funneled|serialized|multiple"; throws InvalidArgument otherwise.
inline ThreadLevel parse_thread_level(const std::string& text) { return parse_enum<ThreadLevel>(text); }

/// Threads per rank when nothing fixes the count: max(1, cores_per_node / ranks_per_node), so the
/// ranks of a node together start one thread per core. Throws InvalidArgument when either is < 1.
int default_threads(int cores_per_node, int ranks_per_node);

/// default_threads() for `machine_ranks` ranks on a machine of `machine_cores` cores split into
/// min(virtual_nodes, machine_ranks) contiguous virtual nodes, as Environment splits it: each node
/// gets machine_cores / nodes cores and at most ceil(machine_ranks / nodes) ranks.
/// Throws InvalidArgument when a count is < 1.
int machine_default_threads(int machine_cores, int machine_ranks, int virtual_nodes);

/// True when OMP_NUM_THREADS is set to something non-empty (the user fixed the thread count).
bool omp_threads_explicit();

/// Refuses (InvalidArgument naming the variable and its value) what libgomp would only warn about and then ignore,
/// running a layout other than the one asked for: an OMP_NUM_THREADS that is not a list of integers >= 1, an
/// OMP_PROC_BIND other than true, false or a list of primary, master, close and spread, an OMP_PLACES that leaves the
/// runtime no place; and a first OMP_NUM_THREADS past contract.toml's [node_pus] (the CLI's limit on ranks x threads
/// of a node), where libgomp failed to create its threads or crashed (99999). Unset or empty variables are the
/// runtime's defaults.
void check_openmp_environment();

/// Options of Environment; defaults suit loop-level OpenMP with MPI calls outside parallel regions.
struct EnvironmentOptions {
  ThreadLevel thread_level = ThreadLevel::funneled;
  /// Pretend each physical node is this many nodes (0: read HYMPI_VIRTUAL_NODES, default 1).
  int virtual_nodes = 0;
};

/// Which ranks of a communicator share a machine and a (possibly virtual) node.
///
/// Machines are the shared-memory domains of `comm` (MPI_COMM_TYPE_SHARED) unless `machine` names
/// them (a sub-communicator of `comm` holding this rank and its machine mates: tests pretend
/// several machines with MPI_Comm_split). Each machine's ranks are cut into min(virtual_nodes,
/// machine size) contiguous blocks, its nodes. Collective over `comm`; throws MpiError when an
/// MPI call fails and InvalidArgument when virtual_nodes < 1.
class NodeMap {
 public:
  NodeMap(MPI_Comm comm, int virtual_nodes, MPI_Comm machine = MPI_COMM_NULL);

  /// Ranks of this node.
  [[nodiscard]] const Comm& node() const noexcept { return node_; }
  /// Ranks sharing this machine, regardless of virtual nodes.
  [[nodiscard]] const Comm& machine() const noexcept { return machine_; }
  /// Index of this node, 0 .. num_nodes()-1, in order of the nodes' lowest rank in `comm`.
  [[nodiscard]] int node_id() const noexcept { return node_id_; }
  [[nodiscard]] int num_nodes() const noexcept { return num_nodes_; }
  [[nodiscard]] int node_rank() const noexcept { return node_rank_; }
  [[nodiscard]] int node_size() const noexcept { return node_size_; }
  [[nodiscard]] int machine_rank() const noexcept { return machine_rank_; }
  [[nodiscard]] int machine_size() const noexcept { return machine_size_; }
  /// Index of this node among its machine's nodes, 0 .. nodes_on_machine()-1.
  [[nodiscard]] int node_on_machine() const noexcept { return node_on_machine_; }
  [[nodiscard]] int nodes_on_machine() const noexcept { return nodes_on_machine_; }

 private:
  Comm machine_, node_;
  int machine_rank_ = 0, machine_size_ = 1;
  int node_rank_ = 0, node_size_ = 1, node_id_ = 0, num_nodes_ = 1;
  int node_on_machine_ = 0, nodes_on_machine_ = 1;
};

/// Initialises MPI (and finalises it on destruction), chooses the OpenMP thread count when
/// OMP_NUM_THREADS is unset, and describes where this process runs.
///
/// Throws MpiError if MPI cannot provide the requested thread level, InvalidArgument if the
/// virtual node count is not a positive integer, TopologyError if hwloc cannot count the cores
/// for the default thread count.
class Environment {
 public:
  /// Calls MPI_Init_thread; sets MPI_ERRORS_RETURN on MPI_COMM_WORLD so HYMPI_MPI sees errors.
  Environment(int& argc, char**& argv, const EnvironmentOptions& options = {});
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  ~Environment();

  /// MPI_COMM_WORLD.
  [[nodiscard]] MPI_Comm world() const noexcept { return MPI_COMM_WORLD; }
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  /// Ranks of this (possibly virtual) node.
  [[nodiscard]] const Comm& node() const noexcept { return nodes_->node(); }
  /// Ranks sharing this physical machine (shared-memory domain), regardless of virtual nodes.
  [[nodiscard]] const Comm& machine() const noexcept { return nodes_->machine(); }
  /// Index of this (virtual) node, 0 .. num_nodes()-1, in order of the nodes' lowest world rank.
  [[nodiscard]] int node_id() const noexcept { return nodes_->node_id(); }
  [[nodiscard]] int num_nodes() const noexcept { return nodes_->num_nodes(); }
  [[nodiscard]] int node_rank() const noexcept { return nodes_->node_rank(); }
  [[nodiscard]] int node_size() const noexcept { return nodes_->node_size(); }
  /// Rank within the physical machine: what affinity uses to pick cores.
  [[nodiscard]] int machine_rank() const noexcept { return nodes_->machine_rank(); }
  [[nodiscard]] int machine_size() const noexcept { return nodes_->machine_size(); }
  /// OpenMP threads per rank (omp_get_max_threads(), after the default below was applied).
  [[nodiscard]] int threads() const noexcept { return threads_; }
  /// True when OMP_NUM_THREADS was unset, so the constructor chose machine_default_threads() (the
  /// minimum over all machines, so every rank runs the same count) and called omp_set_num_threads.
  [[nodiscard]] bool threads_default() const noexcept { return threads_default_; }
  [[nodiscard]] ThreadLevel thread_level() const noexcept { return provided_; }
  /// Host name, with "/vnN" appended when virtual nodes split the machine.
  [[nodiscard]] const std::string& host() const noexcept { return host_; }
  /// First line of MPI_Get_library_version.
  [[nodiscard]] const std::string& mpi_library() const noexcept { return mpi_library_; }
  /// Distinct host names over all ranks, in node order (collective).
  [[nodiscard]] std::vector<std::string> hosts() const;
  [[nodiscard]] int virtual_nodes() const noexcept { return virtual_nodes_; }

 private:
  int rank_ = 0, size_ = 1;
  std::optional<NodeMap> nodes_;  // engaged from construction until MPI_Finalize
  int threads_ = 1;
  bool threads_default_ = false;
  int virtual_nodes_ = 1;
  ThreadLevel provided_ = ThreadLevel::single;
  std::string host_, mpi_library_;
};

/// Reads HYMPI_VIRTUAL_NODES (default 1); throws InvalidArgument for a non-positive value.
int virtual_nodes_from_env();

}  // namespace hympi

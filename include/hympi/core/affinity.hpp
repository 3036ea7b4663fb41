#pragma once
// Rank and thread binding policies, applied with hwloc, and a report of where threads really run.
#include <mpi.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hympi/core/enum_names.hpp"
#include "hympi/core/topology.hpp"

namespace hympi {

/// What one rank is bound to: nothing, one core per thread, a NUMA domain or a package.
enum class BindPolicy { none, core, numa, package };
/// How ranks are laid out over the machine's domains: fill one first, or round-robin.
enum class Distribution { compact, scatter };

contract::BindPolicyNames<BindPolicy> enum_names(BindPolicy);
contract::DistributionNames<Distribution> enum_names(Distribution);
/// Parses "none|core|numa|package"; throws InvalidArgument naming the value otherwise.
inline BindPolicy parse_bind_policy(const std::string& text) { return parse_enum<BindPolicy>(text); }
/// Parses "compact|scatter"; throws InvalidArgument naming the value otherwise.
inline Distribution parse_distribution(const std::string& text) { return parse_enum<Distribution>(text); }

/// Binding options of a run (HYMPI_BIND / HYMPI_DIST / HYMPI_OVERSUBSCRIBE or --bind / --dist / --oversubscribe).
struct AffinityOptions {
  BindPolicy bind = BindPolicy::core;
  Distribution distribution = Distribution::compact;
  /// The user asked for threads to share PUs, so the binding check accepts it (still warned about).
  bool oversubscribe = false;
};

/// Reads HYMPI_OVERSUBSCRIBE: unset, empty or "0" is false, "1" true; throws InvalidArgument naming any other value.
bool oversubscribe_from_env();

/// The cpusets a rank and each of its threads are meant to run on.
struct BindingPlan {
  BindPolicy bind = BindPolicy::none;
  Bitmap rank_set;
  std::vector<Bitmap> thread_sets;
};

/// Computes the intended sets of rank `local_rank` of `local_size` ranks on one machine.
///
/// core: each thread gets its own core (whole core, all its PUs); compact gives rank r the cores
/// r*T .. r*T+T-1, scatter deals ranks round-robin over NUMA domains (or packages when there are
/// more packages than NUMA domains). numa/package: every thread gets the rank's domain, chosen
/// in blocks (compact) or round-robin (scatter). Too many ranks wrap around (oversubscription).
/// Throws InvalidArgument when local_rank/local_size/threads are out of range.
BindingPlan plan_binding(const Topology& topology, const AffinityOptions& options, int local_rank,
                         int local_size, int threads);

/// Binds this process and each OpenMP thread as planned (no-op for BindPolicy::none).
/// Call outside a parallel region. Throws TopologyError if hwloc refuses a binding.
void apply_binding(const Topology& topology, const BindingPlan& plan);

/// One thread's observed binding and the PU it last ran on.
struct ThreadBinding {
  std::string host;      ///< node name (with /vnN for virtual nodes)
  std::string machine;   ///< physical host: threads on one machine compete for its cores
  int rank = 0;
  int thread = 0;
  int pu_os = -1;        ///< PU the thread last ran on (OS index)
  int core = -1;
  int numa = -1;
  int package = -1;
  std::string bound_set;     ///< cpuset the OS reports for the thread
  std::string intended_set;  ///< cpuset the plan asked for (empty for bind none)
};

/// Observes every OpenMP thread of this rank: last PU, its core/NUMA/package, its binding.
/// Throws TopologyError when hwloc cannot report a thread's binding or the PU it ran on is not in
/// `topology`; call outside a parallel region.
std::vector<ThreadBinding> observe_binding(const Topology& topology, const BindingPlan& plan, int rank,
                                           const std::string& host, const std::string& machine);

/// Gathers all ranks' rows on rank 0 of `comm` (collective; other ranks get an empty vector).
std::vector<ThreadBinding> gather_binding(MPI_Comm comm, const std::vector<ThreadBinding>& mine);

/// Problems with the bindings: thread bound differently than planned or running outside its
/// set; under core binding with ranks*threads <= cores per machine, two threads on one core.
std::vector<std::string> check_binding(const std::vector<ThreadBinding>& rows, BindPolicy bind,
                                       int cores_per_machine);

/// How the job's threads fill the PUs of each machine (see assess_pu_sharing).
struct PuSharing {
  int shared_pus = 0;           ///< PUs that carry more than one thread, over all machines
  bool oversubscribed = false;  ///< a PU is shared, or a machine runs more threads than it has PUs
  std::string summary;          ///< one line naming the machine(s), counts and shared PUs; empty if not oversubscribed
};

/// Which PUs carry more than one thread of the job, from every thread's bound set.
///
/// Rule: per machine, each thread is put on the least-loaded PU of the cpuset the OS reports it
/// bound to (lowest OS index on ties), threads with the smallest sets first. A thread pinned to
/// one PU lands there; a thread free over a core, NUMA domain, package or the whole machine (bind
/// none) lands wherever the fair scheduler would spread it. Because hwloc's sets are nested or
/// disjoint, this filling shares a PU only where sharing cannot be avoided. A machine also counts
/// as oversubscribed when it runs more threads than `pus_per_machine` (0: skip that check).
/// Throws InvalidArgument naming a bound set that is empty, infinite or not an hwloc list.
PuSharing assess_pu_sharing(const std::vector<ThreadBinding>& rows, int pus_per_machine);

/// Number of PUs that carry more than one thread (assess_pu_sharing's shared_pus); throws as it does.
int count_shared_pus(const std::vector<ThreadBinding>& rows);

/// Binding rows as a fixed-width table (the xthi question, answered).
std::string format_binding_table(const std::vector<ThreadBinding>& rows);

/// Binding rows as a JSON array (the HYMPI_RESULT "binding" field).
nlohmann::json binding_json(const std::vector<ThreadBinding>& rows);

}  // namespace hympi

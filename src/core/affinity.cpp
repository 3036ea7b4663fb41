#include "hympi/core/affinity.hpp"

#include <omp.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "hympi/core/error.hpp"

namespace hympi {

bool oversubscribe_from_env() {
  const char* text = std::getenv("HYMPI_OVERSUBSCRIBE");
  if (text == nullptr || *text == '\0' || std::strcmp(text, "0") == 0) return false;
  if (std::strcmp(text, "1") == 0) return true;
  throw InvalidArgument(std::string("HYMPI_OVERSUBSCRIBE must be 0 or 1, got '") + text + "'");
}

namespace {

/// Logical core indexes grouped by the domain (NUMA node or package) that scatter deals over.
std::vector<std::vector<int>> cores_by_domain(const Topology& topo) {
  const bool by_package = topo.packages() > topo.numa_nodes();
  const int domains = by_package ? topo.packages() : topo.numa_nodes();
  std::vector<std::vector<int>> out(static_cast<std::size_t>(domains));
  for (int d = 0; d < domains; ++d) {
    const Bitmap domain = by_package ? topo.package_set(d) : topo.numa_set(d);
    for (int c = 0; c < topo.cores(); ++c)
      if (domain.intersects(topo.core_set(c))) out[static_cast<std::size_t>(d)].push_back(c);
  }
  std::erase_if(out, [](const auto& v) { return v.empty(); });
  return out;
}

int domain_index(int rank, int ranks, int domains, Distribution dist) {
  if (dist == Distribution::scatter) return rank % domains;
  // Blocks of consecutive ranks share a domain; with fewer ranks than domains they spread out.
  return static_cast<int>(static_cast<long long>(rank) * domains / ranks) % domains;
}

}  // namespace

BindingPlan plan_binding(const Topology& topo, const AffinityOptions& options, int local_rank,
                         int local_size, int threads) {
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size)
    throw InvalidArgument("local rank " + std::to_string(local_rank) + " of " +
                          std::to_string(local_size) + " is out of range");
  if (threads < 1) throw InvalidArgument("threads per rank must be >= 1, got " + std::to_string(threads));
  BindingPlan plan;
  plan.bind = options.bind;
  switch (options.bind) {
    case BindPolicy::none:
      plan.rank_set = topo.machine_set();
      plan.thread_sets.assign(static_cast<std::size_t>(threads), plan.rank_set);
      return plan;
    case BindPolicy::numa:
    case BindPolicy::package: {
      const bool numa = options.bind == BindPolicy::numa;
      const int domains = numa ? topo.numa_nodes() : topo.packages();
      const int d = domain_index(local_rank, local_size, domains, options.distribution);
      plan.rank_set = numa ? topo.numa_set(d) : topo.package_set(d);
      plan.thread_sets.assign(static_cast<std::size_t>(threads), plan.rank_set);
      return plan;
    }
    case BindPolicy::core: break;
  }
  std::vector<int> cores;  // the cores of this rank's threads, in thread order
  if (options.distribution == Distribution::compact) {
    for (int t = 0; t < threads; ++t) cores.push_back((local_rank * threads + t) % topo.cores());
  } else {
    const auto domains = cores_by_domain(topo);
    const int nd = static_cast<int>(domains.size());
    const auto& mine = domains[static_cast<std::size_t>(local_rank % nd)];
    const int slot = local_rank / nd;
    const int len = static_cast<int>(mine.size());
    for (int t = 0; t < threads; ++t) cores.push_back(mine[static_cast<std::size_t>((slot * threads + t) % len)]);
  }
  for (int c : cores) {
    plan.thread_sets.push_back(topo.core_set(c));
    plan.rank_set.add(plan.thread_sets.back());
  }
  return plan;
}

void apply_binding(const Topology& topo, const BindingPlan& plan) {
  if (plan.bind == BindPolicy::none) return;
  if (!topo.is_this_system()) throw TopologyError("cannot bind on a topology that is not this machine");
  if (hwloc_set_cpubind(topo.get(), plan.rank_set.get(), HWLOC_CPUBIND_PROCESS) < 0)
    throw TopologyError("cannot bind process to " + plan.rank_set.to_list() + ": " + std::strerror(errno));
  ParallelErrors errors;
#pragma omp parallel
  errors.capture([&] {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const Bitmap& set = plan.thread_sets[t % plan.thread_sets.size()];
    if (hwloc_set_cpubind(topo.get(), set.get(), HWLOC_CPUBIND_THREAD) < 0)
      throw TopologyError("cannot bind thread " + std::to_string(t) + " to " + set.to_list() + ": " +
                          std::strerror(errno));
  });
  errors.rethrow();
}

std::vector<ThreadBinding> observe_binding(const Topology& topo, const BindingPlan& plan, int rank,
                                           const std::string& host, const std::string& machine) {
  std::vector<ThreadBinding> rows(static_cast<std::size_t>(omp_get_max_threads()));
  ParallelErrors errors;
#pragma omp parallel
  errors.capture([&] {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    ThreadBinding& row = rows[t];
    row.host = host;
    row.machine = machine;
    row.rank = rank;
    row.thread = static_cast<int>(t);
    Bitmap bound, last;
    if (hwloc_get_cpubind(topo.get(), bound.get(), HWLOC_CPUBIND_THREAD) < 0 ||
        hwloc_get_last_cpu_location(topo.get(), last.get(), HWLOC_CPUBIND_THREAD) < 0)
      throw TopologyError(std::string("cannot query thread binding: ") + std::strerror(errno));
    row.bound_set = bound.to_list();
    const int pu = hwloc_bitmap_first(last.get());
    const PuLocation loc = topo.locate_pu(static_cast<unsigned>(pu));
    row.pu_os = loc.pu_os;
    row.core = loc.core;
    row.numa = loc.numa;
    row.package = loc.package;
    if (plan.bind != BindPolicy::none) row.intended_set = plan.thread_sets[t % plan.thread_sets.size()].to_list();
  });
  errors.rethrow();
  return rows;
}

namespace {
constexpr int kNameWidth = 128;
constexpr int kSetWidth = 256;
struct WireRow {
  char host[kNameWidth];
  char machine[kNameWidth];
  int ints[7];
  char bound[kSetWidth];
  char intended[kSetWidth];
};

void copy_text(char* dst, const std::string& src, int width) {
  std::memset(dst, 0, static_cast<std::size_t>(width));
  std::strncpy(dst, src.c_str(), static_cast<std::size_t>(width - 1));
}
}  // namespace

std::vector<ThreadBinding> gather_binding(MPI_Comm comm, const std::vector<ThreadBinding>& mine) {
  int rank = 0, size = 1;
  HYMPI_MPI(MPI_Comm_rank(comm, &rank));
  HYMPI_MPI(MPI_Comm_size(comm, &size));
  std::vector<WireRow> out(mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const ThreadBinding& r = mine[i];
    copy_text(out[i].host, r.host, kNameWidth);
    copy_text(out[i].machine, r.machine, kNameWidth);
    copy_text(out[i].bound, r.bound_set, kSetWidth);
    copy_text(out[i].intended, r.intended_set, kSetWidth);
    const int ints[7] = {r.rank, r.thread, r.pu_os, r.core, r.numa, r.package, 0};
    std::copy(std::begin(ints), std::end(ints), out[i].ints);
  }
  const int bytes = static_cast<int>(out.size() * sizeof(WireRow));
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  HYMPI_MPI(MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<WireRow> all(rank == 0 ? static_cast<std::size_t>(total) / sizeof(WireRow) : 0);
  HYMPI_MPI(MPI_Gatherv(out.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, 0, comm));
  std::vector<ThreadBinding> rows;
  for (const WireRow& w : all)
    rows.push_back({w.host, w.machine, w.ints[0], w.ints[1], w.ints[2], w.ints[3], w.ints[4], w.ints[5],
                    w.bound, w.intended});
  return rows;
}

std::vector<std::string> check_binding(const std::vector<ThreadBinding>& rows, BindPolicy bind,
                                       int cores_per_machine) {
  std::vector<std::string> problems;
  if (bind == BindPolicy::none) return problems;
  std::map<std::string, int> threads_per_machine;
  for (const auto& r : rows) ++threads_per_machine[r.machine];
  std::map<std::pair<std::string, int>, const ThreadBinding*> core_owner;
  for (const auto& r : rows) {
    const std::string who = "rank " + std::to_string(r.rank) + " thread " + std::to_string(r.thread);
    if (r.bound_set != r.intended_set)
      problems.push_back(who + " is bound to " + r.bound_set + " but was meant for " + r.intended_set);
    Bitmap intended;
    hwloc_bitmap_list_sscanf(intended.get(), r.intended_set.c_str());
    if (r.pu_os < 0 || !intended.contains(static_cast<unsigned>(r.pu_os)))
      problems.push_back(who + " runs on PU " + std::to_string(r.pu_os) + ", outside its set " + r.intended_set);
    if (bind == BindPolicy::core && threads_per_machine[r.machine] <= cores_per_machine) {
      auto [it, fresh] = core_owner.try_emplace({r.machine, r.core}, &r);
      if (!fresh)
        problems.push_back(who + " shares core " + std::to_string(r.core) + " on " + r.machine + " with rank " +
                           std::to_string(it->second->rank) + " thread " + std::to_string(it->second->thread));
    }
  }
  return problems;
}

namespace {
std::string who(const ThreadBinding& r) {
  return "rank " + std::to_string(r.rank) + " thread " + std::to_string(r.thread);
}

Bitmap parse_bound_set(const ThreadBinding& r) {
  Bitmap set;
  if (hwloc_bitmap_list_sscanf(set.get(), r.bound_set.c_str()) < 0 || hwloc_bitmap_iszero(set.get()) ||
      hwloc_bitmap_weight(set.get()) < 0)
    throw InvalidArgument(who(r) + " has bound set '" + r.bound_set + "', not a finite non-empty PU list");
  return set;
}
}  // namespace

PuSharing assess_pu_sharing(const std::vector<ThreadBinding>& rows, int pus_per_machine) {
  std::map<std::string, std::vector<const ThreadBinding*>> by_machine;
  for (const auto& r : rows) by_machine[r.machine].push_back(&r);
  PuSharing out;
  std::vector<std::string> notes;
  for (const auto& [machine, threads] : by_machine) {
    struct Item {
      const ThreadBinding* row;
      Bitmap set;
      int weight;
    };
    std::vector<Item> items;
    for (const ThreadBinding* r : threads) {
      Bitmap set = parse_bound_set(*r);
      const int weight = set.weight();
      items.push_back({r, std::move(set), weight});
    }
    // Most constrained first, so a free thread never takes the PU a pinned one must have.
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.weight < b.weight; });
    std::map<unsigned, std::vector<const ThreadBinding*>> on_pu;
    for (const Item& item : items) {
      unsigned best = 0;
      std::size_t best_load = std::numeric_limits<std::size_t>::max();
      for (int pu = hwloc_bitmap_first(item.set.get()); pu >= 0; pu = hwloc_bitmap_next(item.set.get(), pu)) {
        const auto it = on_pu.find(static_cast<unsigned>(pu));
        const std::size_t load = it == on_pu.end() ? 0 : it->second.size();
        if (load < best_load) {
          best = static_cast<unsigned>(pu);
          best_load = load;
        }
      }
      on_pu[best].push_back(item.row);
    }
    std::vector<std::string> shared;
    for (const auto& [pu, owners] : on_pu) {
      if (owners.size() < 2) continue;
      ++out.shared_pus;
      std::string text = "PU " + std::to_string(pu) + " (";
      for (std::size_t i = 0; i < owners.size(); ++i) text += (i > 0 ? ", " : "") + who(*owners[i]);
      shared.push_back(text + ")");
    }
    const int count = static_cast<int>(threads.size());
    const bool too_many = pus_per_machine > 0 && count > pus_per_machine;
    if (shared.empty() && !too_many) continue;
    out.oversubscribed = true;
    std::set<int> ranks;
    for (const ThreadBinding* r : threads) ranks.insert(r->rank);
    std::string note = machine + ": " + std::to_string(count) + " threads of " + std::to_string(ranks.size()) +
                       " ranks";
    if (pus_per_machine > 0) note += " on " + std::to_string(pus_per_machine) + " PUs";
    if (!shared.empty()) {
      // A long job could list hundreds of PUs; the first few name the pattern, the count the size.
      constexpr std::size_t kListed = 4;
      note += "; " + std::to_string(shared.size()) + " PU(s) carry more than one thread: ";
      for (std::size_t i = 0; i < std::min(shared.size(), kListed); ++i) note += (i > 0 ? ", " : "") + shared[i];
      if (shared.size() > kListed) note += ", ...";
    }
    notes.push_back(note);
  }
  for (std::size_t i = 0; i < notes.size(); ++i) out.summary += (i > 0 ? "; " : "") + notes[i];
  return out;
}

int count_shared_pus(const std::vector<ThreadBinding>& rows) { return assess_pu_sharing(rows, 0).shared_pus; }

std::string format_binding_table(const std::vector<ThreadBinding>& rows) {
  std::ostringstream os;
  os << std::left << std::setw(20) << "host" << std::right << std::setw(6) << "rank" << std::setw(8) << "thread"
     << std::setw(6) << "pu" << std::setw(6) << "core" << std::setw(6) << "numa" << std::setw(9) << "package"
     << "  bound to\n";
  for (const auto& r : rows)
    os << std::left << std::setw(20) << r.host << std::right << std::setw(6) << r.rank << std::setw(8) << r.thread
       << std::setw(6) << r.pu_os << std::setw(6) << r.core << std::setw(6) << r.numa << std::setw(9) << r.package
       << "  " << r.bound_set << "\n";
  return os.str();
}

nlohmann::json binding_json(const std::vector<ThreadBinding>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"host", r.host}, {"rank", r.rank}, {"thread", r.thread}, {"pu", r.pu_os}, {"core", r.core},
                   {"numa", r.numa}, {"package", r.package}, {"bound", r.bound_set}, {"intended", r.intended_set}});
  return out;
}

}  // namespace hympi

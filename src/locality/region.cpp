#include "hympi/locality/region.hpp"

#include <omp.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>

namespace hympi::locality {

std::vector<int> plan_threads(const Locations& locations, const LocationRange& range, int nthreads) {
  check_range(range);
  if (nthreads < 1) throw InvalidArgument("a region needs at least 1 thread, got " + std::to_string(nthreads));
  std::vector<int> out(static_cast<std::size_t>(nthreads));
  const long long slots = range.count();
  for (int t = 0; t < nthreads; ++t)
    out[static_cast<std::size_t>(t)] = locations.location_of_slot(range, block_owner(nthreads, slots, t));
  return out;
}

namespace {
Bitmap parse_set(const std::string& text, int thread) {
  Bitmap set;
  if (hwloc_bitmap_list_sscanf(set.get(), text.c_str()) < 0)
    throw InvalidArgument("thread " + std::to_string(thread) + ": '" + text + "' is not a PU list");
  return set;
}
}  // namespace

std::vector<std::string> check_thread_binding(std::span<const LocatedThread> rows) {
  std::vector<std::string> problems;
  for (const LocatedThread& r : rows) {
    if (r.bound.empty()) continue;
    const std::string who = "thread " + std::to_string(r.thread) + " of location " + std::to_string(r.location);
    const Bitmap intended = parse_set(r.intended, r.thread);
    // Compared as sets, not text: "0-1" and "0,1" are the same binding.
    if (!(parse_set(r.bound, r.thread) == intended))
      problems.push_back(who + " is bound to " + r.bound + " but was meant for " + r.intended);
    if (r.pu_os < 0 || !intended.contains(static_cast<unsigned>(r.pu_os)))
      problems.push_back(who + " runs on PU " + std::to_string(r.pu_os) + ", outside its set " + r.intended);
  }
  return problems;
}

namespace detail {

/// The state a team shares: who sits where, the per-location task queues and the drain counters.
///
/// Why queues and not OpenMP tasks: an OpenMP runtime hands a task to whichever thread of the
/// team reaches a scheduling point first, and `#pragma omp task affinity(...)` is only a hint
/// (libgomp ignores it), so neither can promise that a task runs on its data's location. Here a
/// task waits in its location's queue, and only that location's threads pop from it.
///
/// One mutex guards queues and counters: tasks are meant to be coarse (a location's share of a
/// sweep), so contention on it is negligible next to their work, and one lock keeps the
/// termination condition (everyone arrived, nothing outstanding) exact.
struct Region {
  const Locations* locations = nullptr;
  LocationRange range;
  Region* parent = nullptr;
  int depth = 1;
  int team = 0;
  std::vector<int> thread_location;
  std::vector<int> threads_at;        ///< team threads per location (index: location)
  std::vector<int> rank_in_location;  ///< per thread
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<std::deque<std::unique_ptr<Task>>> queues;  ///< index: location
  long long outstanding = 0;  ///< queued or running tasks of this region
  long long arrived = 0;      ///< drains entered, over all threads and all barriers
  ParallelErrors errors;
  std::atomic<bool> failed_setup{false};

  /// Fills the team's plan; one thread calls it, inside the region.
  void plan(int team_size) {
    team = team_size;
    thread_location = plan_threads(*locations, range, team);
    threads_at.assign(static_cast<std::size_t>(locations->size()), 0);
    rank_in_location.resize(static_cast<std::size_t>(team));
    for (std::size_t t = 0; t < static_cast<std::size_t>(team); ++t)
      rank_in_location[t] = threads_at[static_cast<std::size_t>(thread_location[t])]++;
    queues.resize(static_cast<std::size_t>(locations->size()));
  }
};

}  // namespace detail

Here::Here(detail::Region& region, int thread) : region_(&region), thread_(thread) {
  const auto t = static_cast<std::size_t>(thread);
  location_ = region.thread_location[t];
  rank_in_location_ = region.rank_in_location[t];
  threads_in_location_ = region.threads_at[static_cast<std::size_t>(location_)];
  binding_.thread = thread;
  binding_.location = location_;
  binding_.intended = region.locations->at(location_).cpuset.to_list();
}

int Here::num_threads() const noexcept { return region_->team; }
int Here::threads_on(int location) const noexcept {
  return location >= 0 && location < static_cast<int>(region_->threads_at.size())
             ? region_->threads_at[static_cast<std::size_t>(location)]
             : 0;
}
const Locations& Here::locations() const noexcept { return *region_->locations; }
const LocationRange& Here::range() const noexcept { return region_->range; }
int Here::depth() const noexcept { return region_->depth; }

void Here::check_same_locations(const Locations& other) const {
  if (&other != region_->locations)
    throw InvalidArgument("the array is distributed over other locations than this region's");
}

void Here::enqueue(int location, std::unique_ptr<detail::Task> task) {
  // The innermost region with a thread on the location takes the task: a nested region that
  // inherited one location can still send work to its parent's other locations.
  for (detail::Region* r = region_; r != nullptr; r = r->parent) {
    if (r->locations != region_->locations || r->threads_at[static_cast<std::size_t>(location)] == 0) continue;
    {
      const std::lock_guard lock(r->mutex);
      r->queues[static_cast<std::size_t>(location)].push_back(std::move(task));
      ++r->outstanding;
    }
    r->wake.notify_all();
    return;
  }
  throw InvalidArgument("no thread of this region or its parents runs on location " + std::to_string(location) +
                        " (region " + region_->range.to_string() + ", " + std::to_string(region_->team) +
                        " threads)");
}

void Here::drain() {
  detail::Region& r = *region_;
  std::unique_lock lock(r.mutex);
  const long long target = static_cast<long long>(r.team) * (barriers_ + 1);
  if (++r.arrived == target) r.wake.notify_all();
  auto& queue = r.queues[static_cast<std::size_t>(location_)];
  while (true) {
    if (!queue.empty()) {
      std::unique_ptr<detail::Task> task = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      ++in_task_;
      r.errors.capture([&] { task->run(*this); });
      --in_task_;
      task.reset();  // the task's captures die before the region may end
      lock.lock();
      if (--r.outstanding == 0) r.wake.notify_all();
      continue;
    }
    // Once every thread arrived no body code runs, and a running task is counted until it has
    // queued its children, so outstanding == 0 here means no task can appear any more.
    if (r.arrived >= target && r.outstanding == 0) break;
    r.wake.wait(lock);
  }
  ++barriers_;
}

void Here::barrier() {
  if (in_task_ > 0) throw InvalidArgument("Here::barrier() called from a task (only region bodies may wait)");
  drain();
  // Nobody leaves before all left the drain, so the next barrier's counts cannot mix with these.
#pragma omp barrier
}

namespace detail {

namespace {

/// Records in `row` the calling thread's binding and the PU it last ran on, as the OS reports them, and
/// returns the binding; throws TopologyError when hwloc cannot ask.
Bitmap observe_thread(const Topology& topo, LocatedThread& row) {
  Bitmap bound, last;
  if (hwloc_get_cpubind(topo.get(), bound.get(), HWLOC_CPUBIND_THREAD) < 0 ||
      hwloc_get_last_cpu_location(topo.get(), last.get(), HWLOC_CPUBIND_THREAD) < 0)
    throw TopologyError(std::string("cannot query thread binding: ") + std::strerror(errno));
  row.bound = bound.to_list();
  row.pu_os = hwloc_bitmap_first(last.get());
  return bound;
}

/// Binds the calling thread to its location's cpuset and records what the OS then reports.
void bind_and_observe(const Topology& topo, const Bitmap& cpuset, LocatedThread& row) {
  if (hwloc_set_cpubind(topo.get(), cpuset.get(), HWLOC_CPUBIND_THREAD) < 0)
    throw TopologyError("cannot bind thread " + std::to_string(row.thread) + " to location " +
                        std::to_string(row.location) + " (PUs " + row.intended + "): " + std::strerror(errno));
  observe_thread(topo, row);
  const auto problems = check_thread_binding(std::span<const LocatedThread>(&row, 1));
  if (!problems.empty()) throw TopologyError(problems.front());
}

}  // namespace

void run_region(const Locations& locations, const LocationRange& range, int nthreads, Here* parent, void* body,
                BodyCall call) {
  check_range(range);
  if (nthreads < 1) throw InvalidArgument("a region needs at least 1 thread, got " + std::to_string(nthreads));
  Region region;
  region.locations = &locations;
  region.range = range;
  region.parent = parent != nullptr ? parent->region_ : nullptr;
  region.depth = parent != nullptr ? parent->depth() + 1 : 1;
  const Topology& topo = locations.topology();
  const bool bind = topo.is_this_system();

#pragma omp parallel num_threads(nthreads)
  {
#pragma omp single
    region.errors.capture([&] {
      try {
        region.plan(omp_get_num_threads());
      } catch (...) {
        region.failed_setup = true;
        throw;
      }
    });
    // (the single's implicit barrier publishes the plan)
    if (!region.failed_setup) {
      const int t = omp_get_thread_num();
      Here here(region, t);
      Bitmap saved;
      bool restore = false;
      if (bind)
        region.errors.capture([&] {
          try {
            if (hwloc_get_cpubind(topo.get(), saved.get(), HWLOC_CPUBIND_THREAD) < 0)
              throw TopologyError(std::string("cannot read thread binding: ") + std::strerror(errno));
            restore = true;
            bind_and_observe(topo, locations.at(here.location()).cpuset, here.binding_);
          } catch (...) {
            region.failed_setup = true;
            throw;
          }
        });
      // All bound and checked, or nobody runs the body (a body may wait in barrier() for a
      // thread that would never come).
#pragma omp barrier
      if (!region.failed_setup) region.errors.capture([&] { call(body, here); });
      // The region's end is a barrier: every queued task runs before anyone leaves.
      here.drain();
      if (restore)
        region.errors.capture([&] {
          if (hwloc_set_cpubind(topo.get(), saved.get(), HWLOC_CPUBIND_THREAD) < 0)
            throw TopologyError("cannot restore the binding of thread " + std::to_string(t) + ": " +
                                std::strerror(errno));
        });
    }
  }
  region.errors.rethrow();
}

}  // namespace detail

TeamBinding::TeamBinding(const Locations& locations, const LocationRange& range, int nthreads)
    : locations_(&locations), nthreads_(nthreads), plan_(plan_threads(locations, range, nthreads)) {
  rows_.resize(static_cast<std::size_t>(nthreads));
  for (int t = 0; t < nthreads; ++t) {
    LocatedThread& row = rows_[static_cast<std::size_t>(t)];
    row.thread = t;
    row.location = plan_[static_cast<std::size_t>(t)];
    row.intended = locations.at(row.location).cpuset.to_list();
  }
  const Topology& topo = locations.topology();
  if (!topo.is_this_system()) return;
  saved_.resize(static_cast<std::size_t>(nthreads));
  ParallelErrors errors;
  std::atomic<int> team{0};
#pragma omp parallel num_threads(nthreads)
  errors.capture([&] {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    if (t == 0) team = omp_get_num_threads();
    LocatedThread& row = rows_[t];
    const Bitmap& intended = locations.at(row.location).cpuset;
    if (hwloc_get_cpubind(topo.get(), saved_[t].get(), HWLOC_CPUBIND_THREAD) < 0)
      throw TopologyError(std::string("cannot read thread binding: ") + std::strerror(errno));
    // A binding inside the location (one of its cores) stays: the thread is where it belongs.
    if (!intended.includes(saved_[t]) &&
        hwloc_set_cpubind(topo.get(), intended.get(), HWLOC_CPUBIND_THREAD) < 0)
      throw TopologyError("cannot bind thread " + std::to_string(t) + " to location " +
                          std::to_string(row.location) + " (PUs " + row.intended + "): " + std::strerror(errno));
    const Bitmap bound = detail::observe_thread(topo, row);
    if (!intended.includes(bound) || row.pu_os < 0 || !intended.contains(static_cast<unsigned>(row.pu_os)))
      throw TopologyError("thread " + std::to_string(t) + " of location " + std::to_string(row.location) +
                          " is bound to " + row.bound + " and runs on PU " + std::to_string(row.pu_os) +
                          ", outside its set " + row.intended);
  });
  bound_ = true;
  if (team.load() != nthreads) {
    restore();
    throw InvalidArgument("a team binding of " + std::to_string(nthreads) + " threads got " +
                          std::to_string(team.load()) + " from OpenMP");
  }
  try {
    errors.rethrow();
  } catch (...) {
    restore();
    throw;
  }
}

TeamBinding::~TeamBinding() { restore(); }

void TeamBinding::restore() noexcept {
  if (!bound_) return;
  bound_ = false;
  const Topology& topo = locations_->topology();
#pragma omp parallel num_threads(nthreads_)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    if (t < saved_.size() && saved_[t].weight() > 0)
      (void)hwloc_set_cpubind(topo.get(), saved_[t].get(), HWLOC_CPUBIND_THREAD);
  }
}

void TeamBinding::check() const {
  if (!bound_) return;
  const Topology& topo = locations_->topology();
  ParallelErrors errors;
#pragma omp parallel num_threads(nthreads_)
  errors.capture([&] {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const LocatedThread& row = rows_[t];
    Bitmap bound;
    if (hwloc_get_cpubind(topo.get(), bound.get(), HWLOC_CPUBIND_THREAD) < 0)
      throw TopologyError(std::string("cannot read thread binding: ") + std::strerror(errno));
    if (!locations_->at(row.location).cpuset.includes(bound))
      throw TopologyError("thread " + std::to_string(t) + " of location " + std::to_string(row.location) +
                          " is bound to " + bound.to_list() + ", outside its set " + row.intended +
                          ": the OpenMP runtime ran the team on other threads");
  });
  errors.rethrow();
}

}  // namespace hympi::locality

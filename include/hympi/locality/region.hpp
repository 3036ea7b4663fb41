#pragma once
// Parallel regions and tasks on locations (Jin et al., "High performance computing using MPI and OpenMP on
// multi-core parallel systems", §5.1 and §5.2.2): `location(m:n)` on a parallel region, the block mapping of
// threads to locations, inheritance by nested regions and child tasks, and `onloc` tasks that really run on a
// thread of the location that owns the data.
#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/locality/locations.hpp"

namespace hympi::locality {

class Here;

/// Where one thread of a region was meant to run and where the OS says it runs.
struct LocatedThread {
  int thread = 0;        ///< thread number in its team
  int location = 0;      ///< the location it belongs to
  std::string intended;  ///< the location's cpuset (hwloc list syntax)
  std::string bound;     ///< the cpuset the OS reports for the thread; empty when nothing was bound
  int pu_os = -1;        ///< the PU it last ran on (OS index); -1 when not observed
};

/// The location of each of `nthreads` threads of a region over `range`: block distribution over
/// the range's slots (16 threads over 0:3 put threads 0-3 on location 0, 4-7 on 1, ...; 6 over 0:3
/// put 0-1, 2-3, 4, 5), each slot taken modulo nlocs. With fewer threads than slots the last slots
/// get no thread. Throws InvalidArgument when nthreads < 1 or the range is empty.
std::vector<int> plan_threads(const Locations& locations, const LocationRange& range, int nthreads);

/// The problems of observed threads, as core's binding check words them: a thread bound to
/// another set than its location's cpuset, or running on a PU outside it. Rows with an empty
/// `bound` (nothing was bound: the topology is not this machine) are not checked. Throws
/// InvalidArgument when a row's set is not an hwloc list.
std::vector<std::string> check_thread_binding(std::span<const LocatedThread> rows);

namespace detail {
struct Region;
/// A task queued on a location: run by the first thread of that location to pick it up.
struct Task {
  Task() = default;
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  virtual ~Task() = default;
  virtual void run(Here& here) = 0;
};
template <class F>
struct TaskOf final : Task {
  F f;
  explicit TaskOf(F&& g) : f(std::move(g)) {}
  explicit TaskOf(const F& g) : f(g) {}
  void run(Here& here) override {
    if constexpr (std::is_invocable_v<F&, Here&>)
      f(here);
    else
      f();
  }
};
template <class F>
std::unique_ptr<Task> make_task(F&& f) {
  return std::make_unique<TaskOf<std::decay_t<F>>>(std::forward<F>(f));
}
using BodyCall = void (*)(void* body, Here& here);
/// The body's address without its type (const bodies too); call_body<Body> restores it.
template <class Body>
void* erase(Body& body) noexcept {
  return const_cast<void*>(static_cast<const void*>(std::addressof(body)));
}
template <class Body>
void call_body(void* body, Here& here) {
  (*static_cast<std::remove_reference_t<Body>*>(body))(here);
}
/// The region machinery (region.cpp): runs `call(body, here)` on every thread of a new team.
void run_region(const Locations& locations, const LocationRange& range, int nthreads, Here* parent, void* body,
                BodyCall call);
}  // namespace detail

/// What one thread of a locality region knows: its team, its location, and how to start tasks
/// and nested regions there. Made by parallel(), handed to the body and to every task the thread
/// runs; valid only during that call.
class Here {
 public:
  Here(const Here&) = delete;
  Here& operator=(const Here&) = delete;

  /// Thread number in this region's team.
  [[nodiscard]] int thread() const noexcept { return thread_; }
  /// Threads in this region's team (what OpenMP granted: may be fewer than asked).
  [[nodiscard]] int num_threads() const noexcept;
  /// The location this thread runs on (0 .. nlocs-1).
  [[nodiscard]] int location() const noexcept { return location_; }
  /// Rank of this thread among the team's threads on its location, and their number: how the
  /// threads of one location share that location's work.
  [[nodiscard]] int rank_in_location() const noexcept { return rank_in_location_; }
  [[nodiscard]] int threads_in_location() const noexcept { return threads_in_location_; }
  /// Threads of this team on `location` (0 .. nlocs-1; 0 for any other value).
  [[nodiscard]] int threads_on(int location) const noexcept;
  /// The locations of the region.
  [[nodiscard]] const Locations& locations() const noexcept;
  /// The range the region was started on (after inheritance: a nested region that named none has
  /// its parent thread's location, m:m).
  [[nodiscard]] const LocationRange& range() const noexcept;
  /// Nesting depth: 1 for a region started outside any region, 2 for one nested in it, ...
  [[nodiscard]] int depth() const noexcept;
  /// This thread's binding as planned and observed (bound empty when nothing was bound).
  [[nodiscard]] const LocatedThread& binding() const noexcept { return binding_; }

  /// Queues `f` (callable as f(Here&) or f()) on this thread's location: a child task inherits
  /// its parent's location. Runs at the latest at the next barrier() or at the region's end, on
  /// a thread of that location. An exception from `f` is carried out of the region by parallel().
  template <class F>
  void task(F&& f) {
    enqueue(location_, detail::make_task(std::forward<F>(f)));
  }
  /// Queues `f` on location `location` (modulo nlocs), run by a thread of the innermost region
  /// (this one, then its parents) that has threads there. Throws InvalidArgument, queuing
  /// nothing, when no enclosing region has a thread on that location.
  template <class F>
  void task_on(long long location, F&& f) {
    enqueue(locations().wrap(location), detail::make_task(std::forward<F>(f)));
  }
  /// Queues `f` on the location that owns `array`'s element `index` (Jin et al.'s `onloc(A[i])`).
  /// Throws InvalidArgument when the array is distributed over other Locations than this
  /// region's, `index` is outside the array, or as task_on does.
  template <class Array, class F>
  void task_onloc(const Array& array, const std::array<std::size_t, Array::rank>& index, F&& f) {
    check_same_locations(array.locations());
    enqueue(array.where(index), detail::make_task(std::forward<F>(f)));
  }

  /// Waits until every thread of the team arrived and every task queued in the region ran, running
  /// this location's tasks meanwhile; then an OpenMP barrier. Every thread of the team must call it
  /// the same number of times (as an OpenMP barrier). Throws InvalidArgument when called from a task.
  void barrier();

  /// A nested region of `nthreads` threads that names no location: all of them on this thread's
  /// location (inheritance). OpenMP must allow nesting (OMP_MAX_ACTIVE_LEVELS >= 2), otherwise the
  /// nested team has one thread. Throws as parallel() does.
  template <class Body>
  void parallel(int nthreads, Body&& body) {
    parallel(LocationRange::single(location_), nthreads, std::forward<Body>(body));
  }
  /// A nested region of `nthreads` threads over `range`; throws as parallel() does.
  template <class Body>
  void parallel(const LocationRange& range, int nthreads, Body&& body) {
    detail::run_region(locations(), range, nthreads, this, detail::erase(body), &detail::call_body<Body>);
  }

 private:
  friend void detail::run_region(const Locations&, const LocationRange&, int, Here*, void*, detail::BodyCall);
  Here(detail::Region& region, int thread);
  void enqueue(int location, std::unique_ptr<detail::Task> task);
  void check_same_locations(const Locations& other) const;
  /// The drain-then-wait part of barrier() and of the region's end.
  void drain();

  detail::Region* region_;
  int thread_;
  int location_ = 0;
  int rank_in_location_ = 0;
  int threads_in_location_ = 1;
  long long barriers_ = 0;  ///< drains this thread passed: the arrival target of the next one
  int in_task_ = 0;         ///< > 0 while this thread runs a task
  LocatedThread binding_;
};

/// Runs `body(Here&)` on a team of `nthreads` OpenMP threads over the locations of `range`
/// (Jin et al.'s `#pragma omp parallel location(m:n) num_threads(nthreads)`).
///
/// Threads go to locations as plan_threads() says, using the team size OpenMP granted. When the
/// topology is this machine each thread is bound to its location's cpuset
/// (hwloc_set_cpubind, HWLOC_CPUBIND_THREAD) and its binding checked (check_thread_binding)
/// before any body runs, and every thread gets its previous binding back at the end; on another
/// topology (synthetic, XML) nothing is bound. Tasks queued in the region all run before it ends.
/// Throws InvalidArgument when nthreads < 1 or the range is empty, TopologyError when a binding
/// fails or does not hold (then no body runs), and otherwise the first exception a body or task
/// threw (no exception leaves the OpenMP region itself).
template <class Body>
void parallel(const Locations& locations, const LocationRange& range, int nthreads, Body&& body) {
  detail::run_region(locations, range, nthreads, nullptr, detail::erase(body), &detail::call_body<Body>);
}

/// parallel() over every location (Jin et al.'s default for a region without a location clause).
template <class Body>
void parallel(const Locations& locations, int nthreads, Body&& body) {
  parallel(locations, locations.everywhere(), nthreads, std::forward<Body>(body));
}

/// parallel() over the locations `array` is distributed on (Jin et al.'s `parallel onloc(A)`).
template <class Array, class Body>
void parallel_onloc(const Array& array, int nthreads, Body&& body) {
  parallel(array.locations(), array.range(), nthreads, std::forward<Body>(body));
}

/// The threads of the OpenMP teams that follow, bound once to their locations as parallel() maps
/// them (plan_threads), for work whose regions are too short to pay parallel()'s binding, checks
/// and task machinery every time (a zone step of NPB-MZ: 0.1-2 ms, where one parallel() costs
/// tens of microseconds on an idle machine and milliseconds on a loaded one). It relies on what the
/// app frame's binding relies on: the OpenMP runtime runs later teams of up to `nthreads` threads
/// on the same threads, in the same order; check() verifies that it did.
///
/// A thread whose binding already lies inside its location (the frame bound it to one of the
/// location's cores) keeps it; any other is bound to the location's cpuset. Nothing is bound when
/// the topology is not this machine. The destructor gives every thread its previous binding back.
/// Neither copied nor moved.
class TeamBinding {
 public:
  /// Binds the `nthreads` threads of a team over `range` (a region of that many threads starts
  /// here). Throws InvalidArgument as plan_threads() does and when OpenMP grants fewer threads;
  /// TopologyError when a binding fails or does not hold (then every thread is restored).
  TeamBinding(const Locations& locations, const LocationRange& range, int nthreads);
  TeamBinding(const TeamBinding&) = delete;
  TeamBinding& operator=(const TeamBinding&) = delete;
  ~TeamBinding();

  /// The location of each thread (plan_threads()).
  [[nodiscard]] const std::vector<int>& plan() const noexcept { return plan_; }
  /// Each thread as bound and observed at construction (bound empty when nothing was bound).
  [[nodiscard]] const std::vector<LocatedThread>& rows() const noexcept { return rows_; }
  /// Observes the threads of a team of `nthreads` again (a region of that many threads): throws
  /// TopologyError naming the first thread that is not bound inside its location any more (the
  /// runtime ran the team on other threads, or someone rebound them). No-op off this machine.
  void check() const;

 private:
  const Locations* locations_;
  int nthreads_;
  bool bound_ = false;
  std::vector<int> plan_;
  std::vector<LocatedThread> rows_;
  std::vector<Bitmap> saved_;
  void restore() noexcept;
};

}  // namespace hympi::locality

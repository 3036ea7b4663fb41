#pragma once
// RAII ownership of MPI communicators, a verdict rank 0 decides for all, and the largest value over the ranks.
#include <mpi.h>

#include <cstdint>
#include <exception>
#include <functional>

namespace hympi {

/// Owns an MPI communicator and frees it on destruction (predefined handles are never freed).
class Comm {
 public:
  Comm() = default;
  /// Takes ownership of `comm`; `owned=false` wraps a handle someone else frees.
  explicit Comm(MPI_Comm comm, bool owned = true) noexcept : comm_(comm), owned_(owned) {}
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  Comm(Comm&& other) noexcept;
  Comm& operator=(Comm&& other) noexcept;
  ~Comm();

  /// The raw handle, for MPI calls.
  [[nodiscard]] MPI_Comm get() const noexcept { return comm_; }
  /// This process's rank in the communicator.
  [[nodiscard]] int rank() const;
  /// Number of processes in the communicator.
  [[nodiscard]] int size() const;
  /// Duplicates a communicator so a library can use it without tag clashes.
  [[nodiscard]] static Comm duplicate(MPI_Comm comm);
  /// MPI_Comm_split wrapped; the result is owned.
  [[nodiscard]] static Comm split(MPI_Comm comm, int color, int key);

 private:
  void release() noexcept;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
};

/// Runs `decide` on rank 0 of `comm` only and returns its answer on every rank (collective), as
/// verifiers that re-solve a problem on one rank need. When `decide` throws on rank 0, rank 0
/// rethrows it and every other rank throws Error, instead of waiting forever for the answer.
bool decide_on_root(MPI_Comm comm, const std::function<bool()>& decide);

/// The largest of every rank's `value` over `comm` (collective), as a result line reports a time or a size: the
/// slowest or largest rank's. Throws MpiError.
[[nodiscard]] double max_over(MPI_Comm comm, double value);
/// The same for a count (bytes, elements), exact at any size.
[[nodiscard]] std::uint64_t max_over(MPI_Comm comm, std::uint64_t value);

}  // namespace hympi

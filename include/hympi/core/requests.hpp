#pragma once
// RAII ownership of a set of persistent MPI requests: the pattern of every repeated exchange
// (halo, zone boundaries) is set up once and then started and completed as a whole.
#include <mpi.h>

#include <cstddef>
#include <span>
#include <vector>

namespace hympi {

/// A set of persistent sends and receives (MPI_Send_init / MPI_Recv_init), started together by
/// start() and completed together by wait(). The buffers must stay put while the set exists.
/// Destruction frees the requests; if the set is still active (an exception between start() and
/// wait()), its receives are cancelled and its sends completed first, so no buffer is touched
/// after destruction (a send nobody receives can block there). After MPI_Finalize destruction
/// makes no MPI call: the requests went with MPI.
class PersistentRequests {
 public:
  PersistentRequests() = default;
  PersistentRequests(const PersistentRequests&) = delete;
  PersistentRequests& operator=(const PersistentRequests&) = delete;
  PersistentRequests(PersistentRequests&& other) noexcept;
  PersistentRequests& operator=(PersistentRequests&& other) noexcept;
  ~PersistentRequests();

  /// Adds a receive of `buffer` from `source` (MPI_PROC_NULL allowed) with `tag` on `comm`.
  /// Throws Error while the set is active, MpiError when MPI refuses.
  void add_receive(std::span<double> buffer, int source, int tag, MPI_Comm comm);
  /// Adds a send of `buffer` to `dest` (MPI_PROC_NULL allowed) with `tag` on `comm`.
  /// Throws Error while the set is active, MpiError when MPI refuses.
  void add_send(std::span<const double> buffer, int dest, int tag, MPI_Comm comm);
  /// Adds a receive of single-precision `buffer`, as add_receive for doubles (fails alike).
  void add_receive(std::span<float> buffer, int source, int tag, MPI_Comm comm);
  /// Adds a send of single-precision `buffer`, as add_send for doubles (fails alike).
  void add_send(std::span<const float> buffer, int dest, int tag, MPI_Comm comm);
  /// Starts every request (nothing to do for an empty set). Throws Error when already active,
  /// MpiError when MPI fails.
  void start();
  /// Waits for every request. Throws Error when not active, MpiError when MPI fails.
  void wait();

  /// Whether start() was called without its wait().
  [[nodiscard]] bool active() const noexcept { return active_; }
  /// Number of requests.
  [[nodiscard]] std::size_t size() const noexcept { return requests_.size(); }

 private:
  void check_inactive(const char* what) const;
  void add(void* buffer, std::size_t count, MPI_Datatype type, int peer, int tag, MPI_Comm comm, bool receive);
  void release() noexcept;
  std::vector<MPI_Request> requests_;
  std::vector<bool> is_receive_;
  bool active_ = false;
};

}  // namespace hympi

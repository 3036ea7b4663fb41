#pragma once
// RAII ownership of MPI communicators.
#include <mpi.h>

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

}  // namespace hympi

#pragma once
// Exact, order-independent summation of doubles: the same sum for every decomposition.
#include <mpi.h>

#include <array>
#include <cstdint>

#include "hympi/grid/grid3d.hpp"

namespace hympi {

/// Accumulates doubles exactly in fixed point (a Kulisch-style long accumulator), so the total
/// is bitwise identical whatever the order, thread count or rank count that produced it.
/// NaN or infinity poisons the sum (value() returns NaN).
class ExactSum {
 public:
  /// Adds one value exactly.
  void add(double x) noexcept;
  /// Adds another accumulator exactly (e.g. another thread's).
  void merge(const ExactSum& other) noexcept;
  /// Sums the accumulators of all ranks of `comm` exactly (collective).
  void allreduce(MPI_Comm comm);
  /// The exact sum rounded to double by a fixed rule (same exact sum -> same double).
  [[nodiscard]] double value() const;

 private:
  static constexpr int kDigits = 68;  // 32-bit digits covering 2^-1074 .. 2^1024 plus carries
  void normalize() noexcept;
  std::array<std::int64_t, kDigits> digits_{};
  std::uint32_t pending_ = 0;  // additions since the last carry propagation
  std::int64_t invalid_ = 0;   // count of NaN/inf inputs
};

/// This rank's exact sum over the owned points of `grid` of term(x), x the point's offset in grid.data(): the (k, j)
/// rows split over a new OpenMP team (static schedule) and the threads' sums merged, the same bits for any thread
/// count. Call it outside a parallel region; `term` must not throw.
template <class T, class Term>
[[nodiscard]] ExactSum exact_sum_of_points(const Grid3D<T>& grid, Term term) {
  const auto n = grid.extent();
  ExactSum total;
#pragma omp parallel
  {
    ExactSum mine;
#pragma omp for collapse(2) schedule(static)
    for (long k = 0; k < n[2]; ++k)
      for (long j = 0; j < n[1]; ++j) {
        const long row = grid.index(0, j, k);
        for (long i = 0; i < n[0]; ++i) mine.add(term(row + i));
      }
#pragma omp critical(hympi_exact_sum_of_points)
    total.merge(mine);
  }
  return total;
}

}  // namespace hympi

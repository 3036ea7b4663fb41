#pragma once
// Exact, order-independent summation of doubles: the same sum for every decomposition.
#include <mpi.h>

#include <array>
#include <cstdint>

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

}  // namespace hympi

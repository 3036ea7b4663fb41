#pragma once
// The blade-row solver's pieces that need no MPI: block splits (blades over groups, J rows over ranks or
// threads), the implicit line solve along I, the interpolation of ghost planes between blades, the explicit row
// update and the row checksum. Every kernel works on whole rows with i innermost, so a row's arithmetic is the
// same whatever split of J or of the blades computes it: the state is bitwise identical on every layout.
#include <cstdint>
#include <span>
#include <vector>

namespace hympi::blades {

/// A half-open range [begin, end) of indices.
struct Range {
  long begin = 0;
  long end = 0;
  /// Number of indices in the range (0 when empty).
  [[nodiscard]] long size() const noexcept { return end > begin ? end - begin : 0; }
  /// Whether `index` lies in the range.
  [[nodiscard]] bool contains(long index) const noexcept { return index >= begin && index < end; }
};

/// Part `index` of `n` items split into `parts` contiguous ranges, the first n % parts of them one item longer
/// (blades over groups, J rows over the ranks or threads of a group). Throws InvalidArgument for n < 0,
/// parts < 1 or index outside [0, parts).
[[nodiscard]] Range block_range(long n, int parts, int index);

/// The part of block_range(n, parts, .) that holds `item`. Throws InvalidArgument for parts < 1 or item outside
/// [0, n).
[[nodiscard]] int block_owner(long n, int parts, long item);

/// The backward-Euler operator (1 + 2c) u_i - c (u_(i-1) + u_(i+1)) on one line along I, Dirichlet at both ends,
/// factorised once (Thomas): every (j, k) line of every blade has the same matrix, so a solve is two recurrences
/// of multiplies and adds, no division.
class LineSolver {
 public:
  /// Factorises the operator for a line of `points` (>= 3: two Dirichlet ends and the unknowns between) in
  /// float. Throws InvalidArgument for points < 3 or c negative or not finite.
  LineSolver(long points, float c);
  /// Solves for line[1..points-2] with line[0] and line[points-1] the Dirichlet values (kept) and rhs[1..points-2]
  /// the right-hand side; rhs is overwritten (scratch). Both spans hold `points` values (unchecked: hot path).
  void solve(std::span<float> rhs, std::span<float> line) const noexcept;
  /// Points per line, the ends included.
  [[nodiscard]] long points() const noexcept { return static_cast<long>(inverse_.size()) + 2; }
  /// The operator's coupling c.
  [[nodiscard]] float coupling() const noexcept { return c_; }

 private:
  float c_;
  std::vector<float> inverse_;  ///< 1 / pivot of each unknown's row
  std::vector<float> ratio_;    ///< c / pivot: the back substitution's factor
};

/// How a ghost row takes the neighbouring blade's rows when the neighbour's J nodes sit `offset` cells further
/// along J than this blade's (|offset| <= 1): ghost(j) = near nb(j) + far nb(j + step), linear in J, exact for
/// data linear in J and second order otherwise.
struct Interpolation {
  float near = 1.0F;
  float far = 0.0F;
  int step = 1;  ///< +1 or -1: which neighbouring row enters with weight `far`
  /// The weights for `offset` J cells: near = 1 - |offset|, far = |offset|, step its sign (+1 for 0). Throws
  /// InvalidArgument for |offset| > 1 or a non-finite offset.
  [[nodiscard]] static Interpolation for_offset(double offset);
};

/// ghost[i] = w.near * a[i] + w.far * b[i] over the row (all three of one length; unchecked: hot path).
void interpolate_row(const Interpolation& w, std::span<const float> a, std::span<const float> b,
                     std::span<float> ghost) noexcept;

/// The five rows of the explicit J/K stencil around one row, all of one length.
struct StencilRows {
  std::span<const float> centre, j_minus, j_plus, k_minus, k_plus;
};

/// The right-hand side of the implicit line solve, over the whole row:
/// rhs[i] = c + cy ((jm + jp) - 2 c) + cz ((km + kp) - 2 c) + source * shape_x[i], in this order, in float.
/// All spans of one length (unchecked: hot path).
void explicit_row(const StencilRows& rows, float cy, float cz, float source, std::span<const float> shape_x,
                  std::span<float> rhs) noexcept;

/// Sum over the row of element_hash(first_index + i, bits of row[i]) (mod 2^64): the row's share of the state's
/// order-independent checksum. Never fails.
[[nodiscard]] std::uint64_t row_checksum(std::span<const float> row, std::uint64_t first_index) noexcept;

}  // namespace hympi::blades

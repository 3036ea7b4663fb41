#pragma once
// The fourth-difference artificial dissipation of NPB's BT, SP and LU: the central five-point
// stencil, with one-sided forms at the two points next to each boundary. Lines need at least 6
// points (the reference's own limit). BT/SP (cfd.cpp) and LU (lu.cpp) both use it, for the
// forcing term and the right-hand side.
#include <array>
#include <cstddef>

namespace hympi::npb {

/// Which form of the stencil applies at position p of a line of n points (p in [1, n-2]).
enum class DissipationForm { first, second, interior, second_last, last };

/// The form at position p of a line of n points; p must be in [1, n-2] (not checked).
[[nodiscard]] constexpr DissipationForm dissipation_form(int p, int n) noexcept {
  if (p == 1) return DissipationForm::first;
  if (p == 2) return DissipationForm::second;
  if (p == n - 3) return DissipationForm::second_last;
  if (p == n - 2) return DissipationForm::last;
  return DissipationForm::interior;
}

/// The stencil of form F applied at v, neighbours at stride s (in doubles).
template <DissipationForm F>
[[gnu::always_inline]] constexpr double dissipation(const double* v, std::ptrdiff_t s) noexcept {
  if constexpr (F == DissipationForm::first) return 5.0 * v[0] - 4.0 * v[s] + v[2 * s];
  if constexpr (F == DissipationForm::second) return -4.0 * v[-s] + 6.0 * v[0] - 4.0 * v[s] + v[2 * s];
  if constexpr (F == DissipationForm::second_last) return v[-2 * s] - 4.0 * v[-s] + 6.0 * v[0] - 4.0 * v[s];
  if constexpr (F == DissipationForm::last) return v[-2 * s] - 4.0 * v[-s] + 5.0 * v[0];
  if constexpr (F == DissipationForm::interior) {
    return v[-2 * s] - 4.0 * v[-s] + 6.0 * v[0] - 4.0 * v[s] + v[2 * s];
  }
}

/// The weights of form f's stencil on the points -2 .. +2 from it (0 for a point the form leaves out), for code
/// that applies the forms of a line's points at once (LU's vector lanes).
[[nodiscard]] constexpr std::array<double, 5> dissipation_weights(DissipationForm f) noexcept {
  switch (f) {
    case DissipationForm::first: return {0.0, 0.0, 5.0, -4.0, 1.0};
    case DissipationForm::second: return {0.0, -4.0, 6.0, -4.0, 1.0};
    case DissipationForm::second_last: return {1.0, -4.0, 6.0, -4.0, 0.0};
    case DissipationForm::last: return {1.0, -4.0, 5.0, 0.0, 0.0};
    case DissipationForm::interior: break;
  }
  return {1.0, -4.0, 6.0, -4.0, 1.0};
}

namespace detail {
/// Whether dissipation_weights(F) is dissipation<F>'s stencil: the stencil applied to each unit point.
template <DissipationForm F>
constexpr bool weights_match_stencil() noexcept {
  const std::array<double, 5> w = dissipation_weights(F);
  for (int o = 0; o < 5; ++o) {
    std::array<double, 5> unit{};
    unit[std::size_t(o)] = 1.0;
    if (dissipation<F>(unit.data() + 2, 1) != w[std::size_t(o)]) return false;
  }
  return true;
}
static_assert(weights_match_stencil<DissipationForm::first>() && weights_match_stencil<DissipationForm::second>() &&
              weights_match_stencil<DissipationForm::interior>() &&
              weights_match_stencil<DissipationForm::second_last>() && weights_match_stencil<DissipationForm::last>());
}  // namespace detail

/// The stencil at position p of a line of n points (p in [1, n-2], not checked), stride s.
[[gnu::always_inline]] inline double dissipation(const double* v, std::ptrdiff_t s, int p, int n) noexcept {
  switch (dissipation_form(p, n)) {
    case DissipationForm::first: return dissipation<DissipationForm::first>(v, s);
    case DissipationForm::second: return dissipation<DissipationForm::second>(v, s);
    case DissipationForm::second_last: return dissipation<DissipationForm::second_last>(v, s);
    case DissipationForm::last: return dissipation<DissipationForm::last>(v, s);
    case DissipationForm::interior: break;
  }
  return dissipation<DissipationForm::interior>(v, s);
}

/// r[q] -= dssp * (stencil of form F at u + q, stride s) for q in [lo, hi): one form over a
/// whole run, so the loop is a straight vectorisable sweep.
template <DissipationForm F>
[[gnu::always_inline]] inline void subtract_dissipation(double* r, const double* u, std::ptrdiff_t s, int lo, int hi,
                                                        double dssp) noexcept {
  for (int q = lo; q < hi; ++q) r[q] -= dssp * dissipation<F>(u + q, s);
}

}  // namespace hympi::npb

#include "hympi/npb/lu.hpp"

#include "hympi/core/error.hpp"
#include "hympi/npb/dissipation.hpp"
#include "hympi/npb/jacobian.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>

namespace hympi::npb {

LuConstants LuConstants::make(const ZoneGeometry& g, double dt, double omega) {
  LuConstants c{};
  c.cfd = CfdConstants::make(g, dt);
  c.dxi = 1.0 / (double(g.gx_size) / double(g.x_zones) - 1);
  c.deta = 1.0 / (double(g.gy_size) / double(g.y_zones) - 1);
  c.dzeta = 1.0 / double(g.gz_size - 1);
  c.tx1 = 1.0 / (c.dxi * c.dxi);
  c.tx2 = 1.0 / (2.0 * c.dxi);
  c.tx3 = 1.0 / c.dxi;
  c.ty1 = 1.0 / (c.deta * c.deta);
  c.ty2 = 1.0 / (2.0 * c.deta);
  c.ty3 = 1.0 / c.deta;
  c.tz1 = 1.0 / (c.dzeta * c.dzeta);
  c.tz2 = 1.0 / (2.0 * c.dzeta);
  c.tz3 = 1.0 / c.dzeta;
#pragma GCC unroll 5
  for (int m = 0; m < 5; ++m) {
    c.dx[m] = 0.75;
    c.dy[m] = 0.75;
    c.dz[m] = 1.0;
  }
  c.dssp = std::max({c.dx[0], c.dy[0], c.dz[0]}) / 4.0;
  c.dt = dt;
  c.omega = omega;
  c.c1 = 1.4;
  c.c2 = 0.4;
  c.c3 = 0.1;
  c.c4 = 1.0;
  c.c5 = 1.4;
  return c;
}

namespace {

// Axis A's mesh constants: t1 (second differences), t2 (central differences), t3 (viscous fluxes), and the
// second-difference coefficients dd.
struct AxisConstants {
  double t1, t2, t3;
  const double* dd;
};

template <int A>
AxisConstants axis_constants(const LuConstants& c) {
  if constexpr (A == 1) return {c.tx1, c.tx2, c.tx3, c.dx};
  if constexpr (A == 2) return {c.ty1, c.ty2, c.ty3, c.dy};
  if constexpr (A == 3) return {c.tz1, c.tz2, c.tz3, c.dz};
}

// The residual, the forcing and the sweeps' Jacobian blocks are computed kRowLanes points of a row at a time,
// one point per lane of a vector. Scalar, they took ~275 (the residual) and ~200 (a sweep's blocks) cycles a
// point (class A, one thread, perf and timers): a point's five components chained through the arithmetic,
// which no compiler spreads over a register, while neighbouring points of a row are independent. The lanes read
// u from its copy in components (derived_scalars writes it with 1/rho and q), so that one load fetches one
// component of kRowLanes points. Eight doubles are one AVX-512 register; four one AVX2 register, where the build
// has no AVX-512.
#if defined(__AVX512F__)
constexpr int kRowLanes = 8;
#else
constexpr int kRowLanes = 4;
#endif
using RowLanes = double __attribute__((vector_size(kRowLanes * sizeof(double))));

// RowLanes are passed by reference and returned through out-parameters: by value they would change the ABI
// between builds with and without the vector extension their width needs (GCC's -Wpsabi).
[[gnu::always_inline]] inline void load_lanes(RowLanes& v, const double* p) { std::memcpy(&v, p, sizeof v); }

// A zone field in components: component m of point p at data[m * stride + p].
struct Components {
  const double* data;
  std::size_t stride;
  [[gnu::always_inline]] void load_point(RowLanes (&v)[5], std::ptrdiff_t p) const {
#pragma GCC unroll 5
    for (int m = 0; m < 5; ++m) load_lanes(v[m], data + m * stride + p);
  }
};

// Doubles after a field's last point (each component's, in components) that lane loads may read: the lanes of a
// row's last block reach up to kRowLanes - 1 points past its end, and the x neighbours two more.
constexpr std::size_t kRowLaneSlack = kRowLanes + 2;

// Doubles between two components of a zone field in components (and the length of 1/rho and q): the zone's
// points, padding included, and the slack.
std::size_t component_stride(const ZoneDims& d) { return d.size1() + kRowLaneSlack; }

// Doubles per weight of the x dissipation's table: a row's points and the lanes of a block starting at its last
// interior point.
std::size_t x_weight_pitch(const ZoneDims& d) { return std::size_t(d.nxmax) + kRowLanes; }

// The sweeps' tables (Jacobian blocks of a k plane) hold `entries` values per interior point, grouped by the
// lanes that make them: group g of row j (points 1 + g * kRowLanes ...) at [(j * groups + g) * entries *
// kRowLanes], entry e of its lane l at [e * kRowLanes + l]. The lanes store an entry of kRowLanes points as one
// vector; a sweep reads a point's entries kRowLanes doubles apart, a stride the compiler knows.
std::size_t lane_groups(const ZoneDims& d) { return std::size_t(d.nx - 2 + kRowLanes - 1) / kRowLanes; }

// Where interior point i of row j keeps entry 0 in a table of `entries` values per point.
[[gnu::always_inline]] inline std::size_t lane_slot(const ZoneDims& d, int entries, int j, int i) {
  const auto g = std::size_t(i - 1) / kRowLanes, l = std::size_t(i - 1) % kRowLanes;
  return (std::size_t(j) * lane_groups(d) + g) * std::size_t(entries) * kRowLanes + l;
}

[[gnu::always_inline]] inline void store_lanes(double* p, const RowLanes& v) { std::memcpy(p, &v, sizeof v); }

// The inviscid flux along axis A of the point v (5 components) with 1/rho `r` and kinetic energy `q`.
template <int A>
[[gnu::always_inline]] inline void inviscid_flux(const LuConstants& c, const RowLanes (&v)[5], const RowLanes& r,
                                                 const RowLanes& q, RowLanes (&f)[5]) {
  const RowLanes ua = v[A] * r;
  f[0] = v[A];
#pragma GCC unroll 5
  for (int m = 1; m < 4; ++m) f[m] = v[m] * ua;
  f[A] += c.c2 * (v[4] - q);
  f[4] = (c.c1 * v[4] - c.c2 * q) * ua;
}

// The viscous flux along axis A at the half point between vm (1/rho rm) and vi (1/rho ri), its entries 1-4.
template <int A>
[[gnu::always_inline]] inline void viscous_flux(const LuConstants& c, double t3, const RowLanes (&vi)[5],
                                                const RowLanes (&vm)[5], const RowLanes& ri, const RowLanes& rm,
                                                RowLanes (&f)[5]) {
  const RowLanes u2i = ri * vi[1], u3i = ri * vi[2], u4i = ri * vi[3], u5i = ri * vi[4];
  const RowLanes u2m = rm * vm[1], u3m = rm * vm[2], u4m = rm * vm[3], u5m = rm * vm[4];
  const RowLanes ui[4] = {RowLanes{}, u2i, u3i, u4i};
  const RowLanes um[4] = {RowLanes{}, u2m, u3m, u4m};
#pragma GCC unroll 5
  for (int m = 1; m < 4; ++m) f[m] = (m == A ? (4.0 / 3.0) * t3 : t3) * (ui[m] - um[m]);
  f[4] = 0.5 * (1.0 - c.c1 * c.c5) * t3 * ((u2i * u2i + u3i * u3i + u4i * u4i) - (u2m * u2m + u3m * u3m + u4m * u4m)) +
         (1.0 / 6.0) * t3 * (ui[A] * ui[A] - um[A] * um[A]) + c.c1 * c.c5 * t3 * (u5i - u5m);
}

// The dissipation stencil along one axis at a block's lanes: its five weights (dissipation_weights, per lane
// along x, the row's form along y and z) and the offsets of the neighbours two points away, 0 where the form
// has no such neighbour (it may lie outside the zone; its weight 0 then multiplies the point itself).
struct DissipationLanes {
  RowLanes weight[5];
  std::ptrdiff_t before2, after2;
};

// The dissipation of form `f` along an axis of stride s, the same at every lane.
DissipationLanes row_dissipation(DissipationForm f, std::ptrdiff_t s) {
  const std::array<double, 5> w = dissipation_weights(f);
  DissipationLanes d{};
#pragma GCC unroll 5
  for (int o = 0; o < 5; ++o) d.weight[o] = RowLanes{} + w[o];
  d.before2 = w[0] != 0.0 ? -2 * s : 0;
  d.after2 = w[4] != 0.0 ? 2 * s : 0;
  return d;
}

// Axis A's part of LU's operator at the lanes v (points p.., 1/rho r0), neighbours s points apart, added to o:
// the central difference of the inviscid fluxes, the difference of the viscous fluxes at the half points, the
// second differences and the dissipation `dw`.
template <int A>
[[gnu::always_inline]] inline void add_axis(const LuConstants& c, const AxisConstants& ax, const Components& w,
                                            const double* rho, const double* q, std::ptrdiff_t p, std::ptrdiff_t s,
                                            const RowLanes (&v)[5], const RowLanes& r0, const DissipationLanes& dw,
                                            RowLanes (&o)[5]) {
  RowLanes vm[5], vp[5], rm, rp, qm, qp;
  w.load_point(vm, p - s);
  w.load_point(vp, p + s);
  load_lanes(rm, rho + p - s);
  load_lanes(rp, rho + p + s);
  load_lanes(qm, q + p - s);
  load_lanes(qp, q + p + s);
  RowLanes fim[5], fip[5], fvm[5] = {}, fvp[5] = {};
  inviscid_flux<A>(c, vm, rm, qm, fim);
  inviscid_flux<A>(c, vp, rp, qp, fip);
  viscous_flux<A>(c, ax.t3, v, vm, r0, rm, fvm);
  viscous_flux<A>(c, ax.t3, vp, v, rp, r0, fvp);
  const double tv = ax.t3 * c.c3 * c.c4;
#pragma GCC unroll 5
  for (int m = 0; m < 5; ++m) {
    RowLanes v2m, v2p;
    load_lanes(v2m, w.data + m * w.stride + p + dw.before2);
    load_lanes(v2p, w.data + m * w.stride + p + dw.after2);
    const RowLanes dissipation =
        (((dw.weight[0] * v2m + dw.weight[1] * vm[m]) + dw.weight[2] * v[m]) + dw.weight[3] * vp[m]) +
        dw.weight[4] * v2p;
    const RowLanes second = ax.dd[m] * ax.t1 * (vm[m] - 2.0 * v[m] + vp[m]);
    if (m == 0) {
      o[0] += (-ax.t2 * (fip[0] - fim[0]) + second) - c.dssp * dissipation;
    } else {
      o[m] += (-ax.t2 * (fip[m] - fim[m]) + (tv * (fvp[m] - fvm[m]) + second)) - c.dssp * dissipation;
    }
  }
}

// 1/rho and the kinetic energy of every point of the field u, and u in components (w, of stride w_stride): an
// orphaned `omp for`, inside a parallel region.
void derived_scalars(const ZoneDims& d, const double* u, double* rho, double* q, double* w, std::size_t w_stride) {
#pragma omp for collapse(2) schedule(static)
  for (int k = 0; k < d.nz; ++k) {
    for (int j = 0; j < d.ny; ++j) {
      for (int i = 0; i < d.nx; ++i) {
        const std::size_t p = d.at(i, j, k);
        const double* v = u + 5 * p;
        const double tmp = 1.0 / v[0];
        rho[p] = tmp;
        q[p] = 0.5 * (v[1] * v[1] + v[2] * v[2] + v[3] * v[3]) * tmp;
#pragma GCC unroll 5
        for (int m = 0; m < 5; ++m) w[m * w_stride + p] = v[m];
      }
    }
  }
}

// Where LU's operator goes: interleaved, five doubles a point (the residual, as the sweeps read it), or in
// components of stride `stride` (the forcing, as the operator reads it back).
struct OperatorOut {
  double* data;
  std::size_t stride;  ///< 0: interleaved
  [[gnu::always_inline]] double& at(std::size_t p, int m) const {
    return stride == 0 ? data[5 * p + m] : data[m * stride + p];
  }
};

// Adds LU's operator on the field w (components; 1/rho and kinetic energy from derived_scalars) to the interior
// points of `out`: each point's x, y and z terms in that order, as the reference's whole-field passes add them,
// onto -minus (components of w's stride) or onto 0 without it. With `minus`, out's boundary points are set to
// -minus; without, out is left as it is there. Row by row (an orphaned `omp for`), kRowLanes points at a time, the
// fluxes at neighbours and half points computed where they are needed: one pass, one barrier. Each point's value
// depends on its position in the zone only (the lanes of every block are computed alike, nothing scalar), so
// any thread count gives the same bits. `x_weights` holds the x dissipation's weights, weight o of point i at
// [o * x_pitch + i].
void add_operator(const LuConstants& c, const ZoneDims& d, const Components& w, const double* rho, const double* q,
                  const double* x_weights, std::size_t x_pitch, const double* minus, const OperatorOut& out) {
  const std::ptrdiff_t py = d.nxmax, pz = py * d.ny;
  const AxisConstants ax = axis_constants<1>(c), ay = axis_constants<2>(c), az = axis_constants<3>(c);
#pragma omp for collapse(2) schedule(static)
  for (int k = 0; k < d.nz; ++k) {
    for (int j = 0; j < d.ny; ++j) {
      const std::size_t row = d.at(0, j, k);
      const bool boundary = k == 0 || k == d.nz - 1 || j == 0 || j == d.ny - 1;
      if (minus != nullptr) {  // a boundary row's every point, an interior row's first and last
        for (int i = 0; i < d.nx; i += boundary ? 1 : d.nx - 1) {
#pragma GCC unroll 5
          for (int m = 0; m < 5; ++m) out.at(row + i, m) = -minus[m * w.stride + row + i];
        }
      }
      if (boundary) continue;
      const DissipationLanes dy = row_dissipation(dissipation_form(j, d.ny), py);
      const DissipationLanes dz = row_dissipation(dissipation_form(k, d.nz), pz);
      DissipationLanes dx{};
      dx.before2 = -2;
      dx.after2 = 2;
      for (int i0 = 1; i0 < d.nx - 1; i0 += kRowLanes) {
        const std::ptrdiff_t p = std::ptrdiff_t(row) + i0;
        RowLanes v[5], r0, o[5];
        w.load_point(v, p);
        load_lanes(r0, rho + p);
#pragma GCC unroll 5
        for (int m = 0; m < 5; ++m) {
          if (minus != nullptr) {
            load_lanes(o[m], minus + m * w.stride + p);
            o[m] = -o[m];
          } else {
            o[m] = RowLanes{};
          }
          load_lanes(dx.weight[m], x_weights + m * x_pitch + i0);
        }
        add_axis<1>(c, ax, w, rho, q, p, 1, v, r0, dx, o);
        add_axis<2>(c, ay, w, rho, q, p, py, v, r0, dy, o);
        add_axis<3>(c, az, w, rho, q, p, pz, v, r0, dz, o);
        const int lanes = std::min(kRowLanes, d.nx - 1 - i0);
        for (int l = 0; l < lanes; ++l) {
#pragma GCC unroll 5
          for (int m = 0; m < 5; ++m) out.at(std::size_t(p) + l, m) = o[m][l];
        }
      }
    }
  }
}
// Static block of rows q in [0, count) for thread t of nth, as OpenMP's static schedule makes it.
inline void row_block(int count, int t, int nth, int& lo, int& hi) {
  const int chunk = count / nth;
  const int rest = count % nth;
  lo = t * chunk + std::min(t, rest);
  hi = lo + chunk + (t < rest ? 1 : 0);
}

// Rows of the SSOR sweeps' point-to-point chains advanced together. Point i of a row needs
// point i - 1 of the same row and point i of the row before it, so rows r and r + 1 are
// independent once r + 1 trails by one point: interleaving kSkewedRows such chains gives the
// core that many independent dependency chains instead of one latency-bound chain.
constexpr int kSkewedRows = 2;

// Calls point(i, r) for i in [0, len) and r in [0, rows), rows <= kSkewedRows, in the skewed
// order above: step s handles point s - r of row r.
template <class Point>
[[gnu::always_inline]] inline void skewed_rows(int len, int rows, Point&& point) {
  for (int s = 0; s < len + rows - 1; ++s) {
#pragma GCC unroll 4
    for (int r = 0; r < kSkewedRows; ++r) {
      const int i = s - r;
      if (r < rows && i >= 0 && i < len) point(i, r);
    }
  }
}

// Waits until `flag` reaches `value`. The wait is normally one plane's worth of work, so spin
// (with a pause hint) and keep the core: yielding early hands it to whatever else is runnable
// for a whole time slice. Only a very long wait (oversubscribed cores) yields.
inline void wait_for(const std::atomic<int>& flag, int value) {
  long spins = 0;
  while (flag.load(std::memory_order_acquire) < value) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (++spins > (1L << 18)) {
      std::this_thread::yield();
      spins = 0;
    }
  }
}

// LU's off-diagonal blocks (s2 * F - dtt1 * N - dtt1 * dd on the diagonal) have 7 structural
// zeros for every axis A: the mass row has only (0,0) and (0,A), a tangential row T has no
// (T,other tangential) and no (T,4). The blocks are kept as their 18 other entries, row by row,
// so the Jacobian loop stores 18 numbers a block and the sweeps multiply 18, not 25.
constexpr int kBlockEntries = 18;

constexpr bool block_zero(int a, int m, int n) {
  if (m == n) return false;
  if (m == 0) return n != a;
  if (m == a || m == 4) return false;
  return n != 0 && n != a;
}

// Where entry (m, n) of axis a's block is kept; -1 for a structural zero.
constexpr int block_slot(int a, int m, int n) {
  if (block_zero(a, m, n)) return -1;
  int s = 0;
  for (int e = 0; e < 5 * m + n; ++e) s += block_zero(a, e / 5, e % 5) ? 0 : 1;
  return s;
}
static_assert(block_slot(1, 4, 4) == kBlockEntries - 1 && block_slot(2, 4, 4) == kBlockEntries - 1 &&
              block_slot(3, 4, 4) == kBlockEntries - 1);

// Row M of axis A's block times x, over the entries that are not structural zeros, as a shallow
// tree: the x neighbour's product is on the wavefront's chain from point to point.
// The block's entries are kRowLanes doubles apart (lane_slot).
template <int A, int M>
[[gnu::always_inline]] inline double block_row(const double* b, const double* x) {
  auto at = [&](auto n) __attribute__((always_inline)) {
    constexpr int N = decltype(n)::value;
    return b[block_slot(A, M, N) * kRowLanes] * x[N];
  };
  using I0 = std::integral_constant<int, 0>;
  using I1 = std::integral_constant<int, 1>;
  using I2 = std::integral_constant<int, 2>;
  using I3 = std::integral_constant<int, 3>;
  using I4 = std::integral_constant<int, 4>;
  using IA = std::integral_constant<int, A>;
  using IM = std::integral_constant<int, M>;
  if constexpr (M == 0) {
    return at(I0{}) + at(IA{});
  } else if constexpr (M == A || M == 4) {
    return ((at(I0{}) + at(I1{})) + (at(I2{}) + at(I3{}))) + at(I4{});
  } else {
    return (at(I0{}) + at(IA{})) + at(IM{});
  }
}

// Calls f(integral_constant<int, M>) for M = 0..4.
template <class F>
[[gnu::always_inline]] inline void for_rows(F&& f) {
  [&]<int... M>(std::integer_sequence<int, M...>) __attribute__((always_inline)) {
    (f(std::integral_constant<int, M>{}), ...);
  }(std::make_integer_sequence<int, 5>{});
}

// The diagonal block of jacld/jacu is lower triangular (row 0 is (d00, 0, 0, 0, 0), rows 1-3 have
// only (m, 0) and (m, m)), so solving with it is a forward substitution: no elimination, no
// division on the wavefront's chain. It is kept as its 7 off-diagonal entries and the
// reciprocals of its pivots 1-4 (d00 is the same at every point: its reciprocal is passed).
constexpr int kDiagEntries = 11;

// Solves D x = t in place, D kept as above, its entries kRowLanes doubles apart (lane_slot).
[[gnu::always_inline]] inline void solve_lower(const double* d, double r0, double* t) {
  constexpr std::size_t ds = kRowLanes;
  const double x0 = t[0] * r0;
  const double x1 = (t[1] - d[0] * x0) * d[7 * ds];
  const double x2 = (t[2] - d[ds] * x0) * d[8 * ds];
  const double x3 = (t[3] - d[2 * ds] * x0) * d[9 * ds];
  t[4] = (t[4] - ((d[3 * ds] * x0 + d[4 * ds] * x1) + (d[5 * ds] * x2 + d[6 * ds] * x3))) * d[10 * ds];
  t[0] = x0;
  t[1] = x1;
  t[2] = x2;
  t[3] = x3;
}

// One off-diagonal block of LU's jacld/jacu for axis A at the lanes' neighbour points (components of
// p + offset of `w`, 1/rho and kinetic energy sq there): s2 * F - dtt1 * N - dtt1 * dd on the diagonal, with
// s2 = -dt*t2 (lower) or +dt*t2 (upper) and dtt1 = dt*t1, both times the relaxation factor omega, which the
// sweeps would otherwise multiply in on the chain. Entry e of the block goes to o[e * kRowLanes] (lane_slot);
// the structural zeros cost no flop and no store.
template <int A>
[[gnu::always_inline]] inline void jac_block(const Components& w, const double* rho, const double* sq,
                                             std::ptrdiff_t n, double s2, double dtt1, const double* dd,
                                             const JacobianConstants& k, double* o) {
  RowLanes un[5], rn, sqn;
  w.load_point(un, n);
  load_lanes(rn, rho + n);
  load_lanes(sqn, sq + n);
  // f and nv by reference: lanes by value would change the ABI between builds (GCC's -Wpsabi).
  auto put = [&](auto m, auto nn, const auto& f, const auto& nv) __attribute__((always_inline)) {
    using F = std::remove_cvref_t<decltype(f)>;
    using NV = std::remove_cvref_t<decltype(nv)>;
    constexpr int M = decltype(m)::value;
    constexpr int N = decltype(nn)::value;
    constexpr int slot = block_slot(A, M, N);
    constexpr bool f_zero = std::is_same_v<F, Zero>;
    static_assert((slot < 0) == (f_zero && M != N), "block_zero disagrees with the flux Jacobians");
    if constexpr (slot >= 0) {
      RowLanes v{};
      if constexpr (f_zero) {
        static_assert(std::is_same_v<NV, Zero>, "a viscous term without an inviscid one");
        v += -dtt1 * dd[M];
      } else {
        if constexpr (std::is_same_v<F, double>) {
          v += s2 * f;  // an entry the same at every point
        } else {
          v = s2 * f;
        }
        if constexpr (!std::is_same_v<NV, Zero>) v = v - dtt1 * nv;
        if constexpr (M == N) v = v - dtt1 * dd[M];
      }
      store_lanes(o + std::size_t(slot) * kRowLanes, v);
    }
  };
  flux_jacobian_entries<A>(un, rn, sqn * rn, sqn, k, put);
}

}  // namespace

LuZone::LuZone(const LuConstants& c, const ZoneDims& dims, const ZonePlacement& placement)
    : c_(c),
      topology_(placement.topology()),
      d_(dims),
      u_(make_untouched_array<double>(dims.size5())),
      rsd_(make_untouched_array<double>(dims.size5())),
      frct_(make_untouched_array<double>(5 * component_stride(dims))),
      qs_(make_untouched_array<double>(component_stride(dims))),
      rho_i_(make_untouched_array<double>(component_stride(dims))),
      u_components_(make_untouched_array<double>(5 * component_stride(dims))),
      x_weights_(5 * x_weight_pitch(dims), 0.0),
      x_blk_(kBlockEntries * kRowLanes * lane_groups(dims) * dims.ny, 0.0),
      y_blk_(x_blk_.size(), 0.0),
      d_blk_(kDiagEntries * kRowLanes * lane_groups(dims) * dims.ny, 0.0),
      tv_(5 * std::size_t(dims.nxmax) * dims.ny, 0.0) {
  if (dims.nx < 6 || dims.ny < 6 || dims.nz < 6) {
    throw InvalidArgument("LU-MZ zone " + std::to_string(dims.nx) + "x" + std::to_string(dims.ny) + "x" +
                          std::to_string(dims.nz) + " is below 6 points in some direction");
  }
  touch_by_team(placement);
  const std::size_t pitch = x_weight_pitch(dims);
  for (int i = 1; i < dims.nx - 1; ++i) {
    const std::array<double, 5> w = dissipation_weights(dissipation_form(i, dims.nx));
    for (std::size_t o = 0; o < 5; ++o) x_weights_[o * pitch + std::size_t(i)] = w[o];
  }
}

void LuZone::touch_by_team(const ZonePlacement& placement) {
  // By (k, j) rows with the static schedule of every pass but the sweeps (which share each plane's rows out): on a
  // NUMA node a row's pages go to the node of the thread that computes it. Built on one thread (--thread-work
  // zones), the team is that thread.
  const ZoneDims& d = d_;
  const std::size_t stride = component_stride(d), row = std::size_t(d.nxmax);
  double *u = u_.get(), *rsd = rsd_.get(), *frct = frct_.get(), *qs = qs_.get(), *rho = rho_i_.get(),
         *w = u_components_.get();
  placement.run([=] {
#pragma omp for collapse(2) schedule(static)
    for (int k = 0; k < d.nz; ++k) {
      for (int j = 0; j < d.ny; ++j) {
        const std::size_t p = d.at(0, j, k);
        std::fill_n(u + 5 * p, 5 * row, 0.0);
        std::fill_n(rsd + 5 * p, 5 * row, 0.0);
        std::fill_n(qs + p, row, 0.0);
        std::fill_n(rho + p, row, 0.0);
        for (std::size_t c = 0; c < 5; ++c) {
          std::fill_n(frct + c * stride + p, row, 0.0);
          std::fill_n(w + c * stride + p, row, 0.0);
        }
      }
    }
#pragma omp single
    {
      // The slack after each component, which the vector lanes read past a row's end.
      const std::size_t slack = stride - d.size1();
      std::fill_n(qs + d.size1(), slack, 0.0);
      std::fill_n(rho + d.size1(), slack, 0.0);
      for (std::size_t c = 0; c < 5; ++c) {
        std::fill_n(frct + c * stride + d.size1(), slack, 0.0);
        std::fill_n(w + c * stride + d.size1(), slack, 0.0);
      }
    }
  });
}

void LuZone::set_boundary() {
  const ZoneDims& d = d_;
  // LU's exact solution uses zone-local coordinates in [0, 1].
  auto exact = [&](int i, int j, int k, double* out) {
    c_.cfd.exact_solution(double(i) / (d.nx - 1), double(j) / (d.ny - 1), double(k) / (d.nz - 1), out);
  };
  double* u = u_.get();
  for (int j = 0; j < d.ny; ++j) {
    for (int i = 0; i < d.nx; ++i) {
      exact(i, j, 0, u + 5 * d.at(i, j, 0));
      exact(i, j, d.nz - 1, u + 5 * d.at(i, j, d.nz - 1));
    }
  }
  for (int k = 0; k < d.nz; ++k) {
    for (int i = 0; i < d.nx; ++i) {
      exact(i, 0, k, u + 5 * d.at(i, 0, k));
      exact(i, d.ny - 1, k, u + 5 * d.at(i, d.ny - 1, k));
    }
  }
  for (int k = 0; k < d.nz; ++k) {
    for (int j = 0; j < d.ny; ++j) {
      exact(0, j, k, u + 5 * d.at(0, j, k));
      exact(d.nx - 1, j, k, u + 5 * d.at(d.nx - 1, j, k));
    }
  }
}

void LuZone::set_interior() {
  const ZoneDims& d = d_;
  auto exact = [&](int i, int j, int k, double* out) {
    c_.cfd.exact_solution(double(i) / (d.nx - 1), double(j) / (d.ny - 1), double(k) / (d.nz - 1), out);
  };
  double* u = u_.get();
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 1; k < d.nz - 1; ++k) {
    for (int j = 1; j < d.ny - 1; ++j) {
      const double zeta = double(k) / (d.nz - 1);
      const double eta = double(j) / (d.ny - 1);
      for (int i = 1; i < d.nx - 1; ++i) {
        const double xi = double(i) / (d.nx - 1);
        double e1[5], en[5], f1[5], fn[5], g1[5], gn[5];
        exact(0, j, k, e1);
        exact(d.nx - 1, j, k, en);
        exact(i, 0, k, f1);
        exact(i, d.ny - 1, k, fn);
        exact(i, j, 0, g1);
        exact(i, j, d.nz - 1, gn);
        double* p = u + 5 * d.at(i, j, k);
#pragma GCC unroll 5
        for (int m = 0; m < 5; ++m) {
          const double pxi = (1.0 - xi) * e1[m] + xi * en[m];
          const double peta = (1.0 - eta) * f1[m] + eta * fn[m];
          const double pzeta = (1.0 - zeta) * g1[m] + zeta * gn[m];
          p[m] = pxi + peta + pzeta - pxi * peta - peta * pzeta - pzeta * pxi + pxi * peta * pzeta;
        }
      }
    }
  }
}

void LuZone::compute_forcing() {
  const ZoneDims& d = d_;
  std::vector<double> exact(d.size5(), 0.0);
  for (int k = 0; k < d.nz; ++k) {
    for (int j = 0; j < d.ny; ++j) {
      for (int i = 0; i < d.nx; ++i) {
        c_.cfd.exact_solution(double(i) / (d.nx - 1), double(j) / (d.ny - 1), double(k) / (d.nz - 1),
                              exact.data() + 5 * d.at(i, j, k));
      }
    }
  }
  const std::size_t stride = component_stride(d);
  std::fill_n(frct_.get(), 5 * stride, 0.0);
  std::vector<double> rho(stride, 0.0), q(stride, 0.0), components(5 * stride, 0.0);
#pragma omp parallel
  {
    derived_scalars(d, exact.data(), rho.data(), q.data(), components.data(), stride);
    add_operator(c_, d, {components.data(), stride}, rho.data(), q.data(), x_weights_.data(), x_weight_pitch(d),
                 nullptr, {frct_.get(), stride});
  }
}

void LuZone::compute_rhs() {
#pragma omp parallel
  compute_rhs_body();
}

void LuZone::compute_rhs_body() {
  const std::size_t stride = component_stride(d_);
  derived_scalars(d_, u_.get(), rho_i_.get(), qs_.get(), u_components_.get(), stride);
  add_operator(c_, d_, {u_components_.get(), stride}, rho_i_.get(), qs_.get(), x_weights_.data(),
               x_weight_pitch(d_), frct_.get(), {rsd_.get(), 0});
}

void LuZone::initialize() {
  set_boundary();
  set_interior();
  if (!forcing_ready_) {
    compute_forcing();
    forcing_ready_ = true;
  }
  compute_rhs();
}

void LuZone::step() { ssor(); }

// ssor() ends with compute_rhs_body() on the new u and the next ssor() starts from that residual
// (and rho_i, qs): each point's value depends only on u along its lines, not on the thread count, so
// recomputing it here gives the very bits the uninterrupted run carries into the next step.
void LuZone::restored() { compute_rhs(); }

void LuZone::ssor() {
  const ZoneDims& d = d_;
  const LuConstants& c = c_;
  const int rows = d.ny - 2;
  const int nthreads = omp_get_max_threads();
  // Progress of each thread through the k planes: a thread may solve its rows of plane k once
  // the thread owning the rows before it has finished that plane (the reference's sync_left).
  auto progress = std::make_unique<std::atomic<int>[]>(static_cast<std::size_t>(nthreads));
  double* v = rsd_.get();
  const double* rho = rho_i_.get();
  const double* qs = qs_.get();
  const double dt = c.dt;
  const double dt2 = dt * 2.0;
  const double r43 = 4.0 / 3.0;
  const double c34 = c.c3 * c.c4;
  const double c1345 = c.c1 * c.c3 * c.c4 * c.c5;
  const double sx = c.tx1 * r43 + c.ty1 + c.tz1;
  const double sy = c.tx1 + c.ty1 * r43 + c.tz1;
  const double sz = c.tx1 + c.ty1 + c.tz1 * r43;
  const double ssum[4] = {0.0, sx, sy, sz};
  const double g[4] = {0.0, c.tx1 * (r43 * c34 - c1345) + c.ty1 * (c34 - c1345) + c.tz1 * (c34 - c1345),
                       c.tx1 * (c34 - c1345) + c.ty1 * (r43 * c34 - c1345) + c.tz1 * (c34 - c1345),
                       c.tx1 * (c34 - c1345) + c.ty1 * (c34 - c1345) + c.tz1 * (r43 * c34 - c1345)};
  const double tsum = c.tx1 + c.ty1 + c.tz1;
  double diag[5];
#pragma GCC unroll 5
  for (int m = 0; m < 5; ++m) diag[m] = c.tx1 * c.dx[m] + c.ty1 * c.dy[m] + c.tz1 * c.dz[m];
  const std::size_t plane5 = 5 * std::size_t(d.nxmax) * d.ny;
  const std::size_t row5 = 5 * std::size_t(d.nxmax);

  const Components w{u_components_.get(), component_stride(d)};
  // Diagonal blocks of the lanes at p (the same in both sweeps), kept as solve_lower reads them: entry e of
  // the first lane's at D[e * kRowLanes] (lane_slot).
  const double r0 = 1.0 / (1.0 + dt2 * diag[0]);
  auto diagonal = [&](std::ptrdiff_t p, double* D) __attribute__((always_inline)) {
    RowLanes up[5], tmp1;
    w.load_point(up, p);
    load_lanes(tmp1, rho + p);
    const RowLanes tmp2 = tmp1 * tmp1, tmp3 = tmp1 * tmp2;
#pragma GCC unroll 3
    for (int m = 1; m < 4; ++m) {
      store_lanes(D + std::size_t(m - 1) * kRowLanes, -dt2 * ssum[m] * c34 * tmp2 * up[m]);
      store_lanes(D + std::size_t(6 + m) * kRowLanes, 1.0 / (1.0 + dt2 * c34 * tmp1 * ssum[m] + dt2 * diag[m]));
      store_lanes(D + std::size_t(3 + m) * kRowLanes, dt2 * tmp2 * up[m] * g[m]);
    }
    store_lanes(D + 3 * kRowLanes, -dt2 * ((g[1] * (up[1] * up[1]) + g[2] * (up[2] * up[2]) + g[3] * (up[3] * up[3])) *
                                           tmp3 +
                                       tsum * c1345 * tmp2 * up[4]));
    store_lanes(D + 10 * kRowLanes, 1.0 / (1.0 + dt2 * tsum * c1345 * tmp1 + dt2 * diag[4]));
  };
  const JacobianConstants jk{c.c1, c.c2, c34, r43, c1345};
  const double om = c.omega;
  const double dtx1 = om * dt * c.tx1, dty1 = om * dt * c.ty1, dtz1 = om * dt * c.tz1;
  const double dtx2 = om * dt * c.tx2, dty2 = om * dt * c.ty2, dtz2 = om * dt * c.tz2;
  const std::ptrdiff_t py = d.nxmax, pz = py * d.ny;
  auto x_blk = [&](int j, int i) { return &x_blk_[lane_slot(d, kBlockEntries, j, i)]; };
  auto y_blk = [&](int j, int i) { return &y_blk_[lane_slot(d, kBlockEntries, j, i)]; };
  auto dia = [&](int j, int i) { return &d_blk_[lane_slot(d, kDiagEntries, j, i)]; };
  // Each thread's z blocks of one row (as row 0 of a table): used by the row's z products only, right after
  // the lanes made them.
  const std::size_t z_row = kBlockEntries * kRowLanes * lane_groups(d);
  std::vector<double> z_blocks(std::size_t(nthreads) * z_row);
  auto z_blk = [&](double* row, int i) { return row + lane_slot(d, kBlockEntries, 0, i); };

#pragma omp parallel
  {
    const int nth = omp_get_num_threads();
    const int t = omp_get_thread_num();
    int lo = 0, hi = 0;
    row_block(rows, t, nth, lo, hi);
    double* z_own = &z_blocks[std::size_t(t) * z_row];
    progress[t].store(0, std::memory_order_relaxed);
#pragma omp barrier
    // Lower-triangular sweep, planes k ascending, rows ascending, points ascending. The residual
    // is scaled by dt where the sweep first reads a point (the plane below is already scaled,
    // and the boundary's residual is zero): no pass of its own over the zone, no barrier.
    for (int k = 1; k < d.nz - 1; ++k) {
      for (int q = lo; q < hi; ++q) {
        const int j = 1 + q;
        for (int i0 = 1; i0 < d.nx - 1; i0 += kRowLanes) {
          const std::ptrdiff_t p = std::ptrdiff_t(d.at(i0, j, k));
          diagonal(p, dia(j, i0));
          jac_block<3>(w, rho, qs, p - pz, -dtz2, dtz1, c.dz, jk, z_blk(z_own, i0));
          jac_block<2>(w, rho, qs, p - py, -dty2, dty1, c.dy, jk, y_blk(j, i0));
          jac_block<1>(w, rho, qs, p - 1, -dtx2, dtx1, c.dx, jk, x_blk(j, i0));
        }
        for (int i = 1; i < d.nx - 1; ++i) {
          double* x = v + 5 * d.at(i, j, k);
          const double* xz = x - plane5;
          double r[5];
          for_rows([&](auto m) __attribute__((always_inline)) {
            r[m] = dt * x[m] - block_row<3, decltype(m)::value>(z_blk(z_own, i), xz);
          });
#pragma GCC unroll 5
          for (int m = 0; m < 5; ++m) x[m] = r[m];
        }
      }
      if (t > 0) wait_for(progress[t - 1], k);
      for (int q = lo; q < hi; q += kSkewedRows) {
        skewed_rows(d.nx - 2, std::min(kSkewedRows, hi - q), [&](int ii, int rr) {
          const int i = 1 + ii, j = 1 + q + rr;
          double* x = v + 5 * d.at(i, j, k);
          const double* xy = x - row5;
          const double* xx = x - 5;
          const double* ly = y_blk(j, i);
          const double* lx = x_blk(j, i);
          double tv[5];
          for_rows([&](auto m) __attribute__((always_inline)) {
            constexpr int M = decltype(m)::value;
            tv[M] = (x[M] - block_row<2, M>(ly, xy)) - block_row<1, M>(lx, xx);
          });
          solve_lower(dia(j, i), r0, tv);
#pragma GCC unroll 5
          for (int m = 0; m < 5; ++m) x[m] = tv[m];
        });
      }
      progress[t].store(k, std::memory_order_release);
    }
#pragma omp barrier
    progress[t].store(0, std::memory_order_relaxed);
#pragma omp barrier
    // Upper-triangular sweep, everything descending; thread 0 owns the highest rows.
    int step = 0;
    for (int k = d.nz - 2; k >= 1; --k) {
      ++step;
      for (int q = lo; q < hi; ++q) {
        const int j = d.ny - 2 - q;
        for (int i0 = 1; i0 < d.nx - 1; i0 += kRowLanes) {
          const std::ptrdiff_t p = std::ptrdiff_t(d.at(i0, j, k));
          diagonal(p, dia(j, i0));
          jac_block<1>(w, rho, qs, p + 1, dtx2, dtx1, c.dx, jk, x_blk(j, i0));
          jac_block<2>(w, rho, qs, p + py, dty2, dty1, c.dy, jk, y_blk(j, i0));
          jac_block<3>(w, rho, qs, p + pz, dtz2, dtz1, c.dz, jk, z_blk(z_own, i0));
        }
        for (int i = d.nx - 2; i >= 1; --i) {
          const double* xz = v + 5 * d.at(i, j, k) + plane5;
          double* tv = &tv_[5 * (std::size_t(j) * d.nxmax + i)];
          double r[5];
          for_rows([&](auto m) __attribute__((always_inline)) {
            r[m] = block_row<3, decltype(m)::value>(z_blk(z_own, i), xz);
          });
#pragma GCC unroll 5
          for (int m = 0; m < 5; ++m) tv[m] = r[m];
        }
      }
      if (t > 0) wait_for(progress[t - 1], step);
      for (int q = lo; q < hi; q += kSkewedRows) {
        skewed_rows(d.nx - 2, std::min(kSkewedRows, hi - q), [&](int ii, int rr) {
          const int i = d.nx - 2 - ii, j = d.ny - 2 - q - rr;
          double* x = v + 5 * d.at(i, j, k);
          const double* xy = x + row5;
          const double* xx = x + 5;
          const double* uy = y_blk(j, i);
          const double* ux = x_blk(j, i);
          const double* tz = &tv_[5 * (std::size_t(j) * d.nxmax + i)];
          // A local copy: written through tv_, every store could alias v and reload x's neighbours.
          double tv[5];
          for_rows([&](auto m) __attribute__((always_inline)) {
            constexpr int M = decltype(m)::value;
            tv[M] = (tz[M] + block_row<2, M>(uy, xy)) + block_row<1, M>(ux, xx);
          });
          solve_lower(dia(j, i), r0, tv);
#pragma GCC unroll 5
          for (int m = 0; m < 5; ++m) x[m] -= tv[m];
        });
      }
      progress[t].store(step, std::memory_order_release);
    }
#pragma omp barrier
    const double tmp = 1.0 / (c.omega * (2.0 - c.omega));
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < d.nz - 1; ++k) {
      for (int j = 1; j < d.ny - 1; ++j) {
        const std::size_t p = 5 * d.at(1, j, k);
        for (int i = 0; i < 5 * (d.nx - 2); ++i) u_[p + i] += tmp * v[p + i];
      }
    }
    // The new residual in the same parallel region: one fork/join per step instead of two.
    compute_rhs_body();
  }
}

void LuZone::finish_timed() {
  const ZoneDims& d = d_;
  std::array<double, 5> sum{};
  for (int k = 1; k < d.nz - 1; ++k) {
    for (int j = 1; j < d.ny - 1; ++j) {
      for (int i = 1; i < d.nx - 1; ++i) {
        const double* r = rsd_.get() + 5 * d.at(i, j, k);
#pragma GCC unroll 5
        for (int m = 0; m < 5; ++m) sum[m] += r[m] * r[m];
      }
    }
  }
#pragma GCC unroll 5
  for (int m = 0; m < 5; ++m) rsdnm_[m] = std::sqrt(sum[m] / (double(d.nz - 2) * double(d.ny - 2) * double(d.nx - 2)));
}

double LuZone::surface_integral() const {
  const ZoneDims& d = d_;
  const double c2 = c_.c2;
  auto phi = [&](int i, int j, int k) {
    const double* w = u_.get() + 5 * d.at(i, j, k);
    return c2 * (w[4] - 0.5 * (w[1] * w[1] + w[2] * w[2] + w[3] * w[3]) / w[0]);
  };
  // Each face sum is a trapezoid rule over the cells of two opposite planes (NPB pintgr).
  double frc1 = 0.0;
  for (int j = 1; j <= d.ny - 4; ++j) {
    for (int i = 1; i <= d.nx - 3; ++i) {
      frc1 += phi(i, j, 2) + phi(i + 1, j, 2) + phi(i, j + 1, 2) + phi(i + 1, j + 1, 2) + phi(i, j, d.nz - 2) +
              phi(i + 1, j, d.nz - 2) + phi(i, j + 1, d.nz - 2) + phi(i + 1, j + 1, d.nz - 2);
    }
  }
  frc1 *= c_.dxi * c_.deta;
  double frc2 = 0.0;
  for (int k = 2; k <= d.nz - 3; ++k) {
    for (int i = 1; i <= d.nx - 3; ++i) {
      frc2 += phi(i, 1, k) + phi(i + 1, 1, k) + phi(i, 1, k + 1) + phi(i + 1, 1, k + 1) + phi(i, d.ny - 3, k) +
              phi(i + 1, d.ny - 3, k) + phi(i, d.ny - 3, k + 1) + phi(i + 1, d.ny - 3, k + 1);
    }
  }
  frc2 *= c_.dxi * c_.dzeta;
  double frc3 = 0.0;
  for (int k = 2; k <= d.nz - 3; ++k) {
    for (int j = 1; j <= d.ny - 4; ++j) {
      frc3 += phi(1, j, k) + phi(1, j + 1, k) + phi(1, j, k + 1) + phi(1, j + 1, k + 1) + phi(d.nx - 2, j, k) +
              phi(d.nx - 2, j + 1, k) + phi(d.nx - 2, j, k + 1) + phi(d.nx - 2, j + 1, k + 1);
    }
  }
  frc3 *= c_.deta * c_.dzeta;
  return 0.25 * (frc1 + frc2 + frc3);
}

ZoneNorms LuZone::norms() {
  const ZoneDims& d = d_;
  ZoneNorms n;
  n.residual = rsdnm_;
  for (int k = 1; k < d.nz - 1; ++k) {
    for (int j = 1; j < d.ny - 1; ++j) {
      for (int i = 1; i < d.nx - 1; ++i) {
        double ex[5];
        c_.cfd.exact_solution(double(i) / (d.nx - 1), double(j) / (d.ny - 1), double(k) / (d.nz - 1), ex);
        const double* w = u_.get() + 5 * d.at(i, j, k);
#pragma GCC unroll 5
        for (int m = 0; m < 5; ++m) {
          const double e = ex[m] - w[m];
          n.error[m] += e * e;
        }
      }
    }
  }
  for (auto& e : n.error) e = std::sqrt(e / (double(d.nz - 2) * (d.ny - 2) * (d.nx - 2)));
  n.surface = surface_integral();
  return n;
}

locality::PagePlacement LuZone::field_placement() const {
  if (topology_ == nullptr) throw TopologyError("an LU-MZ zone made without a topology cannot say where its pages are");
  return locality::page_placement(*topology_, std::as_bytes(std::span<const double>(u_.get(), d_.size5())));
}

void LuZone::perturb(double delta) { u_[5 * d_.at(d_.nx / 2, d_.ny / 2, d_.nz / 2) + 4] += delta; }

}  // namespace hympi::npb

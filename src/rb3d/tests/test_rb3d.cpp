#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/rb3d/rb3d.hpp"
#include "omp_threads.hpp"

using namespace hympi;

namespace {

/// rb3d written out plainly on one array with zero walls: red-black sweeps (the colour of global
/// point (i, j, k) is the parity of i + j + k, even first) and the RMS residual, summed naively.
/// An independent reference, so it fails a wrong answer at one rank as well as at four.
std::vector<double> serial_residuals(long n, int iterations, int residual_every, double omega) {
  const long m = n + 2;
  const auto at = [m](long i, long j, long k) { return static_cast<std::size_t>((k * m + j) * m + i); };
  std::vector<double> u(static_cast<std::size_t>(m * m * m), 0.0), hf(u.size(), 0.0);
  const double h = 1.0 / static_cast<double>(n + 1);
  const double pi = std::numbers::pi;
  for (long k = 0; k < n; ++k)
    for (long j = 0; j < n; ++j)
      for (long i = 0; i < n; ++i)
        hf[at(i + 1, j + 1, k + 1)] = h * h * 3.0 * pi * pi * std::sin(pi * h * static_cast<double>(i + 1)) *
                                      std::sin(pi * h * static_cast<double>(j + 1)) *
                                      std::sin(pi * h * static_cast<double>(k + 1));
  const auto neighbours = [&](std::size_t x) {
    const auto sy = static_cast<std::size_t>(m), sz = static_cast<std::size_t>(m * m);
    return u[x - 1] + u[x + 1] + u[x - sy] + u[x + sy] + u[x - sz] + u[x + sz];
  };
  const auto residual = [&] {
    double sum = 0;
    for (long k = 1; k <= n; ++k)
      for (long j = 1; j <= n; ++j)
        for (long i = 1; i <= n; ++i) {
          const std::size_t x = at(i, j, k);
          const double r = (hf[x] - (6.0 * u[x] - neighbours(x))) / (h * h);
          sum += r * r;
        }
    return std::sqrt(sum / static_cast<double>(n * n * n));
  };
  std::vector<double> out{residual()};
  for (int it = 1; it <= iterations; ++it) {
    for (int colour = 0; colour < 2; ++colour)
      for (long k = 1; k <= n; ++k)
        for (long j = 1; j <= n; ++j)
          for (long i = 1; i <= n; ++i) {
            if (((i + j + k - 3 + colour) & 1) != 0) continue;
            const std::size_t x = at(i, j, k);
            const double gs = (hf[x] + neighbours(x)) * (1.0 / 6.0);
            u[x] = omega == 1.0 ? gs : u[x] + omega * (gs - u[x]);
          }
    if (it % residual_every == 0 || it == iterations) out.push_back(residual());
  }
  return out;
}

/// solve_rb3d on `comm` for a check that reads only the result, not the phases.
Rb3dResult solve(const Rb3dOptions& o, MPI_Comm comm = MPI_COMM_WORLD) {
  Metrics unread;
  return solve_rb3d(comm, o, unread);
}

}  // namespace

TEST(Rb3d, ResidualHistoryMatchesAPlainSerialSolver) {
  for (long n : {12L, 13L}) {  // 13: uneven blocks
    for (double omega : {1.0, 1.3}) {
      Rb3dOptions o;
      o.global = {n, n, n};
      o.iterations = 12;
      o.residual_every = 3;
      o.omega = omega;
      Metrics m;
      const auto r = solve_rb3d(MPI_COMM_WORLD, o, m);
      const auto reference = serial_residuals(n, o.iterations, o.residual_every, omega);
      ASSERT_EQ(r.residuals.size(), reference.size());
      // Exact summation against a naive loop: equal to rounding, far below one iteration's change.
      for (std::size_t i = 0; i < reference.size(); ++i)
        EXPECT_NEAR(r.residuals[i], reference[i], 1e-12 * reference[i]) << "n=" << n << " omega=" << omega << " #" << i;
      // The sweeps' kernel time is part of the loop's time.
      EXPECT_GT(m.seconds("sweep"), 0.0);
      EXPECT_LE(m.seconds("sweep"), r.time_s);
    }
  }
}

TEST(Rb3d, ResidualHistoryDoesNotDependOnRanksOrThreads) {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (long n : {12L, 13L}) {
    Rb3dOptions o;
    o.global = {n, n, n};
    o.iterations = 12;
    o.residual_every = 3;
    const auto layout = solve(o);
    // One rank with two threads: at one rank WORLD is SELF, so the threads make the difference.
    const hympi::test::Threads two(2);
    const auto single = solve(o, MPI_COMM_SELF);
    ASSERT_EQ(layout.residuals.size(), 5u);
    EXPECT_EQ(layout.residuals, single.residuals)
        << "n=" << n << " at " << ranks << " ranks against 1 rank x 2 threads";
  }
}

TEST(Rb3d, MinTimeExtendsTheLoopAndAFixedCountReproducesIt) {
  Rb3dOptions o;
  o.global = {12, 12, 12};
  o.iterations = 7;  // not a multiple of residual_every: the chunk's end must not add a residual
  o.residual_every = 3;
  // Relative to what the first chunk takes here: the test machine may be loaded.
  o.min_time_s = 4.0 * solve(o).time_s + 0.02;
  Metrics m;
  const auto timed = solve_rb3d(MPI_COMM_WORLD, o, m);
  EXPECT_GE(timed.time_s, o.min_time_s);
  EXPECT_GT(timed.iterations, o.iterations);
  // Residuals at every third iteration, after the last one, and the initial one.
  const std::size_t expected = 1 + static_cast<std::size_t>(timed.iterations / 3) + (timed.iterations % 3 != 0 ? 1u : 0u);
  EXPECT_EQ(timed.residuals.size(), expected);
  // Every rank agreed on the count, so a fixed-count solve on one rank gives the same history.
  auto fixed = o;
  fixed.iterations = timed.iterations;
  fixed.min_time_s = 0.0;
  const auto single = solve(fixed, MPI_COMM_SELF);
  EXPECT_EQ(single.iterations, timed.iterations);
  EXPECT_EQ(single.residuals, timed.residuals);
  // The phases are the loop's only: they fit into its time (bulk, no overlap).
  const double phases = m.total(PhaseKind::computation) + m.total(PhaseKind::communication);
  EXPECT_LE(phases, timed.time_s);
  EXPECT_DOUBLE_EQ(timed.bytes, kRb3dBytesPerPoint * 12 * 12 * 12 * timed.iterations);
}

TEST(Rb3d, ManufacturedSolutionConvergesAtSecondOrder) {
  double errors[2];
  const long sizes[2] = {15, 31};
  for (int s = 0; s < 2; ++s) {
    Rb3dOptions o;
    o.global = {sizes[s], sizes[s], sizes[s]};
    const double h = 1.0 / static_cast<double>(sizes[s] + 1);
    o.omega = 2.0 / (1.0 + std::sin(3.141592653589793 * h));  // optimal SOR factor
    o.iterations = 1000;
    o.residual_every = 5;
    o.tolerance = 1e-11;
    const auto r = solve(o);
    ASSERT_LT(r.iterations, 1000) << "SOR did not converge";
    EXPECT_NEAR(r.max_error, r.discretisation_error, 0.01 * r.discretisation_error);
    errors[s] = r.max_error;
  }
  const double order = std::log2(errors[0] / errors[1]);
  EXPECT_NEAR(order, 2.0, 0.05);
}

TEST(Rb3d, OptionsAreValidated) {
  Rb3dOptions o;
  o.global = {8, 8, 8};
  EXPECT_NO_THROW(o.validate(4));
  EXPECT_THROW(o.validate(513), InvalidArgument);
  o.global = {8, 8, 9};
  EXPECT_THROW(o.validate(1), InvalidArgument);
  o.global = {0, 0, 0};
  EXPECT_THROW(o.validate(1), InvalidArgument);
  o.global = {8, 8, 8};
  o.omega = 2.0;
  EXPECT_THROW(o.validate(1), InvalidArgument);
  o.omega = 1.0;
  o.iterations = 0;
  EXPECT_THROW(o.validate(1), InvalidArgument);
  o.iterations = 1;
  o.min_time_s = -1.0;
  EXPECT_THROW(o.validate(1), InvalidArgument);
}

TEST(Rb3d, VerifierFailsAWrongHistoryAndAWrongError) {
  const Rb3dOptions o{.global = {12, 12, 12}, .iterations = 6, .residual_every = 2};
  const auto solved = solve(o);
  EXPECT_TRUE(verify_rb3d(MPI_COMM_WORLD, o, solved, "reference"));
  EXPECT_FALSE(verify_rb3d(MPI_COMM_WORLD, o, solved, "none"));

  auto off_by_one_ulp = solved;
  off_by_one_ulp.residuals.back() = std::nextafter(off_by_one_ulp.residuals.back(), 0.0);
  EXPECT_FALSE(verify_rb3d(MPI_COMM_WORLD, o, off_by_one_ulp, "reference"));
  auto shorter = solved;
  shorter.residuals.pop_back();
  EXPECT_FALSE(verify_rb3d(MPI_COMM_WORLD, o, shorter, "reference"));

  auto converged = solved;
  converged.max_error = converged.discretisation_error = 1e-3;
  EXPECT_TRUE(verify_rb3d(MPI_COMM_WORLD, o, converged, "exact"));
  converged.max_error = 1.1e-3;
  EXPECT_FALSE(verify_rb3d(MPI_COMM_WORLD, o, converged, "exact"));
  converged.max_error = 0.9e-3;
  EXPECT_FALSE(verify_rb3d(MPI_COMM_WORLD, o, converged, "exact"));
  EXPECT_THROW((void)verify_rb3d(MPI_COMM_WORLD, o, solved, "bitwise"), InvalidArgument);
}

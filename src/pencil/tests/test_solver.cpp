// The pencil solver over ranks: bit-identical to a one-rank, one-thread run for every rank count, thread count
// and exchange; within the float rounding of the wire with single precision; bad splits rejected; two coupled
// groups verified against a standalone run.
#include <gtest/gtest.h>
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/pencil/groups.hpp"
#include "hympi/pencil/solver.hpp"

using namespace hympi::pencil;
namespace tr = hympi::transpose;

namespace {

constexpr long kSteps = 4;

PencilOptions small_grid() {
  PencilOptions o;
  o.grid = {13, 10, 16};  // uneven splits over 2 and 3 ranks, ny not a multiple of the z batch
  o.batch = 4;
  o.transpose.set_tiles({4, 4});  // no automatic tile measured at every construction
  return o;
}

/// This rank's planes after kSteps steps of `options` on `comm` with `threads` threads.
std::vector<double> run(const PencilOptions& options, MPI_Comm comm, int threads, tr::Extent& planes) {
  omp_set_num_threads(threads);
  Standalone coupling(comm);
  PencilSolver solver(options, comm, coupling);
  solver.start(0.0);
  for (long s = 0; s < kSteps; ++s) solver.step();
  planes = solver.planes_x();
  return {solver.state().begin(), solver.state().end()};
}

/// The planes `mine` of the one-rank run `whole` (the same local index on one rank).
std::vector<double> slice(const std::vector<double>& whole, const tr::Extent& mine, const PencilOptions& o) {
  const auto plane = static_cast<std::size_t>(whole.size() / static_cast<std::size_t>(o.grid[0]));
  return {whole.begin() + static_cast<long>(plane * static_cast<std::size_t>(mine.begin)),
          whole.begin() + static_cast<long>(plane * static_cast<std::size_t>(mine.end))};
}

}  // namespace

TEST(PencilSolver, BitIdenticalOverRanksThreadsAndExchanges) {
  tr::Extent all, mine;
  const std::vector<double> reference = run(small_grid(), MPI_COMM_SELF, 1, all);
  for (const auto exchange : {tr::TransposeExchange::alltoallv, tr::TransposeExchange::pairwise})
    for (const int threads : {1, 2}) {
      PencilOptions o = small_grid();
      o.transpose.exchange = exchange;
      const std::vector<double> state = run(o, MPI_COMM_WORLD, threads, mine);
      const std::vector<double> want = slice(reference, mine, o);
      ASSERT_EQ(state.size(), want.size());
      long differ = 0;
      for (std::size_t i = 0; i < state.size(); ++i) differ += state[i] != want[i] ? 1 : 0;
      EXPECT_EQ(differ, 0) << hympi::to_string(exchange) << ", " << threads << " threads";
    }
}

TEST(PencilSolver, SingleWireBitIdenticalOverRanksAndWithinFloatRoundingOfDouble) {
  tr::Extent all, mine;
  const std::vector<double> double_one_rank = run(small_grid(), MPI_COMM_SELF, 1, all);
  PencilOptions o = small_grid();
  o.transpose.wire = tr::WirePrecision::single_precision;
  const std::vector<double> single_one_rank = run(o, MPI_COMM_SELF, 1, all);
  const std::vector<double> state = run(o, MPI_COMM_WORLD, 2, mine);
  const std::vector<double> want = slice(double_one_rank, mine, o);
  const std::vector<double> single_want = slice(single_one_rank, mine, o);
  double worst = 0;
  long differ = 0;
  for (std::size_t i = 0; i < state.size(); ++i) {
    worst = std::max(worst, std::abs(state[i] - want[i]));
    differ += state[i] != single_want[i] ? 1 : 0;
  }
  EXPECT_EQ(differ, 0);  // every rank count rounds the same values to float
  double global = 0;
  MPI_Allreduce(&worst, &global, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_GT(global, 0.0);                                  // the wire did round
  EXPECT_LT(global, 3.0 * kSteps * 0x1p-24 * 1.75 * 100);  // within 100 float ulps of |u| <= 7/4 per substep
}

TEST(PencilSolver, ErrorWithinTheBoundAndBadSplitsRejected) {
  PencilOptions o = small_grid();
  Standalone coupling(MPI_COMM_WORLD);
  PencilSolver solver(o, MPI_COMM_WORLD, coupling);
  solver.start(0.0);
  while (solver.steps_done() < kSteps) solver.step();
  const double error = solver.max_error();
  EXPECT_GT(error, 0.0);
  EXPECT_LT(error, error_bound(o, solver.time(), solver.steps_done()));
  // The bound is not vacuous: a hundredth of it is exceeded.
  EXPECT_GT(error, error_bound(o, solver.time(), solver.steps_done()) / 100);
  EXPECT_THROW(o.validate(static_cast<int>(o.grid[0]) + 1), hympi::InvalidArgument);  // more ranks than planes
  o.grid[2] = 15;
  EXPECT_THROW(o.validate(1), hympi::InvalidArgument);
}

TEST(PencilGroups, CoupledFineRunMatchesTheStandaloneOneWithinTheSchemesError) {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks < 2) GTEST_SKIP() << "two groups need two ranks";
  RunOptions o;
  o.solver = small_grid();
  o.solver.grid = {16, 12, 16};
  o.steps = kSteps;
  hympi::Metrics metrics;
  const GroupsResult r = run_groups(MPI_COMM_WORLD, o, {1, ranks - 1, false}, metrics);
  EXPECT_TRUE(r.verified()) << r.verification_json().dump();
  // The fine group really ran on the coarse group's plane: not bit for bit the exact-inflow run.
  EXPECT_GT(r.difference, 0.0);
  EXPECT_EQ(r.coarse.grid, (std::array<long, 3>{8, 6, 14}));
  EXPECT_GE(r.coarse.idle_s, 0.0);
  EXPECT_GE(r.fine.idle_s, 0.0);
  EXPECT_THROW(validate_split(coupled_problems(o.solver), {1, ranks, false}, ranks), hympi::InvalidArgument);
  EXPECT_THROW((void)parse_group_split("2:0"), hympi::InvalidArgument);
  EXPECT_THROW((void)parse_group_split("1:1:1"), hympi::InvalidArgument);
  EXPECT_TRUE(parse_group_split("auto").automatic);
}

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/core/metrics.hpp"

using namespace hympi;

TEST(Metrics, ReduceGivesMinAvgMaxAndImbalance) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Metrics m;
  m.add("compute", PhaseKind::computation, rank + 1.0);
  m.add("exchange", PhaseKind::communication, 0.5);
  m.add("exchange", PhaseKind::communication, 0.5);
  EXPECT_DOUBLE_EQ(m.seconds("exchange"), 1.0);
  EXPECT_DOUBLE_EQ(m.total(PhaseKind::computation), rank + 1.0);
  const auto s = m.reduce(MPI_COMM_WORLD, MPI_COMM_WORLD);
  ASSERT_EQ(s.phases.size(), 2u);
  EXPECT_EQ(s.phases[0].name, "compute");
  EXPECT_DOUBLE_EQ(s.phases[0].min_s, 1.0);
  EXPECT_DOUBLE_EQ(s.phases[0].max_s, size);
  EXPECT_DOUBLE_EQ(s.phases[0].avg_s, (size + 1) / 2.0);
  EXPECT_DOUBLE_EQ(s.comp_s, (size + 1) / 2.0);
  EXPECT_DOUBLE_EQ(s.comm_s, 1.0);
  EXPECT_DOUBLE_EQ(s.imbalance, size / ((size + 1) / 2.0));
  EXPECT_GT(s.max_rss_mib, 1.0);
  EXPECT_GE(s.node_rss_mib, s.max_rss_mib);
  EXPECT_LE(s.node_rss_mib, size * s.max_rss_mib);
  EXPECT_EQ(s.to_json()["compute"]["kind"], "computation");
}

TEST(Metrics, ScopeTimesAndMemoryGrows) {
  Metrics m;
  constexpr double kWork = 0.01;
  const double outer = MPI_Wtime();
  {
    auto t = m.time("work", PhaseKind::computation);
    const double start = MPI_Wtime();
    while (MPI_Wtime() - start < kWork) {
    }
  }
  const double elapsed = MPI_Wtime() - outer;
  // The scope lasted at least the spin and at most what was measured around it (clocks may differ
  // by their resolution).
  EXPECT_GE(m.seconds("work"), kWork - 1e-6);
  EXPECT_LE(m.seconds("work"), elapsed + 1e-6);
  const double before = max_rss_mib();
  std::vector<char> block(64 << 20, 1);
  EXPECT_GE(max_rss_mib(), before + 60.0) << "peak RSS did not see a 64 MiB touched block";
}

TEST(Metrics, RepeatRunsStopsAtTheMinimumTimeOrTheFirstFailure) {
  struct Run {
    double seconds;
    bool passed;
  };
  const auto series = [](double min_time_s, std::vector<Run> script) {
    std::size_t next = 0;
    return repeat_runs(min_time_s, [&] { return script.at(next++); }, [](const Run& r) { return r.passed; });
  };
  // Once even without a minimum; then until the seconds add up to it (0.4 + 0.4 < 1, + 0.4 >= 1).
  EXPECT_EQ(series(0.0, {{0.4, true}, {0.4, true}}).runs.size(), 1U);
  const auto reached = series(1.0, {{0.4, true}, {0.4, true}, {0.4, true}, {0.4, true}});
  EXPECT_EQ(reached.runs.size(), 3U);
  EXPECT_TRUE(reached.all_verified);
  EXPECT_DOUBLE_EQ(reached.seconds, 1.2);
  EXPECT_EQ(reached.run_seconds(), (std::vector<double>{0.4, 0.4, 0.4}));
  // A failed run is the last one.
  const auto failed = series(10.0, {{0.1, true}, {0.1, false}, {0.1, true}});
  EXPECT_EQ(failed.runs.size(), 2U);
  EXPECT_FALSE(failed.all_verified);
}

TEST(Metrics, RepetitionsForMinTimeExtrapolateWithinBounds) {
  // Reached: no more repetitions.
  EXPECT_EQ(repetitions_for_min_time(50, 1.2, 1.0, 1000000), 50);
  EXPECT_EQ(repetitions_for_min_time(50, 0.3, 0.0, 1000000), 50);
  // 10 took 0.1 s, 1 s wanted: 100 with 5 % margin.
  EXPECT_EQ(repetitions_for_min_time(10, 0.1, 1.0, 1000000), 105);
  // Almost there: the margin still adds 5 %.
  EXPECT_EQ(repetitions_for_min_time(1000, 0.99999999, 1.0, 1000000), 1051);
  // One that took almost the minimum: still one more.
  EXPECT_EQ(repetitions_for_min_time(1, 0.99, 1.0, 1000000), 2);
  // A tiny first measure grows at most 100x per step; zero time too; never past the cap.
  EXPECT_EQ(repetitions_for_min_time(2, 1e-9, 1.0, 1000000), 200);
  EXPECT_EQ(repetitions_for_min_time(2, 0.0, 1.0, 1000000), 200);
  EXPECT_EQ(repetitions_for_min_time(10, 0.001, 1.0, 500), 500);
  EXPECT_THROW((void)repetitions_for_min_time(0, 0.1, 1.0, 10), InvalidArgument);
  EXPECT_THROW((void)repetitions_for_min_time(5, -1.0, 1.0, 10), InvalidArgument);
  EXPECT_THROW((void)repetitions_for_min_time(5, 0.1, std::nan(""), 10), InvalidArgument);
}

#include <gtest/gtest.h>
#include <mpi.h>

#include "hympi/metrics.hpp"

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
  {
    auto t = m.time("work", PhaseKind::computation);
    volatile double x = 0;
    for (int i = 0; i < 100000; ++i) x = x + 1;
  }
  EXPECT_GT(m.seconds("work"), 0.0);
  const double before = max_rss_mib();
  std::vector<char> block(64 << 20, 1);
  EXPECT_GE(max_rss_mib(), before + 60.0) << "peak RSS did not see a 64 MiB touched block";
}

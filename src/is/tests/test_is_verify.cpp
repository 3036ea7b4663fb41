// IS verification at any rank count: class S passes NPB's partial and full verification, and a
// wrong test-key rank, a key out of order (within a rank or across ranks), a lost key or a
// changed key each fail it.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "hympi/is/is.hpp"
#include "mpi_world.hpp"

namespace {

std::string data_file() { return std::string(HYMPI_TEST_DATA) + "/../../data/npb-is/verification.json"; }

int world_rank() { return hympi::test::World().rank; }
int world_size() { return hympi::test::World().size; }

TEST(IsVerify, ClassSPassesAtThisRankCount) {
  const hympi::is::IsClass c = hympi::is::load_is_class("S", data_file());
  hympi::is::IsBenchmark benchmark(c, MPI_COMM_WORLD);
  for (int repeat = 0; repeat < 2; ++repeat) {  // a second run starts from fresh keys
    const hympi::is::IsResult r = benchmark.run();
    EXPECT_EQ(r.partial_passed, std::vector<int>(10, hympi::is::kTestKeys));
    EXPECT_TRUE(r.full.passed) << r.full.to_json().dump();
    EXPECT_EQ(r.full.keys, c.total_keys());
    EXPECT_TRUE(r.verified());
    EXPECT_GT(r.mops, 0.0);
  }
}

TEST(IsVerify, AWrongTestKeyRankFails) {
  hympi::is::IsClass c = hympi::is::load_is_class("S", data_file());
  c.test_keys[2].rank += 1;
  hympi::is::IsBenchmark benchmark(c, MPI_COMM_WORLD);
  const hympi::is::IsResult r = benchmark.run();
  EXPECT_EQ(r.partial_passed, std::vector<int>(10, hympi::is::kTestKeys - 1));
  EXPECT_TRUE(r.full.passed);
  EXPECT_FALSE(r.verified());
  const hympi::is::IsSeries s = hympi::is::run_is_series(benchmark, 100.0);
  EXPECT_EQ(s.runs.size(), 1U) << "a failed repetition must stop the series";
  EXPECT_FALSE(s.all_verified);
}

// Rank r holds keys 10r .. 10r+9 (sorted globally), checksum and count known.
struct Sorted {
  std::vector<hympi::is::Key> keys;
  std::int64_t total = 0;
  std::uint64_t checksum = 0;
};
Sorted sorted_keys() {
  Sorted s;
  s.keys.resize(10);
  std::iota(s.keys.begin(), s.keys.end(), 10 * world_rank());
  s.total = 10 * world_size();
  s.checksum = static_cast<std::uint64_t>(s.total * (s.total - 1) / 2);
  return s;
}

TEST(IsVerify, SortedKeysPassAndPerturbedKeysFail) {
  Sorted s = sorted_keys();
  EXPECT_TRUE(hympi::is::verify_sorted(MPI_COMM_WORLD, s.keys, s.total, s.checksum).passed);

  auto swapped = s.keys;
  if (world_rank() == world_size() - 1) std::swap(swapped[3], swapped[4]);
  const auto v = hympi::is::verify_sorted(MPI_COMM_WORLD, swapped, s.total, s.checksum);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.out_of_order, 1);

  auto lost = s.keys;
  if (world_rank() == 0) lost.pop_back();
  EXPECT_FALSE(hympi::is::verify_sorted(MPI_COMM_WORLD, lost, s.total, s.checksum).passed);

  auto changed = s.keys;  // still in order, but not the keys the ranking was given
  if (world_rank() == world_size() - 1) changed.back() += 1;
  EXPECT_FALSE(hympi::is::verify_sorted(MPI_COMM_WORLD, changed, s.total, s.checksum).passed);
}

TEST(IsVerify, OrderAcrossRanksIsChecked) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  // Rank 0's keys go last: every rank is sorted locally, the boundary 0 -> 1 is not.
  Sorted s = sorted_keys();
  auto keys = s.keys;
  if (world_rank() == 0) {
    for (hympi::is::Key& k : keys) k += static_cast<hympi::is::Key>(s.total);
  }
  std::uint64_t checksum = s.checksum + 10ULL * static_cast<std::uint64_t>(s.total);
  const auto v = hympi::is::verify_sorted(MPI_COMM_WORLD, keys, s.total, checksum);
  EXPECT_EQ(v.out_of_order, 1);
  EXPECT_FALSE(v.passed);
}

TEST(IsVerify, RanksWithoutKeysAreSkippedNotTrusted) {
  if (world_size() < 3) GTEST_SKIP() << "needs three ranks";
  const Sorted s = sorted_keys();
  auto keys = s.keys;
  if (world_rank() == 1) keys.clear();  // keys 10 .. 19, sum 145, gone
  const std::int64_t total = s.total - 10;
  const std::uint64_t checksum = s.checksum - 145;
  EXPECT_TRUE(hympi::is::verify_sorted(MPI_COMM_WORLD, keys, total, checksum).passed);
  if (world_rank() == 0) keys.back() = 25;  // above rank 2's first key, 20
  const auto v = hympi::is::verify_sorted(MPI_COMM_WORLD, keys, total, checksum + 16);
  EXPECT_EQ(v.out_of_order, 1);
  EXPECT_FALSE(v.passed);
}

}  // namespace

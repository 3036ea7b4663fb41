// STREAM's verifier fails a perturbed array, a real run passes it at every rank count, and --level sizes the
// arrays from hwloc's cache levels.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/stream/stream.hpp"

using namespace hympi;

namespace {

/// Arrays after `passes` passes of the four kernels, computed element by element.
struct Arrays {
  std::vector<double> a, b, c;
  Arrays(std::size_t n, int passes) : a(n, 1.0), b(n, 2.0), c(n, 0.0) {
    for (int pass = 0; pass < passes; ++pass)
      for (std::size_t i = 0; i < n; ++i) {
        c[i] = a[i];
        b[i] = kStreamScalar * c[i];
        c[i] = a[i] + b[i];
        a[i] = b[i] + kStreamScalar * c[i];
      }
  }
  [[nodiscard]] double deviation(int passes) const { return stream_deviation(a, b, c, passes); }
};

}  // namespace

TEST(StreamVerifier, ExactArraysPass) {
  for (int passes : {1, 7, 50}) {
    const Arrays x(1000, passes);
    EXPECT_LE(x.deviation(passes), kStreamTolerance) << passes << " passes";
  }
}

TEST(StreamVerifier, OnePerturbedElementFails) {
  constexpr int kPasses = 7;
  for (std::size_t at : {std::size_t{0}, std::size_t{517}, std::size_t{999}}) {
    for (int which = 0; which < 3; ++which) {
      Arrays x(1000, kPasses);
      std::vector<double>& v = which == 0 ? x.a : which == 1 ? x.b : x.c;
      v[at] *= 1.0 + 1e-12;  // ten times the tolerance
      const double d = x.deviation(kPasses);
      EXPECT_GT(d, kStreamTolerance) << "array " << which << " element " << at;
      EXPECT_NEAR(d, 1e-12, 1e-14) << "array " << which << " element " << at;
    }
  }
}

TEST(StreamVerifier, NanAndAWrongPassCountFail) {
  Arrays x(100, 3);
  EXPECT_GT(x.deviation(4), kStreamTolerance);  // the arrays of 3 passes are not those of 4
  x.c[42] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_GT(x.deviation(3), kStreamTolerance);
}

TEST(StreamVerifier, BadArgumentsAreRejected) {
  const Arrays x(10, 1);
  EXPECT_THROW((void)x.deviation(0), InvalidArgument);
  const std::vector<double> shorter(9, 1.0);
  EXPECT_THROW((void)stream_deviation(x.a, shorter, x.c, 1), InvalidArgument);
}

TEST(Stream, RunVerifiesAndCountsItsTraffic) {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  StreamOptions o;
  o.elements = 20000;
  o.repeats = 60;  // past one refill (every 50 passes), so the refilled arrays are verified too
  const StreamResult r = run_stream(MPI_COMM_WORLD, o);
  EXPECT_TRUE(r.verified);
  EXPECT_EQ(r.timed_repeats, o.repeats - 1);
  EXPECT_DOUBLE_EQ(r.triad_bytes, 24.0 * 20000 * ranks * (o.repeats - 1));
  EXPECT_GT(r.triad_time_s, 0.0);
  // Every timed triad took at least the best one, and the mean bandwidth is the total's.
  EXPECT_GE(r.triad_total_s, r.timed_repeats * r.triad_time_s * (1 - 1e-12));
  EXPECT_NEAR(r.triad_gbs, 1e-9 * 24.0 * 20000 * ranks / r.triad_time_s, 1e-9 * r.triad_gbs);
  EXPECT_LE(r.triad_mean_gbs, r.triad_gbs * (1 + 1e-12));
  EXPECT_GT(r.local_triad_s, 0.0);
  EXPECT_LE(r.local_triad_s, r.triad_total_s * (1 + 1e-12));  // this rank's time within the slowest's
}

// --level l1|l2|l3: a thread's share of the cache level as hwloc reports it, and arrays holding half of it.
TEST(Stream, ATriadBoundIsMeasuredAndConvertedToBytesAsMoved) {
  // 24 B per element counted, 32 B moved: a's write-allocate.
  EXPECT_DOUBLE_EQ(triad_moved_gbs(6.0), 8.0);
  // Cache-sized arrays, each timing repeated to cover kStreamInnerBytes: the same bound on every rank.
  const double mine = measure_triad_gbs(MPI_COMM_WORLD, 4096);
  EXPECT_GT(mine, 0.0);
  EXPECT_TRUE(std::isfinite(mine));
  double lowest = 0;
  MPI_Allreduce(&mine, &lowest, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_EQ(lowest, mine);
}

TEST(StreamLevel, BytesPerPuAreTheLevelsShareOfEachPu) {
  // Two cores of two PUs each (a synthetic count is per parent object): two L1 and L2 caches, one L3.
  const auto topo = Topology::from_synthetic(
      "pack:1 l3:1(size=8388608) l2:2(size=1048576) l1d:1(size=32768) core:1 pu:2");
  const auto caches = topo.caches();
  EXPECT_EQ(cache_bytes_per_pu(caches, topo.pus(), StreamLevel::l1), 2u * 32768 / 4);
  EXPECT_EQ(cache_bytes_per_pu(caches, topo.pus(), StreamLevel::l2), 2u * 1048576 / 4);
  EXPECT_EQ(cache_bytes_per_pu(caches, topo.pus(), StreamLevel::l3), 8388608u / 4);
  EXPECT_THROW((void)cache_bytes_per_pu(caches, topo.pus(), StreamLevel::memory), InvalidArgument);
  EXPECT_THROW((void)cache_bytes_per_pu(caches, 0, StreamLevel::l1), InvalidArgument);
  const auto no_l3 = Topology::from_synthetic("pack:1 l2:2(size=1048576) core:2 pu:1");
  try {
    (void)cache_bytes_per_pu(no_l3.caches(), no_l3.pus(), StreamLevel::l3);
    FAIL() << "a level hwloc does not report was sized";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("no L3 cache"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)parse_stream_level("l4"), InvalidArgument);
  EXPECT_EQ(parse_stream_level("l2"), StreamLevel::l2);
}

TEST(StreamLevel, EachThreadsThreeArraysHoldHalfItsShare) {
  // 16 KiB per PU: half of it is 8 KiB, 341 doubles in each of the three arrays (341 x 24 B = 8184 B).
  EXPECT_EQ(stream_elements_for_cache(16384, 1), 341u);
  EXPECT_EQ(stream_elements_for_cache(16384, 3), 3u * 341);
  for (const std::uint64_t bytes : {std::uint64_t{24}, std::uint64_t{1} << 20, std::uint64_t{3} << 22}) {
    const double per_thread = 3.0 * 8 * static_cast<double>(stream_elements_for_cache(bytes, 4)) / 4;
    EXPECT_LE(per_thread, 0.5 * static_cast<double>(bytes) + 24) << bytes;  // at least one element per thread
    EXPECT_GT(per_thread, 0.5 * static_cast<double>(bytes) - 24) << bytes;
  }
  EXPECT_EQ(stream_elements_for_cache(8, 2), 2u);  // too small a share: one element per thread still
}

TEST(StreamLevel, RepeatedKernelsInOneTimingVerifyAndCountEveryRepetition) {
  EXPECT_EQ(stream_inner_for(1 << 30), 1);  // arrays larger than a timing's bytes: one repetition
  EXPECT_EQ(stream_inner_for(1024), static_cast<int>(std::ceil(kStreamInnerBytes / (24.0 * 1024))));
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  StreamOptions o;
  o.elements = 700;  // an L1-sized array
  o.repeats = 4;
  o.inner = 37;
  const StreamResult r = run_stream(MPI_COMM_WORLD, o);
  EXPECT_TRUE(r.verified);  // each kernel repeated leaves the arrays as one pass does
  EXPECT_EQ(r.inner, 37);
  EXPECT_DOUBLE_EQ(r.triad_bytes, 24.0 * 700 * 37 * ranks * (o.repeats - 1));
  EXPECT_NEAR(r.triad_gbs, 1e-9 * 24.0 * 700 * 37 * ranks / r.triad_time_s, 1e-9 * r.triad_gbs);
}

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <span>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/pingpong/pingpong.hpp"

namespace {

hympi::Bitmap pu_set(const hympi::Topology& topo, unsigned os) {
  hympi::Bitmap b;
  hwloc_bitmap_only(b.get(), os);
  (void)topo;
  return b;
}

}  // namespace

TEST(PingPong, ClassifiesPuPairsOnSyntheticTopologies) {
  using L = hympi::CommLevel;
  const char* const caches = "pack:2 numa:2 l3:1 l2:2 core:2 pu:2";
  const char* const no_caches = "pack:2 numa:2 core:2 pu:1";
  struct Pair {
    const char* machine;
    unsigned a, b;  // PU OS indexes
    L level;
  };
  for (const Pair& c : {Pair{caches, 0, 0, L::pu}, Pair{caches, 0, 1, L::core}, Pair{caches, 0, 2, L::l2},
                        Pair{caches, 0, 4, L::l3}, Pair{caches, 0, 8, L::package} /* other NUMA, own L3 */,
                        Pair{caches, 0, 16, L::node}, Pair{no_caches, 0, 1, L::numa},
                        Pair{no_caches, 0, 2, L::package}, Pair{no_caches, 3, 4, L::node}}) {
    const auto topo = hympi::Topology::from_synthetic(c.machine);
    EXPECT_EQ(hympi::classify_sets(topo, pu_set(topo, c.a), pu_set(topo, c.b)), c.level)
        << c.machine << ": PUs " << c.a << " and " << c.b;
  }
}

TEST(PingPong, ClassifiesWholeCoresAndRefusesAnEmptySet) {
  const auto topo = hympi::Topology::from_synthetic("pack:2 numa:2 l3:1 l2:2 core:2 pu:2");
  // A whole-core binding against another core of the same L2.
  EXPECT_EQ(hympi::classify_sets(topo, topo.core_set(0), topo.core_set(1)), hympi::CommLevel::l2);
  EXPECT_THROW(hympi::classify_sets(topo, hympi::Bitmap(), pu_set(topo, 1)), hympi::TopologyError);
}

TEST(PingPong, LevelNamesRoundTrip) {
  for (auto level : hympi::kCommLevels) EXPECT_EQ(hympi::parse_comm_level(hympi::to_string(level)), level);
  EXPECT_THROW(hympi::parse_comm_level("socket"), hympi::InvalidArgument);
}

TEST(PingPong, MessageCheckCatchesCorruptionAndStaleTrips) {
  // Sizes around the 4 KiB block the check compares with, so every chunk boundary is covered.
  for (std::size_t bytes : {1UL, 3UL, 4UL, 5UL, 100UL, 4095UL, 4096UL, 4097UL, 12289UL}) {
    std::vector<std::uint8_t> m(bytes);
    hympi::fill_pingpong_message(m, 17);
    EXPECT_TRUE(hympi::check_pingpong_message(m, 17));
    m[bytes - 1] ^= 1U;
    EXPECT_FALSE(hympi::check_pingpong_message(m, 17)) << bytes;
    m[bytes - 1] ^= 1U;
    m[bytes / 2] ^= 0x80U;
    EXPECT_FALSE(hympi::check_pingpong_message(m, 17)) << bytes << " middle";
    m[bytes / 2] ^= 0x80U;
    EXPECT_TRUE(hympi::check_pingpong_message(m, 17)) << bytes;
    if (bytes >= 4) {
      EXPECT_FALSE(hympi::check_pingpong_message(m, 16)) << "stale trip accepted";
    }
  }
}

namespace {

/// Rank 1's side of the validation pass, answering rank 0 with what `reply(trip)` builds.
template <class Reply>
void answer_validation(std::size_t bytes, Reply reply) {
  std::vector<std::uint8_t> in(bytes), out(bytes);
  for (std::uint32_t trip = 1; trip <= hympi::kPingPongCheckedTrips; ++trip) {
    MPI_Recv(in.data(), static_cast<int>(bytes), MPI_BYTE, 0, hympi::kPingPongTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    reply(trip, out);
    MPI_Send(out.data(), static_cast<int>(bytes), MPI_BYTE, 0, hympi::kPingPongTag, MPI_COMM_WORLD);
  }
}

}  // namespace

TEST(PingPong, ValidationPassFailsOnCorruptOrStaleMessages) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  for (std::size_t bytes : {1UL, 64UL, 5000UL}) {
    // Both sides honest: passes on both.
    if (rank <= 1) {
      EXPECT_TRUE(hympi::validate_pingpong_pair(MPI_COMM_WORLD, 0, 1, bytes)) << bytes;
    }
    // Rank 1 corrupts the second reply: rank 0 must notice.
    if (rank == 0) {
      EXPECT_FALSE(hympi::validate_pingpong_pair(MPI_COMM_WORLD, 0, 1, bytes)) << bytes << " corrupt";
    } else if (rank == 1) {
      answer_validation(bytes, [](std::uint32_t trip, std::span<std::uint8_t> m) {
        hympi::fill_pingpong_message(m, trip);
        if (trip == 2) m[m.size() - 1] ^= 1U;
      });
    }
    // Rank 1 sends the first trip's message every time (a stale buffer): rank 0 must notice
    // where the message holds a trip number.
    if (rank == 0) {
      const bool good = hympi::validate_pingpong_pair(MPI_COMM_WORLD, 0, 1, bytes);
      if (bytes >= 4) {
        EXPECT_FALSE(good) << bytes << " stale";
      }
    } else if (rank == 1) {
      answer_validation(bytes, [](std::uint32_t, std::span<std::uint8_t> m) { hympi::fill_pingpong_message(m, 1); });
    }
    // Ranks outside the pair take no part and pass.
    if (rank > 1) {
      EXPECT_TRUE(hympi::validate_pingpong_pair(MPI_COMM_WORLD, 0, 1, bytes));
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

TEST(PingPong, SizesAndRoundTrips) {
  const auto sizes = hympi::message_sizes(std::size_t{4} << 20);
  ASSERT_EQ(sizes.size(), 24U);  // 0, 1, 2, ..., 4 MiB
  EXPECT_EQ(sizes.front(), 0U);
  EXPECT_EQ(sizes[1], 1U);
  EXPECT_EQ(sizes.back(), std::size_t{4} << 20);
  const auto odd = hympi::message_sizes(1000);
  EXPECT_EQ(odd.back(), 1000U);
  EXPECT_EQ(odd[odd.size() - 2], 512U);
  // osu_latency's counts: all iterations (100 warm-up) up to 8 KiB, a tenth (10 warm-up) above.
  EXPECT_EQ(hympi::round_trips(8192, 10000), 10000);
  EXPECT_EQ(hympi::round_trips(8193, 10000), 1000);
  EXPECT_EQ(hympi::round_trips(std::size_t{1} << 30, 10), 4);
  EXPECT_EQ(hympi::round_trips(65536, 10000, 7), 7);
  EXPECT_EQ(hympi::round_trips(4096, 10000, 7), 10000);
  EXPECT_EQ(hympi::warmup_trips(0), 100);
  EXPECT_EQ(hympi::warmup_trips(8192), 100);
  EXPECT_EQ(hympi::warmup_trips(16384), 10);
  hympi::PingPongOptions bad;
  bad.iterations = 0;
  EXPECT_THROW(bad.validate(), hympi::InvalidArgument);
  bad = {};
  bad.max_bytes = 0;
  EXPECT_THROW(bad.validate(), hympi::InvalidArgument);
  bad = {};
  bad.large_iterations = -1;
  EXPECT_THROW(bad.validate(), hympi::InvalidArgument);
  EXPECT_NO_THROW(hympi::PingPongOptions{}.validate());
}

TEST(PingPong, FitRecoversAlphaBetaExactly) {
  const double alpha = 2.5e-6, beta = 5e9;
  std::vector<hympi::PingPongSample> samples;
  for (std::size_t s : hympi::message_sizes(1 << 20)) samples.push_back({s, 10, alpha + static_cast<double>(s) / beta});
  const auto fit = hympi::fit_alpha_beta(samples);
  EXPECT_NEAR(fit.alpha_s, alpha, alpha * 1e-9);
  EXPECT_NEAR(fit.beta_bytes_per_s, beta, beta * 1e-9);
  EXPECT_THROW(hympi::fit_alpha_beta(std::span(samples).first(1)), hympi::InvalidArgument);
}

TEST(PingPong, DisjointPairsAreDisjointAndAtTheLevel) {
  using L = hympi::CommLevel;
  // 4 ranks, two nodes {0,1} {2,3}: 0-1 and 2-3 share a node, the rest cross the network.
  const std::vector<L> levels = {L::pu,      L::node,    L::network, L::network, L::node,    L::pu,
                                 L::network, L::network, L::network, L::network, L::pu,      L::node,
                                 L::network, L::network, L::node,    L::pu};
  const auto net = hympi::disjoint_pairs(levels, 4, L::network);
  ASSERT_EQ(net.size(), 2U);
  EXPECT_EQ(net[0], std::make_pair(0, 2));
  EXPECT_EQ(net[1], std::make_pair(1, 3));
  EXPECT_EQ(hympi::disjoint_pairs(levels, 4, L::node).size(), 2U);
  EXPECT_TRUE(hympi::disjoint_pairs(levels, 4, L::l3).empty());
  EXPECT_THROW(hympi::disjoint_pairs(levels, 3, L::node), hympi::InvalidArgument);
}

TEST(PingPong, PairLevelsAndProbeOverMpi) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto topo = hympi::Topology::this_machine();
  // Pretend bindings and nodes: rank r on core r mod cores, two ranks per (virtual) node.
  const int cores = topo.cores();
  const auto binding = topo.core_set(rank % cores);
  const int node = rank / 2;
  const auto levels = hympi::pair_levels(MPI_COMM_WORLD, topo, node, binding);
  const auto n = static_cast<std::size_t>(size);
  ASSERT_EQ(levels.size(), n * n);
  for (int a = 0; a < size; ++a)
    for (int b = 0; b < size; ++b) {
      const auto l = levels[static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b)];
      EXPECT_EQ(l, levels[static_cast<std::size_t>(b) * n + static_cast<std::size_t>(a)]);
      if (a / 2 != b / 2) {
        EXPECT_EQ(l, hympi::CommLevel::network) << a << "," << b;
      } else if (a % cores == b % cores) {
        EXPECT_LE(l, hympi::CommLevel::core) << a << "," << b;
      } else {
        EXPECT_GT(l, hympi::CommLevel::core) << a << "," << b;
      }
    }
  hympi::PingPongOptions options;
  options.iterations = 5;
  options.large_iterations = 3;
  options.max_bytes = 20000;  // past 8 KiB (the large-message counts) and not a power of two
  options.multi_bytes = 2048;
  const auto result = hympi::run_pingpong(MPI_COMM_WORLD, levels, options);
  // Every size's validation pass came through intact, on every level and in multi-pair mode.
  EXPECT_TRUE(result.verified);
  std::set<hympi::CommLevel> expected;
  for (int a = 0; a < size; ++a)
    for (int b = a + 1; b < size; ++b) expected.insert(levels[static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b)]);
  ASSERT_EQ(result.levels.size(), expected.size());
  for (const auto& l : result.levels) {
    EXPECT_TRUE(expected.count(l.level));
    ASSERT_EQ(l.samples.size(), hympi::message_sizes(20000).size());
    EXPECT_EQ(l.samples.back().bytes, 20000U);
    for (const auto& s : l.samples) {
      EXPECT_GT(s.half_round_trip_s, 0) << "rank " << rank << " level " << hympi::to_string(l.level);
      EXPECT_EQ(s.round_trips, s.bytes <= 8192 ? 5 : 3) << s.bytes;
    }
  }
  // Multi-pair rows appear only where two disjoint pairs exist (4 ranks: the network level).
  for (const auto& m : result.multi) {
    EXPECT_GE(m.pairs, 1);
    EXPECT_GT(m.aggregate_mbs, 0);
    EXPECT_GT(m.per_pair_min_mbs, 0);
    EXPECT_LE(m.per_pair_min_mbs, m.per_pair_max_mbs);
    // The aggregate sums one bandwidth per pair, each between the slowest and the fastest pair's.
    const double k = m.pairs;
    EXPECT_GE(m.aggregate_mbs, k * m.per_pair_min_mbs * (1 - 1e-12)) << m.pairs << " pairs";
    EXPECT_LE(m.aggregate_mbs, k * m.per_pair_max_mbs * (1 + 1e-12)) << m.pairs << " pairs";
    if (m.pairs == 1) {
      EXPECT_EQ(m.per_pair_min_mbs, m.per_pair_max_mbs);
    }
  }
  if (size == 4) {
    EXPECT_FALSE(result.multi.empty());
  }
  const auto j = result.to_json();
  EXPECT_TRUE(j["verified"].get<bool>());
  EXPECT_EQ(j["levels"].size(), expected.size());
}

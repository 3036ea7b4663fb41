// The driver's restart hooks without any file: a run's zone fields captured after its middle step
// and handed to a run on another decomposition (one rank holding every zone, two threads) must
// end in the very bits of the uninterrupted run, final fields and verification values alike.
#include "hympi/npb/mz_run.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

using hympi::npb::Benchmark;
using hympi::npb::ClassParams;
using hympi::npb::MzHooks;
using hympi::npb::MzOptions;
using hympi::npb::MzResult;

std::string data_file() { return std::string(HYMPI_TEST_DATA) + "/../../data/npb-mz/verification.json"; }

using Fields = std::map<int, std::vector<double>>;  // zone id -> its whole field

std::size_t doubles(const hympi::Zone& z) { return std::size_t(hympi::padded_nx(z.nx)) * z.ny * z.nz * 5; }

// Copies every zone's field after `step` into `out` on every rank (each zone sent from its owner).
MzHooks capture_at(int step, const hympi::ZoneGrid& grid, const hympi::ZonePartition& part, MPI_Comm comm,
                   Fields& out) {
  MzHooks h;
  h.after_step = [step, &grid, &part, comm, &out](int s, std::span<double* const> fields) {
    if (s != step) return;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    const auto& mine = part.zones_of(rank);
    for (const hympi::Zone& z : grid.zones()) {
      std::vector<double>& f = out[z.id];
      f.resize(doubles(z));
      for (std::size_t l = 0; l < mine.size(); ++l) {
        if (mine[l] == z.id) std::memcpy(f.data(), fields[l], f.size() * sizeof(double));
      }
      MPI_Bcast(f.data(), static_cast<int>(f.size()), MPI_DOUBLE, part.owner(z.id), comm);
    }
  };
  return h;
}

MzResult run(const ClassParams& p, const hympi::ZoneGrid& grid, const hympi::ZonePartition& part, MPI_Comm comm,
             MzHooks hooks) {
  MzOptions o;
  o.progress = false;
  o.hooks = std::move(hooks);
  return hympi::npb::run_mz(p, grid, part, comm, o, nullptr);
}

void expect_same_bits(const std::array<double, 5>& a, const std::array<double, 5>& b, const char* what) {
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), sizeof(double) * 5)) << what;
}

class NpbResume : public ::testing::TestWithParam<Benchmark> {};

TEST_P(NpbResume, MiddleStepStateContinuesBitForBitOnAnotherLayout) {
  const ClassParams p = hympi::npb::load_class_params(GetParam(), "S", data_file());
  const hympi::ZoneGrid grid(p.geometry);
  int nranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks > grid.num_zones()) GTEST_SKIP() << "fewer zones than ranks";
  const int mid = p.niter / 2 + 1;
  const hympi::ZonePartition world_part(grid, nranks, {});

  Fields at_mid, full_end, resumed_end;
  const MzResult full = run(p, grid, world_part, MPI_COMM_WORLD, [&] {
    MzHooks h = capture_at(mid, grid, world_part, MPI_COMM_WORLD, at_mid);
    MzHooks end = capture_at(p.niter, grid, world_part, MPI_COMM_WORLD, full_end);
    auto a = h.after_step, b = end.after_step;
    h.after_step = [a, b](int s, std::span<double* const> f) { a(s, f); b(s, f); };
    return h;
  }());
  ASSERT_TRUE(full.verification.passed);

  // Every zone on one rank with two threads: another decomposition than the world's.
  hympi::ZonePartitionOptions two_threads;
  two_threads.threads_per_rank = 2;
  const hympi::ZonePartition self_part(grid, 1, two_threads);
  MzHooks hooks = capture_at(p.niter, grid, self_part, MPI_COMM_SELF, resumed_end);
  hooks.resume = [&](std::span<double* const> fields) {
    const auto& mine = self_part.zones_of(0);
    for (std::size_t l = 0; l < mine.size(); ++l) {
      const std::vector<double>& f = at_mid.at(mine[l]);
      std::memcpy(fields[l], f.data(), f.size() * sizeof(double));
    }
    return mid;
  };
  const MzResult resumed = run(p, grid, self_part, MPI_COMM_SELF, hooks);
  EXPECT_EQ(resumed.first_step, mid + 1);
  EXPECT_TRUE(resumed.verification.passed);
  expect_same_bits(resumed.verification.xcr, full.verification.xcr, "xcr");
  expect_same_bits(resumed.verification.xce, full.verification.xce, "xce");
  EXPECT_EQ(0, std::memcmp(&resumed.verification.xci, &full.verification.xci, sizeof(double)));
  for (const auto& [id, f] : full_end) {
    EXPECT_EQ(0, std::memcmp(f.data(), resumed_end.at(id).data(), f.size() * sizeof(double))) << "zone " << id;
  }
}

// Threads over whole zones (ThreadWork::zones) do each zone's work on one thread, zones side by side: the same
// bits as the team inside each zone in turn, fields and verification values, from the start and after a restart.
TEST_P(NpbResume, ThreadsOverZonesGiveTheBitsOfThreadsOverLoops) {
  const ClassParams p = hympi::npb::load_class_params(GetParam(), "S", data_file());
  const hympi::ZoneGrid grid(p.geometry);
  hympi::ZonePartitionOptions two_threads;
  two_threads.threads_per_rank = 2;
  const hympi::ZonePartition part(grid, 1, two_threads);
  const int mid = p.niter / 2 + 1;
  Fields at_mid, loops_end, zones_end, resumed_end;
  MzOptions o;
  o.progress = false;
  o.hooks = capture_at(mid, grid, part, MPI_COMM_SELF, at_mid);
  {
    MzHooks end = capture_at(p.niter, grid, part, MPI_COMM_SELF, loops_end);
    auto a = o.hooks.after_step, b = end.after_step;
    o.hooks.after_step = [a, b](int s, std::span<double* const> f) { a(s, f); b(s, f); };
  }
  const MzResult loops = hympi::npb::run_mz(p, grid, part, MPI_COMM_SELF, o, nullptr);
  ASSERT_TRUE(loops.verification.passed);

  o.thread_work = hympi::npb::ThreadWork::zones;
  o.hooks = capture_at(p.niter, grid, part, MPI_COMM_SELF, zones_end);
  const MzResult zones = hympi::npb::run_mz(p, grid, part, MPI_COMM_SELF, o, nullptr);
  EXPECT_TRUE(zones.verification.passed);
  expect_same_bits(zones.verification.xcr, loops.verification.xcr, "xcr");
  expect_same_bits(zones.verification.xce, loops.verification.xce, "xce");

  o.hooks = capture_at(p.niter, grid, part, MPI_COMM_SELF, resumed_end);
  o.hooks.resume = [&](std::span<double* const> fields) {
    const auto& mine = part.zones_of(0);
    for (std::size_t l = 0; l < mine.size(); ++l) {
      const std::vector<double>& f = at_mid.at(mine[l]);
      std::memcpy(fields[l], f.data(), f.size() * sizeof(double));
    }
    return mid;
  };
  const MzResult resumed = hympi::npb::run_mz(p, grid, part, MPI_COMM_SELF, o, nullptr);
  expect_same_bits(resumed.verification.xcr, loops.verification.xcr, "xcr after a restart");
  for (const auto& [id, f] : loops_end) {
    EXPECT_EQ(0, std::memcmp(f.data(), zones_end.at(id).data(), f.size() * sizeof(double))) << "zone " << id;
    EXPECT_EQ(0, std::memcmp(f.data(), resumed_end.at(id).data(), f.size() * sizeof(double))) << "zone " << id;
  }
}

TEST_P(NpbResume, ResumingBeyondTheIterationsIsRefused) {
  const ClassParams p = hympi::npb::load_class_params(GetParam(), "S", data_file());
  const hympi::ZoneGrid grid(p.geometry);
  const hympi::ZonePartition part(grid, 1, {});
  MzHooks hooks;
  hooks.resume = [&](std::span<double* const>) { return p.niter + 1; };
  EXPECT_THROW((void)run(p, grid, part, MPI_COMM_SELF, hooks), hympi::InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Benchmarks, NpbResume, ::testing::Values(Benchmark::bt, Benchmark::sp, Benchmark::lu),
                         [](const auto& param_info) {
                           std::string n = hympi::npb::to_string(param_info.param);
                           return n.substr(0, 2);
                         });

}  // namespace

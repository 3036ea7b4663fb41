// Zone boundary exchange: every boundary plane must end up holding the neighbour zone's first
// interior plane, whichever ranks the two zones live on; nothing else may change.
#include "hympi/npb/zone_exchange.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

namespace {

constexpr int kComp = 5;

double tag(int zone, int i, int j, int k, int m) { return zone * 1e6 + k * 1e4 + j * 100 + i + m * 0.1; }

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

std::size_t at(const hympi::Zone& z, int i, int j, int k, int m) {
  return ((std::size_t(k) * z.ny + j) * hympi::padded_nx(z.nx) + i) * kComp + m;
}

void check(const hympi::ZoneGeometry& g, hympi::PackingMethod method) {
  const hympi::ZoneGrid grid(g);
  const int nranks = world_size();
  if (nranks > grid.num_zones()) GTEST_SKIP() << "fewer zones than ranks";
  hympi::ZonePartitionOptions o;
  o.method = method;
  const hympi::ZonePartition part(grid, nranks, o);
  const auto& mine = part.zones_of(world_rank());
  constexpr double sentinel = -7.0;
  std::vector<std::vector<double>> store;
  std::vector<double*> fields;
  for (int id : mine) {
    const auto& z = grid.zone(id);
    store.emplace_back(std::size_t(hympi::padded_nx(z.nx)) * z.ny * z.nz * kComp, sentinel);
    auto& f = store.back();
    for (int k = 1; k < z.nz - 1; ++k)
      for (int j = 1; j < z.ny - 1; ++j)
        for (int i = 1; i < z.nx - 1; ++i)
          for (int m = 0; m < kComp; ++m) f[at(z, i, j, k, m)] = tag(id, i, j, k, m);
    fields.push_back(f.data());
  }
  hympi::ZoneExchange ex(grid, part, MPI_COMM_WORLD, kComp);
  ex.exchange(fields);
  ex.exchange(fields);  // a second round must leave the same state (interior untouched)
  for (std::size_t li = 0; li < mine.size(); ++li) {
    const auto& z = grid.zone(mine[li]);
    const auto& f = store[li];
    const auto& w = grid.zone(z.next(hympi::ZoneFace::west));
    const auto& e = grid.zone(z.next(hympi::ZoneFace::east));
    const auto& s = grid.zone(z.next(hympi::ZoneFace::south));
    const auto& n = grid.zone(z.next(hympi::ZoneFace::north));
    for (int k = 0; k < z.nz; ++k) {
      for (int j = 0; j < z.ny; ++j) {
        for (int i = 0; i < z.nx; ++i) {
          const bool kin = k > 0 && k < z.nz - 1;
          const bool jin = j > 0 && j < z.ny - 1;
          const bool iin = i > 0 && i < z.nx - 1;
          for (int m = 0; m < kComp; ++m) {
            double want = sentinel;
            if (kin && jin && iin) want = tag(z.id, i, j, k, m);
            else if (kin && jin && i == 0) want = tag(w.id, w.nx - 2, j, k, m);
            else if (kin && jin && i == z.nx - 1) want = tag(e.id, 1, j, k, m);
            else if (kin && iin && j == 0) want = tag(s.id, i, s.ny - 2, k, m);
            else if (kin && iin && j == z.ny - 1) want = tag(n.id, i, 1, k, m);
            ASSERT_EQ(f[at(z, i, j, k, m)], want) << "zone " << z.id << " at " << i << "," << j << "," << k;
          }
        }
      }
    }
  }
  // Volume accounting: what leaves this rank plus what stays equals all its faces.
  std::size_t faces = 0;
  for (int id : mine) {
    const auto& z = grid.zone(id);
    faces += 2 * std::size_t(z.ny - 2) * (z.nz - 2) * kComp + 2 * std::size_t(z.nx - 2) * (z.nz - 2) * kComp;
  }
  EXPECT_EQ(ex.doubles_sent() + ex.doubles_copied(), faces);
}

TEST(ZoneExchange, UnevenZonesNpbPacking) { check({4, 4, 64, 64, 8, 4.5}, hympi::PackingMethod::npb); }
TEST(ZoneExchange, UnevenZonesLptPacking) { check({4, 3, 40, 33, 6, 3.0}, hympi::PackingMethod::lpt); }
TEST(ZoneExchange, TwoByTwoWrapsOntoTheSameNeighbour) { check({2, 2, 24, 24, 6, 3.0}, hympi::PackingMethod::npb); }
TEST(ZoneExchange, SingleZoneIsItsOwnNeighbour) {
  if (world_size() > 1) GTEST_SKIP() << "one zone";
  check({1, 1, 12, 10, 6, 1.0}, hympi::PackingMethod::npb);
}

}  // namespace

// Plane <-> pencil transpose: the pencils hold the global array computed independently, the round trip
// is bitwise exact in double and within float rounding (and not exact) in single, on 1 to 4 ranks with
// uneven splits, for every exchange.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <string>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/core/memory.hpp"
#include "hympi/transpose/transpose.hpp"
#include "mpi_world.hpp"

using namespace hympi;
using namespace hympi::transpose;

namespace {

/// The global array: positive, each the rounding of an irrational number, so none is a float and a
/// single-precision wire must change every one.
double value(long x, long y, long z) {
  return static_cast<double>(x + 1) / 3.0 + std::sqrt(2.0) * static_cast<double>(y + 1) + 0.1 * static_cast<double>(z);
}

/// The arrays the transposes read and write start cache lines, as the pencil solver's do.
using Array = LineAlignedVector<double>;

/// This rank's planes of the global array, by the documented local index.
Array make_planes(const Transpose& t) {
  const auto [nx, ny, nz] = t.shape();
  const Extent xs = t.planes_x();
  Array planes(t.plane_size());
  for (long x = xs.begin; x < xs.end; ++x)
    for (long y = 0; y < ny; ++y)
      for (long z = 0; z < nz; ++z) planes[static_cast<std::size_t>(z + nz * (y + ny * (x - xs.begin)))] = value(x, y, z);
  return planes;
}

/// Largest |pencil - want(value)| / |value| over this rank's pencils (0: bitwise equal everywhere).
template <class Want>
double pencil_error(const Transpose& t, const Array& pencils, Want want_of) {
  const auto [nx, ny, nz] = t.shape();
  const Extent ls = t.pencil_lines();
  double worst = 0;
  for (long l = ls.begin; l < ls.end; ++l)
    for (long x = 0; x < nx; ++x) {
      const double exact = value(x, l / nz, l % nz);
      const double got = pencils[static_cast<std::size_t>(x + nx * (l - ls.begin))];
      worst = std::max(worst, std::abs(got - want_of(exact)) / std::abs(exact));
    }
  return worst;
}

struct Case {
  std::array<long, 3> n;
  TransposeOptions options;
};

std::vector<Case> cases(WirePrecision wire) {
  std::vector<Case> out;
  for (const auto exchange : {TransposeExchange::alltoallv, TransposeExchange::alltoall, TransposeExchange::pairwise})
    for (const std::array<long, 3> n : {std::array<long, 3>{7, 5, 6}, std::array<long, 3>{10, 3, 4}})
      for (const TileShape tile : {TileShape{}, TileShape{2, 3}})
        out.push_back({n, {.exchange = exchange, .wire = wire, .tile = tile, .pack_threads = tile.automatic() ? 0 : 2,
                           .backward_tile = tile}});
  // Large enough for the wide blocks (8 x rows to the pencils, a line's worth of lines back), with edges
  // of 4 x 4 blocks and single elements: nx = 64 starts every pencil row on a cache line, so that the
  // streaming stores write there, 37 starts few; rows that start no line take the cached stores.
  for (const std::array<long, 3> n : {std::array<long, 3>{64, 6, 8}, std::array<long, 3>{37, 9, 8}})
    for (const TileShape tile :
         {TileShape{}, TileShape{16, 32, true}, TileShape{24, 40, false}, TileShape{8, 16, true}})
      out.push_back({n, {.exchange = TransposeExchange::alltoallv, .wire = wire, .tile = tile,
                         .pack_threads = tile.automatic() ? 0 : 2, .backward_tile = tile}});
  // Each direction with a tile of its own.
  out.push_back({{64, 6, 8}, {.wire = wire, .tile = {16, 32, true}, .pack_threads = 2, .backward_tile = {4, 48}}});
  return out;
}

std::string describe(const Case& c) {
  return c.options.to_json().dump() + " grid " + std::to_string(c.n[0]) + "x" + std::to_string(c.n[1]) + "x" +
         std::to_string(c.n[2]);
}

/// Largest |a - b| / |b| and the number of elements that differ.
std::pair<double, long> compare(const Array& a, const Array& b) {
  double worst = 0;
  long differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
    differ += a[i] != b[i] ? 1 : 0;
  }
  return {worst, differ};
}

long global_sum(long local) {
  long sum = 0;
  MPI_Allreduce(&local, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return sum;
}

}  // namespace

TEST(Transpose, DoubleWireGivesTheGlobalArrayAndABitwiseRoundTrip) {
  for (const Case& c : cases(WirePrecision::double_precision)) {
    SCOPED_TRACE(describe(c));
    Transpose t(c.n, MPI_COMM_WORLD, c.options);
    const Array planes = make_planes(t);
    Array pencils(t.pencil_size(), -1.0), back(t.plane_size(), -1.0);
    t.planes_to_pencils(planes, pencils);
    EXPECT_EQ(pencil_error(t, pencils, [](double v) { return v; }), 0.0);
    t.pencils_to_planes(pencils, back);
    EXPECT_EQ(back, planes);
    EXPECT_FALSE(t.options().tile.automatic()) << "the automatic tile is resolved after the first transpose";
    EXPECT_FALSE(t.options().backward_tile.automatic()) << "and the backward one after the first backward";
    EXPECT_EQ(t.options().tile_auto, c.options.tile.automatic());
    EXPECT_EQ(t.times().count, 2);
  }
}

TEST(Transpose, SingleWireRoundsToFloatAndOnlyThat) {
  const double float_rounding = std::ldexp(1.0, -24);
  for (const Case& c : cases(WirePrecision::single_precision)) {
    SCOPED_TRACE(describe(c));
    Transpose t(c.n, MPI_COMM_WORLD, c.options);
    const Array planes = make_planes(t);
    Array pencils(t.pencil_size()), back(t.plane_size());
    t.planes_to_pencils(planes, pencils);
    // Every value, whoever owned it, is the nearest float: within float rounding, and exactly that.
    EXPECT_LE(pencil_error(t, pencils, [](double v) { return v; }), float_rounding);
    EXPECT_EQ(pencil_error(t, pencils, [](double v) { return static_cast<double>(static_cast<float>(v)); }), 0.0);
    t.pencils_to_planes(pencils, back);
    const auto [error, differ] = compare(back, planes);
    EXPECT_LE(error, float_rounding);
    // No value is a float: a transpose that kept doubles would return every one unchanged.
    EXPECT_EQ(global_sum(differ), c.n[0] * c.n[1] * c.n[2]);
  }
}

TEST(Transpose, SingleWireSendsHalfTheBytes) {
  const test::World world;
  for (const auto exchange : {TransposeExchange::alltoallv, TransposeExchange::alltoall, TransposeExchange::pairwise}) {
    std::array<std::uint64_t, 2> bytes{};
    for (const auto wire : {WirePrecision::double_precision, WirePrecision::single_precision}) {
      Transpose t({10, 3, 4}, MPI_COMM_WORLD, {exchange, wire, {2, 2}, 1});
      const Array planes = make_planes(t);
      Array pencils(t.pencil_size());
      t.planes_to_pencils(planes, pencils);
      bytes[static_cast<std::size_t>(wire)] = t.times().bytes_sent;
    }
    // Every rank sends to every other rank at least one line of one plane.
    if (world.size > 1) {
      EXPECT_GT(bytes[1], 0U);
    }
    EXPECT_EQ(bytes[0], 2 * bytes[1]);
  }
}

TEST(Transpose, BadSplitsAndSpansThrowInvalidArgument) {
  const test::World world;
  const TransposeOptions options;
  // Fewer x planes than ranks (on one rank: an empty grid).
  EXPECT_THROW(Transpose({world.size - 1, 4, 4}, MPI_COMM_WORLD, options), InvalidArgument);
  // Fewer (z, y) lines than ranks.
  if (world.size > 1) {
    EXPECT_THROW(Transpose({8, 1, world.size - 1}, MPI_COMM_WORLD, options), InvalidArgument);
  }
  EXPECT_THROW(Transpose({8, 0, 4}, MPI_COMM_WORLD, options), InvalidArgument);
  EXPECT_THROW(Transpose({8, 4, 4}, MPI_COMM_WORLD, {.tile = {0, 4}}), InvalidArgument);
  EXPECT_THROW(Transpose({8, 4, 4}, MPI_COMM_WORLD, {.backward_tile = {4, -1}}), InvalidArgument);
  EXPECT_THROW(Transpose({8, 4, 4}, MPI_COMM_WORLD, {.pack_threads = -1}), InvalidArgument);
  Transpose t({8, 4, 4}, MPI_COMM_WORLD, options);
  std::vector<double> planes(t.plane_size() + 1), pencils(t.pencil_size());
  EXPECT_THROW(t.planes_to_pencils(planes, pencils), InvalidArgument);
  EXPECT_THROW(t.pencils_to_planes(pencils, planes), InvalidArgument);
}

TEST(Transpose, ExtentsSplitBlockwiseWithTheRemainderFirst) {
  EXPECT_EQ(block_extent(10, 4, 0), (Extent{0, 3}));
  EXPECT_EQ(block_extent(10, 4, 1), (Extent{3, 6}));
  EXPECT_EQ(block_extent(10, 4, 2), (Extent{6, 8}));
  EXPECT_EQ(block_extent(10, 4, 3), (Extent{8, 10}));
  EXPECT_THROW((void)block_extent(10, 4, 4), InvalidArgument);
}

TEST(Transpose, OptionsParseAndPrint) {
  EXPECT_EQ(parse_tile_shape("auto"), TileShape{});
  EXPECT_EQ(parse_tile_shape("16x64"), (TileShape{16, 64}));
  EXPECT_EQ(parse_tile_shape("16x64:streaming"), (TileShape{16, 64, true}));
  for (const TileShape tile : {TileShape{}, TileShape{16, 64}, TileShape{8, 1024, true}})
    EXPECT_EQ(parse_tile_shape(to_string(tile)), tile) << to_string(tile);
  for (const char* bad : {"16", "0x4", "4x", "x4", "4x4x", "-1x4", "auto4", "4x4:", "4x4:stream", ":streaming",
                          "auto:streaming", "4x4:streaming:streaming"})
    EXPECT_THROW((void)parse_tile_shape(bad), InvalidArgument) << bad;
  EXPECT_EQ(parse_enum<TransposeExchange>("pairwise"), TransposeExchange::pairwise);
  EXPECT_EQ(parse_enum<WirePrecision>("single"), WirePrecision::single_precision);
  EXPECT_THROW((void)parse_enum<WirePrecision>("half"), InvalidArgument);
  TransposeOptions options{TransposeExchange::alltoall, WirePrecision::single_precision, {}, 3};
  options.set_tiles({8, 32});
  options.backward_tile.streaming = true;
  EXPECT_EQ(options.to_json(),
            (nlohmann::json{{"exchange", "alltoall"}, {"wire", "single"}, {"tile", "8x32"},
                            {"backward_tile", "8x32:streaming"},
                            {"tile_auto", false},
                            {"pack_threads", 3}}));
}

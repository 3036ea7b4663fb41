// spmv3d: the product is exact, CG's residual history equals a one-rank solve bit for bit for
// every strategy, tile and operator, and CG reaches the manufactured solution.
#include <gtest/gtest.h>
#include <mpi.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <span>

#include "hympi/core/error.hpp"
#include "hympi/spmv3d/spmv3d.hpp"
#include "hympi/spmv3d/stencil.hpp"
#include "hympi/spmv3d/verify.hpp"
#include "omp_threads.hpp"

using namespace hympi;

namespace {

using hympi::test::Threads;

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

using Tile = std::optional<std::array<long, 3>>;

/// The operator of `o` on the world's decomposition, and y = A x for the ids x that spmv3d_count_mismatches checks.
struct Product {
  explicit Product(const Spmv3dOptions& o)
      : cart(MPI_COMM_WORLD, {o.global, {false, false, false}, {0, 0, 0}}),
        a(cart, o),
        x(a.make_vector()),
        y(a.make_vector()) {
    spmv3d_fill_ids(cart, x);
    a.apply(x, y);
  }
  CartDecomposition cart;
  Operator27 a;
  Grid3D<double> x, y;
};

/// run_spmv3d on `comm` for a check that reads only the result, not the phases.
Spmv3dResult run(const Spmv3dOptions& o, MPI_Comm comm = MPI_COMM_WORLD) {
  Metrics unread;
  return run_spmv3d(comm, o, unread);
}

}  // namespace

TEST(Spmv3d, NonzeroCountMatchesTheClosedForm) {
  EXPECT_EQ(spmv3d_nonzeros({1, 1, 1}), 1.0);
  EXPECT_EQ(spmv3d_nonzeros({2, 1, 1}), 4.0);
  EXPECT_EQ(spmv3d_nonzeros({16, 16, 16}), 46.0 * 46.0 * 46.0);
}

TEST(Spmv3d, BytesPerProductAreTheMatrixXAsReadAndYWithItsWriteAllocate) {
  // Counted here from the assembled matrix itself: its arrays' sizes, and x as the distinct points its
  // columns address (the owned ones and the halo's, never the walls' ghosts nor a second ghost layer).
  for (int ghost : {1, 2})
    for (auto streaming : {StreamingStores::off, StreamingStores::on}) {
      Spmv3dOptions o{.global = {11, 9, 7}, .ghost = ghost, .op = SpmvOperator::csr, .spmv_reps = 1, .cg_iterations = 0};
      o.streaming_stores = streaming;
      const Product csr(o);
      double matrix = 0;
      for (const auto area : csr.a.csr().storage()) matrix += static_cast<double>(area.size());
      const auto columns = csr.a.csr().storage()[1];
      const std::span<const std::int32_t> cols(reinterpret_cast<const std::int32_t*>(columns.data()),
                                               columns.size() / sizeof(std::int32_t));
      const std::set<std::int32_t> read(cols.begin(), cols.end());
      const double owned = static_cast<double>(csr.cart.local_box().count());
      const bool streams = streaming == StreamingStores::on && Csr27::can_stream();
      EXPECT_EQ(csr.a.streaming_stores(), streams);
      const double y = (streams ? 8.0 : 16.0) * owned;  // written, and read for ownership unless streamed
      EXPECT_DOUBLE_EQ(csr.a.bytes_per_apply(), matrix + 8.0 * static_cast<double>(read.size()) + y);
      // The matrix-free stencil reads the same x and writes the same y, without the matrix.
      o.op = SpmvOperator::stencil;
      const Product stencil(o);
      const bool stencil_streams = streaming == StreamingStores::on && stencil27_can_stream();
      EXPECT_DOUBLE_EQ(stencil.a.bytes_per_apply(),
                       8.0 * static_cast<double>(read.size()) + (stencil_streams ? 8.0 : 16.0) * owned);
      EXPECT_EQ(stencil.y.data().size(), csr.y.data().size());
      EXPECT_EQ(spmv3d_count_mismatches(csr.cart, csr.y), 0);  // streamed or not, the same exact product
    }
}

TEST(Spmv3d, ProductIsExactForEveryOperatorStrategyAndTile) {
  for (int ghost : {1, 2})
    for (auto op : {SpmvOperator::stencil, SpmvOperator::csr})
      for (auto s : {OverlapStrategy::bulk, OverlapStrategy::split, OverlapStrategy::comm_thread})
        for (const Tile& t : {Tile{}, Tile{{5, 3, 2}}}) {
          const Threads threads(s == OverlapStrategy::comm_thread || ghost == 2 ? 2 : 1);
          Spmv3dOptions o;
          o.global = {13, 11, 7};
          o.ghost = ghost;
          o.op = op;
          o.overlap = {s, t};
          // Streamed stores must give the same product (the tiled runs use them).
          o.streaming_stores = t ? StreamingStores::on : StreamingStores::off;
          Product p(o);
          p.a.apply(p.x, p.y);  // again: nothing of the first product may leak into the second
          EXPECT_EQ(spmv3d_count_mismatches(p.cart, p.y), 0)
              << to_string(op) << " " << to_string(s) << (t ? " tiled" : "") << " ghost " << ghost;
          if (op == SpmvOperator::csr) {
            // Every rank's stored nonzeros add up to the closed form.
            double mine = static_cast<double>(p.a.stored_nonzeros()), all = 0;
            MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            EXPECT_EQ(all, spmv3d_nonzeros(o.global));
          }
        }
}

TEST(Spmv3d, CsrWorkFollowsTheMatrixStorageOrder) {
  // The CSR product reads its matrix row by row in storage order only if each thread's untiled items are
  // single x-rows, y fastest then z; the stencil keeps pairs of planes, which share the planes of x they read.
  Spmv3dOptions o{.global = {9, 7, 6}, .op = SpmvOperator::csr, .spmv_reps = 1, .cg_iterations = 0};
  const Product csr(o);
  const auto& items = csr.a.driver().plan().all();
  const auto n = csr.cart.local_box().size();
  ASSERT_EQ(items.size(), static_cast<std::size_t>(n[1] * n[2]));
  for (std::size_t q = 0; q < items.size(); ++q) {
    EXPECT_EQ(items[q].size(), (std::array<long, 3>{n[0], 1, 1}));
    EXPECT_EQ(items[q].low[1], static_cast<long>(q) % n[1]);
    EXPECT_EQ(items[q].low[2], static_cast<long>(q) / n[1]);
  }
  o.op = SpmvOperator::stencil;
  const Product stencil(o);
  EXPECT_EQ(stencil.a.driver().plan().all().front().size()[2], std::min(2L, n[2]));
}

TEST(Spmv3d, VerifierCatchesOneWrongPoint) {
  Spmv3dOptions o;
  o.global = {9, 8, 7};
  Product p(o);
  const CartDecomposition& cart = p.cart;
  ASSERT_EQ(spmv3d_count_mismatches(cart, p.y), 0);
  if (cart.rank() == 0) p.y(0, 0, 0) += 1.0;
  EXPECT_EQ(spmv3d_count_mismatches(cart, p.y), 1);
  // A ghost left stale (here: never exchanged) must show up as wrong points too.
  auto z = p.a.make_vector();
  auto w = p.a.make_vector();
  spmv3d_fill_ids(cart, z);
  const auto n = z.extent();
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) {
        double acc = 26.0 * z(i, j, k);
        for (int dz = -1; dz <= 1; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx)
              if (dx != 0 || dy != 0 || dz != 0) acc -= z(i + dx, j + dy, k + dz);
        w(i, j, k) = acc;
      }
  const long wrong = spmv3d_count_mismatches(cart, w);
  if (world_size() == 1)
    EXPECT_EQ(wrong, 0);
  else
    EXPECT_GT(wrong, 0);
}

TEST(Spmv3d, VerifierFailsEveryKindOfWrongResult) {
  Spmv3dOptions o;
  o.global = {12, 10, 9};
  o.spmv_reps = 1;
  o.op = SpmvOperator::csr;
  const auto good = run(o);
  ASSERT_TRUE(verify_spmv3d(MPI_COMM_WORLD, o, good, true).passed());
  EXPECT_EQ(spmv3d_failures(verify_spmv3d(MPI_COMM_WORLD, o, good, true), good), "");
  ASSERT_GT(good.cg_residuals.size(), 4u);
  auto r = good;
  r.spmv_mismatches = 1;  // one wrong point of the product
  EXPECT_FALSE(verify_spmv3d(MPI_COMM_WORLD, o, r, false).product_exact);
  EXPECT_FALSE(verify_spmv3d(MPI_COMM_WORLD, o, r, false).passed());
  // The verification line names what failed, with its figure.
  EXPECT_EQ(spmv3d_failures(verify_spmv3d(MPI_COMM_WORLD, o, r, false), r), "the product is wrong at 1 point");
  r = good;
  r.cg_max_error = 2 * kSpmv3dErrorBound;  // CG stopped short of the manufactured solution
  EXPECT_FALSE(verify_spmv3d(MPI_COMM_WORLD, o, r, false).passed());
  EXPECT_EQ(spmv3d_failures(verify_spmv3d(MPI_COMM_WORLD, o, r, false), r),
            "CG stopped after " + std::to_string(r.cg_iterations) + " iterations, converged, error 2e-06 > 1e-06");
  r = good;
  r.cg_converged = false;
  EXPECT_FALSE(verify_spmv3d(MPI_COMM_WORLD, o, r, false).passed());
  // Two failures at once: both named, in the checks' order.
  r.spmv_mismatches = 3;
  const std::string both = spmv3d_failures(verify_spmv3d(MPI_COMM_WORLD, o, r, false), r);
  EXPECT_EQ(both.find("the product is wrong at 3 points; CG stopped after "), 0u) << both;
  EXPECT_NE(both.find(" iterations, not converged, error "), std::string::npos) << both;
  // One residual one ulp off: only the comparison with the one-rank reference sees it.
  r = good;
  double& mid = r.cg_residuals[r.cg_residuals.size() / 2];
  mid = std::nextafter(mid, 2 * mid);
  EXPECT_TRUE(verify_spmv3d(MPI_COMM_WORLD, o, r, false).passed());
  const auto verdict = verify_spmv3d(MPI_COMM_WORLD, o, r, true);
  EXPECT_FALSE(verdict.history_matches);
  EXPECT_FALSE(verdict.passed());
  EXPECT_EQ(spmv3d_failures(verdict, r), "CG's residual history differs from the one-rank solve's");
}

TEST(Spmv3d, CgHistoryEqualsOneRankForEveryStrategyAndTile) {
  Spmv3dOptions base;
  // Uneven blocks at 2, 3 and 4 ranks; x stays whole so that rows are long enough for the
  // vector kernels' main loops (one-row and plane-pair kernels must give the same bits).
  base.global = {37, 9, 10};
  base.dims = {1, 0, 0};
  base.spmv_reps = 1;
  base.cg_tolerance = 1e-10;
  // The operators round differently (box sum vs entry by entry): one reference each.
  auto csr = base;
  csr.op = SpmvOperator::csr;
  const Spmv3dResult references[2] = {run(base, MPI_COMM_SELF), run(csr, MPI_COMM_SELF)};
  for (const auto& reference : references) {
    ASSERT_TRUE(reference.cg_converged);
    ASSERT_GT(reference.cg_iterations, 10);
    EXPECT_LE(reference.cg_max_error, kSpmv3dErrorBound);
  }
  struct Variant {
    SpmvOperator op;
    OverlapStrategy strategy;
    Tile tile;
    int threads;
  };
  // Every strategy and operator, tiled and not, threaded where it matters; a CG per variant
  // is what an oversubscribed 2-core test machine can afford at 4 ranks.
  const Variant variants[] = {
      {SpmvOperator::stencil, OverlapStrategy::bulk, Tile{{4, 4, 3}}, 2},
      {SpmvOperator::stencil, OverlapStrategy::split, Tile{}, 1},
      {SpmvOperator::stencil, OverlapStrategy::comm_thread, Tile{}, 2},  // streamed stores: see below
      {SpmvOperator::csr, OverlapStrategy::bulk, Tile{}, 1},
      {SpmvOperator::csr, OverlapStrategy::split, Tile{{4, 4, 3}}, 1},
      {SpmvOperator::csr, OverlapStrategy::comm_thread, Tile{{4, 4, 3}}, 2},
  };
  for (const Variant& v : variants) {
    const Threads threads(v.threads);
    auto o = base;
    o.op = v.op;
    o.overlap = {v.strategy, v.tile};
    o.streaming_stores = v.strategy == OverlapStrategy::comm_thread ? StreamingStores::on : StreamingStores::off;
    Metrics m;
    const auto r = run_spmv3d(MPI_COMM_WORLD, o, m);
    EXPECT_EQ(r.cg_residuals, references[v.op == SpmvOperator::csr ? 1 : 0].cg_residuals)
        << to_string(v.op) << " " << to_string(v.strategy) << (v.tile ? " tiled" : "");
    EXPECT_EQ(r.spmv_mismatches, 0);
    EXPECT_TRUE(r.cg_converged);
    EXPECT_LE(r.cg_max_error, kSpmv3dErrorBound);
    // The products' kernel time is part of the CG loop's time (comp_s <= wall_s per product).
    EXPECT_GT(m.seconds("cg_spmv"), 0.0);
    EXPECT_LE(m.seconds("cg_spmv"), r.cg_time_s);
  }
}

TEST(Spmv3d, PerRankSizeScalesWithTheProcessGrid) {
  const Spmv3dOptions o{.per_rank = {6, 5, 3}, .spmv_reps = 1, .cg_iterations = 0};
  const auto r = run(o);
  for (int d = 0; d < 3; ++d) EXPECT_EQ(r.global[d], o.per_rank[d] * r.dims[d]);
  EXPECT_EQ(r.dims[0] * r.dims[1] * r.dims[2], world_size());
  EXPECT_EQ(r.spmv_mismatches, 0);
  EXPECT_TRUE(r.cg_residuals.empty());
  // The process grid is cart's per-rank search (its own tests cover the choice).
  EXPECT_EQ(r.dims, choose_process_grid_per_rank(world_size(), o.per_rank, o.dims));
}

TEST(Spmv3d, MinTimeAddsProductsAndKeepsCgPhasesApart) {
  Spmv3dOptions o{.global = {16, 16, 16}, .spmv_reps = 3, .cg_iterations = 5};
  const auto exact = run(o);
  EXPECT_EQ(exact.spmv_reps, 3);  // without a minimum the count is exact
  // Relative to what 3 products take here: the test machine may be loaded.
  o.min_time_s = 4.0 * exact.spmv_time_s + 0.02;
  Metrics spmv, cg;
  const auto r = run_spmv3d(MPI_COMM_WORLD, o, spmv, cg);
  EXPECT_GE(r.spmv_time_s, o.min_time_s);
  EXPECT_GT(r.spmv_reps, o.spmv_reps);
  EXPECT_EQ(r.spmv_mismatches, 0);
  EXPECT_DOUBLE_EQ(r.spmv_flops, 2.0 * r.nonzeros * r.spmv_reps);
  const double per_product = Product(o).a.bytes_per_apply();
  double all_ranks = 0;
  MPI_Allreduce(&per_product, &all_ranks, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_DOUBLE_EQ(r.spmv_bytes, all_ranks * r.spmv_reps);
  // The products' phases fit into their own time; CG's went to the other sink only.
  EXPECT_LE(spmv.total(PhaseKind::computation) + spmv.total(PhaseKind::communication), r.spmv_time_s);
  EXPECT_EQ(spmv.seconds("cg_spmv"), 0.0);
  EXPECT_EQ(cg.seconds("spmv_compute"), 0.0);
  EXPECT_GT(cg.seconds("cg_spmv"), 0.0);
  EXPECT_LE(cg.seconds("cg_spmv"), r.cg_time_s);
}

TEST(Spmv3d, BadInputIsRejectedNamingTheValue) {
  Spmv3dOptions o;
  o.global = {8, 8, 8};
  EXPECT_NO_THROW(o.validate(4, 1));
  o.ghost = 5;  // fits one 8-point block, not the 4-point halves of two ranks
  EXPECT_NO_THROW(o.validate(1, 1));
  EXPECT_THROW(o.validate(2, 1), InvalidArgument);
  try {
    o.validate(2, 1);
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("ghost width 5"), std::string::npos) << e.what();
  }
  o.ghost = 0;
  EXPECT_THROW(o.validate(1, 1), InvalidArgument);
  o.ghost = 1;
  o.overlap.tile = std::array<long, 3>{4, 4, 0};
  EXPECT_THROW(o.validate(1, 1), InvalidArgument);
  o.overlap = {OverlapStrategy::comm_thread, std::nullopt};
  EXPECT_THROW(o.validate(1, 1), InvalidArgument);
  EXPECT_NO_THROW(o.validate(1, 2));
  EXPECT_THROW(parse_overlap_strategy("async"), InvalidArgument);
  EXPECT_THROW(parse_spmv_operator("ell"), InvalidArgument);
  EXPECT_THROW(parse_streaming_stores("maybe"), InvalidArgument);
  o = {};
  o.per_rank = {4, 0, 4};
  EXPECT_THROW(o.validate(1, 1), InvalidArgument);
  o = {};
  o.spmv_reps = 0;
  EXPECT_THROW(o.validate(1, 1), InvalidArgument);
  // 450^3 points: column indexes fit 32 bits (452^3 with ghosts), row starts of up to 27 nonzeros per point do
  // not; two ranks halve the block and fit. Checked before any assembly.
  o = {};
  o.global = {450, 450, 450};
  o.op = SpmvOperator::csr;
  try {
    o.validate(1, 1);
    ADD_FAILURE() << "450^3 CSR on one rank validated";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("450x450x450 points may hold more nonzeros than 32-bit CSR row starts"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(o.validate(2, 1));
}

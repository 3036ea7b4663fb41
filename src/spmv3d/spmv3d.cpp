#include "hympi/spmv3d/spmv3d.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "hympi/core/comm.hpp"
#include "hympi/core/error.hpp"
#include "hympi/grid/exact_sum.hpp"
#include "hympi/spmv3d/verify.hpp"

namespace hympi {

namespace {

/// Sum over owned points of a[p] * b[p], exactly: the same bits for every layout (collective).
double dot(const Grid3D<double>& a, const Grid3D<double>& b, MPI_Comm comm, Metrics& metrics) {
  const double* pa = a.data().data();
  const double* pb = b.data().data();
  ExactSum total;
  {
    auto t = metrics.time("cg_dot", PhaseKind::computation);
    total = exact_sum_of_points(a, [&](long x) { return pa[x] * pb[x]; });
  }
  auto t = metrics.time("cg_allreduce", PhaseKind::communication);
  total.allreduce(comm);
  return total.value();
}

/// Calls f(row_offset, length) for every owned row, static schedule.
template <class F>
void for_rows(const Grid3D<double>& g, F&& f) {
  const auto n = g.extent();
#pragma omp parallel for collapse(2) schedule(static)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j) f(g.index(0, j, k), n[0]);
}

/// The manufactured solution: smooth, but no eigenvector, so CG has real work to do.
double manufactured(long gi, long gj, long gk) {
  return 1.0 + 0.5 * std::sin(0.3 * static_cast<double>(gi) + 0.7 * static_cast<double>(gj) +
                              1.1 * static_cast<double>(gk));
}

}  // namespace

Spmv3dResult run_spmv3d(MPI_Comm comm, const Spmv3dOptions& options, Metrics& metrics) {
  return run_spmv3d(comm, options, metrics, metrics);
}

Spmv3dResult run_spmv3d(MPI_Comm comm, const Spmv3dOptions& options, Metrics& spmv_metrics, Metrics& cg_metrics,
                        h5::IoSession* io) {
  int ranks = 1;
  HYMPI_MPI(MPI_Comm_size(comm, &ranks));
  options.validate(ranks);
  const auto [global, dims] = options.resolve(ranks);
  CartDecomposition cart(comm, {global, {false, false, false}, dims});
  Operator27 op(cart, options);
  Spmv3dResult result;
  result.global = global;
  result.dims = cart.dims();
  result.nonzeros = spmv3d_nonzeros(global);
  result.streaming_stores = op.streaming_stores();

  // Repeated SpMV on x = ids: the product is exact in doubles and checked point by point.
  {
    auto x = op.make_vector();
    auto y = op.make_vector();
    spmv3d_fill_ids(cart, x);
    op.apply(x, y);  // warm-up: page faults of the buffers, first MPI connections
    // Every array of the products is touched by now: where did the pages go (--membind)?
    spmv_metrics.observe_memory("x", std::as_bytes(x.data()));
    spmv_metrics.observe_memory("y", std::as_bytes(y.data()));
    double touched = static_cast<double>(x.data().size_bytes() + y.data().size_bytes());
    for (const auto area : op.csr().storage()) {
      if (!area.empty()) spmv_metrics.observe_memory("A", area);
      touched += static_cast<double>(area.size());
    }
    result.spmv_working_set_bytes = max_over(cart.comm(), touched);
    HYMPI_MPI(MPI_Barrier(cart.comm()));
    OverlapTimes local;
    constexpr long kMaxReps = std::numeric_limits<int>::max() / 2;
    int target = options.spmv_reps;
    int done = 0;
    const double t0 = MPI_Wtime();
    while (done < target) {
      for (; done < target; ++done) local += op.apply(x, y);
      if (options.min_time_s > 0) {
        // The slowest rank's time decides, so every rank computes the same new target.
        const double so_far = MPI_Wtime() - t0;
        const double slowest = max_over(cart.comm(), so_far);
        target = static_cast<int>(repetitions_for_min_time(done, slowest, options.min_time_s, kMaxReps));
      }
    }
    const double elapsed = MPI_Wtime() - t0;
    spmv_metrics.add("spmv_halo", PhaseKind::communication, local.comm_s);
    spmv_metrics.add("spmv_compute", PhaseKind::computation, local.comp_s);
    result.spmv_time_s = max_over(cart.comm(), elapsed);
    std::array<double, 3> mine{local.wall_s, local.comm_s, local.comp_s}, sum{};
    HYMPI_MPI(MPI_Allreduce(mine.data(), sum.data(), 3, MPI_DOUBLE, MPI_SUM, cart.comm()));
    result.spmv_times = {sum[0] / ranks, sum[1] / ranks, sum[2] / ranks};
    result.spmv_reps = done;
    result.spmv_flops = 2.0 * result.nonzeros * done;
    double bytes = op.bytes_per_apply() * done;
    HYMPI_MPI(MPI_Allreduce(&bytes, &result.spmv_bytes, 1, MPI_DOUBLE, MPI_SUM, cart.comm()));
    result.spmv_mismatches = spmv3d_count_mismatches(cart, y);
  }
  if (options.cg_iterations == 0) return result;

  // CG on A x = b with b = A x*, from x = 0.
  auto xs = op.make_vector();
  auto b = op.make_vector();
  {
    const auto n = xs.extent();
#pragma omp parallel for collapse(2) schedule(static)
    for (long k = 0; k < n[2]; ++k)
      for (long j = 0; j < n[1]; ++j)
        for (long i = 0; i < n[0]; ++i) xs(i, j, k) = manufactured(xs.global(0, i), xs.global(1, j), xs.global(2, k));
    op.apply(xs, b);
  }
  auto x = op.make_vector();
  auto r = op.make_vector();
  auto p = op.make_vector();
  auto q = op.make_vector();
  double* px = x.data().data();
  double* pr = r.data().data();
  double* pp = p.data().data();
  double* pq = q.data().data();
  const double* pb = b.data().data();
  // Between iterations CG carries x, r, p, rr = (r, r) and the history (r0 is its first entry): a
  // checkpoint holds exactly these, so a restart re-enters the loop where the checkpoint left it.
  // q is rewritten before it is read, b only starts r.
  // A plain variable for the lambdas below (a structured binding is not portably captured).
  const std::array<long, 3> global_points = global;
  int it = 0;
  double rr = 0;
  if (io != nullptr && io->restarting()) {
    io->restart([&](h5::File& f, const h5::CheckpointHeader& h) {
      // The session's header check (the app's) has vouched for the step and the state's shape.
      rr = h.state.at("rr").get<double>();
      result.cg_residuals = h.state.at("residuals").get<std::vector<double>>();
      it = static_cast<int>(h.step);
      for (const auto& [name, v] : {std::pair{"x", &x}, std::pair{"r", &r}, std::pair{"p", &p}})
        f.read(name, h5::Block3::of(*v, global_points), v->data());
    });
    // The dot is exact, so (r, r) read back must be rr to the bit: a cheap proof r is the r written.
    if (dot(r, r, cart.comm(), cg_metrics) != rr)
      throw h5::BadFile("checkpoint " + io->options().restart_path + ": (r, r) of its r differs from its rr");
  } else {
    for_rows(r, [&](long o, long len) {
      for (long i = o; i < o + len; ++i) pr[i] = pp[i] = pb[i];
    });
  }
  const int first = it;
  // CG's vectors, touched when made (and by the start or the restart): where their pages are.
  for (const auto& [name, v] : {std::pair{"cg_x", &x}, std::pair{"cg_r", &r}, std::pair{"cg_p", &p},
                                std::pair{"cg_q", &q}})
    cg_metrics.observe_memory(name, std::as_bytes(v->data()));
  HYMPI_MPI(MPI_Barrier(cart.comm()));
  const double t0 = MPI_Wtime();
  double io_s = 0;  // checkpoints and snapshots: timed by the IoSession, kept out of the solve's time
  if (it == 0) {
    rr = dot(r, r, cart.comm(), cg_metrics);
    result.cg_residuals.push_back(std::sqrt(rr));
  }
  const double r0 = result.cg_residuals.front();
  const auto snapshot = [&] {
    if (io == nullptr || !io->snapshot_due(it)) return;
    const double s0 = MPI_Wtime();
    const h5::SnapshotField field{"", "x", h5::Block3::of(x, global_points), x.data(), {0, 0, 0}, {1, 1, 1}};
    io->snapshot(it, 0.0, std::span(&field, 1));
    io_s += MPI_Wtime() - s0;
  };
  snapshot();  // the starting x (0, or the checkpoint's), as rb3d does
  OverlapTimes spmv;
  while (it < options.cg_iterations) {
    spmv += op.apply(p, q);
    const double alpha = rr / dot(p, q, cart.comm(), cg_metrics);
    {
      auto t = cg_metrics.time("cg_update", PhaseKind::computation);
      // Explicit fma: the same rounding whatever the compiler would contract.
      for_rows(x, [&](long o, long len) {
        for (long i = o; i < o + len; ++i) {
          px[i] = std::fma(alpha, pp[i], px[i]);
          pr[i] = std::fma(-alpha, pq[i], pr[i]);
        }
      });
    }
    const double rr_new = dot(r, r, cart.comm(), cg_metrics);
    ++it;
    result.cg_residuals.push_back(std::sqrt(rr_new));
    snapshot();
    if (std::sqrt(rr_new) <= options.cg_tolerance * r0) {
      result.cg_converged = true;
      break;
    }
    const double beta = rr_new / rr;
    rr = rr_new;
    {
      auto t = cg_metrics.time("cg_update", PhaseKind::computation);
      for_rows(p, [&](long o, long len) {
        for (long i = o; i < o + len; ++i) pp[i] = std::fma(beta, pp[i], pr[i]);
      });
    }
    if (io != nullptr) {
      const double c0 = MPI_Wtime();
      io->progress();  // publishes the checkpoint in flight once every rank has written it
      // Not after the converged iteration: its p is not updated, and a restart would step on from it.
      if (io->checkpoint_due(it)) {
        io->checkpoint(it, 0.0, {{"rr", rr}, {"residuals", result.cg_residuals}}, [&](h5::File& f) {
          for (const auto& [name, v] : {std::pair{"x", &x}, std::pair{"r", &r}, std::pair{"p", &p}})
            f.write(name, h5::Block3::of(*v, global_points), std::as_const(*v).data());
        });
      }
      io_s += MPI_Wtime() - c0;
    }
  }
  const double elapsed = MPI_Wtime() - t0 - io_s;
  cg_metrics.add("cg_halo", PhaseKind::communication, spmv.comm_s);
  cg_metrics.add("cg_spmv", PhaseKind::computation, spmv.comp_s);
  result.cg_time_s = max_over(cart.comm(), elapsed);
  result.cg_iterations = it;
  result.cg_timed_iterations = it - first;
  const double n_points = static_cast<double>(global[0] * global[1] * global[2]);
  // Per iteration: SpMV, two dots and three fused updates (2 flops per point each).
  result.cg_flops = result.cg_timed_iterations * (2.0 * result.nonzeros + 10.0 * n_points);

  double err = 0, peak = 0;
  {
    const auto n = x.extent();
#pragma omp parallel for collapse(2) schedule(static) reduction(max : err, peak)
    for (long k = 0; k < n[2]; ++k)
      for (long j = 0; j < n[1]; ++j)
        for (long i = 0; i < n[0]; ++i) {
          err = std::max(err, std::abs(x(i, j, k) - xs(i, j, k)));
          peak = std::max(peak, std::abs(xs(i, j, k)));
        }
  }
  // The solution's fingerprint: a sum over points of a hash of (global index, bits), the same for any layout.
  std::uint64_t hash = 0;
  {
    const auto n = x.extent();
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : hash)
    for (long k = 0; k < n[2]; ++k)
      for (long j = 0; j < n[1]; ++j)
        for (long i = 0; i < n[0]; ++i) {
          const long g = x.global(0, i) + global[0] * (x.global(1, j) + global[1] * x.global(2, k));
          hash += h5::element_hash(static_cast<std::uint64_t>(g), std::bit_cast<std::uint64_t>(x(i, j, k)));
        }
  }
  HYMPI_MPI(MPI_Allreduce(&hash, &result.cg_x_hash, 1, MPI_UINT64_T, MPI_SUM, cart.comm()));
  std::array<double, 2> mine{err, peak}, all{};
  HYMPI_MPI(MPI_Allreduce(mine.data(), all.data(), 2, MPI_DOUBLE, MPI_MAX, cart.comm()));
  result.cg_max_error = all[0] / all[1];
  return result;
}

}  // namespace hympi

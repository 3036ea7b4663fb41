#include "hympi/rb3d/rb3d.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "hympi/grid/cart.hpp"
#include "hympi/core/comm.hpp"
#include "hympi/core/error.hpp"
#include "hympi/grid/exact_sum.hpp"
#include "hympi/grid/grid3d.hpp"
#include "hympi/grid/halo.hpp"

namespace hympi {

void Rb3dOptions::validate(int ranks) const { validate(ranks, omp_get_max_threads()); }

void Rb3dOptions::validate(int ranks, int threads) const {
  for (int d = 0; d < 3; ++d)
    if (global[d] < 1) throw InvalidArgument("grid size must be >= 1, got " + std::to_string(global[d]));
  if (iterations < 1) throw InvalidArgument("iterations must be >= 1, got " + std::to_string(iterations));
  if (!(min_time_s >= 0.0 && std::isfinite(min_time_s)))
    throw InvalidArgument("minimum time must be a number of seconds >= 0, got " + std::to_string(min_time_s));
  if (!(omega > 0.0 && omega < 2.0)) throw InvalidArgument("omega must be in (0, 2), got " + std::to_string(omega));
  if (residual_every < 1)
    throw InvalidArgument("residual interval must be >= 1, got " + std::to_string(residual_every));
  // 1e400 parses as inf: refused like nan, since a bound that never binds is not what was typed.
  if (!(std::isfinite(tolerance) && tolerance >= 0.0))
    throw InvalidArgument("--tolerance must be a finite number >= 0, got " + std::to_string(tolerance));
  // One spacing h for all axes keeps the 7-point weights equal; a cube is what the scheme solves.
  if (global[1] != global[0] || global[2] != global[0])
    throw InvalidArgument("rb3d needs a cubic grid (nx = ny = nz), got " + std::to_string(global[0]) + "x" +
                          std::to_string(global[1]) + "x" + std::to_string(global[2]));
  // In double: n^3 overflows a long from n = 2^21 on, a size the memory check refuses only after this one.
  const double cells = static_cast<double>(global[0]) * static_cast<double>(global[1]) * static_cast<double>(global[2]);
  if (ranks > cells)
    throw InvalidArgument(std::to_string(ranks) + " ranks exceed the " + std::to_string(static_cast<long>(cells)) +
                          " grid cells");
  (void)choose_process_grid(ranks, global, dims);  // throws when no block layout fits
  overlap.validate(threads);
}

nlohmann::json Rb3dOptions::to_json() const {
  return {{"global", global},       {"iterations", iterations}, {"min_time_s", min_time_s},
          {"omega", omega},         {"residual_every", residual_every}, {"tolerance", tolerance},
          {"overlap", overlap.to_json()}};
}

nlohmann::json rb3d_restart_options(const Rb3dOptions& options) {
  return {{"omega", options.omega}, {"residual_every", options.residual_every}};
}

void check_rb3d_restart_options(const std::string& path, const nlohmann::json& state, const Rb3dOptions& options) {
  const nlohmann::json mine = rb3d_restart_options(options);
  for (const auto& [key, value] : mine.items())
    if (state.contains(key) && state.at(key) != value) {
      std::string flag = "--" + key;
      std::replace(flag.begin(), flag.end(), '_', '-');
      throw h5::BadFile("--restart " + path + " was written with " + flag + " " + state.at(key).dump() +
                        ", this run has " + value.dump());
    }
}

double rb3d_flops_per_point(double omega) { return omega == 1.0 ? 7.0 : 10.0; }

namespace {

struct Problem {
  CartDecomposition cart;
  Grid3D<double> u, hf;  // hf = h^2 f (the scheme uses equal spacing, checked below)
  double h;
};

/// Updates the points of one colour in box `b` (local coordinates); the result of each point
/// depends only on the other colour, so every ordering, tiling, overlap strategy, thread count
/// and decomposition yields the same bits.
template <bool Sor>
void sweep_box(Grid3D<double>& u, const Grid3D<double>& hf, int colour, double omega, const Box3& b) {
  const long sy = u.stride_y(), sz = u.stride_z();
  const long parity0 = u.box().low[0] + u.box().low[1] + u.box().low[2];
  double* p = u.data().data();
  const double* f = hf.data().data();
  constexpr double sixth = 1.0 / 6.0;
  for (long k = b.low[2]; k < b.high[2]; ++k)
    for (long j = b.low[1]; j < b.high[1]; ++j) {
      // First i >= b.low[0] of this colour in the row.
      const long i0 = b.low[0] + ((colour + parity0 + j + k + b.low[0]) & 1);
      const long row = u.index(0, j, k);
      for (long i = i0; i < b.high[0]; i += 2) {
        const long x = row + i;
        const double gs = (f[x] + p[x - 1] + p[x + 1] + p[x - sy] + p[x + sy] + p[x - sz] + p[x + sz]) * sixth;
        if constexpr (Sor)
          p[x] = p[x] + omega * (gs - p[x]);
        else
          p[x] = gs;
      }
    }
}

double residual_norm(const Grid3D<double>& u, const Grid3D<double>& hf, double h, MPI_Comm comm, long points) {
  const long sy = u.stride_y(), sz = u.stride_z();
  const double* p = u.data().data();
  const double* f = hf.data().data();
  const double inv_h2 = 1.0 / (h * h);
  ExactSum total = exact_sum_of_points(u, [&](long x) {
    const double r =
        (f[x] - (6.0 * p[x] - p[x - 1] - p[x + 1] - p[x - sy] - p[x + sy] - p[x - sz] - p[x + sz])) * inv_h2;
    return r * r;
  });
  total.allreduce(comm);
  return std::sqrt(total.value() / static_cast<double>(points));
}

}  // namespace

Rb3dResult solve_rb3d(MPI_Comm comm, const Rb3dOptions& options, Metrics& metrics, h5::IoSession* io) {
  int ranks = 1;
  HYMPI_MPI(MPI_Comm_size(comm, &ranks));
  options.validate(ranks);
  CartDecomposition cart(comm, {options.global, {false, false, false}, options.dims});
  Grid3D<double> u(cart.local_box(), 1), hf(cart.local_box(), 1);
  const double h = 1.0 / static_cast<double>(options.global[0] + 1);
  const double pi = std::numbers::pi;
  const auto n = u.extent();
  const auto exact = [&](long gi, long gj, long gk) {
    return std::sin(pi * h * static_cast<double>(gi + 1)) * std::sin(pi * h * static_cast<double>(gj + 1)) *
           std::sin(pi * h * static_cast<double>(gk + 1));
  };
#pragma omp parallel for collapse(2) schedule(static)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i)
        hf(i, j, k) = h * h * 3.0 * pi * pi * exact(u.global(0, i), u.global(1, j), u.global(2, k));

  // Both touched by now (Grid3D touches plane by plane with the kernels' schedule): where did the pages go?
  metrics.observe_memory("u", std::as_bytes(u.data()));
  metrics.observe_memory("f", std::as_bytes(hf.data()));
  OverlapDriver driver(cart, u, HaloPattern::faces, 1, options.overlap, UntiledRows::plane_pairs);
  HaloExchange& halo = driver.halo();
  const long points = options.global[0] * options.global[1] * options.global[2];
  Rb3dResult result;
  result.dims = cart.dims();
  {
    const double mine = static_cast<double>(u.data().size_bytes() + hf.data().size_bytes());
    result.working_set_bytes = max_over(cart.comm(), mine);
  }
  const auto measure_residual = [&](Metrics& into) {
    {
      auto t = into.time("residual_halo", PhaseKind::communication);
      halo.exchange(u);
    }
    auto t = into.time("residual", PhaseKind::computation);
    result.residuals.push_back(residual_norm(u, hf, h, cart.comm(), points));
  };
  // The state a checkpoint holds: u (owned points; halos are exchanged before every use), the iterations
  // done and the residual history so far. Restored, the loop goes on exactly as the run that wrote it.
  const h5::Block3 u_block = h5::Block3::of(u, options.global);
  int it = 0;
  if (io != nullptr && io->restarting()) {
    io->restart([&](h5::File& file, const h5::CheckpointHeader& header) {
      file.read("u", u_block, u.data());
      it = static_cast<int>(header.step);
      result.residuals = header.state.at("residuals").get<std::vector<double>>();
    });
  } else {
    // Before the timed loop, so its time stays out of the run's phases as it stays out of time_s.
    Metrics untimed;
    measure_residual(untimed);
  }
  const double r0 = result.residuals.front();
  const double spacing[3] = {h, h, h};
  const auto save = [&](int done) {
    if (io != nullptr) io->progress();  // publishes the checkpoint in flight once every rank has written it
    if (io == nullptr || !(io->checkpoint_due(done) || io->snapshot_due(done))) return;
    auto t = metrics.time("checkpoint", PhaseKind::other);
    if (io->checkpoint_due(done))
      io->checkpoint(done, 0.0, [&] {
        nlohmann::json state = rb3d_restart_options(options);
        state["residuals"] = result.residuals;
        return state;
      }(),
                     [&](h5::File& file) { file.write("u", u_block, u.data()); });
    if (io->snapshot_due(done)) {
      const h5::SnapshotField fields[] = {
          {"", "u", u_block, u.data(), {spacing[0], spacing[1], spacing[2]}, {spacing[0], spacing[1], spacing[2]}}};
      io->snapshot(done, 0.0, fields);
    }
  };
  const int first = it;
  save(it);  // the initial state as a snapshot (a checkpoint of step 0 is never due)

  HYMPI_MPI(MPI_Barrier(cart.comm()));
  const double t0 = MPI_Wtime();
  const bool sor = options.omega != 1.0;
  // The residual is taken every residual_every iterations and after the last one only: where the
  // min-time extension chunks end must not show in the history, which the reference compares.
  constexpr long kMaxIterations = std::numeric_limits<int>::max() / 2;
  int target = options.iterations;
  bool converged = false;
  OverlapTimes sweeps;
  while (it < target) {
    for (int colour = 0; colour < 2; ++colour) {
      OverlapTimes t;
      if (sor)
        t = driver.apply(u, [&](const Box3& b) { sweep_box<true>(u, hf, colour, options.omega, b); });
      else
        t = driver.apply(u, [&](const Box3& b) { sweep_box<false>(u, hf, colour, options.omega, b); });
      // Under split/commthread the two overlap: comm_s + comp_s exceeds the elapsed time.
      metrics.add("halo", PhaseKind::communication, t.comm_s);
      metrics.add("sweep", PhaseKind::computation, t.comp_s);
      sweeps += t;
    }
    ++it;
    if (it % options.residual_every == 0) {
      measure_residual(metrics);
      if (options.tolerance > 0 && result.residuals.back() <= options.tolerance * r0) {
        converged = true;
        break;
      }
    }
    save(it);
    if (it == target && options.min_time_s > 0) {
      // The slowest rank's time decides, so every rank computes the same new target.
      const double elapsed = MPI_Wtime() - t0;
      const double slowest = max_over(cart.comm(), elapsed);
      target = static_cast<int>(repetitions_for_min_time(it, slowest, options.min_time_s, kMaxIterations));
    }
  }
  if (!converged && it % options.residual_every != 0) measure_residual(metrics);
  if (io != nullptr && !io->options().checkpoint_path.empty()) {
    // The last checkpoint's background write is part of this run's time: waited for here, inside the clock.
    auto t = metrics.time("checkpoint", PhaseKind::other);
    io->finish();
  }
  const double local_time = MPI_Wtime() - t0;
  result.time_s = max_over(cart.comm(), local_time);
  result.iterations = it;
  result.restarted_at = first;
  const long done = it - first;  // this run's share: what time_s measured
  result.sweeps = static_cast<int>(2 * done);
  {
    std::array<double, 3> mine{sweeps.wall_s, sweeps.comm_s, sweeps.comp_s}, sum{};
    HYMPI_MPI(MPI_Allreduce(mine.data(), sum.data(), 3, MPI_DOUBLE, MPI_SUM, cart.comm()));
    const double r = cart.size();
    result.sweep_times = {sum[0] / r, sum[1] / r, sum[2] / r};
  }
  result.flops = rb3d_flops_per_point(options.omega) * static_cast<double>(points) * static_cast<double>(done);
  result.bytes = kRb3dBytesPerPoint * static_cast<double>(points) * static_cast<double>(done);

  double local_error = 0.0, peak = 0.0;
#pragma omp parallel for collapse(2) schedule(static) reduction(max : local_error, peak)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) {
        const double e = exact(u.global(0, i), u.global(1, j), u.global(2, k));
        local_error = std::max(local_error, std::abs(u(i, j, k) - e));
        peak = std::max(peak, std::abs(e));
      }
  result.max_error = max_over(cart.comm(), local_error);
  const double global_peak = max_over(cart.comm(), peak);
  // The sine is an eigenvector of the 7-point operator: the discrete solution is the exact one
  // scaled by pi^2 / lambda_h, lambda_h = (4/h^2) sin^2(pi h / 2), so its error is known exactly.
  const double lambda_h = 4.0 / (h * h) * std::pow(std::sin(pi * h / 2.0), 2);
  result.discretisation_error = (pi * pi / lambda_h - 1.0) * global_peak;
  return result;
}

bool verify_rb3d(MPI_Comm comm, const Rb3dOptions& solved, const Rb3dResult& result, const std::string& mode) {
  if (mode == "none") return false;
  if (mode == "exact") {
    return result.max_error <= 1.05 * result.discretisation_error &&
           result.max_error >= 0.95 * result.discretisation_error;
  }
  if (mode != "reference")
    throw InvalidArgument("unknown rb3d verification '" + mode + "' (expected reference, exact or none)");
  // One rank re-solves the whole problem alone; red-black order makes the bits comparable.
  return decide_on_root(comm, [&] {
    Metrics scratch;
    Rb3dOptions reference = solved;
    reference.dims = {0, 0, 0};
    reference.iterations = result.iterations;  // the count the timed solve agreed on: same history length
    reference.min_time_s = 0.0;
    reference.overlap = {};  // the plain bulk, untiled sweep
    return solve_rb3d(MPI_COMM_SELF, reference, scratch).residuals == result.residuals;
  });
}

}  // namespace hympi

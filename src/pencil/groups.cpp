// Two coupled groups: the split, the coupling over the world communicator, the warm-up that chooses the split
// and the verified coupled run (set-up and bookkeeping; the per-substep plane interpolation is ny x modes).
#include "hympi/pencil/groups.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "hympi/core/comm.hpp"
#include "hympi/core/error.hpp"
#include "hympi/pencil/io.hpp"

namespace hympi::pencil {

namespace {

constexpr int kPlaneTag = 16;
constexpr int kWarmupSteps = 4;

int world_size(MPI_Comm world) {
  int size = 1;
  HYMPI_MPI(MPI_Comm_size(world, &size));
  return size;
}

int world_rank(MPI_Comm world) {
  int rank = 0;
  HYMPI_MPI(MPI_Comm_rank(world, &rank));
  return rank;
}

/// Each value's max over the coarse group's ranks, then over the fine group's: {coarse..., fine...} on every
/// rank of `world` (collective).
std::vector<double> per_group_max(MPI_Comm world, bool coarse, const std::vector<double>& values) {
  const std::size_t n = values.size();
  std::vector<double> mine(2 * n, -std::numeric_limits<double>::infinity()), out(2 * n);
  std::copy(values.begin(), values.end(), mine.begin() + static_cast<long>(coarse ? 0 : n));
  HYMPI_MPI(MPI_Allreduce(mine.data(), out.data(), static_cast<int>(2 * n), MPI_DOUBLE, MPI_MAX, world));
  return out;
}

/// Cubic Lagrange interpolation from the coarse y grid (spacing hc, nc points) at y: the first of its four
/// points (clamped at the walls) and their weights.
struct Stencil {
  long first = 0;
  double weight[4] = {};
  /// |prod (y - y_n)| over the four points: the interpolation error is u_yyyy(xi) / 4! times this.
  double node_product = 0;
};

Stencil lagrange_stencil(double y, double hc, long nc) {
  Stencil s;
  s.first = std::clamp(static_cast<long>(std::floor(y / hc)) - 1, 0L, nc - 4);
  s.node_product = 1;
  for (int m = 0; m < 4; ++m) {
    double w = 1;
    for (int n = 0; n < 4; ++n)
      if (n != m) w *= (y - static_cast<double>(s.first + n) * hc) / (static_cast<double>(m - n) * hc);
    s.weight[m] = w;
    s.node_product *= std::abs(y - static_cast<double>(s.first + m) * hc);
  }
  return s;
}

/// The fine inflow's error from the y interpolation alone: max over the fine y points of max|u_yyyy| / 4! times
/// the node product, max|u_yyyy| = (pi / ly)^4 x 7/4 for the manufactured solution (|Z| <= 7/4). The scheme
/// carries a boundary error into the domain without amplifying it, so it bounds the fine solution's share too.
double interpolation_error_bound(const CoupledProblems& problems) {
  const long nc = problems.coarse.grid[1], nf = problems.fine.grid[1];
  const double hc = problems.coarse.problem.ly / static_cast<double>(nc - 1);
  const double hf = problems.fine.problem.ly / static_cast<double>(nf - 1);
  double product = 0;
  for (long i = 0; i < nf; ++i)
    product = std::max(product, lagrange_stencil(static_cast<double>(i) * hf, hc, nc).node_product);
  const double ky = std::numbers::pi / problems.fine.problem.ly;
  return 1.75 * std::pow(ky, 4) / 24.0 * product;
}

/// The coupling of one rank: the time step agreed over the world; the coarse rank owning the fine domain's
/// inflow plane sends it, interpolated onto the fine (y, z) grid, to the fine rank owning x = x0 each substep.
class GroupCoupling final : public Coupling {
 public:
  GroupCoupling(MPI_Comm world, const CoupledProblems& problems, const GroupSplit& split, bool coarse)
      : world_(world), coarse_(coarse), receiver_(split.coarse) {
    for (int r = 0; r < split.coarse; ++r) {
      const transpose::Extent xs = transpose::block_extent(problems.coarse.grid[0], split.coarse, r);
      if (problems.inflow_plane >= xs.begin && problems.inflow_plane < xs.end) sender_ = r;
    }
    const ZModes fine = dealiased_modes(problems.fine.grid[2], PencilOptions::kMinNz);
    const ZModes coarse_modes = dealiased_modes(problems.coarse.grid[2], PencilOptions::kMinNz);
    fine_doubles_ = fine.doubles();
    coarse_doubles_ = coarse_modes.doubles();
    local_plane_ = problems.inflow_plane - transpose::block_extent(problems.coarse.grid[0], split.coarse,
                                                                    std::max(sender_, 0)).begin;
    if (coarse_ && world_rank(world) == sender_) interpolation(problems);
  }

  double agree_dt(double local) override {
    double agreed = 0;
    HYMPI_MPI(MPI_Allreduce(&local, &agreed, 1, MPI_DOUBLE, MPI_MIN, world_));
    return agreed;
  }

  bool inflow(const PencilSolver& solver, double t, std::span<double> plane) override {
    (void)solver, (void)t;
    if (coarse_) return false;  // the coarse domain's own inflow is the exact one
    HYMPI_MPI(MPI_Recv(plane.data(), static_cast<int>(plane.size()), MPI_DOUBLE, sender_, kPlaneTag, world_,
                       MPI_STATUS_IGNORE));
    return true;
  }

  void substep_done(const PencilSolver& solver) override {
    if (stencil_.empty()) return;
    const long ny_coarse = solver.options().grid[1], fine_ny = static_cast<long>(stencil_.size());
    const std::span<const double> plane = solver.state().subspan(
        static_cast<std::size_t>(local_plane_ * ny_coarse * coarse_doubles_),
        static_cast<std::size_t>(ny_coarse * coarse_doubles_));
    // z is spectral in both grids: the coarse modes are the fine grid's first modes; y is cubic Lagrange.
    const long kept = std::min(coarse_doubles_, fine_doubles_);
    std::fill(buffer_.begin(), buffer_.end(), 0.0);
    for (long i = 0; i < fine_ny; ++i) {
      const Stencil& s = stencil_[static_cast<std::size_t>(i)];
      double* out = buffer_.data() + i * fine_doubles_;
      for (int m = 0; m < 4; ++m) {
        const double* in = plane.data() + (s.first + m) * coarse_doubles_;
        for (long zd = 0; zd < kept; ++zd) out[zd] += s.weight[m] * in[zd];
      }
    }
    HYMPI_MPI(MPI_Send(buffer_.data(), static_cast<int>(buffer_.size()), MPI_DOUBLE, receiver_, kPlaneTag, world_));
  }

 private:
  void interpolation(const CoupledProblems& problems) {
    const long nc = problems.coarse.grid[1], nf = problems.fine.grid[1];
    const double hc = problems.coarse.problem.ly / static_cast<double>(nc - 1);
    const double hf = problems.fine.problem.ly / static_cast<double>(nf - 1);
    stencil_.resize(static_cast<std::size_t>(nf));
    for (long i = 0; i < nf; ++i)
      stencil_[static_cast<std::size_t>(i)] = lagrange_stencil(static_cast<double>(i) * hf, hc, nc);
    buffer_.assign(static_cast<std::size_t>(nf * fine_doubles_), 0.0);
  }

  MPI_Comm world_;
  bool coarse_;
  int sender_ = -1, receiver_;
  long fine_doubles_ = 0, coarse_doubles_ = 0, local_plane_ = 0;
  std::vector<Stencil> stencil_;  ///< per fine y (sender only)
  std::vector<double> buffer_;
};

/// This rank's group: its communicator, coupling and solver.
struct Group {
  Group(MPI_Comm world, const CoupledProblems& problems, const GroupSplit& split)
      : coarse(world_rank(world) < split.coarse),
        comm(Comm::split(world, coarse ? 0 : 1, world_rank(world))),
        coupling(world, problems, split, coarse),
        solver(coarse ? problems.coarse : problems.fine, comm.get(), coupling) {}
  bool coarse;
  Comm comm;
  GroupCoupling coupling;
  PencilSolver solver;
};

double dofs(const PencilOptions& o) { return static_cast<double>(o.grid[0] * o.grid[1] * o.grid[2]); }

bool feasible(const CoupledProblems& problems, int coarse, int ranks) {
  try {
    validate_split(problems, {coarse, ranks - coarse, false}, ranks);
    return true;
  } catch (const InvalidArgument&) {
    return false;
  }
}

/// The coarse group sizes that suit both grids; throws InvalidArgument when there is none.
std::vector<int> feasible_splits(const CoupledProblems& problems, int ranks) {
  std::vector<int> out;
  for (int c = 1; c < ranks; ++c)
    if (feasible(problems, c, ranks)) out.push_back(c);
  if (out.empty())
    throw InvalidArgument("no split of " + std::to_string(ranks) + " ranks into two groups suits the coarse grid " +
                          std::to_string(problems.coarse.grid[0]) + " x " + std::to_string(problems.coarse.grid[1]) +
                          " and the fine grid " + std::to_string(problems.fine.grid[0]) + " x " +
                          std::to_string(problems.fine.grid[1]) + " (each group needs >= 1 rank)");
  return out;
}

SplitMeasure measure_split(MPI_Comm world, const CoupledProblems& problems, int coarse, const RunOptions& options) {
  const int ranks = world_size(world);
  Group g(world, problems, {coarse, ranks - coarse, true});
  g.solver.start(0.0);
  RunOptions warmup = options;
  warmup.steps = kWarmupSteps;
  warmup.min_time_s = 0;
  (void)run_steps(g.solver, warmup, world);
  const SolverTimes t = g.solver.times();
  const std::vector<double> m = per_group_max(world, g.coarse, {t.compute_s + t.transpose_s, t.coupling_s});
  const double steps = kWarmupSteps;
  return {coarse, ranks - coarse, m[0] / steps, m[2] / steps, m[1] / steps, m[3] / steps};
}

}  // namespace

GroupSplit parse_group_split(std::string_view text) {
  if (text == "auto") return {0, 0, true};
  const auto bad = [&](const std::string& why) {
    return InvalidArgument("bad groups '" + std::string(text) + "' (" + why + ")");
  };
  std::vector<int> sizes;
  std::size_t begin = 0;
  while (true) {
    const std::size_t colon = text.find(':', begin);
    const std::string_view part = text.substr(begin, colon == std::string_view::npos ? colon : colon - begin);
    int value = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc() || end != part.data() + part.size()) throw bad("expected COARSE:FINE rank counts or auto");
    sizes.push_back(value);
    if (colon == std::string_view::npos) break;
    begin = colon + 1;
  }
  if (sizes.size() > 2) throw bad("more than two groups");
  if (sizes.size() < 2) throw bad("expected COARSE:FINE rank counts or auto");
  if (sizes[0] < 1 || sizes[1] < 1) throw bad("a group would be empty");
  return {sizes[0], sizes[1], false};
}

CoupledProblems coupled_problems(const PencilOptions& main) {
  CoupledProblems p;
  p.coarse = main;
  const long half_z = (main.grid[2] / 2 + 1) / 2 * 2;
  p.coarse.grid = {std::max(6L, (main.grid[0] + 1) / 2), std::max(6L, (main.grid[1] + 1) / 2),
                   std::max(PencilOptions::kMinNz, half_z)};
  p.inflow_plane = (p.coarse.grid[0] - 1) / 2;
  p.fine = main;
  // The coarse plane's x exactly as the coarse solver computes it: both groups evaluate the same boundary.
  p.fine.x0 = p.coarse.x0 + static_cast<double>(p.inflow_plane) *
                                (p.coarse.lx / static_cast<double>(p.coarse.grid[0] - 1));
  return p;
}

void validate_split(const CoupledProblems& problems, const GroupSplit& split, int ranks) {
  if (split.automatic) {
    (void)feasible_splits(problems, ranks);
    return;
  }
  if (split.coarse < 1 || split.fine < 1)
    throw InvalidArgument("groups " + std::to_string(split.coarse) + ":" + std::to_string(split.fine) +
                          " leave a group empty");
  if (split.coarse + split.fine != ranks)
    throw InvalidArgument("groups " + std::to_string(split.coarse) + ":" + std::to_string(split.fine) + " need " +
                          std::to_string(split.coarse + split.fine) + " ranks, the run has " + std::to_string(ranks));
  const auto check = [](const PencilOptions& o, int n, const char* which) {
    try {
      o.validate(n);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string(which) + " group: " + e.what());
    }
  };
  check(problems.coarse, split.coarse, "coarse");
  check(problems.fine, split.fine, "fine");
}

nlohmann::json GroupReport::to_json(int threads) const {
  const double dofs_steps = static_cast<double>(grid[0] * grid[1] * grid[2]) * static_cast<double>(timed_steps);
  const double per_dof = timed_steps > 0 ? time_s * ranks * threads / dofs_steps : 0.0;
  return {{"ranks", ranks},   {"grid", grid},         {"idle_s", idle_s},           {"busy_s", busy_s},
          {"time_s", time_s}, {"time_per_dof_s", per_dof}, {"error", check.error}, {"tolerance", check.tolerance}};
}

nlohmann::json SplitMeasure::to_json() const {
  return {{"coarse", coarse},           {"fine", fine},
          {"busy_coarse_s", busy_coarse_s}, {"busy_fine_s", busy_fine_s},
          {"idle_coarse_s", idle_coarse_s}, {"idle_fine_s", idle_fine_s},
          {"idle_core_s", idle_core_s()}};
}

bool GroupsResult::verified() const noexcept {
  return coarse.check.passed() && fine.check.passed() && standalone.passed() && difference <= difference_tolerance;
}

nlohmann::json GroupsResult::verification_json() const {
  return {{"error", fine.check.error},
          {"tolerance", fine.check.tolerance},
          {"t_end", fine.check.t_end},
          {"steps", fine.check.steps},
          {"coarse_error", coarse.check.error},
          {"coarse_tolerance", coarse.check.tolerance},
          {"standalone_error", standalone.error},
          {"standalone_tolerance", standalone.tolerance},
          {"difference", difference},
          {"difference_tolerance", difference_tolerance},
          {"passed", verified()}};
}

nlohmann::json GroupsResult::groups_json(int threads) const {
  nlohmann::json w = nlohmann::json::array();
  for (const SplitMeasure& m : warmup) w.push_back(m.to_json());
  return {{"split", split.automatic ? "auto" : "given"},
          {"coarse", coarse.to_json(threads)},
          {"fine", fine.to_json(threads)},
          {"warmup", w}};
}

GroupSplit choose_split(MPI_Comm world, const RunOptions& options, std::vector<SplitMeasure>& measured) {
  const int ranks = world_size(world);
  const CoupledProblems problems = coupled_problems(options.solver);
  const std::vector<int> candidates = feasible_splits(problems, ranks);
  const auto nearest = [&](double c) {
    return *std::min_element(candidates.begin(), candidates.end(), [&](int a, int b) {
      return std::abs(a - c) < std::abs(b - c);
    });
  };
  const auto measure = [&](int c) {
    for (const SplitMeasure& m : measured)
      if (m.coarse == c) return;
    measured.push_back(measure_split(world, problems, c, options));
  };
  // Start from the split proportional to the points, then balance a model fitted to it: busy time inversely
  // proportional to a group's ranks.
  const double share = dofs(problems.coarse) / (dofs(problems.coarse) + dofs(problems.fine));
  const int first = nearest(share * ranks);
  measure(first);
  const SplitMeasure m0 = measured.front();
  int best_model = first;
  double best_time = std::numeric_limits<double>::infinity();
  for (const int c : candidates) {
    const double step = std::max(m0.busy_coarse_s * m0.coarse / c, m0.busy_fine_s * m0.fine / (ranks - c));
    if (step < best_time) best_time = step, best_model = c;
  }
  for (const int c : {best_model - 1, best_model, best_model + 1})
    if (std::find(candidates.begin(), candidates.end(), c) != candidates.end()) measure(c);
  const SplitMeasure& best = *std::min_element(measured.begin(), measured.end(),
                                               [](const SplitMeasure& a, const SplitMeasure& b) {
                                                 return a.idle_core_s() < b.idle_core_s();
                                               });
  return {best.coarse, best.fine, true};
}

GroupsResult run_groups(MPI_Comm world, const RunOptions& options, GroupSplit split, Metrics& metrics,
                        h5::IoSession* io) {
  const int ranks = world_size(world);
  options.validate(1);
  const CoupledProblems problems = coupled_problems(options.solver);
  GroupsResult out;
  if (split.automatic) split = choose_split(world, options, out.warmup);
  validate_split(problems, split, ranks);
  out.split = split;

  Group g(world, problems, split);
  // Both grids in every file, whatever the split: a checkpoint of one split restarts another.
  const std::vector<IoGrid> grids{{"coarse", problems.coarse, g.coarse}, {"fine", problems.fine, !g.coarse}};
  if (io != nullptr && io->restarting())
    restart_pencil(*io, grids, g.solver, options.steps);
  else
    g.solver.start(0.0);
  const long first = g.solver.steps_done();
  if (io != nullptr && io->snapshot_due(first)) write_snapshot(*io, grids, g.solver);  // the start, as rb3d does
  out.run.time_s = run_steps(g.solver, options, world, io_hook(io, grids));
  measure(g.solver, world, metrics, out.run);
  out.run.timed_steps = out.run.steps - first;
  out.run.state_hash = sum_over(world, local_state_hash(g.solver));  // both grids: each rank holds one
  metrics.add("coupling", PhaseKind::communication, g.solver.times().coupling_s);
  GridCheck own = check_grid(g.solver, options.tolerance_scale);
  const double coarse_bound = options.tolerance_scale * error_bound(problems.coarse, own.t_end, own.steps);
  const double fine_bound = options.tolerance_scale * error_bound(problems.fine, own.t_end, own.steps);
  const double inflow_bound = coarse_bound + options.tolerance_scale * interpolation_error_bound(problems);
  double difference = 0;
  GridCheck alone_check;
  if (!g.coarse) {
    own.tolerance += inflow_bound;  // the inflow carries the coarse solution's error and the interpolation's
    Standalone exact_inflow(g.comm.get());
    PencilSolver alone(problems.fine, g.comm.get(), exact_inflow);
    alone.start(0.0);
    while (alone.time() < g.solver.time()) alone.step(g.solver.time());
    alone_check = check_grid(alone, options.tolerance_scale);
    difference = g.solver.max_difference(alone);
  }
  const SolverTimes t = g.solver.times();
  const std::vector<double> m =
      per_group_max(world, g.coarse, {t.coupling_s, t.compute_s + t.transpose_s, own.error, own.tolerance,
                                      alone_check.error, alone_check.tolerance, difference});
  const std::size_t n = m.size() / 2;
  // t_end and steps are the same in both groups (they share every time step).
  const auto check = [&](const PencilOptions& o, double error, double tolerance) {
    GridCheck c = own;
    c.grid = o.grid;
    c.h = std::max(o.lx / static_cast<double>(o.grid[0] - 1), o.problem.ly / static_cast<double>(o.grid[1] - 1));
    c.error = error;
    c.tolerance = tolerance;
    return c;
  };
  for (const bool coarse : {true, false}) {
    GroupReport& r = coarse ? out.coarse : out.fine;
    const std::size_t o = coarse ? 0 : n;
    r.ranks = coarse ? split.coarse : split.fine;
    r.grid = coarse ? problems.coarse.grid : problems.fine.grid;
    r.idle_s = m[o];
    r.busy_s = m[o + 1];
    r.time_s = out.run.time_s;
    r.timed_steps = out.run.timed_steps;
    r.check = check(coarse ? problems.coarse : problems.fine, m[o + 2], m[o + 3]);
  }
  out.standalone = check(problems.fine, m[n + 4], m[n + 5]);
  out.difference = m[n + 6];
  out.difference_tolerance = inflow_bound + fine_bound;
  out.run.check = out.fine.check;
  return out;
}

}  // namespace hympi::pencil

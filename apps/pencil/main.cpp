// hympi-pencil: the scheme of Sillero et al., "Hybrid OpenMP-MPI turbulent boundary layer code over 32k cores"
// (planes <-> pencils twice per substep, spectral z, compact x and y, low-storage RK3) on a manufactured
// advection-diffusion problem, verified against its exact solution.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>

#include "hympi/app/app.hpp"
#include "hympi/pencil/groups.hpp"
#include "hympi/pencil/io.hpp"

namespace {

namespace pencil = hympi::pencil;
namespace transpose = hympi::transpose;

class PencilApp final : public hympi::AppDefinition {
 public:
  std::string name() const override { return "pencil"; }
  void add_options(hympi::OptionSet& cli) override {
    cli.add("--grid", grid_, "grid points nx ny nz (x and y include both ends; nz even)")
        .values(3)
        .show_default();
    cli.add("--steps", steps_, "time steps; default: at least this many, more until --min-time is reached")
        .show_default();
    cli.add("--exchange", exchange_, "transpose exchange: alltoallv, alltoall or pairwise")
        .show_default();
    cli.add("--wire", wire_, "transpose wire precision: double or single").show_default();
    cli.add("--tile", tile_,
            "local transpose tile of both directions: RxC, RxC:streaming (stores past the caches), or auto (each "
            "direction's measured once)")
        .show_default();
    cli.add("--pack-threads", pack_threads_, "transpose packing threads (0: all)").show_default();
    cli.add("--verify", verify_,
            "solution: max error vs the exact solution within the scheme's bound; order: also the grid "
            "with 2nx x 2ny run to the same time, observed order >= 3.5")
        .one_of({"solution", "order"})
        .show_default();
    cli.add("--groups", groups_,
            "COARSE:FINE ranks of a coarse auxiliary run feeding the main one its inflow, or auto (chosen "
            "by a measured warm-up)");
    cli.add("--tolerance-scale", tolerance_scale_, "multiplies the verification tolerance (tests)")
        .show_default();
  }
  std::string repetitions_option() const override { return "--steps"; }
  /// Throws InvalidArgument naming the bad value: grid, steps, enums, tile, a split over layout.ranks, groups.
  void validate(const hympi::Layout& layout) const override {
    const pencil::RunOptions o = options(0.0);
    if (groups_.empty()) return o.validate(layout.ranks);
    if (o.verify == pencil::VerifyMode::order)
      throw hympi::InvalidArgument("--verify order runs one group; it cannot be combined with --groups " + groups_);
    o.validate(1);
    pencil::validate_split(pencil::coupled_problems(o.solver), pencil::parse_group_split(groups_), layout.ranks);
  }

  /// Each grid's arrays per rank: u, the last and this substep's N and u_yy in planes, u and N in pencils, the
  /// transpose's send and receive buffers, 8 doubles per stored point (x, y and the kept z modes' doubles);
  /// --verify order builds the 2nx x 2ny grid while the first lives; --groups holds the coarse grid, the fine
  /// one and the standalone fine run it is compared with, spread over the ranks.
  hympi::MemoryEstimate memory_estimate(const hympi::Layout& layout) const override {
    const pencil::RunOptions o = options(0.0);
    const auto bytes = [](const pencil::PencilOptions& p, int ranks) {
      const auto [nx, ny, nz] = p.grid;
      const double d = double(pencil::dealiased_modes(nz, pencil::PencilOptions::kMinNz).doubles());
      const double lines = double(ny) * d;
      const double planes = std::ceil(double(nx) / ranks) * lines, pencils = std::ceil(lines / ranks) * double(nx);
      return 8.0 * sizeof(double) * std::max(planes, pencils);
    };
    std::string counted = "--grid " + std::to_string(grid_[0]) + " " + std::to_string(grid_[1]) + " " +
                          std::to_string(grid_[2]) + " (8 arrays x 8 B per stored point";
    double rank = 0;
    if (groups_.empty()) {
      rank = bytes(o.solver, layout.ranks);
      if (o.verify == pencil::VerifyMode::order) {
        pencil::PencilOptions fine = o.solver;
        fine.grid[0] *= 2;
        fine.grid[1] *= 2;
        rank += bytes(fine, layout.ranks);
        counted += ", and the 2nx x 2ny grid of --verify order";
      }
    } else {
      const pencil::CoupledProblems p = pencil::coupled_problems(o.solver);
      rank = (bytes(p.coarse, 1) + 2 * bytes(p.fine, 1)) / layout.ranks;
      counted += ", the coarse and twice the fine grid of --groups";
    }
    return {rank, rank * layout.ranks, counted + ")"};
  }
  /// Each grid's state: one of the 8 arrays memory_estimate() counts (at most its size: planes or pencils).
  hympi::MemoryEstimate checkpoint_staging(const hympi::Layout& layout) const override {
    const hympi::MemoryEstimate all = memory_estimate(layout);
    return {all.rank_bytes / 8, all.total_bytes / 8, "the state, 1 of 8 arrays per point"};
  }
  /// The time stepper's scalars of the checkpoint, its steps within --steps (pencil::checkpoint_state).
  void check_restart(const std::string& path, const hympi::h5::CheckpointHeader& header) const override {
    (void)pencil::checkpoint_state(path, header, steps_);
  }
  /// Checkpoints hold the stepped grids' states (both groups' when coupled) and the time stepper's scalars.
  bool checkpoints() const override { return true; }
  /// The grid, whether two groups run (then the file holds both grids) and the wire (a single wire rounds every
  /// transpose: another computation). Ranks, threads, split, exchange and tile change no bit of the state.
  nlohmann::json problem_size() const override {
    return {{"grid", grid_}, {"groups", groups_.empty() ? "none" : "coarse:fine"}, {"wire", wire_}};
  }

  hympi::ResultRecord run(hympi::AppContext& ctx) override {
    const pencil::RunOptions o = options(ctx.kernel_min_time_s());
    const int ranks = ctx.env.size(), threads = ctx.env.threads();
    pencil::RunResult r;
    std::optional<pencil::GroupsResult> groups;
    double dofs = static_cast<double>(grid_[0] * grid_[1] * grid_[2]);
    if (groups_.empty()) {
      r = pencil::run_pencil(ctx.env.world(), o, ctx.metrics, ctx.io);
    } else {
      groups = pencil::run_groups(ctx.env.world(), o, pencil::parse_group_split(groups_), ctx.metrics, ctx.io);
      r = groups->run;
      const auto& c = groups->coarse.grid;
      dofs += static_cast<double>(c[0] * c[1] * c[2]);
    }
    // Rates over the steps this run timed: after a restart, those past the checkpoint.
    const auto timed = static_cast<double>(r.timed_steps);
    const double per_dof = r.timed_steps > 0 ? r.time_s * ranks * threads / (dofs * timed) : 0.0;
    const bool verified = groups ? groups->verified() : r.verified();
    const std::string problem =
        std::to_string(grid_[0]) + "x" + std::to_string(grid_[1]) + "x" + std::to_string(grid_[2]);
    if (ctx.env.rank() == 0) {
      std::cout << std::setprecision(4) << "pencil " << problem << " (" << r.check.grid[2] << " z points, "
                << pencil::kept_modes(r.check.grid[2]) << " modes kept) on " << ranks << " ranks x " << threads
                << " threads, " << r.steps << " steps to t = " << r.check.t_end
                << (r.timed_steps < r.steps ? " (" + std::to_string(r.steps - r.timed_steps) + " before the restart)"
                                            : "")
                << "\n"
                << "  time " << r.time_s << " s, " << per_dof * 1e6 << " us core time per dof and step\n"
                << "  transposes " << r.times.transpose_s << " s (" << 100 * r.times.transpose_s / r.time_s
                << " %), compute " << r.times.compute_s << " s; " << r.transpose.dump() << "\n"
                << "  error " << r.check.error << " (tolerance " << r.check.tolerance << ")\n";
      if (groups)
        for (const auto* g : {&groups->coarse, &groups->fine})
          std::cout << "  " << (g == &groups->coarse ? "coarse" : "fine") << " group: " << g->ranks << " ranks, grid "
                    << g->grid[0] << "x" << g->grid[1] << "x" << g->grid[2] << ", busy " << g->busy_s << " s, idle "
                    << g->idle_s << " s, error " << g->check.error << " (tolerance " << g->check.tolerance << ")\n";
      if (groups)
        std::cout << "  coupled fine vs standalone fine (exact inflow): " << groups->difference << " (tolerance "
                  << groups->difference_tolerance << ")\n";
      if (r.fine_check)
        std::cout << "  grid " << r.fine_check->grid[0] << "x" << r.fine_check->grid[1] << ": error "
                  << r.fine_check->error << " (tolerance " << r.fine_check->tolerance << "), observed order "
                  << r.observed_order << " (expected " << pencil::kExpectedOrder << ")\n";
      std::cout << " Verification    =             " << (verified ? "  SUCCESSFUL" : "UNSUCCESSFUL") << std::endl;
    }
    hympi::ResultRecord rec;
    rec.app = name();
    rec.problem = problem;
    rec.time_s = r.time_s;
    rec.rate = r.timed_steps > 0 ? dofs * timed / r.time_s * 1e-6 : 0.0;
    rec.rate_unit = "Mdof/s";
    rec.verified = verified;
    rec.timed_repetitions = static_cast<int>(r.timed_steps);
    rec.metrics = {{"grid", grid_},
                   {"steps", r.steps},
                   {"timed_steps", r.timed_steps},
                   {"t_end", r.check.t_end},
                   {"dofs", dofs},
                   {"time_per_dof_s", per_dof},
                   {"transpose_s", r.times.transpose_s},
                   {"transpose_share", r.time_s > 0 ? r.times.transpose_s / r.time_s : 0.0},
                   {"state_hash", pencil::hash_text(r.state_hash)},
                   {"compute_s", r.times.compute_s},
                   {"plane_bytes_per_rank", r.plane_bytes},
                   {"pencil_bytes_per_rank", r.pencil_bytes},
                   {"transpose", r.transpose},
                   {"transpose_steps", r.transpose_times.to_json()},
                   {"options", o.to_json()},
                   {"verification", groups ? groups->verification_json() : r.verification_json()}};
    if (groups) rec.metrics["groups"] = groups->groups_json(threads);
    return rec;
  }

 private:
  pencil::RunOptions options(double min_time_s) const {
    pencil::RunOptions o;
    o.solver.grid = {grid_[0], grid_[1], grid_[2]};
    o.solver.transpose.exchange = hympi::parse_enum<transpose::TransposeExchange>(exchange_);
    o.solver.transpose.wire = hympi::parse_enum<transpose::WirePrecision>(wire_);
    o.solver.transpose.set_tiles(transpose::parse_tile_shape(tile_));
    o.solver.transpose.pack_threads = pack_threads_;
    o.steps = steps_;
    o.min_time_s = min_time_s;
    o.verify = verify_ == "order" ? pencil::VerifyMode::order : pencil::VerifyMode::solution;
    o.tolerance_scale = tolerance_scale_;
    return o;
  }

  std::vector<long> grid_{32, 32, 32};
  long steps_ = 10;
  std::string exchange_ = "alltoallv";
  std::string wire_ = "double";
  std::string tile_ = "auto";
  int pack_threads_ = 0;
  std::string verify_ = "solution";
  double tolerance_scale_ = 1.0;
  std::string groups_;
};

}  // namespace

int main(int argc, char** argv) {
  PencilApp app;
  return hympi::run_app(argc, argv, app);
}

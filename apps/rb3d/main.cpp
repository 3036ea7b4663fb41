// hympi-rb3d: red-black Gauss-Seidel for 3D Poisson, verified against one rank or the exact solution.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include "hympi/app/app.hpp"
#include "hympi/app/overlap_flags.hpp"
#include "hympi/grid/cart.hpp"
#include "hympi/rb3d/rb3d.hpp"

namespace {

class Rb3dApp final : public hympi::AppDefinition {
 public:
  std::string name() const override { return "rb3d"; }
  void add_options(hympi::OptionSet& cli) override {
    // Not -n: that is the launchers' rank count (mpirun -n, hympi -n).
    cli.add("--size", n_, "interior points per axis (grid n x n x n)").show_default();
    cli.add("--iterations", options_.iterations,
            "iterations (red + black sweep); default: at least this many, more until --min-time is reached")
        .show_default();
    cli.add("--omega", options_.omega, "relaxation factor (1 = Gauss-Seidel)").show_default();
    cli.add("--residual-every", options_.residual_every, "residual norm interval").show_default();
    cli.add("--tolerance", options_.tolerance, "stop at residual/initial <= this (0: run all iterations)");
    overlap_flags_.add_to(cli);
    cli.add("--verify", verify_,
            "reference: residuals equal a one-rank solve bit for bit; exact: error equals the scheme's "
            "discretisation error; none")
        .one_of(std::vector<std::string>(std::begin(hympi::kRb3dVerifyModes),
                                         std::end(hympi::kRb3dVerifyModes)))
        .show_default();
  }
  std::string repetitions_option() const override { return "--iterations"; }
  void validate(const hympi::Layout& layout) const override { options().validate(layout.ranks, layout.threads); }
  /// u and f of the largest block with halos; --verify reference re-solves the whole grid on rank 0 after the
  /// run's grids are freed, so the job's peak is the larger of the two.
  hympi::MemoryEstimate memory_estimate(const hympi::Layout& layout) const override {
    const auto o = options();
    const auto dims = hympi::choose_process_grid(layout.ranks, o.global, o.dims);
    double rank = 2 * hympi::largest_block_bytes(o.global, dims, 1, sizeof(double));
    double total = rank * layout.ranks;
    std::string counted = "--size " + std::to_string(n_) + " (u and f with halos, 16 B per point";
    if (verify_ == "reference") {
      const double whole = 2 * hympi::largest_block_bytes(o.global, {1, 1, 1}, 1, sizeof(double));
      rank = std::max(rank, whole);
      total = std::max(total, whole);
      counted += ", and the whole grid again on rank 0 for --verify reference";
    }
    return {rank, total, counted + ")"};
  }
  hympi::MemoryEstimate checkpoint_staging(const hympi::Layout& layout) const override {
    const auto o = options();
    const double u = hympi::largest_block_bytes(o.global, hympi::choose_process_grid(layout.ranks, o.global, o.dims),
                                                0, sizeof(double));  // without halos
    return {u, u * layout.ranks, "u, 8 B per point"};
  }
  /// A checkpoint past --iterations would leave nothing to run; one of another --omega or --residual-every would
  /// go on as another run (check_rb3d_restart_options).
  void check_restart(const std::string& path, const hympi::h5::CheckpointHeader& header) const override {
    if (header.step > options_.iterations)
      throw hympi::h5::BadFile("--restart " + path + " is at iteration " + std::to_string(header.step) +
                               ", beyond the " + std::to_string(options_.iterations) + " asked for");
    hympi::check_rb3d_restart_options(path, header.state, options_);
  }
  bool checkpoints() const override { return true; }
  nlohmann::json problem_size() const override { return {{"global", {n_, n_, n_}}}; }
  bool verification_required() const override { return verify_ != "none"; }
  hympi::ResultRecord run(hympi::AppContext& ctx) override {
    auto o = options();
    o.min_time_s = ctx.kernel_min_time_s();
    const auto res = hympi::solve_rb3d(ctx.env.world(), o, ctx.metrics, ctx.io);
    const bool root = ctx.env.rank() == 0;

    const bool verified = hympi::verify_rb3d(ctx.env.world(), o, res, verify_);
    const std::string& how = verify_;
    const double gflops = res.flops / res.time_s * 1e-9;
    // Per colour sweep (exchange + sweep).
    const hympi::OverlapTimes per_sweep = res.sweep_times.per(res.sweeps);
    const nlohmann::json model = hympi::comm_thread_prediction(o.overlap, per_sweep, ctx.env.threads());
    if (root) {
      std::cout << std::setprecision(6) << "rb3d " << n_ << "^3 on " << res.dims[0] << "x" << res.dims[1] << "x"
                << res.dims[2] << " ranks x " << ctx.env.threads() << " threads, omega " << o.omega << "\n"
                << "  iterations " << res.iterations << ", time " << res.time_s << " s, " << gflops << " GFLOP/s\n"
                << "  residual " << res.residuals.front() << " -> " << res.residuals.back() << "\n"
                << "  sweeps (" << hympi::to_string(o.overlap.strategy) << "): t_comm " << res.sweep_times.comm_s
                << " s, t_comp " << res.sweep_times.comp_s << " s, elapsed " << res.sweep_times.wall_s << " s\n";
      hympi::print_comm_thread_prediction(std::cout, model, per_sweep, "sweep");
      std::cout << "  max error " << res.max_error << " (discretisation error " << res.discretisation_error << ")\n"
                << "  verification (" << how << "): " << (verified ? "PASSED" : (how == "none" ? "SKIPPED" : "FAILED"))
                << std::endl;
    }
    hympi::ResultRecord r;
    r.app = name();
    r.problem = std::to_string(n_) + "^3";
    r.time_s = res.time_s;
    r.rate = gflops;
    r.rate_unit = "GFLOP/s";
    r.verified = verified;
    r.timed_repetitions = res.iterations - res.restarted_at;
    r.bytes_moved = res.bytes;  // kRb3dBytesPerPoint per point and iteration: u and f read, u written
    r.working_set_bytes = res.working_set_bytes;
    r.metrics = {{"iterations", res.iterations},
                 {"restarted_at", res.restarted_at},
                 {"residuals", res.residuals},
                 {"max_error", res.max_error},
                 {"discretisation_error", res.discretisation_error},
                 {"process_grid", res.dims},
                 {"flops", res.flops},
                 {"bytes_per_point_iteration", hympi::kRb3dBytesPerPoint},
                 {"flops_per_point_iteration", hympi::rb3d_flops_per_point(o.omega)},
                 {"strategy", hympi::to_string(o.overlap.strategy)},
                 {"tile", o.overlap.to_json()["tile"]},
                 {"sweeps", res.sweeps},
                 {"sweep_per_s", per_sweep.wall_s},
                 {"t_comm_s", res.sweep_times.comm_s},
                 {"t_comp_s", res.sweep_times.comp_s},
                 {"commthread_model", model},
                 {"verify", verify_},
                 {"options", o.to_json()}};
    return r;
  }

 private:
  /// The options as given, strings parsed (throws InvalidArgument naming a bad value).
  hympi::Rb3dOptions options() const {
    auto o = options_;
    o.global = {n_, n_, n_};
    o.overlap = overlap_flags_.overlap();
    overlap_flags_.apply_dims(o.dims);
    return o;
  }

  long n_ = 64;
  hympi::OverlapFlags overlap_flags_;
  hympi::Rb3dOptions options_;
  std::string verify_ = "reference";
};

}  // namespace

int main(int argc, char** argv) {
  Rb3dApp app;
  return hympi::run_app(argc, argv, app);
}

// hympi-blades: the blade-row multi-block solver (AKIE in Jin et al., "High performance computing using MPI and
// OpenMP on multi-core parallel systems", §3.3): blades over N1 groups, J over N2 OpenMP
// threads (--inner openmp) or N2 ranks per group (--inner mpi), one kernel source for both, bitwise equal states,
// checked against a manufactured solution.
#include <cmath>
#include <iomanip>
#include <iostream>

#include "hympi/app/app.hpp"
#include "hympi/blades/run.hpp"
#include "hympi/core/checksum.hpp"

namespace {

namespace blades = hympi::blades;

class BladesApp final : public hympi::AppDefinition {
 public:
  std::string name() const override { return "blades"; }
  void add_options(hympi::OptionSet& cli) override {
    cli.add("--blades", blades_, "blades in the periodic row (B)").show_default();
    cli.add("--grid", grid_, "points per blade I J K (I and J include both walls; storage I fastest)")
        .values(3)
        .show_default();
    cli.add("--iterations", iterations_, "iterations; default: at least this many, more until --min-time")
        .show_default();
    cli.add("--inner", inner_,
            "level 2 inside a group of blades: openmp (N2 = OpenMP threads, N1 = ranks) or mpi (N2 = --n2 "
            "ranks per group, N1 = ranks / N2)")
        .show_default();
    cli.add("--n2", n2_, "ranks per group splitting J with --inner mpi").show_default();
    cli.add("--offset", offset_, "J cells between neighbouring blades' grids, in [0, 1]").show_default();
    cli.add("--verify", verify_,
            "manufactured: max error vs the exact solution within the scheme's bound; bitwise: also the "
            "one-rank state's checksum, recomputed on rank 0")
        .one_of({"manufactured", "bitwise"})
        .show_default();
    cli.add("--tolerance-scale", tolerance_scale_, "multiplies the verification bound (tests)")
        .show_default();
  }
  std::string repetitions_option() const override { return "--iterations"; }
  /// Throws InvalidArgument naming the bad value: sizes, --inner, N1 > blades, N2 > J, ranks not N1 x N2.
  void validate(const hympi::Layout& layout) const override { options(0.0).validate(layout.ranks, layout.threads); }
  /// The two float states of each blade a rank owns, with a ghost row each side of its J rows and a ghost plane
  /// each side of K, rows padded to 16 floats (BladeRowSolver's blocks); --verify bitwise runs the one-rank
  /// solver on rank 0 while rank 0's own still lives.
  hympi::MemoryEstimate memory_estimate(const hympi::Layout& layout) const override {
    const blades::RunOptions o = options(0.0);
    const blades::Levels levels = blades::resolve_levels(o.problem, o.inner, layout.ranks, layout.threads, o.n2);
    const auto [ni, nj, nk] = o.problem.grid;
    const auto state = [&](long blades_held, long rows) {
      const double pitch = std::ceil(double(ni) / 16) * 16;
      return 2.0 * double(blades_held) * pitch * double(rows + 2) * double(nk + 2) * sizeof(float);
    };
    const auto share = [](long n, long parts) { return n / parts + (n % parts > 0 ? 1 : 0); };
    double rank = state(share(o.problem.blades, levels.n1), share(nj, levels.ranks_per_group));
    double total = rank * layout.ranks;
    std::string counted = "--blades " + std::to_string(blades_) + " --grid " + std::to_string(ni) + " " +
                          std::to_string(nj) + " " + std::to_string(nk) + " (2 float states per point with ghosts";
    if (o.verify_bitwise) {
      const double whole = state(o.problem.blades, nj);
      rank += whole;
      total += whole;
      counted += ", and the whole row again on rank 0 for --verify bitwise";
    }
    return {rank, total, counted + ")"};
  }

  hympi::ResultRecord run(hympi::AppContext& ctx) override {
    const blades::RunOptions o = options(ctx.kernel_min_time_s());
    const blades::RunResult r = blades::run_blades(ctx.env.world(), o, ctx.metrics);
    const auto n = static_cast<double>(r.iterations);
    const auto cells = static_cast<double>(o.problem.cells());
    const std::string checksum = hympi::checksum_hex(r.checksum);
    const bool verified = r.verified();
    if (ctx.env.rank() == 0) {
      std::cout << std::setprecision(4) << "blades " << o.problem.text() << ", --inner " << inner_ << ": N1 = "
                << r.levels.n1 << " groups x N2 = " << r.levels.n2
                << (o.inner == blades::InnerMode::openmp ? " threads" : " ranks") << ", " << r.iterations
                << " iterations\n"
                << "  time " << r.time_s << " s, " << r.time_s / n * 1e3 << " ms per iteration: comp "
                << r.phases_max.comp / n * 1e3 << ", group halo " << r.phases_max.group_halo / n * 1e3
                << ", blade exchange " << r.phases_max.blade_exchange / n * 1e3 << " ms (max over ranks)\n"
                << "  state checksum " << checksum << "\n"
                << "  manufactured error " << r.error << " (bound " << r.tolerance << ")\n";
      if (r.reference_checksum)
        std::cout << "  one-rank reference checksum " << hympi::checksum_hex(*r.reference_checksum)
                  << (r.bitwise_match.value_or(false) ? " (equal)" : " (DIFFERENT)") << "\n";
      std::cout << " Verification    =             " << (verified ? "  SUCCESSFUL" : "UNSUCCESSFUL") << std::endl;
    }
    hympi::ResultRecord rec;
    rec.app = name();
    rec.problem = o.problem.text();
    rec.time_s = r.time_s;
    rec.rate = r.time_s > 0 ? cells * n / r.time_s * 1e-6 : 0.0;
    rec.rate_unit = "Mcell/s";
    rec.verified = verified;
    rec.timed_repetitions = static_cast<int>(r.iterations);
    rec.metrics = {{"blades", o.problem.blades},
                   {"grid", o.problem.grid},
                   {"inner", blades::to_string(o.inner)},
                   {"n1", r.levels.n1},
                   {"n2", r.levels.n2},
                   {"iterations", r.iterations},
                   {"iteration_s", r.time_s / n},
                   {"comp_iteration_s", r.phases_max.comp / n},
                   {"group_halo_iteration_s", r.phases_max.group_halo / n},
                   {"blade_exchange_iteration_s", r.phases_max.blade_exchange / n},
                   {"cells", o.problem.cells()},
                   {"group_halo_bytes_per_iteration", r.group_halo_bytes},
                   {"blade_exchange_bytes_per_iteration", r.blade_exchange_bytes},
                   {"state_checksum", checksum},
                   {"manufactured_error", r.error},
                   {"manufactured_bound", r.tolerance},
                   {"offset", o.problem.offset},
                   {"state_bytes_per_rank_max", r.state_bytes_max},
                   {"options", o.to_json()}};
    if (r.reference_checksum) rec.metrics["reference_checksum"] = hympi::checksum_hex(*r.reference_checksum);
    if (r.bitwise_match) rec.metrics["bitwise_match"] = *r.bitwise_match;
    return rec;
  }

 private:
  blades::RunOptions options(double min_time_s) const {
    blades::RunOptions o;
    o.problem.blades = blades_;
    o.problem.grid = {grid_[0], grid_[1], grid_[2]};
    o.problem.offset = offset_;
    o.inner = blades::parse_inner(inner_);
    o.n2 = n2_;
    o.iterations = iterations_;
    o.min_time_s = min_time_s;
    o.tolerance_scale = tolerance_scale_;
    o.verify_bitwise = verify_ == "bitwise";
    return o;
  }

  long blades_ = 8;
  std::vector<long> grid_{48, 32, 24};
  long iterations_ = 100;
  std::string inner_ = "openmp";
  int n2_ = 1;
  double offset_ = 0.25;
  std::string verify_ = "manufactured";
  double tolerance_scale_ = 1.0;
};

}  // namespace

int main(int argc, char** argv) {
  BladesApp app;
  return hympi::run_app(argc, argv, app);
}

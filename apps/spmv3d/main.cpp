// hympi-spmv3d: HPCG's 27-point operator, repeated SpMV and CG, with halo/compute overlap.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "hympi/app/app.hpp"
#include "hympi/app/overlap_flags.hpp"
#include "hympi/grid/cart.hpp"
#include "hympi/spmv3d/csr.hpp"
#include "hympi/spmv3d/spmv3d.hpp"
#include "hympi/spmv3d/verify.hpp"
#include "hympi/stream/stream.hpp"

namespace {

/// The --triad-GBps a run may give: past a node's memory either way.
constexpr std::array<double, 2> kTriadGbsRange = {1e-3, 1e6};

/// `value` as the stream writes it (1e-320, 0.001, 1e+06), for a message quoting it.
std::string shortest(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

/// A fingerprint as 16 hex digits (JSON numbers past 2^53 are not safe in every reader).
std::string hash_text(std::uint64_t hash) {
  std::ostringstream out;
  out << std::hex << std::setw(16) << std::setfill('0') << hash;
  return out.str();
}

class Spmv3dApp final : public hympi::AppDefinition {
 public:
  std::string name() const override { return "spmv3d"; }
  void add_options(hympi::OptionSet& cli) override {
    const hympi::Option global = cli.add("--global", global_, "global grid nx ny nz").values(3);
    cli.add("--per-rank", per_rank_, "grid points per rank nx ny nz (global = this x process grid)")
        .values(3)
        .excludes(global);
    overlap_flags_.add_to(cli);
    cli.add("--ghost", options_.ghost, "ghost width (the stencil needs 1)").show_default();
    cli.add("--operator", operator_, "stencil (matrix-free) or csr (assembled)").show_default();
    cli.add("--streaming-stores", streaming_,
            "the product writes y bypassing the caches: auto (when y and the CSR matrix exceed 32 MiB per "
            "rank), on, off")
        .show_default();
    triad_option_ = cli.add("--triad-GBps", triad_gbs_,
                            "STREAM triad GB/s of all ranks (as STREAM prints it) the products are bounded by; "
                            "default: measured by a short triad on the same ranks and threads before them");
    cli.add("--reps", options_.spmv_reps,
            "timed SpMV repetitions; default: at least this many, more until --min-time is reached")
        .show_default();
    cli.add("--cg-iterations", options_.cg_iterations, "CG iteration limit (0: no solve)")
        .show_default();
    cli.add("--cg-tolerance", options_.cg_tolerance, "CG stops at ||r||/||r0|| <= this")
        .show_default();
    cli.add("--verify", verify_,
            "exact: the product is exact and CG reaches the manufactured solution; reference: also the CG "
            "residual history equals a one-rank bulk solve bit for bit; none")
        .one_of({"reference", "exact", "none"})
        .show_default();
  }
  std::string repetitions_option() const override { return "--reps"; }
  void validate(const hympi::Layout& layout) const override {
    // Bounded so that the bound and its fraction stay finite numbers (1e-320 made the fraction inf, a null).
    if (triad_option_->given() && !(triad_gbs_ >= kTriadGbsRange[0] && triad_gbs_ <= kTriadGbsRange[1]))
      throw hympi::InvalidArgument("--triad-GBps must be a bandwidth from " + shortest(kTriadGbsRange[0]) + " to " +
                                   shortest(kTriadGbsRange[1]) + " GB/s, got " + shortest(triad_gbs_));
    const auto o = options();
    o.validate(layout.ranks, layout.threads);
    resolved_global_ = o.resolve(layout.ranks).first;
  }
  /// What a product touches (product_bytes), the operator's halo grid and CG's x*, b, r, p and q (x and y alone
  /// without CG); --verify reference re-solves the whole grid on rank 0 (stencil, ghost 1) after the run's arrays
  /// are freed. The bound's triad sweeps at most a product's bytes and frees its arrays before any of these exist.
  hympi::MemoryEstimate memory_estimate(const hympi::Layout& layout) const override {
    const auto o = options();
    const auto [global, dims] = o.resolve(layout.ranks);
    const bool cg = o.cg_iterations > 0;
    const double vectors = cg ? 7 : 3;
    double rank = o.product_bytes(layout.ranks) +
                  (vectors - 2) * hympi::largest_block_bytes(global, dims, o.ghost, sizeof(double));
    double total = rank * layout.ranks;
    std::string counted = "--global " + std::to_string(global[0]) + " " + std::to_string(global[1]) + " " +
                          std::to_string(global[2]) + " (" + std::to_string(int(vectors)) +
                          " vectors with ghosts, 8 B per point each" +
                          (o.op == hympi::SpmvOperator::csr
                               ? ", the CSR matrix's " + std::to_string(hympi::Csr27::kBytesPerPoint) + " B per point"
                               : "");
    if (verify_ == "reference" && cg) {
      const double whole = vectors * hympi::largest_block_bytes(global, {1, 1, 1}, 1, sizeof(double));
      rank = std::max(rank, whole);
      total = std::max(total, whole);
      counted += ", and the whole grid again on rank 0 for --verify reference";
    }
    return {rank, total, counted + ")"};
  }
  /// CG's x, r and p with their ghosts (only CG checkpoints).
  hympi::MemoryEstimate checkpoint_staging(const hympi::Layout& layout) const override {
    const auto o = options();
    const auto [global, dims] = o.resolve(layout.ranks);
    const double xrp = 3 * hympi::largest_block_bytes(global, dims, o.ghost, sizeof(double));
    return {xrp, xrp * layout.ranks, "x, r and p, 24 B per point"};
  }
  /// A checkpoint holds CG iteration step (1 .. --cg-iterations) with its number rr and step + 1 residuals.
  void check_restart(const std::string& path, const hympi::h5::CheckpointHeader& h) const override {
    const auto bad = [&](const std::string& why) { return hympi::h5::BadFile("checkpoint " + path + " " + why); };
    const int limit = options_.cg_iterations;
    if (h.step < 1 || h.step > limit)
      throw bad("holds CG iteration " + std::to_string(h.step) + ", past the limit --cg-iterations " +
                std::to_string(limit));
    const auto rr = h.state.find("rr");
    const auto residuals = h.state.find("residuals");
    if (!h.state.is_object() || rr == h.state.end() || !rr->is_number() || residuals == h.state.end() ||
        !residuals->is_array() || !std::all_of(residuals->begin(), residuals->end(),
                                               [](const nlohmann::json& v) { return v.is_number(); }))
      throw bad("has no CG state (the number rr, the residuals)");
    if (residuals->size() != static_cast<std::size_t>(h.step) + 1)
      throw bad("has " + std::to_string(residuals->size()) + " residuals for iteration " + std::to_string(h.step));
  }
  /// Checkpoints hold CG's state; the repeated products alone have none (--cg-iterations 0 with them is bad input).
  bool checkpoints() const override { return true; }
  bool verification_required() const override { return verify_ != "none"; }
  /// The global grid, the tolerance (another tolerance stops the same history elsewhere) and the operator (the
  /// stencil and the CSR matrix sum a row in different orders: a history continued with the other one is neither's);
  /// the iteration limit may grow on restart, the layout and strategy change nothing (the history is theirs bit for
  /// bit).
  nlohmann::json problem_size() const override {
    return {{"global", resolved_global_},
            {"cg_tolerance", options().cg_tolerance},
            {"operator", hympi::to_string(options().op)}};
  }

  hympi::ResultRecord run(hympi::AppContext& ctx) override {
    auto o = options();
    o.min_time_s = ctx.kernel_min_time_s();
    // The run's phases are those of the timed products, the region rate and time_s cover; CG's
    // are kept apart and reported under cg_phases.
    if (ctx.io != nullptr && ctx.io->options().any() && o.cg_iterations == 0)
      throw hympi::h5::BadFile("--checkpoint, --restart and --snapshot need the CG solve (--cg-iterations > 0): "
                               "the repeated products alone have no state to save");
    // The products' bound: STREAM's triad on these ranks, threads and binding, before the products' arrays exist.
    // Its three arrays span a product's bytes per rank, up to STREAM's memory rule (4x the last-level cache over
    // the node), so that both stream from the same level: memory at 96^3 per rank, a cache for small grids.
    const bool given = triad_option_->given();
    const auto elements = std::min(
        hympi::stream_elements_for(ctx.topology.last_level_cache_bytes(), ctx.env.machine_size()),
        std::max<std::size_t>(static_cast<std::size_t>(o.product_bytes(ctx.env.size()) / (3 * sizeof(double))), 1));
    const double triad = given ? triad_gbs_ : hympi::measure_triad_gbs(ctx.env.world(), elements);
    const hympi::BandwidthBound bound{triad, hympi::triad_moved_gbs(triad),
                                      given ? hympi::TriadSource::given : hympi::TriadSource::measured};
    hympi::Metrics cg_metrics;
    cg_metrics.set_memory_probe(ctx.metrics.memory_probe());  // CG's vectors are the run's arrays too
    const auto res = hympi::run_spmv3d(ctx.env.world(), o, ctx.metrics, cg_metrics, ctx.io);
    const hympi::MetricsSummary cg_summary = cg_metrics.reduce(ctx.env.world(), ctx.env.node().get());
    const bool root = ctx.env.rank() == 0;
    const bool cg = o.cg_iterations > 0;

    hympi::Spmv3dVerdict verdict;
    if (verification_required()) verdict = hympi::verify_spmv3d(ctx.env.world(), o, res, verify_ == "reference");
    const bool verified = verification_required() && verdict.passed();

    const double gflops = res.spmv_flops / res.spmv_time_s * 1e-9;
    const double moved_gbs = res.spmv_bytes / res.spmv_time_s * 1e-9;
    const double cg_gflops = cg && res.cg_timed_iterations > 0 ? res.cg_flops / res.cg_time_s * 1e-9 : 0.0;
    const int threads = ctx.env.threads();
    const hympi::OverlapTimes per_product = res.spmv_times.per(res.spmv_reps);
    const nlohmann::json model = hympi::comm_thread_prediction(o.overlap, per_product, threads);
    const std::string grid =
        std::to_string(res.global[0]) + "x" + std::to_string(res.global[1]) + "x" + std::to_string(res.global[2]);
    if (root) {
      std::cout << std::setprecision(4) << "spmv3d " << grid << " (" << hympi::to_string(o.op) << ", "
                << hympi::to_string(o.overlap.strategy) << ") on " << res.dims[0] << "x" << res.dims[1] << "x"
                << res.dims[2] << " ranks x " << threads << " threads\n"
                << "  SpMV x" << res.spmv_reps << ": " << res.spmv_time_s << " s (t_comm " << res.spmv_times.comm_s
                << " s, t_comp " << res.spmv_times.comp_s << " s), " << gflops << " GFLOP/s, "
                << res.spmv_mismatches << " wrong points\n"
                << "  bandwidth: " << moved_gbs << " GB/s as moved, " << moved_gbs / bound.bound_gbs << " of the bound "
                << bound.bound_gbs
                << " GB/s (STREAM triad " << triad << " GB/s, " << hympi::to_string(bound.source) << ")\n";
      if (cg)
        std::cout << "  CG: " << res.cg_iterations << " iterations"
                  << (res.cg_timed_iterations < res.cg_iterations
                          ? " (" + std::to_string(res.cg_iterations - res.cg_timed_iterations) + " before the restart)"
                          : "")
                  << (res.cg_converged ? "" : " (not converged)")
                  << ", residual " << res.cg_residuals.front() << " -> " << res.cg_residuals.back() << ", error "
                  << res.cg_max_error << ", " << res.cg_time_s << " s, " << cg_gflops << " GFLOP/s\n";
      hympi::print_comm_thread_prediction(std::cout, model, per_product, "SpMV");
      const std::string outcome = !verification_required() ? "SKIPPED"
                                  : verified                 ? "PASSED"
                                                             : "FAILED: " + hympi::spmv3d_failures(verdict, res);
      std::cout << "  verification (" << verify_ << "): " << outcome << std::endl;
    }
    hympi::ResultRecord r;
    r.app = name();
    r.problem = grid;
    r.time_s = res.spmv_time_s;
    r.rate = gflops;
    r.rate_unit = "GFLOP/s";
    r.verified = verified;
    r.timed_repetitions = res.spmv_reps;
    // Operator27::bytes_per_apply: bytes as moved (x over the points read, y written and, unless streamed,
    // read for ownership; CSR also the values, column indexes and row starts), hence the bound in bytes as moved.
    r.bytes_moved = res.spmv_bytes;
    r.bound = bound;
    r.working_set_bytes = res.spmv_working_set_bytes;
    r.metrics = {{"process_grid", res.dims},
                 {"global", res.global},
                 {"operator", hympi::to_string(o.op)},
                 {"strategy", hympi::to_string(o.overlap.strategy)},
                 {"tile", o.overlap.to_json()["tile"]},
                 {"nonzeros", res.nonzeros},
                 {"streaming_stores", res.streaming_stores},
                 {"spmv_reps", res.spmv_reps},
                 {"spmv_time_s", res.spmv_time_s},
                 {"spmv_per_apply_s", res.spmv_time_s / res.spmv_reps},
                 {"t_comm_s", res.spmv_times.comm_s},
                 {"t_comp_s", res.spmv_times.comp_s},
                 {"spmv_flops", res.spmv_flops},
                 {"spmv_bytes", res.spmv_bytes},
                 {"spmv_GFLOPps", gflops},
                 {"spmv_GBps", moved_gbs},
                 {"spmv_wrong_points", res.spmv_mismatches},
                 {"cg_iterations", res.cg_iterations},
                 {"cg_timed_iterations", res.cg_timed_iterations},
                 {"cg_converged", res.cg_converged},
                 {"cg_residuals", res.cg_residuals},
                 {"cg_time_s", res.cg_time_s},
                 {"cg_GFLOPps", cg_gflops},
                 {"cg_max_error", res.cg_max_error},
                 {"cg_x_hash", hash_text(res.cg_x_hash)},
                 {"cg_phases", cg_summary.to_json()},
                 {"cg_comm_s", cg_summary.comm_s},
                 {"cg_comp_s", cg_summary.comp_s},
                 {"commthread_model", model},
                 {"verify", verify_},
                 {"options", o.to_json()}};
    return r;
  }

 private:
  /// The options as given, strings parsed (throws InvalidArgument naming a bad value).
  hympi::Spmv3dOptions options() const {
    auto o = options_;
    if (!global_.empty()) o.global = {global_[0], global_[1], global_[2]};
    if (!per_rank_.empty()) o.per_rank = {per_rank_[0], per_rank_[1], per_rank_[2]};
    o.op = hympi::parse_spmv_operator(operator_);
    o.streaming_stores = hympi::parse_streaming_stores(streaming_);
    o.overlap = overlap_flags_.overlap();
    overlap_flags_.apply_dims(o.dims);
    return o;
  }

  hympi::Spmv3dOptions options_;
  mutable std::array<long, 3> resolved_global_{};  ///< set by validate() for problem_size()
  std::vector<long> global_, per_rank_;
  std::string operator_ = "stencil";
  hympi::OverlapFlags overlap_flags_;
  std::string streaming_ = "auto";
  double triad_gbs_ = 0;
  std::optional<hympi::Option> triad_option_;
  std::string verify_ = "reference";
};

}  // namespace

int main(int argc, char** argv) {
  Spmv3dApp app;
  return hympi::run_app(argc, argv, app);
}

// hympi-pingpong: latency and bandwidth per level of the communication hierarchy.
#include <iomanip>
#include <iostream>

#include "hympi/app/app.hpp"
#include "hympi/pingpong/pingpong.hpp"

namespace {

/// Accepts only decimal integers >= 1, so "-1" is rejected as typed instead of wrapping to
/// 2^64 - 1 in an unsigned option.
std::string check_positive(const std::string& text) {
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits && text.find_first_not_of('0') != std::string::npos) return {};
  return "must be a positive integer, got '" + text + "'";
}

class PingPongApp final : public hympi::AppDefinition {
 public:
  std::string name() const override { return "pingpong"; }
  /// MPI_THREAD_SINGLE, as osu_latency's plain MPI_Init: the probe calls MPI from the main thread
  /// only and runs no OpenMP region, and Open MPI 4.1 at FUNNELED added ~0.07 us to every one-way
  /// time below 4 KiB (1.2-1.6x osu_latency; a bare loop showed the same). Cannot fail.
  hympi::ThreadLevel thread_level() const override { return hympi::ThreadLevel::single; }
  void add_options(hympi::OptionSet& cli) override {
    cli.add("--max-bytes", options_.max_bytes, "largest message (sizes 0, 1, 2, 4, ... max)")
        .show_default()
        .check("POSITIVE", check_positive);
    cli.add("--iterations", options_.iterations, "timed round trips per size up to 8 KiB (after 100 warm-up)")
        .show_default()
        .check("POSITIVE", check_positive);
    cli.add("--large-iterations", options_.large_iterations,
            "timed round trips per size above 8 KiB (after 10 warm-up; default iterations / 10)")
        .check("POSITIVE", check_positive);
    cli.add("--multi-bytes", options_.multi_bytes, "message size of the multi-pair bandwidth runs")
        .show_default()
        .check("POSITIVE", check_positive);
    cli.flag("!--no-multi", options_.multi, "skip the 1, 2, 4, ... pairs at once runs");
  }
  void validate(const hympi::Layout& layout) const override {
    options_.validate();
    if (layout.ranks < 2)
      throw hympi::InvalidArgument("ping-pong needs at least 2 ranks, got " + std::to_string(layout.ranks));
  }
  hympi::ResultRecord run(hympi::AppContext& ctx) override {
    const auto binding = hympi::current_binding(ctx.topology);
    const auto levels = hympi::pair_levels(ctx.env.world(), ctx.topology, ctx.env.node_id(), binding);
    const auto res = hympi::run_pingpong(ctx.env.world(), levels, options_);
    hympi::ResultRecord r;
    r.app = name();
    r.problem = std::to_string(options_.max_bytes) + " B max";
    r.time_s = res.seconds;
    r.rate_unit = "MB/s";
    r.verified = res.verified;
    r.metrics = res.to_json();
    r.metrics["options"] = options_.to_json();
    r.metrics["virtual_nodes"] = ctx.env.virtual_nodes();
    for (const auto& l : res.levels)
      if (!l.samples.empty()) r.rate = std::max(r.rate, l.samples.back().bandwidth_mbs());
    if (ctx.env.rank() == 0) print(res);
    return r;
  }

 private:
  static void print(const hympi::PingPongResult& res) {
    std::cout << std::fixed << std::setprecision(2);
    for (const auto& l : res.levels) {
      std::cout << "level " << hympi::to_string(l.level) << " (ranks " << l.rank_a << "," << l.rank_b << "; "
                << l.pairs_at_level << " pairs): alpha " << l.fit.alpha_s * 1e6 << " us, beta "
                << l.fit.beta_bytes_per_s / 1e6 << " MB/s\n";
      for (const auto& s : l.samples)
        std::cout << "  " << std::setw(9) << s.bytes << " B  " << std::setw(10) << s.half_round_trip_s * 1e6
                  << " us  " << std::setw(10) << s.bandwidth_mbs() << " MB/s\n";
    }
    for (const auto& m : res.multi)
      std::cout << "multi " << hympi::to_string(m.level) << " pairs " << m.pairs << ": overhead " << m.overhead_us
                << " us, per pair " << m.per_pair_min_mbs << " .. " << m.per_pair_max_mbs << " MB/s, aggregate "
                << m.aggregate_mbs << " MB/s\n";
    std::cout << "message check: " << (res.verified ? "PASSED" : "FAILED") << std::endl;
  }
  hympi::PingPongOptions options_;
};

}  // namespace

int main(int argc, char** argv) {
  PingPongApp app;
  return hympi::run_app(argc, argv, app);
}

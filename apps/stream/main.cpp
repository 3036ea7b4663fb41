// hympi-stream: STREAM copy/scale/add/triad bandwidth of all ranks together.
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "hympi/app/app.hpp"
#include "hympi/stream/stream.hpp"

namespace {

/// "L2" for StreamLevel::l2.
std::string upper(hympi::StreamLevel level) {
  std::string text = hympi::to_string(level);
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

class StreamApp final : public hympi::AppDefinition {
 public:
  std::string name() const override { return "stream"; }
  void add_options(hympi::OptionSet& cli) override {
    // Signed, so that -5 is named as given instead of wrapping around to 2^64 - 5.
    elements_option_ =
        cli.add("--elements", elements_, "doubles per array per rank (default: 4x last-level cache)");
    level_option_ = cli.add("--level", level_,
                            "size the arrays for l1, l2, l3 (each thread's three arrays hold half its share "
                            "of that cache) or memory (the default, 4x last-level cache)");
    cli.add("--repeats", options_.repeats,
            "passes of the four kernels, the first untimed; default: at least this many, more until the timed "
            "triads reach --min-time")
        .show_default();
  }
  std::string repetitions_option() const override { return "--repeats"; }
  void validate(const hympi::Layout&) const override {
    if (options_.repeats < 2)
      throw hympi::InvalidArgument("--repeats must be >= 2, got " + std::to_string(options_.repeats));
    if (elements_option_->given()) {
      // 0 is only the internal "size from the caches"; given explicitly it is a mistake.
      if (elements_ < 1) throw hympi::InvalidArgument("--elements must be >= 1, got " + std::to_string(elements_));
    }
    if (level_option_->given()) {
      const auto level = hympi::parse_stream_level(level_);
      if (level != hympi::StreamLevel::memory && elements_option_->given())
        throw hympi::InvalidArgument("--elements " + std::to_string(elements_) + " and --level " + level_ +
                                     ": the level sizes the arrays itself, give one of them");
    }
  }
  /// The three arrays of --elements doubles per rank (sized from the caches without it: small by design).
  hympi::MemoryEstimate memory_estimate(const hympi::Layout& layout) const override {
    if (!elements_option_->given()) return {};
    // In doubles: elements * 24 * ranks can overflow 64 bits for a mistyped size.
    const double rank = 3.0 * sizeof(double) * static_cast<double>(elements_);
    return {rank, rank * layout.ranks, "--elements " + std::to_string(elements_) + " (3 arrays x 8 B per element)"};
  }
  hympi::ResultRecord run(hympi::AppContext& ctx) override {
    hympi::StreamOptions options = options_;
    options.elements = static_cast<std::size_t>(elements_);
    const auto level = hympi::parse_stream_level(level_);
    std::optional<std::uint64_t> cache_bytes;  // a thread's share of the sized cache level
    if (level != hympi::StreamLevel::memory) {
      cache_bytes = hympi::cache_bytes_per_pu(ctx.topology.caches(), ctx.topology.pus(), level);
      options.elements = hympi::stream_elements_for_cache(*cache_bytes, ctx.env.threads());
      options.inner = hympi::stream_inner_for(options.elements);
    } else if (options.elements == 0) {
      options.elements = hympi::stream_elements_for(ctx.topology.last_level_cache_bytes(), ctx.env.machine_size());
    }
    options.min_time_s = ctx.kernel_min_time_s();
    const auto s = hympi::run_stream(ctx.env.world(), options, &ctx.metrics);
    // The timed region is the triads: this rank's share of it, for comp_s and the imbalance.
    ctx.metrics.add("triad", hympi::PhaseKind::computation, s.local_triad_s);
    if (ctx.env.rank() == 0)
      std::cout << "STREAM " << s.elements << " doubles/array/rank, " << s.timed_repeats
                << " timed passes: best copy " << s.copy_gbs << " GB/s, scale " << s.scale_gbs << ", add "
                << s.add_gbs << ", triad " << s.triad_gbs << " GB/s; triad over all passes " << s.triad_mean_gbs
                << " GB/s in " << s.triad_total_s << " s, verification " << (s.verified ? "PASSED" : "FAILED")
                << std::endl;
    hympi::ResultRecord r;
    r.app = name();
    // The level in the problem too: the report's section title, and a group of its own per level.
    r.problem = std::to_string(s.elements) + " doubles/array/rank" + (cache_bytes ? " in " + upper(level) : "");
    // Rate and time cover every timed triad, not the best one: the same region a kernel's time
    // covers, so kernel GB/s over this rate compares like with like. The best pass stays in metrics.
    r.time_s = s.triad_total_s;
    r.rate = s.triad_mean_gbs;
    r.rate_unit = "GB/s";
    r.verified = s.verified;
    r.timed_repetitions = s.timed_repeats;
    r.bytes_moved = s.triad_bytes;  // triad: a written, b and c read, 8 B each, per element and rank
    r.metrics = s.to_json();
    r.working_set_bytes = 3.0 * sizeof(double) * static_cast<double>(s.elements);
    // Sized by the app (a level, or the memory rule): say for which level. A given --elements is no level.
    if (!elements_option_->given() || level_option_->given()) r.stream_level = hympi::to_string(level);
    if (cache_bytes) r.cache_bytes_per_pu = static_cast<double>(*cache_bytes);
    return r;
  }

 private:
  hympi::StreamOptions options_;
  long long elements_ = 0;  ///< 0 when not given: sized from the caches
  std::optional<hympi::Option> elements_option_;
  std::string level_ = "memory";
  std::optional<hympi::Option> level_option_;
};

}  // namespace

int main(int argc, char** argv) {
  StreamApp app;
  return hympi::run_app(argc, argv, app);
}

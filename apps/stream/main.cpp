// hympi-stream: STREAM copy/scale/add/triad bandwidth of all ranks together.
#include <iostream>

#include "hympi/app.hpp"
#include "hympi/stream.hpp"

namespace {

class StreamApp final : public hympi::AppDefinition {
 public:
  std::string name() const override { return "stream"; }
  std::string description() const override { return "STREAM-style memory bandwidth (the roofline bound)"; }
  void add_options(CLI::App& cli) override {
    cli.add_option("--elements", options_.elements, "doubles per array per rank (default: 4x last-level cache)");
    cli.add_option("--repeats", options_.repeats, "timed repetitions, best counts")->capture_default_str();
  }
  void validate(const hympi::Layout&) const override {
    if (options_.repeats < 2)
      throw hympi::InvalidArgument("--repeats must be >= 2, got " + std::to_string(options_.repeats));
  }
  hympi::ResultRecord run(hympi::AppContext& ctx) override {
    hympi::StreamOptions options = options_;
    if (options.elements == 0)
      options.elements = hympi::stream_elements_for(ctx.topology.last_level_cache_bytes(), ctx.env.machine_size());
    const auto s = hympi::run_stream(ctx.env.world(), options);
    if (ctx.env.rank() == 0)
      std::cout << "STREAM " << s.elements << " doubles/array/rank: copy " << s.copy_gbs << " GB/s, scale "
                << s.scale_gbs << ", add " << s.add_gbs << ", triad " << s.triad_gbs << " GB/s, verification "
                << (s.verified ? "PASSED" : "FAILED") << std::endl;
    hympi::ResultRecord r;
    r.app = name();
    r.problem = std::to_string(s.elements) + " doubles/array/rank";
    r.time_s = s.triad_time_s;
    r.rate = s.triad_gbs;
    r.rate_unit = "GB/s";
    r.verified = s.verified;
    r.metrics = s.to_json();
    return r;
  }

 private:
  hympi::StreamOptions options_;
};

}  // namespace

int main(int argc, char** argv) {
  StreamApp app;
  return hympi::run_app(argc, argv, app);
}

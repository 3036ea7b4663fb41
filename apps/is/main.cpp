// hympi-is: NPB IS, integer bucket sort with one all-to-all per iteration, verified as NPB verifies it.
#include <iostream>

#include "hympi/app/app.hpp"
#include "hympi/is/is.hpp"

namespace {

class IsApp final : public hympi::AppDefinition {
 public:
  std::string name() const override { return "is"; }
  void add_options(hympi::OptionSet& cli) override {
    cli.add("--class", problem_class_, "problem class: S, W, A, B, C").show_default();
    cli.add("--data", data_file_,
            "verification file (default: DATA_DIR/npb-is/verification.json; config data_dir, "
            "env HYMPI_DATA_DIR)");
  }
  void apply_settings(const hympi::Settings& settings) override {
    const hympi::SettingValue& dir = settings.get("data_dir");
    if (data_file_.empty() && !dir.text.empty()) data_file_ = dir.text + "/npb-is/verification.json";
  }
  /// Rejects an unknown class and fewer than one rank or thread (exit 2); any rank count >= 1 runs.
  void validate(const hympi::Layout& layout) const override {
    (void)hympi::is::load_is_class(problem_class_, data_file_);
    if (layout.ranks < 1) throw hympi::InvalidArgument("ranks must be >= 1, got " + std::to_string(layout.ranks));
    if (layout.threads < 1) {
      throw hympi::InvalidArgument("threads must be >= 1, got " + std::to_string(layout.threads));
    }
  }
  hympi::ResultRecord run(hympi::AppContext& ctx) override {
    const hympi::is::IsClass c = hympi::is::load_is_class(problem_class_, data_file_);
    const int nranks = ctx.env.size();
    const bool root = ctx.env.rank() == 0;
    if (root) hympi::is::print_header(std::cout, c, nranks);
    hympi::is::IsBenchmark benchmark(c, ctx.env.world());
    // The class fixes the iterations (verification needs them): --min-time repeats the whole benchmark.
    const hympi::is::IsSeries series = hympi::is::run_is_series(benchmark, ctx.kernel_min_time_s());
    // This rank's own times, so the frame's comm_s and imbalance see rank differences.
    for (const hympi::is::IsResult& r : series.runs) {
      ctx.metrics.add("rank", hympi::PhaseKind::computation, r.local_seconds - r.local_comm_seconds);
      ctx.metrics.add("alltoall", hympi::PhaseKind::communication, r.local_comm_seconds);
    }
    if (root) hympi::is::print_report(std::cout, c, series, nranks, ctx.kernel_min_time_s());

    const hympi::is::IsResult& r = series.total;
    hympi::ResultRecord rec = hympi::repeated_runs_record(name(), c.name, series);
    rec.metrics = nlohmann::json{{"mops_total", r.mops},
                                 {"mops_per_process", r.mops / nranks},
                                 {"iterations", r.iterations},
                                 {"repetitions", series.runs.size()},
                                 {"repetition_s", series.run_seconds()},
                                 {"exchange_s", r.comm_seconds},
                                 {"max_keys_per_rank", r.max_keys_per_rank},
                                 {"class", c.to_json()},
                                 {"verification", r.to_json()}};
    return rec;
  }

 private:
  std::string problem_class_ = "S";
  std::string data_file_;
};

}  // namespace

int main(int argc, char** argv) {
  IsApp app;
  return hympi::run_app(argc, argv, app);
}

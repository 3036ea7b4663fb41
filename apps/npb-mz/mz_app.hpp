#pragma once
// The app shared by hympi-bt-mz, hympi-sp-mz and hympi-lu-mz: options, validation, the run, the
// NPB-style report on rank 0 and the result record.
#include "hympi/app/app.hpp"
#include "hympi/npb/npb_mz.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hympi/npb/data_layout.hpp"

namespace hympi::npb {

/// One NPB-MZ benchmark as a hympi app.
class MzApp final : public AppDefinition {
 public:
  /// The app for benchmark `b`.
  explicit MzApp(Benchmark b) : benchmark_(b) {}
  [[nodiscard]] std::string name() const override { return to_string(benchmark_); }
  void add_options(hympi::OptionSet& cli) override;
  /// --iterations: the class's count replaced, the benchmark runs once (it cannot verify).
  [[nodiscard]] std::string repetitions_option() const override { return "--iterations"; }
  /// Without --data, the verification file lies in data_dir (config file or HYMPI_DATA_DIR) when one is set;
  /// the data layouts' locations come from num_locs (HYMPI_NUM_LOCS).
  void apply_settings(const Settings& settings) override;
  /// The verification file (--data), when one is named.
  [[nodiscard]] std::vector<std::string> input_files() const override {
    return data_file_.empty() ? std::vector<std::string>{} : std::vector<std::string>{data_file_};
  }
  /// Rejects an unknown class, a geometry-only class (E, F), more ranks than zones, thread counts below 1, an unknown --data-layout and a
  /// layout other than first-touch for LU-MZ (exit 2).
  void validate(const Layout& layout) const override;
  /// Each rank's zones (the partition run() makes): BT 21, SP 22, LU 17 doubles per point, x rows padded.
  [[nodiscard]] MemoryEstimate memory_estimate(const Layout& layout) const override;
  /// u, 5 doubles per point of each rank's zones.
  [[nodiscard]] MemoryEstimate checkpoint_staging(const Layout& layout) const override;
  /// A checkpoint's time step within this run's (check_mz_checkpoint).
  void check_restart(const std::string& path, const h5::CheckpointHeader& header) const override;
  /// Checkpoints hold each zone's solution; a restart continues the run bit for bit (any layout).
  [[nodiscard]] bool checkpoints() const override { return true; }
  /// Benchmark, class, time step, mesh and zone sizes (mz_problem_size); throws like validate().
  [[nodiscard]] nlohmann::json problem_size() const override;
  /// Runs the benchmark, repeated whole until its timed loops reach context.min_time_s (unless
  /// --iterations was given); verified only if every repetition verified. With context.io it
  /// restarts from a checkpoint and writes checkpoints and snapshots (mz_io_hooks; errors as there).
  ResultRecord run(AppContext& context) override;

 private:
  /// Bytes of `doubles` per point of each rank's zones on `layout`: the largest rank's and all ranks' together.
  [[nodiscard]] std::pair<double, double> zone_bytes(const Layout& layout, double doubles) const;

  Benchmark benchmark_;
  std::string problem_class_ = "S";
  std::string packing_ = "npb";
  bool balance_threads_ = false;
  int max_threads_ = 0;
  int iterations_ = 0;
  double perturb_ = 0.0;
  bool split_report_ = false;
  double split_tolerance_ = 0.05;
  std::vector<int> split_table_;
  std::string data_file_;
  std::string data_layout_ = "first-touch";
  std::string thread_work_ = "loops";
  long long layout_seed_ = static_cast<long long>(kDefaultLayoutSeed);
  std::string num_locs_;  ///< HYMPI_NUM_LOCS / num_locs: the locations of the data layouts
  std::optional<hympi::Option> iterations_option_;
};

}  // namespace hympi::npb

#pragma once
// The --dims, --strategy and --tile options of the apps whose stencil sweeps overlap their halo exchange (rb3d,
// spmv3d), declared once so that the flags mean the same in both, and the comm-thread prediction both report.
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "hympi/app/options.hpp"
#include "hympi/grid/overlap.hpp"

namespace hympi {

class OverlapFlags {
 public:
  /// Declares --dims, --strategy and --tile on `cli`.
  void add_to(OptionSet& cli);
  /// The strategy parsed (throws InvalidArgument naming a bad one) and the tile given, if one was.
  [[nodiscard]] OverlapOptions overlap() const;
  /// Sets `dims` to the process grid given, if one was (0 per axis: chosen automatically).
  void apply_dims(std::array<int, 3>& dims) const;

 private:
  std::string strategy_ = "bulk";
  std::vector<long> tile_;
  std::vector<int> dims_;
  std::optional<Option> tile_option_;
};

/// Kaiser and Baden's prediction (model_comm_thread) of the comm_thread strategy from a run's times per step: its
/// JSON for a bulk run on two threads or more, null for any other run (no bulk times to predict from).
[[nodiscard]] nlohmann::json comm_thread_prediction(const OverlapOptions& overlap, const OverlapTimes& per_step,
                                                    int threads);

/// The line that reports `prediction` against the bulk time per step (nothing for a null one); `step` names a step
/// ("sweep", "SpMV").
void print_comm_thread_prediction(std::ostream& os, const nlohmann::json& prediction, const OverlapTimes& per_step,
                                  std::string_view step);

}  // namespace hympi

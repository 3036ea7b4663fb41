#include "hympi/app/overlap_flags.hpp"

namespace hympi {

void OverlapFlags::add_to(OptionSet& cli) {
  // Vectors, not std::array: CLI11 multiplies an array's size by expected(3).
  cli.add("--dims", dims_, "process grid px py pz (0 = automatic)").values(3);
  cli.add("--strategy", strategy_, "halo/compute overlap: bulk, split or commthread").show_default();
  tile_option_ = cli.add("--tile", tile_, "cache-block size tx ty tz (default: untiled rows)").values(3);
}

OverlapOptions OverlapFlags::overlap() const {
  OverlapOptions out;
  out.strategy = parse_overlap_strategy(strategy_);
  if (tile_option_ && tile_option_->given()) out.tile = {tile_[0], tile_[1], tile_[2]};
  return out;
}

void OverlapFlags::apply_dims(std::array<int, 3>& dims) const {
  if (!dims_.empty()) dims = {dims_[0], dims_[1], dims_[2]};
}

nlohmann::json comm_thread_prediction(const OverlapOptions& overlap, const OverlapTimes& per_step, int threads) {
  if (overlap.strategy != OverlapStrategy::bulk || threads < 2) return nullptr;
  return model_comm_thread(per_step, threads).to_json();
}

void print_comm_thread_prediction(std::ostream& os, const nlohmann::json& prediction, const OverlapTimes& per_step,
                                  std::string_view step) {
  if (prediction.is_null()) return;
  os << "  Kaiser-Baden model: C = " << prediction["C"].get<double>() << ", P = " << prediction["P"].get<int>()
     << ": commthread predicted " << prediction["predicted_s"].get<double>() << " s per " << step << " (bulk "
     << per_step.wall_s << " s)\n";
}

}  // namespace hympi

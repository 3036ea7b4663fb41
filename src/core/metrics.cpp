#include "hympi/core/metrics.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "hympi/core/error.hpp"

namespace hympi {

Metrics::Scope::Scope(Metrics& metrics, std::string name, PhaseKind kind)
    : metrics_(metrics), name_(std::move(name)), kind_(kind), start_(MPI_Wtime()) {}

Metrics::Scope::~Scope() { metrics_.add(name_, kind_, MPI_Wtime() - start_); }

void Metrics::add(const std::string& name, PhaseKind kind, double seconds) {
  auto [it, fresh] = phases_.try_emplace(name, Phase{kind, 0.0});
  it->second.seconds += seconds;
}

double Metrics::seconds(const std::string& name) const {
  auto it = phases_.find(name);
  return it == phases_.end() ? 0.0 : it->second.seconds;
}

double Metrics::total(PhaseKind kind) const {
  double sum = 0;
  for (const auto& [name, phase] : phases_)
    if (phase.kind == kind) sum += phase.seconds;
  return sum;
}

long repetitions_for_min_time(long done, double elapsed_s, double min_time_s, long cap) {
  if (done < 1 || cap < done)
    throw InvalidArgument("repetitions done must be in [1, " + std::to_string(cap) + "], got " + std::to_string(done));
  if (!std::isfinite(elapsed_s) || elapsed_s < 0 || !std::isfinite(min_time_s) || min_time_s < 0)
    throw InvalidArgument("times must be finite and >= 0, got elapsed " + std::to_string(elapsed_s) + " s, minimum " +
                          std::to_string(min_time_s) + " s");
  if (elapsed_s >= min_time_s) return done;
  const double grow_cap = 100.0 * static_cast<double>(done);
  const double wanted =
      elapsed_s > 0 ? std::ceil(static_cast<double>(done) * min_time_s / elapsed_s * 1.05) : grow_cap;
  const double target = std::clamp(wanted, static_cast<double>(done + 1), grow_cap);
  return std::min(static_cast<long>(target), cap);
}

void print_repetitions(std::ostream& os, std::size_t runs, bool all_verified, double min_time_s) {
  if (runs <= 1) return;
  os << " Repeated " << runs << " times to reach --min-time " << min_time_s << " s; "
     << (all_verified ? "every repetition verified" : "a repetition FAILED verification")
     << "; time and Mop/s below are over all repetitions\n";
}

double max_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB.
}

MetricsSummary Metrics::reduce(MPI_Comm world, MPI_Comm node) const {
  int size = 1, node_rank = 0;
  HYMPI_MPI(MPI_Comm_size(world, &size));
  HYMPI_MPI(MPI_Comm_rank(node, &node_rank));

  // Rank 0's phase list defines the phases; a rank that never timed one contributes 0.
  std::string names;
  for (const auto& [name, phase] : phases_) names += name + '\n' + static_cast<char>('0' + static_cast<int>(phase.kind));
  int length = static_cast<int>(names.size());
  HYMPI_MPI(MPI_Bcast(&length, 1, MPI_INT, 0, world));
  names.resize(static_cast<std::size_t>(length));
  HYMPI_MPI(MPI_Bcast(names.data(), length, MPI_CHAR, 0, world));

  MetricsSummary out;
  std::vector<double> mine;
  for (std::size_t pos = 0; pos < names.size();) {
    const std::size_t nl = names.find('\n', pos);
    PhaseStats s;
    s.name = names.substr(pos, nl - pos);
    s.kind = static_cast<PhaseKind>(names[nl + 1] - '0');
    pos = nl + 2;
    mine.push_back(seconds(s.name));
    out.phases.push_back(s);
  }
  const double comp = total(PhaseKind::computation), comm = total(PhaseKind::communication);
  mine.push_back(comp);
  mine.push_back(comm);
  const auto n = static_cast<int>(mine.size());
  std::vector<double> lo(mine.size()), hi(mine.size()), sum(mine.size());
  HYMPI_MPI(MPI_Allreduce(mine.data(), lo.data(), n, MPI_DOUBLE, MPI_MIN, world));
  HYMPI_MPI(MPI_Allreduce(mine.data(), hi.data(), n, MPI_DOUBLE, MPI_MAX, world));
  HYMPI_MPI(MPI_Allreduce(mine.data(), sum.data(), n, MPI_DOUBLE, MPI_SUM, world));
  for (std::size_t i = 0; i < out.phases.size(); ++i) {
    out.phases[i].min_s = lo[i];
    out.phases[i].max_s = hi[i];
    out.phases[i].avg_s = sum[i] / size;
  }
  const std::size_t k = out.phases.size();
  out.comp_s = sum[k] / size;
  out.comm_s = sum[k + 1] / size;
  out.imbalance = out.comp_s > 0 ? hi[k] / out.comp_s : 1.0;

  const double rss = max_rss_mib();
  double node_sum = 0;
  HYMPI_MPI(MPI_Allreduce(&rss, &out.max_rss_mib, 1, MPI_DOUBLE, MPI_MAX, world));
  HYMPI_MPI(MPI_Allreduce(&rss, &node_sum, 1, MPI_DOUBLE, MPI_SUM, node));
  const double node_value = node_rank == 0 ? node_sum : 0.0;
  HYMPI_MPI(MPI_Allreduce(&node_value, &out.node_rss_mib, 1, MPI_DOUBLE, MPI_MAX, world));
  return out;
}

nlohmann::json MetricsSummary::to_json() const {
  nlohmann::json phases_json = nlohmann::json::object();
  for (const auto& p : phases)
    phases_json[p.name] = {{"kind", to_string(p.kind)}, {"min_s", p.min_s}, {"avg_s", p.avg_s}, {"max_s", p.max_s}};
  return phases_json;
}

}  // namespace hympi

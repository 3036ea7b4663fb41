#include "hympi/spmv3d/options.hpp"

#include <omp.h>

#include <cmath>

#include "hympi/core/error.hpp"
#include "hympi/grid/cart.hpp"
#include "hympi/spmv3d/csr.hpp"

namespace hympi {

namespace {

constexpr const char* kAxis[3] = {"x", "y", "z"};

std::string grid_text(const std::array<long, 3>& g) {
  return std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]);
}

}  // namespace

std::pair<std::array<long, 3>, std::array<int, 3>> Spmv3dOptions::resolve(int ranks) const {
  // Sizes and fixed process-grid entries are checked (and named) by the process-grid search.
  if (per_rank[0] <= 0 && per_rank[1] <= 0 && per_rank[2] <= 0) return {global, choose_process_grid(ranks, global, dims)};
  const auto p = choose_process_grid_per_rank(ranks, per_rank, dims);
  return {{per_rank[0] * p[0], per_rank[1] * p[1], per_rank[2] * p[2]}, p};
}

double Spmv3dOptions::product_bytes(int ranks) const {
  const auto [g, p] = resolve(ranks);
  double bytes = 2 * largest_block_bytes(g, p, ghost, sizeof(double));
  if (op == SpmvOperator::csr) bytes += largest_block_bytes(g, p, 0, 1) * Csr27::kBytesPerPoint;
  return bytes;
}

void Spmv3dOptions::validate(int ranks, int threads) const {
  if (ghost < 1) throw InvalidArgument("ghost width must be >= 1, got " + std::to_string(ghost));
  if (spmv_reps < 1) throw InvalidArgument("SpMV repetitions must be >= 1, got " + std::to_string(spmv_reps));
  if (!(min_time_s >= 0.0 && std::isfinite(min_time_s)))
    throw InvalidArgument("minimum time must be a number of seconds >= 0, got " + std::to_string(min_time_s));
  if (cg_iterations < 0) throw InvalidArgument("CG iterations must be >= 0, got " + std::to_string(cg_iterations));
  if (!(cg_tolerance > 0.0 && cg_tolerance < 1.0))
    throw InvalidArgument("CG tolerance must be in (0, 1), got " + std::to_string(cg_tolerance));
  overlap.validate(threads);
  const auto [g, p] = resolve(ranks);
  for (int d = 0; d < 3; ++d) {
    const long smallest = g[d] / p[d];
    if (ghost > smallest)
      throw InvalidArgument("ghost width " + std::to_string(ghost) + " is larger than the smallest local block (" +
                            std::to_string(smallest) + " points on axis " + kAxis[d] + " of the " + grid_text(g) +
                            " grid over " + std::to_string(p[0]) + "x" + std::to_string(p[1]) + "x" +
                            std::to_string(p[2]) + " ranks)");
  }
  if (op == SpmvOperator::csr) {
    std::array<long, 3> largest{};
    for (int d = 0; d < 3; ++d) largest[d] = (g[d] + p[d] - 1) / p[d];
    Csr27::check_block(largest, ghost);
  }
}

void Spmv3dOptions::validate(int ranks) const { validate(ranks, omp_get_max_threads()); }

nlohmann::json Spmv3dOptions::to_json() const {
  return {{"global", global},         {"per_rank", per_rank},         {"dims", dims},
          {"ghost", ghost},           {"operator", to_string(op)},    {"overlap", overlap.to_json()},
          {"spmv_reps", spmv_reps},   {"cg_iterations", cg_iterations}, {"cg_tolerance", cg_tolerance},
          {"streaming_stores", to_string(streaming_stores)}, {"min_time_s", min_time_s}};
}

}  // namespace hympi

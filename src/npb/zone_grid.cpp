#include "hympi/npb/zone_grid.hpp"

#include "hympi/core/error.hpp"

#include <algorithm>
#include <cmath>

namespace hympi {

namespace {

// Ends of the zone intervals along one axis (1-based inclusive ends, like the reference).
std::vector<int> interval_sizes(int zones, int global, double ratio) {
  std::vector<int> ends(zones);
  if (std::abs(ratio - 1.0) > 1e-10) {
    // Geometric growth; the +0.45 rounding keeps the widths monotonically increasing.
    const double r = std::exp(std::log(ratio) / (zones - 1));
    const double smallest = double(global) * (r - 1.0) / (std::pow(r, zones) - 1.0);
    for (int i = 1; i <= zones; ++i) {
      ends[i - 1] = static_cast<int>(smallest * (std::pow(r, i) - 1.0) / (r - 1.0) + 0.45);
    }
  } else {
    for (int i = 1; i <= zones; ++i) ends[i - 1] = (i * global) / zones;
  }
  std::vector<int> sizes(zones);
  int start = 1;
  for (int i = 0; i < zones; ++i) {
    sizes[i] = ends[i] - start + 1;
    start = ends[i] + 1;
  }
  return sizes;
}

}  // namespace

ZoneGrid::ZoneGrid(const ZoneGeometry& g) : geometry_(g) {
  if (g.x_zones < 1 || g.y_zones < 1) {
    throw InvalidArgument("zone grid " + std::to_string(g.x_zones) + "x" + std::to_string(g.y_zones) +
                          " must be at least 1x1");
  }
  if (g.gx_size < 3 * g.x_zones || g.gy_size < 3 * g.y_zones || g.gz_size < 3) {
    throw InvalidArgument("mesh " + std::to_string(g.gx_size) + "x" + std::to_string(g.gy_size) + "x" +
                          std::to_string(g.gz_size) + " is too small for the zone grid");
  }
  if (!(g.ratio >= 1.0)) throw InvalidArgument("zone size ratio " + std::to_string(g.ratio) + " must be >= 1");
  const bool stretched = std::abs(g.ratio - 1.0) > 1e-10;
  if (stretched && (g.x_zones < 2 || g.y_zones < 2)) {
    throw InvalidArgument("zone stretching needs at least 2 zones per direction");
  }
  x_sizes_ = interval_sizes(g.x_zones, g.gx_size, g.ratio);
  y_sizes_ = interval_sizes(g.y_zones, g.gy_size, g.ratio);
  for (int s : x_sizes_) {
    if (s < 3) throw InvalidArgument("zone width " + std::to_string(s) + " < 3 points");
  }
  for (int s : y_sizes_) {
    if (s < 3) throw InvalidArgument("zone height " + std::to_string(s) + " < 3 points");
  }
  zones_.reserve(static_cast<std::size_t>(g.x_zones) * g.y_zones);
  for (int j = 0; j < g.y_zones; ++j) {
    for (int i = 0; i < g.x_zones; ++i) {
      Zone z;
      z.id = i + j * g.x_zones;
      z.ix = i;
      z.jy = j;
      z.nx = x_sizes_[i];
      z.ny = y_sizes_[j];
      z.nz = g.gz_size;
      z.neighbour[int(ZoneFace::west)] = (i - 1 + g.x_zones) % g.x_zones + j * g.x_zones;
      z.neighbour[int(ZoneFace::east)] = (i + 1) % g.x_zones + j * g.x_zones;
      z.neighbour[int(ZoneFace::south)] = i + ((j - 1 + g.y_zones) % g.y_zones) * g.x_zones;
      z.neighbour[int(ZoneFace::north)] = i + ((j + 1) % g.y_zones) * g.x_zones;
      zones_.push_back(z);
    }
  }
}

ZoneGrid ZoneGrid::from_json(const nlohmann::json& data, const std::string& benchmark,
                                 const std::string& problem_class) {
  if (!data.contains(benchmark)) throw InvalidArgument("unknown benchmark '" + benchmark + "'");
  const auto& b = data.at(benchmark);
  if (problem_class.empty() || problem_class[0] == '_' || !b.contains(problem_class)) {
    throw InvalidArgument("unknown class '" + problem_class + "' for " + benchmark);
  }
  const auto& c = b.at(problem_class);
  ZoneGeometry g;
  g.x_zones = c.at("x_zones").get<int>();
  g.y_zones = c.at("y_zones").get<int>();
  g.gx_size = c.at("gx_size").get<int>();
  g.gy_size = c.at("gy_size").get<int>();
  g.gz_size = c.at("gz_size").get<int>();
  g.ratio = c.at("zone_size_ratio").get<double>();
  return ZoneGrid(g);
}

const Zone& ZoneGrid::zone(int id) const {
  if (id < 0 || id >= num_zones()) {
    throw InvalidArgument("zone id " + std::to_string(id) + " outside [0, " + std::to_string(num_zones()) + ")");
  }
  return zones_[static_cast<std::size_t>(id)];
}

double ZoneGrid::total_points() const noexcept {
  double sum = 0.0;
  for (const auto& z : zones_) sum += z.points();
  return sum;
}

double ZoneGrid::size_spread() const noexcept {
  double lo = zones_.front().points();
  double hi = lo;
  for (const auto& z : zones_) {
    lo = std::min(lo, z.points());
    hi = std::max(hi, z.points());
  }
  return hi / lo;
}

nlohmann::json ZoneGrid::to_json() const {
  return nlohmann::json{{"x_zones", geometry_.x_zones},   {"y_zones", geometry_.y_zones},
                        {"gx_size", geometry_.gx_size},   {"gy_size", geometry_.gy_size},
                        {"gz_size", geometry_.gz_size},   {"zone_size_ratio", geometry_.ratio},
                        {"zone_x_sizes", x_sizes_},       {"zone_y_sizes", y_sizes_},
                        {"total_points", total_points()}, {"size_spread", size_spread()}};
}

std::ostream& operator<<(std::ostream& os, const ZoneGrid& grid) {
  const auto& g = grid.geometry();
  return os << g.x_zones << " x " << g.y_zones << " zones, " << g.gx_size << " x " << g.gy_size << " x "
            << g.gz_size << " mesh";
}

}  // namespace hympi

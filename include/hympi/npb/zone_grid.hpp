#pragma once
// NPB-MZ zone geometry: a gx x gy x gz mesh cut into x_zones x y_zones zones that overlap by one
// boundary point and wrap around periodically in x and y (Van der Wijngaart & Jin, NAS-03-010).
#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace hympi {

/// The four neighbours of a zone, in the order the boundary exchange walks them.
enum class ZoneFace { west = 0, east = 1, south = 2, north = 3 };

/// The face a neighbour sees when it looks back at us.
[[nodiscard]] constexpr ZoneFace opposite(ZoneFace f) noexcept {
  switch (f) {
    case ZoneFace::west: return ZoneFace::east;
    case ZoneFace::east: return ZoneFace::west;
    case ZoneFace::south: return ZoneFace::north;
    case ZoneFace::north: return ZoneFace::south;
  }
  return f;
}

/// The mesh parameters that define one benchmark class (all from the data file).
struct ZoneGeometry {
  int x_zones = 0;
  int y_zones = 0;
  int gx_size = 0;
  int gy_size = 0;
  int gz_size = 0;
  /// Largest/smallest zone width; 1 gives equal zones (SP-MZ, LU-MZ), >1 BT-MZ's stretching.
  double ratio = 1.0;
};

/// One zone: its size and its four periodic neighbours (0-based zone ids).
struct Zone {
  int id = 0;
  int ix = 0;  ///< column of the zone in the zone grid
  int jy = 0;  ///< row of the zone in the zone grid
  int nx = 0;
  int ny = 0;
  int nz = 0;
  std::array<int, 4> neighbour{};  ///< indexed by ZoneFace

  /// Number of mesh points of the zone, boundaries included.
  [[nodiscard]] double points() const noexcept { return double(nx) * ny * nz; }
  /// The neighbour across face `f`.
  [[nodiscard]] int next(ZoneFace f) const noexcept { return neighbour[static_cast<int>(f)]; }
};

/// x pitch of a zone field: odd, so power-of-two zone widths do not alias in cache (as NPB-MZ).
[[nodiscard]] constexpr int padded_nx(int nx) noexcept { return nx + 1 - nx % 2; }

/// The zones of one NPB-MZ class. Throws InvalidArgument for non-positive or inconsistent sizes.
class ZoneGrid {
 public:
  /// Cuts the mesh the way the reference zone_setup does (geometric stretching when ratio != 1).
  explicit ZoneGrid(const ZoneGeometry& geometry);

  /// Reads geometry for `benchmark` ("bt-mz", "sp-mz", "lu-mz") and class from a verification
  /// file's JSON; throws InvalidArgument naming the class when it is not there.
  [[nodiscard]] static ZoneGrid from_json(const nlohmann::json& data, const std::string& benchmark,
                                            const std::string& problem_class);

  [[nodiscard]] const ZoneGeometry& geometry() const noexcept { return geometry_; }
  [[nodiscard]] int num_zones() const noexcept { return static_cast<int>(zones_.size()); }
  /// Zone by 0-based id; throws InvalidArgument when out of range.
  [[nodiscard]] const Zone& zone(int id) const;
  [[nodiscard]] const std::vector<Zone>& zones() const noexcept { return zones_; }
  /// x extent of each zone column, west to east.
  [[nodiscard]] const std::vector<int>& x_sizes() const noexcept { return x_sizes_; }
  /// y extent of each zone row, south to north.
  [[nodiscard]] const std::vector<int>& y_sizes() const noexcept { return y_sizes_; }
  /// Sum of zone points (the overlap points counted once per zone, as NPB-MZ stores them).
  [[nodiscard]] double total_points() const noexcept;
  /// Largest zone size / smallest zone size, in points.
  [[nodiscard]] double size_spread() const noexcept;
  /// Geometry and zone sizes as JSON, for result records.
  [[nodiscard]] nlohmann::json to_json() const;

 private:
  ZoneGeometry geometry_;
  std::vector<int> x_sizes_;
  std::vector<int> y_sizes_;
  std::vector<Zone> zones_;
};

/// Prints "X x Y zones, gx x gy x gz mesh".
std::ostream& operator<<(std::ostream& os, const ZoneGrid& grid);

}  // namespace hympi

#include "hympi/npb/zone_partition.hpp"

#include "hympi/core/error.hpp"

#include <algorithm>
#include <numeric>

namespace hympi {

nlohmann::json ZonePartitionOptions::to_json() const {
  return nlohmann::json{{"method", to_string(method)},
                        {"threads_per_rank", threads_per_rank},
                        {"balance_threads", balance_threads},
                        {"max_threads", max_threads}};
}

namespace {

// Index of the first minimum, so ties go to the lowest rank as in the reference.
int emptiest(const std::vector<double>& load) {
  int best = 0;
  for (int r = 1; r < static_cast<int>(load.size()); ++r) {
    if (load[best] > load[r]) best = r;
  }
  return best;
}

}  // namespace

std::vector<int> pack_lpt(const std::vector<double>& weights, int nranks) {
  if (nranks < 1) throw InvalidArgument("number of ranks " + std::to_string(nranks) + " must be >= 1");
  std::vector<int> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return weights[a] > weights[b]; });
  std::vector<double> load(static_cast<std::size_t>(nranks), 0.0);
  std::vector<int> owner(weights.size(), -1);
  for (int item : order) {
    const int r = emptiest(load);
    owner[item] = r;
    load[r] += weights[item];
  }
  return owner;
}

ZonePartition::ZonePartition(const ZoneGrid& grid, int nranks, const ZonePartitionOptions& options)
    : nranks_(nranks), options_(options) {
  if (nranks < 1) throw InvalidArgument("number of ranks " + std::to_string(nranks) + " must be >= 1");
  if (nranks > grid.num_zones()) {
    throw InvalidArgument("number of ranks " + std::to_string(nranks) + " exceeds the number of zones " +
                          std::to_string(grid.num_zones()));
  }
  if (options.threads_per_rank < 1) {
    throw InvalidArgument("threads per rank " + std::to_string(options.threads_per_rank) + " must be >= 1");
  }
  if (options.max_threads < 0 || (options.max_threads > 0 && options.max_threads < options.threads_per_rank)) {
    throw InvalidArgument("max threads " + std::to_string(options.max_threads) +
                          " must be 0 or >= threads per rank");
  }
  for (const auto& z : grid.zones()) weight_.push_back(z.points());
  if (options.method == PackingMethod::npb) {
    pack_npb(grid);
  } else {
    owner_ = pack_lpt(weight_, nranks);
  }
  zones_of_.assign(static_cast<std::size_t>(nranks), {});
  load_.assign(static_cast<std::size_t>(nranks), 0.0);
  for (int z = 0; z < grid.num_zones(); ++z) {
    zones_of_[owner_[z]].push_back(z);
    load_[owner_[z]] += weight_[z];
  }
  threads_.assign(static_cast<std::size_t>(nranks), options.threads_per_rank);
  if (options.balance_threads && nranks > 1 && options.threads_per_rank * nranks > nranks) balance_threads();
}

void ZonePartition::pack_npb(const ZoneGrid& grid) {
  const int n = grid.num_zones();
  // Selection sort, descending, exactly as map_zones does it: equal zones end up in the
  // reference's order, which decides which of them lands where.
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (int a = 0; a < n - 1; ++a) {
    double cur = weight_[order[a]];
    int pick = a;
    for (int b = a + 1; b < n; ++b) {
      if (cur < weight_[order[b]]) {
        cur = weight_[order[b]];
        pick = b;
      }
    }
    std::swap(order[a], order[pick]);
  }
  owner_.assign(static_cast<std::size_t>(n), -1);
  std::vector<double> load(static_cast<std::size_t>(nranks_), 0.0);
  // Face length a zone shares with zones already on `rank`: the message volume a placement saves.
  auto shared_faces = [&](int zone, int rank) {
    const Zone& z = grid.zone(zone);
    int index = 0;
    if (owner_[z.next(ZoneFace::west)] == rank) index += z.ny;
    if (owner_[z.next(ZoneFace::east)] == rank) index += z.ny;
    if (owner_[z.next(ZoneFace::south)] == rank) index += z.nx;
    if (owner_[z.next(ZoneFace::north)] == rank) index += z.nx;
    return index;
  };
  int next = 0;
  while (next < n) {
    const int rank = emptiest(load);
    int pick = order[next];
    if (next < n - 1) {
      int best = shared_faces(pick, rank);
      for (int b = next + 1; b < n; ++b) {
        const int zone = order[b];
        // Only zones within 5% of the largest unplaced one compete, so balance is not traded away.
        const double diff = (weight_[order[next]] - weight_[zone]) / weight_[order[next]];
        if (diff > 0.05) break;
        if (owner_[zone] < 0) {
          const int index = shared_faces(zone, rank);
          if (index > best) {
            pick = zone;
            best = index;
          }
        }
      }
    }
    owner_[pick] = rank;
    load[rank] += weight_[pick];
    while (next < n && owner_[order[next]] >= 0) ++next;
  }
}

void ZonePartition::balance_threads() {
  const int total = options_.threads_per_rank * nranks_;
  const int cap = options_.max_threads;
  const double tot_load = std::accumulate(load_.begin(), load_.end(), 0.0);
  const double per_thread = tot_load / total;
  int assigned = 0;
  for (int r = 0; r < nranks_; ++r) {
    int t = static_cast<int>(load_[r] / per_thread);
    t = std::max(t, 1);
    if (cap > 0) t = std::min(t, cap);
    threads_[r] = t;
    assigned += t;
  }
  // Hand out (or take back) the remainder one thread at a time where it helps most.
  int left = total - assigned;
  while (left != 0) {
    int pick = -1;
    double best = 0.0;
    for (int r = 0; r < nranks_; ++r) {
      if (left > 0) {
        const double per = load_[r] / threads_[r];
        if (per > best && (cap <= 0 || threads_[r] < cap)) {
          best = per;
          pick = r;
        }
      } else if (threads_[r] > 1) {
        const double per = load_[r] / (threads_[r] - 1);
        if (best == 0.0 || per < best) {
          best = per;
          pick = r;
        }
      }
    }
    if (pick < 0) break;  // every rank at its cap: the remainder stays unused
    threads_[pick] += left > 0 ? 1 : -1;
    left += left > 0 ? -1 : 1;
  }
}

int ZonePartition::total_threads() const noexcept { return std::accumulate(threads_.begin(), threads_.end(), 0); }

double ZonePartition::imbalance() const noexcept {
  const double tot = std::accumulate(load_.begin(), load_.end(), 0.0);
  double worst = 0.0;
  for (int r = 0; r < nranks_; ++r) worst = std::max(worst, load_[r] / threads_[r]);
  return worst / (tot / total_threads());
}

double ZonePartition::speedup() const noexcept {
  const double tot = std::accumulate(load_.begin(), load_.end(), 0.0);
  double worst = 0.0;
  for (int r = 0; r < nranks_; ++r) worst = std::max(worst, load_[r] / threads_[r]);
  return tot / worst;
}

nlohmann::json ZonePartition::to_json() const {
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < nranks_; ++r) {
    ranks.push_back({{"rank", r}, {"zones", zones_of_[r]}, {"points", load_[r]}, {"threads", threads_[r]}});
  }
  return nlohmann::json{{"options", options_.to_json()},
                        {"ranks", ranks},
                        {"imbalance", imbalance()},
                        {"speedup", speedup()}};
}

std::ostream& operator<<(std::ostream& os, const ZonePartition& p) {
  for (int r = 0; r < p.num_ranks(); ++r) {
    os << "  rank " << r << ": " << p.zones_of(r).size() << " zones, " << static_cast<long long>(p.load(r))
       << " points, " << p.threads(r) << " threads\n";
  }
  return os;
}

nlohmann::json ZoneSplit::to_json() const {
  return nlohmann::json{{"nranks", nranks},
                        {"blocks", blocks.size()},
                        {"splits", splits},
                        {"original_points", original_points},
                        {"total_points", total_points},
                        {"extra_fraction", extra_fraction()},
                        {"imbalance", imbalance}};
}

ZoneSplit split_zones(const ZoneGrid& grid, int nranks, double tolerance) {
  if (nranks < 1) throw InvalidArgument("number of ranks " + std::to_string(nranks) + " must be >= 1");
  if (!(tolerance >= 0.0)) throw InvalidArgument("split tolerance " + std::to_string(tolerance) + " must be >= 0");
  ZoneSplit out;
  out.nranks = nranks;
  for (const auto& z : grid.zones()) out.blocks.push_back(ZoneBlock{z.id, 0, 0, z.nx, z.ny, z.nz});
  out.original_points = grid.total_points();
  auto total = [&] {
    double t = 0.0;
    for (const auto& b : out.blocks) t += b.points();
    return t;
  };
  // A cut leaves both halves with >= 3 points (two boundaries + one interior), so nx >= 4.
  constexpr int min_cut = 4;
  for (;;) {
    auto largest = std::max_element(out.blocks.begin(), out.blocks.end(),
                                    [](const ZoneBlock& a, const ZoneBlock& b) { return a.points() < b.points(); });
    if (largest->points() <= total() / nranks * (1.0 + tolerance)) break;
    ZoneBlock a = *largest;
    ZoneBlock b = *largest;
    if (a.nx >= a.ny && a.nx >= min_cut) {
      // The halves share the cut: each keeps the other's first interior plane as its boundary.
      a.nx = (largest->nx + 2) / 2;
      b.nx = largest->nx + 2 - a.nx;
      b.x0 = largest->x0 + a.nx - 2;
    } else if (a.ny >= min_cut) {
      a.ny = (largest->ny + 2) / 2;
      b.ny = largest->ny + 2 - a.ny;
      b.y0 = largest->y0 + a.ny - 2;
    } else {
      break;
    }
    *largest = a;
    out.blocks.push_back(b);
    ++out.splits;
  }
  out.total_points = total();
  std::vector<double> w;
  for (const auto& b : out.blocks) w.push_back(b.points());
  const auto owner = pack_lpt(w, nranks);
  std::vector<double> load(static_cast<std::size_t>(nranks), 0.0);
  for (std::size_t i = 0; i < w.size(); ++i) load[owner[i]] += w[i];
  out.imbalance = *std::max_element(load.begin(), load.end()) / (out.total_points / nranks);
  return out;
}

}  // namespace hympi

#include "hympi/pingpong/pingpong.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <set>

#include "hympi/core/error.hpp"

namespace hympi {

namespace {
constexpr int kTag = kPingPongTag;
// OSU's osu_latency counts: above 8 KiB a message takes long enough that a tenth of the round
// trips (and of the warm-up) gives the same precision in a tenth of the time.
constexpr std::size_t kLargeBytes = 8 * 1024;
constexpr int kSkipSmall = 100;
constexpr int kSkipLarge = 10;
constexpr int kMinReps = 4;
constexpr int kNameWidth = 256;
constexpr int kSetWidth = 1024;
// The pattern repeats every 256 bytes, so one block of it is the reference for every chunk.
constexpr std::size_t kPatternBlock = 4096;
constexpr std::size_t kPageBytes = 4096;
constexpr std::uint32_t kCheckedTrips = kPingPongCheckedTrips;

std::uint8_t pattern_byte(std::size_t bytes, std::size_t k) {
  return static_cast<std::uint8_t>((k * 131U + bytes * 7U + 11U) & 0xFFU);
}

/// The pattern of a `bytes` message from offset 0, kPatternBlock bytes long.
std::array<std::uint8_t, kPatternBlock> pattern_block(std::size_t bytes) {
  std::array<std::uint8_t, kPatternBlock> block{};
  for (std::size_t k = 0; k < kPatternBlock; ++k) block[k] = pattern_byte(bytes, k);
  return block;
}

/// True when `message` holds the pattern of its size (`block`, from pattern_block) with `trip`
/// in its first 4 bytes. memcmp against one block runs at memory speed, not a byte a cycle, so
/// checking every message of 4 MiB costs less than sending it.
bool matches_pattern(std::span<const std::uint8_t> message, std::uint32_t trip,
                     const std::array<std::uint8_t, kPatternBlock>& block) {
  const std::size_t bytes = message.size();
  std::size_t k = 0;
  if (bytes >= sizeof trip) {
    std::uint32_t got = 0;
    std::memcpy(&got, message.data(), sizeof got);
    if (got != trip) return false;
    k = sizeof trip;
  }
  for (std::size_t base = 0; base < bytes; base += kPatternBlock) {
    const std::size_t end = std::min(bytes, base + kPatternBlock);
    if (std::memcmp(message.data() + base + k, block.data() + k, end - base - k) != 0) return false;
    k = 0;
  }
  return true;
}

/// Page-aligned message buffer (as OSU allocates its own): one allocation for every size, so
/// no size pays for fresh pages or lands differently on them.
struct PageDelete {
  void operator()(std::uint8_t* p) const noexcept { ::operator delete[](p, std::align_val_t{kPageBytes}); }
};
using PageBuffer = std::unique_ptr<std::uint8_t[], PageDelete>;

/// `bytes` (at least 1) of page-aligned memory, every page written once. Throws std::bad_alloc.
PageBuffer touched_buffer(std::size_t bytes, std::uint8_t value) {
  const std::size_t n = std::max<std::size_t>(bytes, 1);
  PageBuffer p(static_cast<std::uint8_t*>(::operator new[](n, std::align_val_t{kPageBytes})));
  std::memset(p.get(), value, n);
  return p;
}

/// The two buffers of one rank, allocated once at the largest size the probe sends.
struct MessageBuffers {
  std::size_t capacity = 0;
  PageBuffer send, recv;
};

/// Writes the trip number into the first 4 bytes of a message that has them.
void stamp(std::span<std::uint8_t> message, std::uint32_t trip) {
  if (message.size() >= sizeof trip) std::memcpy(message.data(), &trip, sizeof trip);
}

/// Checks a received message against its size's pattern `block`, then spoils its first byte so
/// that a message that never arrives next trip cannot pass as one that did.
bool check_and_spoil(std::span<std::uint8_t> message, std::uint32_t trip,
                     const std::array<std::uint8_t, kPatternBlock>& block) {
  const bool good = matches_pattern(message, trip, block);
  if (!message.empty()) message[0] = static_cast<std::uint8_t>(~message[0]);
  return good;
}

/// Throws InvalidArgument when `bytes` does not fit the buffers.
void require_capacity(std::size_t bytes, const MessageBuffers& buf) {
  if (bytes > buf.capacity) throw InvalidArgument("message of " + std::to_string(bytes) + " B exceeds the " +
                                                  std::to_string(buf.capacity) + " B buffers");
}

/// One pair's timed ping-pong of `bytes`, as osu_latency runs it: `skip` warm-up round trips,
/// then `reps` round trips between one clock read before and one after, with nothing else in
/// the loop (no per-trip clock, no checks: at 0 B a round trip is ~0.3 us, and anything added
/// to it is measured). Both sides send from their own buffer, which the peer only reads.
/// Returns the one-way time on the ping rank (`a`), 0 elsewhere. Throws MpiError or
/// InvalidArgument (message larger than the buffers).
double timed_ping_pong(MPI_Comm comm, int me, int a, int b, std::size_t bytes, int skip, int reps,
                       MessageBuffers& buf) {
  if (me != a && me != b) return 0;
  require_capacity(bytes, buf);
  const int count = static_cast<int>(bytes);
  std::uint8_t* send = buf.send.get();
  std::uint8_t* recv = buf.recv.get();
  if (me == a) {
    for (int trip = 0; trip < skip; ++trip) {
      HYMPI_MPI(MPI_Send(send, count, MPI_BYTE, b, kTag, comm));
      HYMPI_MPI(MPI_Recv(recv, count, MPI_BYTE, b, kTag, comm, MPI_STATUS_IGNORE));
    }
    const double start = MPI_Wtime();
    for (int trip = 0; trip < reps; ++trip) {
      HYMPI_MPI(MPI_Send(send, count, MPI_BYTE, b, kTag, comm));
      HYMPI_MPI(MPI_Recv(recv, count, MPI_BYTE, b, kTag, comm, MPI_STATUS_IGNORE));
    }
    return (MPI_Wtime() - start) / (2.0 * reps);
  }
  for (int trip = 0; trip < skip + reps; ++trip) {
    HYMPI_MPI(MPI_Recv(recv, count, MPI_BYTE, a, kTag, comm, MPI_STATUS_IGNORE));
    HYMPI_MPI(MPI_Send(send, count, MPI_BYTE, a, kTag, comm));
  }
  return 0;
}

/// One pair's untimed validation pass of `bytes` (OSU's -c, kept out of the timing):
/// kCheckedTrips round trips, each message carrying the size's pattern and its trip number;
/// both sides check every message they receive and spoil it, so a corrupted, stale or missing
/// message fails. Returns false on any bad message, true on the other ranks. Throws MpiError or
/// InvalidArgument (message larger than the buffers).
bool checked_ping_pong(MPI_Comm comm, int me, int a, int b, std::size_t bytes, MessageBuffers& buf) {
  if (me != a && me != b) return true;
  require_capacity(bytes, buf);
  const int count = static_cast<int>(bytes);
  const std::span<std::uint8_t> send(buf.send.get(), bytes), recv(buf.recv.get(), bytes);
  const auto block = pattern_block(bytes);
  fill_pingpong_message(send, 0);
  bool ok = true;
  const int peer = me == a ? b : a;
  for (std::uint32_t trip = 1; trip <= kCheckedTrips; ++trip) {
    stamp(send, trip);
    if (me == a) {
      HYMPI_MPI(MPI_Send(send.data(), count, MPI_BYTE, peer, kTag, comm));
      HYMPI_MPI(MPI_Recv(recv.data(), count, MPI_BYTE, peer, kTag, comm, MPI_STATUS_IGNORE));
    } else {
      HYMPI_MPI(MPI_Recv(recv.data(), count, MPI_BYTE, peer, kTag, comm, MPI_STATUS_IGNORE));
      HYMPI_MPI(MPI_Send(send.data(), count, MPI_BYTE, peer, kTag, comm));
    }
    if (!check_and_spoil(recv, trip, block)) ok = false;
  }
  return ok;
}

/// Timed ping-pong, then its untimed validation pass; `ok` becomes false on a bad message.
/// Returns what timed_ping_pong returns; throws what it throws.
double ping_pong(MPI_Comm comm, int me, int a, int b, std::size_t bytes, int skip, int reps, MessageBuffers& buf,
                 bool& ok) {
  const double t = timed_ping_pong(comm, me, a, b, bytes, skip, reps, buf);
  if (!checked_ping_pong(comm, me, a, b, bytes, buf)) ok = false;
  return t;
}

/// Every rank's value, on every rank.
std::vector<double> allgather(MPI_Comm comm, double mine, int size) {
  std::vector<double> all(static_cast<std::size_t>(size));
  HYMPI_MPI(MPI_Allgather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm));
  return all;
}

bool is_cache(hwloc_obj_type_t type) { return hwloc_obj_type_is_cache(type) != 0; }
}  // namespace

void fill_pingpong_message(std::span<std::uint8_t> message, std::uint32_t trip) {
  const std::size_t bytes = message.size();
  const auto block = pattern_block(bytes);
  for (std::size_t k = 0; k < bytes; k += kPatternBlock)
    std::memcpy(message.data() + k, block.data(), std::min(kPatternBlock, bytes - k));
  stamp(message, trip);
}

bool check_pingpong_message(std::span<const std::uint8_t> message, std::uint32_t trip) {
  return matches_pattern(message, trip, pattern_block(message.size()));
}

bool validate_pingpong_pair(MPI_Comm comm, int a, int b, std::size_t bytes) {
  int me = 0;
  HYMPI_MPI(MPI_Comm_rank(comm, &me));
  if (me != a && me != b) return true;
  MessageBuffers buf;
  buf.capacity = bytes;
  buf.send = touched_buffer(bytes, 0);
  buf.recv = touched_buffer(bytes, 0xFF);
  return checked_ping_pong(comm, me, a, b, bytes, buf);
}

CommLevel classify_sets(const Topology& topology, const Bitmap& a, const Bitmap& b) {
  if (a.weight() <= 0 || b.weight() <= 0) throw TopologyError("cannot classify an empty or infinite cpuset");
  Bitmap both = a;
  both.add(b);
  hwloc_topology_t topo = topology.get();
  hwloc_obj_t obj = hwloc_get_obj_covering_cpuset(topo, both.get());
  if (obj == nullptr) throw TopologyError("cpuset " + both.to_list() + " is not part of this topology");
  if (obj->type == HWLOC_OBJ_PU) return CommLevel::pu;
  if (obj->type == HWLOC_OBJ_CORE) return CommLevel::core;
  if (is_cache(obj->type)) return obj->attr->cache.depth <= 2 ? CommLevel::l2 : CommLevel::l3;
  // Above the caches: NUMA domains are memory children in hwloc 2, so ask the nodeset.
  const bool in_package = obj->type == HWLOC_OBJ_PACKAGE ||
                          hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj) != nullptr ||
                          hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE) <= 1;
  if (!in_package) return CommLevel::node;
  return hwloc_bitmap_weight(obj->nodeset) == 1 ? CommLevel::numa : CommLevel::package;
}

Bitmap current_binding(const Topology& topology) {
  Bitmap set;
  if (hwloc_get_cpubind(topology.get(), set.get(), HWLOC_CPUBIND_THREAD) < 0 || set.weight() <= 0)
    return topology.machine_set();
  return set;
}

std::vector<CommLevel> pair_levels(MPI_Comm comm, const Topology& topology, int node_id, const Bitmap& binding) {
  int rank = 0, size = 1;
  HYMPI_MPI(MPI_Comm_rank(comm, &rank));
  HYMPI_MPI(MPI_Comm_size(comm, &size));
  const auto n = static_cast<std::size_t>(size);
  std::vector<int> nodes(n);
  HYMPI_MPI(MPI_Allgather(&node_id, 1, MPI_INT, nodes.data(), 1, MPI_INT, comm));
  std::vector<char> my_name(kNameWidth, '\0'), names(n * kNameWidth);
  int length = 0;
  HYMPI_MPI(MPI_Get_processor_name(my_name.data(), &length));
  HYMPI_MPI(MPI_Allgather(my_name.data(), kNameWidth, MPI_CHAR, names.data(), kNameWidth, MPI_CHAR, comm));
  std::vector<char> my_set(kSetWidth, '\0'), sets(n * kSetWidth);
  const std::string list = binding.to_list();
  if (list.size() >= kSetWidth) throw TopologyError("binding " + list + " is too long to exchange");
  std::copy(list.begin(), list.end(), my_set.begin());
  HYMPI_MPI(MPI_Allgather(my_set.data(), kSetWidth, MPI_CHAR, sets.data(), kSetWidth, MPI_CHAR, comm));

  // Each rank classifies its own row with its own host's topology, then the rows are shared.
  std::vector<int> row(n);
  for (std::size_t j = 0; j < n; ++j) {
    const bool same_host = std::strncmp(&names[j * kNameWidth], my_name.data(), kNameWidth) == 0;
    if (nodes[j] != node_id || !same_host) {
      row[j] = static_cast<int>(CommLevel::network);
      continue;
    }
    Bitmap other;
    if (hwloc_bitmap_list_sscanf(other.get(), &sets[j * kSetWidth]) < 0)
      throw TopologyError(std::string("cannot parse cpuset '") + &sets[j * kSetWidth] + "'");
    row[j] = static_cast<int>(classify_sets(topology, binding, other));
  }
  std::vector<int> all(n * n);
  HYMPI_MPI(MPI_Allgather(row.data(), size, MPI_INT, all.data(), size, MPI_INT, comm));
  std::vector<CommLevel> out(all.size());
  std::transform(all.begin(), all.end(), out.begin(), [](int v) { return static_cast<CommLevel>(v); });
  // Rows come from different hosts' topologies; the matrix must still be symmetric.
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < i; ++j) out[i * n + j] = out[j * n + i] = std::max(out[i * n + j], out[j * n + i]);
  (void)rank;
  return out;
}

std::vector<std::pair<int, int>> disjoint_pairs(std::span<const CommLevel> levels, int size, CommLevel level) {
  if (levels.size() != static_cast<std::size_t>(size) * static_cast<std::size_t>(size))
    throw InvalidArgument("level matrix has " + std::to_string(levels.size()) + " entries, expected " +
                          std::to_string(size) + "^2");
  std::vector<bool> used(static_cast<std::size_t>(size), false);
  std::vector<std::pair<int, int>> out;
  for (int a = 0; a < size; ++a) {
    if (used[static_cast<std::size_t>(a)]) continue;
    for (int b = a + 1; b < size; ++b) {
      if (used[static_cast<std::size_t>(b)] || levels[static_cast<std::size_t>(a) * size + b] != level) continue;
      out.emplace_back(a, b);
      used[static_cast<std::size_t>(a)] = used[static_cast<std::size_t>(b)] = true;
      break;
    }
  }
  return out;
}

void PingPongOptions::validate() const {
  if (iterations < 1) throw InvalidArgument("--iterations must be >= 1, got " + std::to_string(iterations));
  if (large_iterations < 0)
    throw InvalidArgument("--large-iterations must be >= 1, got " + std::to_string(large_iterations));
  if (max_bytes < 1 || max_bytes > (std::size_t{1} << 30))
    throw InvalidArgument("--max-bytes must be 1 .. 1 GiB, got " + std::to_string(max_bytes));
  if (multi_bytes < 1 || multi_bytes > (std::size_t{1} << 30))
    throw InvalidArgument("--multi-bytes must be 1 .. 1 GiB, got " + std::to_string(multi_bytes));
}

nlohmann::json PingPongOptions::to_json() const {
  return {{"max_bytes", max_bytes},
          {"iterations", iterations},
          {"large_iterations", round_trips(kLargeBytes + 1, iterations, large_iterations)},
          {"warmup_trips", {kSkipSmall, kSkipLarge}},
          {"multi", multi},
          {"multi_bytes", multi_bytes}};
}

std::vector<std::size_t> message_sizes(std::size_t max_bytes) {
  std::vector<std::size_t> out{0};
  for (std::size_t s = 1; s < max_bytes; s *= 2) out.push_back(s);
  if (max_bytes > 0) out.push_back(max_bytes);
  return out;
}

int round_trips(std::size_t bytes, int iterations, int large_iterations) {
  if (bytes <= kLargeBytes) return iterations;
  return large_iterations > 0 ? large_iterations : std::max(kMinReps, iterations / 10);
}

int warmup_trips(std::size_t bytes) { return bytes <= kLargeBytes ? kSkipSmall : kSkipLarge; }

double PingPongSample::bandwidth_mbs() const {
  return half_round_trip_s > 0 ? static_cast<double>(bytes) / half_round_trip_s / 1e6 : 0;
}

AlphaBeta fit_alpha_beta(std::span<const PingPongSample> samples) {
  // Weighted least squares of t = alpha + s * g with weights 1/t^2 (relative error), g = 1/beta.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::set<std::size_t> distinct;
  for (const auto& p : samples) {
    if (p.half_round_trip_s <= 0) continue;
    const double w = 1.0 / (p.half_round_trip_s * p.half_round_trip_s);
    const double x = static_cast<double>(p.bytes), y = p.half_round_trip_s;
    sw += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
    distinct.insert(p.bytes);
  }
  if (distinct.size() < 2) throw InvalidArgument("fitting alpha/beta needs at least two message sizes");
  const double det = sw * sxx - sx * sx;
  const double g = (sw * sxy - sx * sy) / det;
  AlphaBeta out;
  out.alpha_s = (sy - g * sx) / sw;
  out.beta_bytes_per_s = g > 0 ? 1.0 / g : 0;
  return out;
}

nlohmann::json PingPongResult::to_json() const {
  nlohmann::json levels_json = nlohmann::json::object();
  for (const auto& l : levels) {
    nlohmann::json bytes = nlohmann::json::array(), trips = nlohmann::json::array(), lat = nlohmann::json::array(),
                   bw = nlohmann::json::array();
    for (const auto& s : l.samples) {
      bytes.push_back(s.bytes);
      trips.push_back(s.round_trips);
      lat.push_back(s.half_round_trip_s * 1e6);
      bw.push_back(s.bandwidth_mbs());
    }
    levels_json[to_string(l.level)] = {{"pair", {l.rank_a, l.rank_b}},
                                       {"pairs_at_level", l.pairs_at_level},
                                       {"bytes", bytes},
                                       {"round_trips", trips},
                                       {"latency_us", lat},
                                       {"bandwidth_mbs", bw},
                                       {"alpha_us", l.fit.alpha_s * 1e6},
                                       {"beta_mbs", l.fit.beta_bytes_per_s / 1e6}};
  }
  nlohmann::json multi_json = nlohmann::json::array();
  for (const auto& m : multi)
    multi_json.push_back({{"level", to_string(m.level)},
                          {"pairs", m.pairs},
                          {"overhead_us", m.overhead_us},
                          {"per_pair_min_mbs", m.per_pair_min_mbs},
                          {"per_pair_max_mbs", m.per_pair_max_mbs},
                          {"aggregate_mbs", m.aggregate_mbs}});
  return {{"levels", levels_json}, {"multi", multi_json}, {"verified", verified}, {"seconds", seconds}};
}

PingPongResult run_pingpong(MPI_Comm comm, std::span<const CommLevel> levels, const PingPongOptions& options) {
  options.validate();
  int me = 0, size = 1;
  HYMPI_MPI(MPI_Comm_rank(comm, &me));
  HYMPI_MPI(MPI_Comm_size(comm, &size));
  const auto n = static_cast<std::size_t>(size);
  if (levels.size() != n * n)
    throw InvalidArgument("level matrix has " + std::to_string(levels.size()) + " entries for " +
                          std::to_string(size) + " ranks");
  PingPongResult result;
  bool ok = true;
  const double t0 = MPI_Wtime();
  const auto sizes = message_sizes(options.max_bytes);
  MessageBuffers buf;
  buf.capacity = std::max(options.max_bytes, options.multi ? options.multi_bytes : 0);
  buf.send = touched_buffer(buf.capacity, 0);
  buf.recv = touched_buffer(buf.capacity, 0xFF);

  for (CommLevel level : kCommLevels) {
    LevelResult lr;
    lr.level = level;
    bool found = false;
    for (int a = 0; a < size; ++a)
      for (int b = a + 1; b < size; ++b)
        if (levels[static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b)] == level) {
          if (!found) lr.rank_a = a, lr.rank_b = b;
          found = true;
          ++lr.pairs_at_level;
        }
    if (!found) continue;
    for (std::size_t bytes : sizes) {
      const int reps = round_trips(bytes, options.iterations, options.large_iterations);
      // The barrier keeps every other rank quiet while the pair measures.
      HYMPI_MPI(MPI_Barrier(comm));
      const double t = ping_pong(comm, me, lr.rank_a, lr.rank_b, bytes, warmup_trips(bytes), reps, buf, ok);
      double shared = t;
      HYMPI_MPI(MPI_Bcast(&shared, 1, MPI_DOUBLE, lr.rank_a, comm));
      lr.samples.push_back({bytes, reps, shared});
    }
    lr.fit = lr.samples.size() >= 2 ? fit_alpha_beta(lr.samples) : AlphaBeta{};
    result.levels.push_back(std::move(lr));
  }

  if (options.multi) {
    for (CommLevel level : kCommLevels) {
      const auto pairs = disjoint_pairs(levels, size, level);
      if (pairs.size() < 2) continue;  // one pair is already the single-pair table
      for (std::size_t k = 1; k <= pairs.size(); k *= 2) {
        MultiPairResult mr;
        mr.level = level;
        mr.pairs = static_cast<int>(k);
        int a = -1, b = -1;
        for (std::size_t p = 0; p < k; ++p)
          if (pairs[p].first == me || pairs[p].second == me) a = pairs[p].first, b = pairs[p].second;
        HYMPI_MPI(MPI_Barrier(comm));
        const double lat = a >= 0 ? ping_pong(comm, me, a, b, 0, warmup_trips(0), options.iterations, buf, ok) : 0;
        HYMPI_MPI(MPI_Barrier(comm));
        const std::size_t mb = options.multi_bytes;
        const int reps = round_trips(mb, options.iterations, options.large_iterations);
        const double t = a >= 0 ? ping_pong(comm, me, a, b, mb, warmup_trips(mb), reps, buf, ok) : 0;
        const auto lats = allgather(comm, me == a ? lat : -1, size);
        const auto times = allgather(comm, me == a ? t : -1, size);
        double lat_sum = 0;
        mr.per_pair_min_mbs = -1;
        for (int r = 0; r < size; ++r) {
          if (times[static_cast<std::size_t>(r)] < 0) continue;
          lat_sum += lats[static_cast<std::size_t>(r)];
          const double mbs = static_cast<double>(options.multi_bytes) / times[static_cast<std::size_t>(r)] / 1e6;
          mr.aggregate_mbs += mbs;
          mr.per_pair_max_mbs = std::max(mr.per_pair_max_mbs, mbs);
          mr.per_pair_min_mbs = mr.per_pair_min_mbs < 0 ? mbs : std::min(mr.per_pair_min_mbs, mbs);
        }
        mr.overhead_us = lat_sum / static_cast<double>(k) * 1e6;
        result.multi.push_back(mr);
      }
    }
  }
  int good = ok ? 1 : 0;
  HYMPI_MPI(MPI_Allreduce(MPI_IN_PLACE, &good, 1, MPI_INT, MPI_LAND, comm));
  result.verified = good == 1;
  result.seconds = MPI_Wtime() - t0;
  return result;
}

}  // namespace hympi

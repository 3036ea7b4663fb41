// NPB IS's rank(): local buckets, the bucket split over ranks, the all-to-all of keys, counting;
// and its partial and full verification.
#include <algorithm>
#include <numeric>

#include "hympi/core/comm.hpp"
#include "hympi/core/error.hpp"
#include "hympi/is/is.hpp"

namespace hympi::is {

nlohmann::json FullVerification::to_json() const {
  return nlohmann::json{{"passed", passed}, {"out_of_order", out_of_order}, {"keys", keys}, {"checksum", checksum}};
}

FullVerification verify_sorted(MPI_Comm comm, std::span<const Key> sorted, std::int64_t expected_keys,
                               std::uint64_t expected_checksum) {
  const int size = Comm(comm, false).size();
  std::int64_t local_out = 0;
  for (std::size_t i = 1; i < sorted.size(); ++i) local_out += sorted[i - 1] > sorted[i] ? 1 : 0;
  // Every rank's (count, first, last), so boundaries are checked past ranks that hold no key.
  const std::array<std::int64_t, 3> mine{static_cast<std::int64_t>(sorted.size()), sorted.empty() ? 0 : sorted.front(),
                                         sorted.empty() ? 0 : sorted.back()};
  std::vector<std::int64_t> all(3 * static_cast<std::size_t>(size));
  HYMPI_MPI(MPI_Allgather(mine.data(), 3, MPI_INT64_T, all.data(), 3, MPI_INT64_T, comm));
  FullVerification v;
  bool seen = false;
  std::int64_t last = 0;
  for (int r = 0; r < size; ++r) {
    const std::int64_t* e = &all[3 * static_cast<std::size_t>(r)];
    if (e[0] == 0) continue;
    if (seen && last > e[1]) ++v.out_of_order;
    seen = true;
    last = e[2];
    v.keys += e[0];
  }
  std::int64_t out = 0;
  HYMPI_MPI(MPI_Allreduce(&local_out, &out, 1, MPI_INT64_T, MPI_SUM, comm));
  v.out_of_order += out;
  std::uint64_t local_sum = 0;
  for (Key k : sorted) local_sum += static_cast<std::uint64_t>(k);
  HYMPI_MPI(MPI_Allreduce(&local_sum, &v.checksum, 1, MPI_UINT64_T, MPI_SUM, comm));
  v.passed = v.out_of_order == 0 && v.keys == expected_keys && v.checksum == expected_checksum;
  return v;
}

bool IsResult::verified() const {
  return !partial_passed.empty() &&
         std::ranges::all_of(partial_passed, [](int n) { return n == kTestKeys; }) &&
         full.passed;
}

nlohmann::json IsResult::to_json() const {
  return nlohmann::json{{"iterations", iterations},     {"seconds", seconds},
                        {"comm_seconds", comm_seconds}, {"mops", mops},
                        {"partial_passed", partial_passed}, {"full", full.to_json()},
                        {"max_keys_per_rank", max_keys_per_rank}};
}

/// What one iteration left: the test keys found right and the time in communication.
struct IsBenchmark::Iteration {
  int passed = 0;
  double comm_s = 0.0;
  Key min_key = 0;  ///< smallest key this rank may hold after the exchange (counts_ starts there)
};

IsBenchmark::IsBenchmark(const IsClass& c, MPI_Comm comm)
    : class_(c), comm_(comm), rank_(Comm(comm, false).rank()), size_(Comm(comm, false).size()) {
  begin_ = block_begin(c.total_keys(), rank_, size_);
  generated_ = generate_keys(c, begin_, block_begin(c.total_keys(), rank_ + 1, size_));
}

IsBenchmark::Iteration IsBenchmark::rank_keys(int iteration) {
  Iteration out;
  const IsClass& c = class_;
  const int nb = c.num_buckets();
  const int shift = c.max_key_log2 - c.num_buckets_log2;
  const auto n = static_cast<std::int64_t>(keys_.size());
  const auto owned = [&](std::int64_t g) { return g >= begin_ && g < begin_ + n; };

  // NPB changes two keys every iteration, so the test keys' ranks move by a known amount.
  if (owned(iteration)) keys_[static_cast<std::size_t>(iteration - begin_)] = iteration;
  if (owned(iteration + c.iterations)) {
    keys_[static_cast<std::size_t>(iteration + c.iterations - begin_)] = c.max_key() - iteration;
  }

  // Bucket sizes; the five slots after them carry the test keys' values to every rank in the
  // same reduction (only the owner's slot is non-zero).
  const std::size_t nt = c.test_keys.size();
  std::vector<std::int32_t> bucket_size(nb + nt, 0), totals(nb + nt, 0);
  for (std::size_t i = 0; i < nt; ++i) {
    const std::int64_t g = c.test_keys[i].index;
    if (owned(g)) bucket_size[nb + i] = keys_[static_cast<std::size_t>(g - begin_)];
  }
  for (Key k : keys_) ++bucket_size[static_cast<std::size_t>(k >> shift)];
  std::vector<std::int32_t> bucket_ptr(nb, 0);
  std::exclusive_scan(bucket_size.begin(), bucket_size.begin() + nb, bucket_ptr.begin(), 0);
  bucketed_.resize(keys_.size());
  for (Key k : keys_) bucketed_[static_cast<std::size_t>(bucket_ptr[static_cast<std::size_t>(k >> shift)]++)] = k;

  double t0 = MPI_Wtime();
  HYMPI_MPI(MPI_Allreduce(bucket_size.data(), totals.data(), static_cast<int>(nb + nt), MPI_INT32_T, MPI_SUM, comm_));
  out.comm_s += MPI_Wtime() - t0;

  // NPB's split: rank j takes buckets until the running total reaches (j + 1) / size of all keys;
  // rank j's buckets are [bound[j], bound[j + 1]); ranks left over get none.
  std::vector<int> send_count(size_, 0), send_displ(size_, 0), recv_count(size_, 0), recv_displ(size_, 0);
  std::vector<int> bound(static_cast<std::size_t>(size_) + 1, nb);
  bound[0] = 0;
  const std::int64_t total = c.total_keys();
  std::int64_t running = 0;
  int local_running = 0;
  for (int b = 0, j = 0; b < nb && j < size_; ++b) {
    running += totals[static_cast<std::size_t>(b)];
    local_running += bucket_size[static_cast<std::size_t>(b)];
    if (running >= (j + 1) * total / size_) {
      send_count[static_cast<std::size_t>(j)] = local_running;
      local_running = 0;
      bound[static_cast<std::size_t>(++j)] = b + 1;
    }
  }
  std::exclusive_scan(send_count.begin(), send_count.end(), send_displ.begin(), 0);

  t0 = MPI_Wtime();
  HYMPI_MPI(MPI_Alltoall(send_count.data(), 1, MPI_INT, recv_count.data(), 1, MPI_INT, comm_));
  std::exclusive_scan(recv_count.begin(), recv_count.end(), recv_displ.begin(), 0);
  received_.resize(static_cast<std::size_t>(recv_displ.back() + recv_count.back()));
  HYMPI_MPI(MPI_Alltoallv(bucketed_.data(), send_count.data(), send_displ.data(), MPI_INT32_T, received_.data(),
                          recv_count.data(), recv_displ.data(), MPI_INT32_T, comm_));
  out.comm_s += MPI_Wtime() - t0;

  const int first = bound[static_cast<std::size_t>(rank_)], last = bound[static_cast<std::size_t>(rank_) + 1];
  out.min_key = static_cast<Key>(first << shift);
  const Key end_key = static_cast<Key>(last << shift);
  const std::int64_t lesser = std::accumulate(totals.begin(), totals.begin() + first, std::int64_t{0});
  const std::int64_t mine = std::accumulate(totals.begin() + first, totals.begin() + last, std::int64_t{0});
  if (mine != static_cast<std::int64_t>(received_.size())) {
    throw Error("is: rank " + std::to_string(rank_) + " received " + std::to_string(received_.size()) +
                " keys, its buckets hold " + std::to_string(mine));
  }

  // Each key's population, then running sums: counts_[k - min_key] = keys <= k on this rank.
  counts_.assign(static_cast<std::size_t>(end_key - out.min_key), 0);
  for (Key k : received_) ++counts_[static_cast<std::size_t>(k - out.min_key)];
  std::inclusive_scan(counts_.begin(), counts_.end(), counts_.begin());

  // Partial verification where the test key's value lies: its rank is the number of smaller keys.
  for (std::size_t i = 0; i < nt; ++i) {
    const Key k = totals[nb + i];
    if (k < out.min_key || k >= end_key) continue;
    const std::int64_t below = k > out.min_key ? counts_[static_cast<std::size_t>(k - 1 - out.min_key)] : 0;
    if (lesser + below == c.test_keys[i].expected_rank(iteration)) ++out.passed;
  }
  return out;
}

IsResult IsBenchmark::run() {
  const IsClass& c = class_;
  keys_ = generated_;
  (void)rank_keys(1);  // NPB's untimed iteration: touches every page and table first

  IsResult r;
  r.iterations = c.iterations;
  r.partial_passed.assign(static_cast<std::size_t>(c.iterations), 0);
  std::vector<int> local_passed(r.partial_passed.size(), 0);
  Key min_key = 0;
  const double t0 = MPI_Wtime();
  for (int it = 1; it <= c.iterations; ++it) {
    const Iteration x = rank_keys(it);
    local_passed[static_cast<std::size_t>(it - 1)] = x.passed;
    r.local_comm_seconds += x.comm_s;
    min_key = x.min_key;
  }
  r.local_seconds = MPI_Wtime() - t0;

  std::array<double, 2> local_times{r.local_seconds, r.local_comm_seconds}, max_times{};
  HYMPI_MPI(MPI_Allreduce(local_times.data(), max_times.data(), 2, MPI_DOUBLE, MPI_MAX, comm_));
  r.seconds = max_times[0];
  r.comm_seconds = max_times[1];
  r.mops = static_cast<double>(c.iterations) * static_cast<double>(c.total_keys()) / r.seconds / 1e6;
  HYMPI_MPI(MPI_Allreduce(local_passed.data(), r.partial_passed.data(), c.iterations, MPI_INT, MPI_SUM, comm_));

  // Full verification (untimed, as in NPB): place every key at its rank, then check the order;
  // the count and sum must be those of the keys as the last iteration left them.
  bucketed_.resize(received_.size());
  for (Key k : received_) bucketed_[static_cast<std::size_t>(--counts_[static_cast<std::size_t>(k - min_key)])] = k;
  std::uint64_t local_sum = 0, checksum = 0;
  for (Key k : keys_) local_sum += static_cast<std::uint64_t>(k);
  HYMPI_MPI(MPI_Allreduce(&local_sum, &checksum, 1, MPI_UINT64_T, MPI_SUM, comm_));
  r.full = verify_sorted(comm_, bucketed_, c.total_keys(), checksum);
  const auto held = static_cast<std::int64_t>(received_.size());
  HYMPI_MPI(MPI_Allreduce(&held, &r.max_keys_per_rank, 1, MPI_INT64_T, MPI_MAX, comm_));
  return r;
}

IsSeries run_is_series(IsBenchmark& benchmark, double min_time_s) {
  IsSeries s{repeat_runs(min_time_s, [&benchmark] { return benchmark.run(); },
                         [](const IsResult& r) { return r.verified(); }), {}};
  double comm = 0.0, local = 0.0, local_comm = 0.0;
  for (const IsResult& r : s.runs) {
    comm += r.comm_seconds;
    local += r.local_seconds;
    local_comm += r.local_comm_seconds;
  }
  s.total = s.runs.back();
  const double ops = s.total.mops * s.total.seconds * static_cast<double>(s.runs.size());
  s.total.seconds = s.seconds;
  s.total.comm_seconds = comm;
  s.total.local_seconds = local;
  s.total.local_comm_seconds = local_comm;
  s.total.mops = ops / s.seconds;
  return s;
}

}  // namespace hympi::is

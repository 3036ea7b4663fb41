#pragma once
// NPB IS (integer sort) as NPB3.4-MPI runs it: keys generated from NPB's global random sequence,
// bucketed locally, redistributed over ranks with one all-to-all per iteration and ranked by
// counting; verified as NPB verifies it (partial: the ranks of five test keys every iteration;
// full: the last iteration's keys globally sorted). Any number of ranks: each rank generates its
// block of the one global sequence, so the keys do not depend on the rank count.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "hympi/core/metrics.hpp"

namespace hympi::is {

/// A key (classes S to C: keys below 2^23, at most 2^27 of them).
using Key = std::int32_t;

/// How many keys NPB's partial verification checks every iteration.
inline constexpr int kTestKeys = 5;

/// One of the five keys whose rank NPB checks every iteration.
struct TestKey {
  std::int64_t index = 0;  ///< position in the global key sequence
  std::int64_t rank = 0;   ///< NPB's test_rank_array value
  int step = 1;            ///< +1 or -1: NPB shifts the expected rank by step * iteration ...
  int offset = 0;          ///< ... plus this
  /// The rank (number of smaller keys) the key must have in `iteration` (1-based).
  [[nodiscard]] std::int64_t expected_rank(int iteration) const { return rank + step * iteration + offset; }
};

/// One NPB IS class: sizes, iterations and the partial verification's test keys.
struct IsClass {
  std::string name;
  int total_keys_log2 = 16;
  int max_key_log2 = 11;
  int num_buckets_log2 = 9;
  int iterations = 10;
  double seed = 314159265.0;
  double multiplier = 1220703125.0;
  std::array<TestKey, kTestKeys> test_keys{};
  /// Keys over all ranks (2^total_keys_log2).
  [[nodiscard]] std::int64_t total_keys() const { return std::int64_t{1} << total_keys_log2; }
  /// Keys lie in [0, max_key).
  [[nodiscard]] Key max_key() const { return Key{1} << max_key_log2; }
  /// Buckets of the local sort and of the split over ranks.
  [[nodiscard]] int num_buckets() const { return 1 << num_buckets_log2; }
  /// The class as JSON (sizes and iterations).
  [[nodiscard]] nlohmann::json to_json() const;
};

/// DATA_DIR/npb-is/verification.json, DATA_DIR being HYMPI_DATA_DIR or the source tree's data/.
[[nodiscard]] std::string verification_file_path();

/// Class `name` from the parsed data file; throws InvalidArgument for an unknown class (naming the
/// known ones) and Error for a malformed or out-of-range entry.
[[nodiscard]] IsClass parse_is_class(const nlohmann::json& data, const std::string& name);
/// Class `name` from `data_file` (empty: verification_file_path()); throws InvalidArgument naming the file when
/// it cannot be read, is not JSON or its entry is malformed, and for an unknown class (naming the known ones).
[[nodiscard]] IsClass load_is_class(const std::string& name, const std::string& data_file);

/// NPB's randlc generator x <- a x mod 2^46 on integer states below 2^46.
class Randlc {
 public:
  /// The generator at state `seed` with multiplier `a` (odd integers in (0, 2^46)); throws
  /// InvalidArgument for a value that is not one.
  Randlc(double seed, double a);
  /// Advances one step and returns the new state (randlc's value times 2^46).
  std::uint64_t next() {
    x_ = multiply(x_, a_);
    return x_;
  }
  /// Advances `n` steps in O(log n) (NPB's find_my_seed for any n); throws InvalidArgument for n < 0.
  void skip(std::int64_t n);
  /// The current state.
  [[nodiscard]] std::uint64_t state() const { return x_; }

 private:
  static std::uint64_t multiply(std::uint64_t x, std::uint64_t a);
  std::uint64_t x_;
  std::uint64_t a_;
};

/// First key of `rank`'s block of `total` keys over `size` ranks (rank == size: total); NPB's blocks
/// when size is a power of two. Never fails.
[[nodiscard]] std::int64_t block_begin(std::int64_t total, int rank, int size);

/// Keys [begin, end) of the class's global sequence, each NPB's (max_key / 4) * (sum of four
/// consecutive randlc values); throws InvalidArgument for a range outside [0, total_keys].
[[nodiscard]] std::vector<Key> generate_keys(const IsClass& c, std::int64_t begin, std::int64_t end);

/// What the full verification found (identical on every rank).
struct FullVerification {
  std::int64_t out_of_order = 0;  ///< adjacent pairs out of order, across rank boundaries too
  std::int64_t keys = 0;          ///< keys held over all ranks
  std::uint64_t checksum = 0;     ///< sum of all keys
  bool passed = false;            ///< sorted, and count and checksum are the expected ones
  /// As JSON.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Checks that `sorted` (this rank's part, ranks in order) is globally sorted and holds
/// `expected_keys` keys summing to `expected_checksum` (collective over `comm`). Throws MpiError.
[[nodiscard]] FullVerification verify_sorted(MPI_Comm comm, std::span<const Key> sorted, std::int64_t expected_keys,
                                             std::uint64_t expected_checksum);

/// One run of the benchmark (identical on every rank unless marked local).
struct IsResult {
  int iterations = 0;
  double seconds = 0.0;       ///< timed iterations, slowest rank
  double comm_seconds = 0.0;  ///< of which in the bucket-size reduction and the key all-to-all, slowest rank
  double mops = 0.0;          ///< iterations * total keys / seconds / 1e6, as NPB reports
  double local_seconds = 0.0;       ///< this rank's timed iterations
  double local_comm_seconds = 0.0;  ///< this rank's time in communication
  std::vector<int> partial_passed;  ///< per timed iteration: test keys whose rank was right (kTestKeys: all)
  FullVerification full;
  std::int64_t max_keys_per_rank = 0;  ///< most keys a rank ranked in the last iteration (load balance)
  /// Every test key right in every iteration, and the full verification passed.
  [[nodiscard]] bool verified() const;
  /// As JSON (times, partial verification per iteration, full verification).
  [[nodiscard]] nlohmann::json to_json() const;
};

/// The benchmark on one communicator: this rank's generated keys and the buffers of the ranking.
class IsBenchmark {
 public:
  /// Generates this rank's block of the keys of `c` over `comm` (collective: none; throws
  /// InvalidArgument for a class whose sizes the port cannot hold, MpiError).
  IsBenchmark(const IsClass& c, MPI_Comm comm);
  /// Runs like NPB: fresh keys, one untimed iteration, the class's timed iterations, full
  /// verification (collective; throws MpiError, Error when the exchange loses keys).
  [[nodiscard]] IsResult run();

 private:
  struct Iteration;
  Iteration rank_keys(int iteration);
  IsClass class_;
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::int64_t begin_ = 0;
  std::vector<Key> generated_;
  std::vector<Key> keys_;
  std::vector<Key> bucketed_;
  std::vector<Key> received_;
  std::vector<std::int32_t> counts_;
};

/// The benchmark repeated whole until the timed iterations reach a minimum time.
struct IsSeries : RepeatedRuns<IsResult> {
  /// The last repetition with seconds, comm_seconds and mops over all repetitions.
  IsResult total;
};

/// Runs `benchmark` until the runs' seconds reach `min_time_s` (at least once) or one fails
/// verification; every rank decides alike (slowest rank's seconds). Throws what run() throws.
[[nodiscard]] IsSeries run_is_series(IsBenchmark& benchmark, double min_time_s);

/// Prints NPB's IS banner (class, size, iterations, processes).
void print_header(std::ostream& os, const IsClass& c, int nranks);
/// Prints the verification outcome and NPB's IS result block ending in "Verification = ...".
void print_report(std::ostream& os, const IsClass& c, const IsSeries& series, int nranks, double min_time_s);

}  // namespace hympi::is

// The IS classes (read from the data file) and NPB's key sequence.
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "hympi/core/error.hpp"
#include "hympi/is/is.hpp"

#ifndef HYMPI_DATA_DIR
#define HYMPI_DATA_DIR "data"
#endif

namespace hympi::is {

namespace {

constexpr std::uint64_t kMask23 = (std::uint64_t{1} << 23) - 1;
constexpr std::uint64_t kMask46 = (std::uint64_t{1} << 46) - 1;

std::uint64_t generator_value(double v, const char* what) {
  if (!(v > 0.0 && v < 0x1p46 && v == std::floor(v))) {
    throw InvalidArgument(std::string("randlc ") + what + " must be an integer in (0, 2^46), got " +
                          std::to_string(v));
  }
  return static_cast<std::uint64_t>(v);
}

int bounded(const nlohmann::json& c, const char* key, int low, int high, const std::string& where) {
  const nlohmann::json& value = c.at(key);
  // get<int>() would truncate 16.5 to 16 and run a class the file does not describe.
  if (!value.is_number_integer())
    throw Error(where + ": " + key + " = " + printable(value.dump()) + " is not an integer");
  const long long v = value.get<long long>();
  if (v < low || v > high) {
    throw Error(where + ": " + key + " = " + std::to_string(v) + " is outside [" + std::to_string(low) + ", " +
                std::to_string(high) + "]");
  }
  return static_cast<int>(v);
}

}  // namespace

nlohmann::json IsClass::to_json() const {
  return nlohmann::json{{"class", name},
                        {"total_keys", total_keys()},
                        {"max_key", max_key()},
                        {"num_buckets", num_buckets()},
                        {"iterations", iterations}};
}

std::string verification_file_path() {
  const char* env = std::getenv("HYMPI_DATA_DIR");
  const std::string dir = (env != nullptr && *env != '\0') ? env : HYMPI_DATA_DIR;
  return dir + "/npb-is/verification.json";
}

IsClass parse_is_class(const nlohmann::json& data, const std::string& name) {
  if (name.empty() || name[0] == '_' || !data.contains(name)) {
    std::string known;
    for (auto it = data.begin(); it != data.end(); ++it) {
      if (!it.key().empty() && it.key()[0] != '_') known += (known.empty() ? "" : ",") + it.key();
    }
    throw InvalidArgument("unknown class '" + name + "' for is (known: " + known + ")");
  }
  const std::string where = "npb-is class " + name;
  try {
    const auto& meta = data.at("_meta");
    const auto& c = data.at(name);
    IsClass k;
    k.name = name;
    // 2^30 keys at most: counts and MPI counts are 32-bit.
    k.total_keys_log2 = bounded(c, "total_keys_log2", 6, 30, where);
    k.max_key_log2 = bounded(c, "max_key_log2", 2, 30, where);
    k.num_buckets_log2 = bounded(c, "num_buckets_log2", 0, k.max_key_log2, where);
    // NPB alters keys iteration and iteration + iterations, which must exist.
    k.iterations = bounded(meta, "iterations", 1, static_cast<int>(k.total_keys() / 2 - 1), where);
    k.seed = meta.at("seed").get<double>();
    k.multiplier = meta.at("multiplier").get<double>();
    (void)Randlc(k.seed, k.multiplier);
    const auto& tests = c.at("test_keys");
    if (tests.size() != k.test_keys.size()) throw Error(where + ": expected 5 test_keys");
    for (std::size_t i = 0; i < k.test_keys.size(); ++i) {
      TestKey& t = k.test_keys[i];
      t.index = tests.at(i).at("index").get<std::int64_t>();
      t.rank = tests.at(i).at("rank").get<std::int64_t>();
      t.step = tests.at(i).at("step").get<int>();
      t.offset = tests.at(i).at("offset").get<int>();
      if (t.index < 0 || t.index >= k.total_keys() || (t.step != 1 && t.step != -1)) {
        throw Error(where + ": test key " + std::to_string(i) + " has index " + std::to_string(t.index) +
                    " and step " + std::to_string(t.step) + " (need 0 <= index < total keys, step +-1)");
      }
    }
    return k;
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": " + e.what());
  }
}

IsClass load_is_class(const std::string& name, const std::string& data_file) {
  const std::string path = data_file.empty() ? verification_file_path() : data_file;
  // The path comes from --data or HYMPI_DATA_DIR: every way it can be wrong is the user's input (exit 2).
  if (const std::string problem = file_problem(path); !problem.empty())
    throw InvalidArgument("data file " + path + " " + problem);
  std::ifstream in(path);
  if (!in) throw InvalidArgument("cannot open data file " + path);
  nlohmann::json data;
  try {
    data = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument("data file " + path + " is not valid JSON: " + printable(e.what(), 200));
  }
  try {
    return parse_is_class(data, name);
  } catch (const InvalidArgument& e) {
    // An unknown class: the user's --class first, named with the known ones, then the file that lacks it.
    throw InvalidArgument(std::string(e.what()) + " in data file " + path);
  } catch (const std::exception& e) {
    throw InvalidArgument("data file " + path + ": " + e.what());
  }
}

Randlc::Randlc(double seed, double a) : x_(generator_value(seed, "seed")), a_(generator_value(a, "multiplier")) {}

// NPB splits both factors at 2^23 so double arithmetic stays exact; the same split in integers
// gives the same states bit for bit.
std::uint64_t Randlc::multiply(std::uint64_t x, std::uint64_t a) {
  const std::uint64_t a1 = a >> 23, a2 = a & kMask23;
  const std::uint64_t x1 = x >> 23, x2 = x & kMask23;
  const std::uint64_t z = (a1 * x2 + a2 * x1) & kMask23;
  return ((z << 23) + a2 * x2) & kMask46;
}

void Randlc::skip(std::int64_t n) {
  if (n < 0) throw InvalidArgument("randlc skip must be >= 0, got " + std::to_string(n));
  for (std::uint64_t power = a_; n > 0; n >>= 1) {
    if ((n & 1) != 0) x_ = multiply(x_, power);
    power = multiply(power, power);
  }
}

std::int64_t block_begin(std::int64_t total, int rank, int size) { return total * rank / size; }

std::vector<Key> generate_keys(const IsClass& c, std::int64_t begin, std::int64_t end) {
  if (begin < 0 || begin > end || end > c.total_keys()) {
    throw InvalidArgument("key range [" + std::to_string(begin) + ", " + std::to_string(end) +
                          ") is outside the class's " + std::to_string(c.total_keys()) + " keys");
  }
  Randlc r(c.seed, c.multiplier);
  r.skip(4 * begin);
  // NPB: key = (max_key / 4) * (r1 + r2 + r3 + r4) with r = state / 2^46. The sum of four 46-bit
  // fractions is exact in a double, so the key is exactly the integer sum shifted right.
  const int shift = 48 - c.max_key_log2;
  std::vector<Key> keys(static_cast<std::size_t>(end - begin));
  for (Key& k : keys) {
    const std::uint64_t sum = r.next() + r.next() + r.next() + r.next();
    k = static_cast<Key>(sum >> shift);
  }
  return keys;
}

}  // namespace hympi::is

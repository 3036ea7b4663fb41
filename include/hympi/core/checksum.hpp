#pragma once
// Order-independent fingerprints of distributed data: the same value for every decomposition and thread count.
#include <cstdint>
#include <string>

namespace hympi {

/// One element's contribution to an order-independent checksum: sum these (mod 2^64) over every element of a
/// distributed array, in any order, on any number of ranks and threads. Never fails.
constexpr std::uint64_t element_hash(std::uint64_t global_index, std::uint64_t value_bits) noexcept {
  // Multiplying by an odd constant is a bijection, so any change of one value changes the sum; the index
  // enters through xor, which is not linear in it, so values that trade places change it too. One multiply
  // per element: the checksum must cost little next to the data's own traffic.
  return (value_bits ^ (global_index * 0x9E3779B97F4A7C15ULL)) * 0xD1B54A32D192ED03ULL;
}

/// The checksum as 16 lower-case hex digits (leading zeros kept), as results record it. Never fails.
inline std::string checksum_hex(std::uint64_t checksum) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, checksum >>= 4) text[static_cast<std::size_t>(i)] = kDigits[checksum & 15];
  return text;
}

}  // namespace hympi

#include "hympi/grid/exact_sum.hpp"

#include <bit>
#include <cmath>
#include <limits>

#include "hympi/core/error.hpp"

namespace hympi {

namespace {
__extension__ using Uint128 = unsigned __int128;  // GCC/Clang extension: 53-bit mantissa << 31 needs 84 bits
}  // namespace

void ExactSum::add(double x) noexcept {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const auto exponent = static_cast<int>((bits >> 52) & 0x7ff);
  std::uint64_t mantissa = bits & ((std::uint64_t{1} << 52) - 1);
  if (exponent == 0x7ff) {
    ++invalid_;
    return;
  }
  // x = mantissa * 2^(shift - 1074), mantissa < 2^53.
  int shift = 0;
  if (exponent != 0) {
    mantissa |= std::uint64_t{1} << 52;
    shift = exponent - 1;
  }
  const int index = shift / 32;
  const auto wide = static_cast<Uint128>(mantissa) << (shift % 32);
  const auto d0 = static_cast<std::int64_t>(static_cast<std::uint64_t>(wide) & 0xffffffffULL);
  const auto d1 = static_cast<std::int64_t>(static_cast<std::uint64_t>(wide >> 32) & 0xffffffffULL);
  const auto d2 = static_cast<std::int64_t>(static_cast<std::uint64_t>(wide >> 64));
  if ((bits >> 63) != 0) {
    digits_[index] -= d0;
    digits_[index + 1] -= d1;
    digits_[index + 2] -= d2;
  } else {
    digits_[index] += d0;
    digits_[index + 1] += d1;
    digits_[index + 2] += d2;
  }
  // Each digit absorbs < 2^32 per add; propagate carries long before 2^63 could overflow.
  if (++pending_ >= (1U << 30)) normalize();
}

void ExactSum::normalize() noexcept {
  std::int64_t carry = 0;
  for (int i = 0; i < kDigits - 1; ++i) {
    const std::int64_t v = digits_[i] + carry;
    carry = v >> 32;  // arithmetic shift: floor division, keeps digits in [0, 2^32)
    digits_[i] = v - (carry << 32);
  }
  digits_[kDigits - 1] += carry;
  pending_ = 0;
}

void ExactSum::merge(const ExactSum& other) noexcept {
  ExactSum a = other;
  a.normalize();
  normalize();
  for (int i = 0; i < kDigits; ++i) digits_[i] += a.digits_[i];
  invalid_ += a.invalid_;
  pending_ = 1;
}

void ExactSum::allreduce(MPI_Comm comm) {
  normalize();
  std::array<std::int64_t, kDigits + 1> mine{};
  std::copy(digits_.begin(), digits_.end(), mine.begin());
  mine[kDigits] = invalid_;
  std::array<std::int64_t, kDigits + 1> total{};
  HYMPI_MPI(MPI_Allreduce(mine.data(), total.data(), kDigits + 1, MPI_INT64_T, MPI_SUM, comm));
  std::copy(total.begin(), total.begin() + kDigits, digits_.begin());
  invalid_ = total[kDigits];
  pending_ = 1;
}

double ExactSum::value() const {
  if (invalid_ != 0) return std::numeric_limits<double>::quiet_NaN();
  ExactSum n = *this;
  n.normalize();
  // Digits of a negative sum are a borrow chain up to the top digit: convert the magnitude.
  const bool negative = n.digits_[kDigits - 1] < 0;
  if (negative) {
    for (auto& d : n.digits_) d = -d;
    n.normalize();
  }
  // Canonical digits after normalisation make this rounding a function of the exact sum only.
  double out = 0.0;
  for (int i = kDigits - 1; i >= 0; --i)
    if (n.digits_[i] != 0) out += std::ldexp(static_cast<double>(n.digits_[i]), 32 * i - 1074);
  return negative ? -out : out;
}

}  // namespace hympi

#pragma once
// A rank's block of a global 3D grid, with ghost layers, first-touch allocated.
#include <array>
#include <cstddef>
#include <memory>
#include <span>

#include "hympi/box.hpp"
#include "hympi/error.hpp"

namespace hympi {

/// Local block of a global grid plus `ghost` layers on every side; x is the fastest axis.
///
/// Local coordinates run from -ghost to extent+ghost-1; (0,0,0) is the first owned point.
/// Memory is first touched plane by plane with the static schedule the kernels use, so on a
/// NUMA node each thread's planes live in its own domain.
template <class T>
class Grid3D {
 public:
  /// Allocates the block `box` (global indexes) with `ghost` layers; throws InvalidArgument
  /// for an empty box or a negative ghost width.
  Grid3D(const Box3& box, int ghost) : box_(box), ghost_(ghost) {
    if (box.empty()) throw InvalidArgument("grid block is empty");
    if (ghost < 0) throw InvalidArgument("ghost width must be >= 0, got " + std::to_string(ghost));
    const auto n = box.size();
    for (int d = 0; d < 3; ++d) padded_[d] = n[d] + 2L * ghost;
    stride_y_ = padded_[0];
    stride_z_ = padded_[0] * padded_[1];
    size_ = static_cast<std::size_t>(stride_z_ * padded_[2]);
    data_.reset(new T[size_]);  // default-initialised: untouched until the loop below
    T* p = data_.get();
    const long planes = padded_[2];
    const long plane = stride_z_;
#pragma omp parallel for schedule(static)
    for (long k = 0; k < planes; ++k)
      for (long i = 0; i < plane; ++i) p[k * plane + i] = T{};
  }

  /// Owned points per axis.
  [[nodiscard]] std::array<long, 3> extent() const { return box_.size(); }
  /// Points per axis including ghosts.
  [[nodiscard]] const std::array<long, 3>& padded() const { return padded_; }
  [[nodiscard]] const Box3& box() const { return box_; }
  [[nodiscard]] int ghost() const { return ghost_; }
  [[nodiscard]] long stride_y() const { return stride_y_; }
  [[nodiscard]] long stride_z() const { return stride_z_; }
  /// Linear index of local point (i, j, k).
  [[nodiscard]] long index(long i, long j, long k) const {
    return (i + ghost_) + stride_y_ * (j + ghost_) + stride_z_ * (k + ghost_);
  }
  T& operator()(long i, long j, long k) { return data_[static_cast<std::size_t>(index(i, j, k))]; }
  const T& operator()(long i, long j, long k) const { return data_[static_cast<std::size_t>(index(i, j, k))]; }
  /// Global index of local coordinate `local` on axis d.
  [[nodiscard]] long global(int d, long local) const { return box_.low[static_cast<std::size_t>(d)] + local; }
  /// All storage, ghosts included.
  [[nodiscard]] std::span<T> data() { return {data_.get(), size_}; }
  [[nodiscard]] std::span<const T> data() const { return {data_.get(), size_}; }

 private:
  Box3 box_;
  int ghost_;
  std::array<long, 3> padded_{};
  long stride_y_ = 0, stride_z_ = 0;
  std::size_t size_ = 0;
  std::unique_ptr<T[]> data_;
};

}  // namespace hympi

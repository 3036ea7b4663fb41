#include "hympi/blades/solver.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "hympi/core/comm.hpp"
#include "hympi/core/error.hpp"

namespace hympi::blades {

namespace {

// Rows start on 64-byte boundaries in every layout (aligned arrays, pitch a multiple of 16 floats), so the
// compiler's split of a row into vector body and remainder is the same wherever the row lives.
constexpr long kPitchFloats = 16;
// The hardware prefetchers stay within a 4 KiB page.
constexpr long kPageFloats = 4096 / sizeof(float);

/// out[i] = scale * shape[i]: a wall row, or the initial state, of the exact solution.
void exact_row(float scale, std::span<const float> shape, std::span<float> out) noexcept {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = scale * shape[i];
}

}  // namespace

BladeRowSolver::BladeRowSolver(MPI_Comm comm, const Problem& problem, int ranks_per_group)
    : comm_(comm), exact_(problem), line_(problem.grid[0], exact_.cx()) {
  int size = 1, rank = 0;
  HYMPI_MPI(MPI_Comm_size(comm, &size));
  HYMPI_MPI(MPI_Comm_rank(comm, &rank));
  ni_ = problem.grid[0];
  nj_ = problem.grid[1];
  nk_ = problem.grid[2];
  if (ranks_per_group < 1 || size % ranks_per_group != 0)
    throw InvalidArgument("ranks per group " + std::to_string(ranks_per_group) + " does not divide " +
                          std::to_string(size) + " ranks");
  if (ranks_per_group > nj_)
    throw InvalidArgument("ranks per group " + std::to_string(ranks_per_group) + " exceeds J = " +
                          std::to_string(nj_));
  ranks_per_group_ = ranks_per_group;
  n1_ = size / ranks_per_group;
  if (n1_ > problem.blades)
    throw InvalidArgument(std::to_string(n1_) + " groups exceed " + std::to_string(problem.blades) + " blades");
  group_index_ = rank / ranks_per_group;
  rank_in_group_ = rank % ranks_per_group;
  group_ = Comm::split(comm, group_index_, rank_in_group_);
  ring_ = Comm::split(comm, rank_in_group_, group_index_);
  pitch_ = (ni_ + kPitchFloats - 1) / kPitchFloats * kPitchFloats;
  blades_ = block_range(problem.blades, n1_, group_index_);
  rows_ = block_range(nj_, ranks_per_group, rank_in_group_);
  local_rows_ = rows_.size();
  block_elements_ = index(local_rows_ + 2, 0);
  scratch_stride_ = (pitch_ + kPageFloats - 1) / kPageFloats * kPageFloats;
  // One page more than the rows need: the first row starts at the first page boundary.
  scratch_ = make_untouched_array<float>(static_cast<std::size_t>((omp_get_max_threads() + 1) * scratch_stride_));
  for (long b = blades_.begin; b < blades_.end; ++b)
    blocks_.push_back(Block{b, {make_untouched_array<float>(block_elements_), make_untouched_array<float>(block_elements_)}});
  initialise();
  setup_group_halo();
  setup_blade_exchange();
}

void BladeRowSolver::initialise() {
  const float t0 = static_cast<float>(exact_.time_factor(0.0));
  const std::span<const float> x(exact_.shape_x());
  const float* z_all = exact_.shape_z().data();
  // First touch with the update's schedule: each thread's J rows land where that thread runs.
#pragma omp parallel
  {
    for (Block& blk : blocks_) {
      const float* y = exact_.shape_y(blk.blade).data();
      const float* z = z_all + blk.blade * nk_;
#pragma omp for schedule(static) nowait
      for (long j = rows_.begin; j < rows_.end; ++j) {
        const long row = j - rows_.begin + 1;
        for (auto& level : blk.u) {
          std::fill(level.get() + index(row, 0), level.get() + index(row + 1, 0), 0.0F);
          for (long k = 0; k < nk_; ++k)
            exact_row(t0 * (y[j] * z[k]), x, std::span<float>(level.get() + index(row, k + 1), ni_));
        }
      }
    }
  }
  for (Block& blk : blocks_)
    for (auto& level : blk.u) {
      std::fill(level.get(), level.get() + index(1, 0), 0.0F);
      std::fill(level.get() + index(local_rows_ + 1, 0), level.get() + index(local_rows_ + 2, 0), 0.0F);
    }
}

void BladeRowSolver::setup_group_halo() {
  if (ranks_per_group_ == 1) return;
  // Planes 0..K-1 of the first and last owned rows go to the ranks below and above; tag 2 b + 1 travels up, 2 b
  // down. The two time levels are each other's buffers, so each has its own set.
  const auto count = static_cast<std::size_t>(nk_ * pitch_);
  const int below = rank_in_group_ - 1, above = rank_in_group_ + 1;
  std::size_t sends = 0;
  for (std::size_t level = 0; level < 2; ++level)
    for (Block& blk : blocks_) {
      float* u = blk.u[level].get();
      const int up = static_cast<int>(2 * blk.blade + 1), down = static_cast<int>(2 * blk.blade);
      if (below >= 0) {
        halo_[level].add_receive(std::span<float>(u + index(0, 1), count), below, up, group_.get());
        halo_[level].add_send(std::span<const float>(u + index(1, 1), count), below, down, group_.get());
        sends += level == 0 ? 1 : 0;
      }
      if (above < ranks_per_group_) {
        halo_[level].add_receive(std::span<float>(u + index(local_rows_ + 1, 1), count), above, down, group_.get());
        halo_[level].add_send(std::span<const float>(u + index(local_rows_, 1), count), above, up, group_.get());
        sends += level == 0 ? 1 : 0;
      }
    }
  group_halo_bytes_ = sends * count * sizeof(float);
}

void BladeRowSolver::setup_blade_exchange() {
  const long nb = exact_.problem().blades;
  // A message holds one plane's rows of this rank's J range with both ghost rows, as freshly exchanged in the
  // group: the receiver interpolates between rows j and j +- 1, one of which may be the ghost row.
  plane_message_ = static_cast<std::size_t>((local_rows_ + 2) * ni_);
  struct Message {
    std::size_t offset;
    int peer;
    int tag;
  };
  std::vector<Message> receives, sends;
  for (std::size_t lb = 0; lb < blocks_.size(); ++lb) {
    const long b = blocks_[lb].blade;
    for (int side = 0; side < 2; ++side) {
      const long from = side == 0 ? (b + nb - 1) % nb : (b + 1) % nb;
      GhostFill fill{lb, side, Interpolation::for_offset(exact_.neighbour_offset(b, side)), -1, 0};
      const int owner = block_owner(nb, n1_, from);
      if (owner == group_index_) {
        fill.source_block = from - blades_.begin;
      } else {
        fill.received = receives.size() * plane_message_;
        receives.push_back({fill.received, owner, static_cast<int>(2 * b + side)});
      }
      fills_.push_back(fill);
      // This blade's plane that the blade on the other side needs: its side-0 ghost is our last plane.
      const long to = side == 0 ? (b + 1) % nb : (b + nb - 1) % nb;
      const int dest = block_owner(nb, n1_, to);
      if (dest != group_index_) {
        packs_.push_back({lb, side == 0 ? nk_ - 1 : 0, sends.size() * plane_message_});
        sends.push_back({packs_.back().offset, dest, static_cast<int>(2 * to + side)});
      }
    }
  }
  receive_.assign(receives.size() * plane_message_, 0.0F);
  send_.assign(sends.size() * plane_message_, 0.0F);
  for (const Message& m : receives)
    blade_.add_receive(std::span<float>(receive_.data() + m.offset, plane_message_), m.peer, m.tag, ring_.get());
  for (const Message& m : sends)
    blade_.add_send(std::span<const float>(send_.data() + m.offset, plane_message_), m.peer, m.tag, ring_.get());
  blade_exchange_bytes_ = sends.size() * plane_message_ * sizeof(float);
}

void BladeRowSolver::step(PhaseSeconds& seconds) {
  const double t0 = MPI_Wtime();
  if (ranks_per_group_ > 1) {
    halo_[static_cast<std::size_t>(current_)].start();
    halo_[static_cast<std::size_t>(current_)].wait();
  }
  const double t1 = MPI_Wtime();
  exchange_blades();
  const double t2 = MPI_Wtime();
  update();
  const double t3 = MPI_Wtime();
  seconds.group_halo += t1 - t0;
  seconds.blade_exchange += t2 - t1;
  seconds.comp += t3 - t2;
  current_ ^= 1;
  ++steps_;
}

void BladeRowSolver::exchange_blades() {
  const auto level = static_cast<std::size_t>(current_);
  const auto ni = static_cast<std::size_t>(ni_);
  ParallelErrors errors;
#pragma omp parallel
  {
    for (const Pack& p : packs_) {
      const float* u = blocks_[p.block].u[level].get();
#pragma omp for schedule(static) nowait
      for (long row = 0; row < local_rows_ + 2; ++row)
        std::copy_n(u + index(row, p.plane + 1), ni, send_.data() + p.offset + static_cast<std::size_t>(row) * ni);
    }
#pragma omp barrier
#pragma omp master
    errors.capture([&] {
      blade_.start();
      blade_.wait();
    });
#pragma omp barrier
    for (const GhostFill& f : fills_) {
      float* ghost = blocks_[f.block].u[level].get();
      const long ghost_plane = f.side == 0 ? 0 : nk_ + 1;
      // The neighbour's plane next to this ghost plane: its last plane (side 0) or its first (side 1).
      const float* local = f.source_block >= 0 ? blocks_[static_cast<std::size_t>(f.source_block)].u[level].get() : nullptr;
      const long source_plane = f.side == 0 ? nk_ : 1;
      const auto source_row = [&](long row) {
        const float* p = local != nullptr ? local + index(row, source_plane)
                                          : receive_.data() + f.received + static_cast<std::size_t>(row) * ni;
        return std::span<const float>(p, ni);
      };
#pragma omp for schedule(static) nowait
      for (long j = rows_.begin; j < rows_.end; ++j) {
        if (j == 0 || j == nj_ - 1) continue;  // walls: Dirichlet rows need no ghost values
        const long row = j - rows_.begin + 1;
        interpolate_row(f.weights, source_row(row), source_row(row + f.weights.step),
                        std::span<float>(ghost + index(row, ghost_plane), ni));
      }
    }
  }
  errors.rethrow();
}

void BladeRowSolver::update() {
  const double t = static_cast<double>(steps_ + 1) * exact_.dt();
  const float scale = static_cast<float>(exact_.time_factor(t));
  const float source = static_cast<float>(exact_.dt() * exact_.source_factor(t));
  const float cy = exact_.cy(), cz = exact_.cz();
  const std::span<const float> x(exact_.shape_x());
  const float* z_all = exact_.shape_z().data();
  const auto from = static_cast<std::size_t>(current_), to = from ^ 1U;
  const auto ni = static_cast<std::size_t>(ni_);
#pragma omp parallel
  {
    const std::span<float> rhs = scratch_row(omp_get_thread_num());
    for (Block& blk : blocks_) {
      const float* u = blk.u[from].get();
      float* v = blk.u[to].get();
      const float* y = exact_.shape_y(blk.blade).data();
      const float* z = z_all + blk.blade * nk_;
      const auto row_of = [&](long row, long plane) { return std::span<const float>(u + index(row, plane), ni); };
#pragma omp for schedule(static) nowait
      for (long j = rows_.begin; j < rows_.end; ++j) {
        const long row = j - rows_.begin + 1;
        const bool wall = j == 0 || j == nj_ - 1;
        for (long k = 0; k < nk_; ++k) {
          const float phi = y[j] * z[k];
          const std::span<float> out(v + index(row, k + 1), ni);
          const float boundary = scale * phi;
          if (wall) {
            exact_row(boundary, x, out);
            continue;
          }
          out[0] = boundary * x[0];
          out[ni - 1] = boundary * x[ni - 1];
          explicit_row({row_of(row, k + 1), row_of(row - 1, k + 1), row_of(row + 1, k + 1), row_of(row, k),
                        row_of(row, k + 2)},
                       cy, cz, source * phi, x, rhs);
          line_.solve(rhs, out);
        }
      }
    }
  }
}

std::span<float> BladeRowSolver::scratch_row(int thread) const noexcept {
  const auto first = reinterpret_cast<std::uintptr_t>(scratch_.get());
  const std::uintptr_t page = kPageFloats * sizeof(float);
  auto* const row0 = reinterpret_cast<float*>((first + page - 1) / page * page);
  return {row0 + static_cast<std::size_t>(thread) * static_cast<std::size_t>(scratch_stride_),
          static_cast<std::size_t>(ni_)};
}

std::uint64_t BladeRowSolver::checksum() const {
  const auto level = static_cast<std::size_t>(current_);
  std::uint64_t local = 0;
#pragma omp parallel reduction(+ : local)
  {
    for (const Block& blk : blocks_) {
      const float* u = blk.u[level].get();
#pragma omp for schedule(static) nowait
      for (long j = rows_.begin; j < rows_.end; ++j)
        for (long k = 0; k < nk_; ++k) {
          const auto first = static_cast<std::uint64_t>(((blk.blade * nj_ + j) * nk_ + k) * ni_);
          local += row_checksum(std::span<const float>(u + index(j - rows_.begin + 1, k + 1), ni_), first);
        }
    }
  }
  std::uint64_t global = 0;
  HYMPI_MPI(MPI_Allreduce(&local, &global, 1, MPI_UINT64_T, MPI_SUM, comm_));
  return global;
}

double BladeRowSolver::max_error() const {
  const auto level = static_cast<std::size_t>(current_);
  const double t = time();
  double local = 0;
#pragma omp parallel reduction(max : local)
  {
    for (const Block& blk : blocks_) {
      const float* u = blk.u[level].get();
#pragma omp for schedule(static) nowait
      for (long j = rows_.begin; j < rows_.end; ++j)
        for (long k = 0; k < nk_; ++k) {
          const float* r = u + index(j - rows_.begin + 1, k + 1);
          for (long i = 0; i < ni_; ++i) {
            const double e = std::abs(static_cast<double>(r[i]) - exact_.exact(blk.blade, i, j, k, t));
            // A NaN must fail the check, and max() would drop it.
            local = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(local, e);
          }
        }
    }
  }
  return max_over(comm_, local);
}

float& BladeRowSolver::at(long blade, long i, long j, long k) {
  if (!blades_.contains(blade) || !rows_.contains(j) || i < 0 || i >= ni_ || k < 0 || k >= nk_)
    throw InvalidArgument("point (blade " + std::to_string(blade) + ", " + std::to_string(i) + ", " +
                          std::to_string(j) + ", " + std::to_string(k) + ") is not on this rank");
  Block& blk = blocks_[static_cast<std::size_t>(blade - blades_.begin)];
  return blk.u[static_cast<std::size_t>(current_)][index(j - rows_.begin + 1, k + 1) + static_cast<std::size_t>(i)];
}

std::size_t BladeRowSolver::state_bytes() const noexcept { return blocks_.size() * 2 * block_elements_ * sizeof(float); }

std::vector<std::span<const float>> BladeRowSolver::state_arrays() const {
  std::vector<std::span<const float>> out;
  for (const Block& blk : blocks_)
    for (const auto& level : blk.u) out.emplace_back(level.get(), block_elements_);
  return out;
}

}  // namespace hympi::blades

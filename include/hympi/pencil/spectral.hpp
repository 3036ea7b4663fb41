#pragma once
// The spectral z direction: FFTW real-to-complex transforms of batches of z lines with RAII plans, and the
// 2/3 rule (issue 16: Sillero et al., "Hybrid OpenMP-MPI turbulent boundary layer code over 32k cores", §2.2,
// hold a field as psi(Kz, Ny, Nx/N), only the kept modes).
#include <fftw3.h>

#include <cstddef>
#include <memory>
#include <span>

namespace hympi::pencil {

/// The Fourier modes kept of real z lines of nz points over the period 2 pi: k = 0 .. kept-1, every k < nz/3
/// (Orszag's 2/3 rule: a product of two such fields aliases only onto |k| >= nz/3, which is dropped).
/// A spectral line holds the kept modes as doubles() doubles, re and im interleaved; the physical values are
/// u(z_j) = sum over all k of u_k exp(i k z_j), z_j = 2 pi j / nz, with u_{-k} = conj(u_k).
struct ZModes {
  long nz = 0;    ///< physical points of a line (even)
  long kept = 0;  ///< complex modes kept
  /// Doubles of one spectral line (2 * kept).
  [[nodiscard]] long doubles() const noexcept { return 2 * kept; }
};

/// Modes the 2/3 rule keeps of nz points: the k >= 0 with 3k < nz. Never fails.
[[nodiscard]] constexpr long kept_modes(long nz) noexcept { return (nz - 1) / 3 + 1; }

/// The kept modes of lines of nz points. Throws InvalidArgument naming nz when it is odd (the real
/// transform's Hermitian half needs an even size here) or smaller than min_nz.
[[nodiscard]] ZModes dealiased_modes(long nz, long min_nz);

/// Memory from fftw_malloc (aligned as FFTW's SIMD codelets want), freed by fftw_free.
struct FftwFree {
  void operator()(void* p) const noexcept { fftw_free(p); }
};

/// FFTW plans of one batch of z lines, r2c and c2r, made once (FFTW_ESTIMATE: the plan depends on the sizes
/// only, so every rank and every rank count transforms a line the same way and results are bitwise equal).
/// The planner is not thread safe: construct outside parallel regions; the transforms are thread safe, each
/// thread with its own Workspace.
class ZTransform {
 public:
  /// Scratch of one thread: a complex batch and `kSlots` real batches, aligned like the plans' arrays.
  class Workspace {
   public:
    static constexpr int kSlots = 2;
    /// Real values of slot `slot` (batch * nz doubles, line j at j * nz).
    [[nodiscard]] std::span<double> real(int slot) noexcept;

   private:
    friend class ZTransform;
    Workspace(long complex_values, long real_values);
    std::unique_ptr<fftw_complex, FftwFree> complex_;
    std::unique_ptr<double, FftwFree> real_[kSlots];
    long real_values_ = 0;
  };

  /// Plans for `batch` lines. Throws InvalidArgument for batch < 1 or modes that do not fit nz, Error when
  /// FFTW cannot plan.
  ZTransform(ZModes modes, int batch);
  ZTransform(const ZTransform&) = delete;
  ZTransform& operator=(const ZTransform&) = delete;
  ~ZTransform();

  [[nodiscard]] const ZModes& modes() const noexcept { return modes_; }
  [[nodiscard]] int batch() const noexcept { return batch_; }
  /// A new scratch for one thread.
  [[nodiscard]] Workspace workspace() const;

  /// Physical values of `lines` (<= batch) spectral lines (`spectral` holds lines * doubles()) into slot
  /// `slot`; with `derivative`, of d/dz of them. Lines beyond `lines` in the slot are zero. Throws
  /// InvalidArgument for too many lines or a short span.
  void to_physical(std::span<const double> spectral, long lines, Workspace& ws, int slot, bool derivative) const;
  /// The kept modes of slot `slot`'s first `lines` physical lines into `spectral` (lines * doubles()).
  /// Throws InvalidArgument for too many lines or a short span.
  void to_spectral(Workspace& ws, int slot, long lines, std::span<double> spectral) const;

 private:
  void check(long lines, std::size_t span_size, const char* what) const;
  ZModes modes_;
  int batch_;
  fftw_plan r2c_ = nullptr;
  fftw_plan c2r_ = nullptr;
};

}  // namespace hympi::pencil

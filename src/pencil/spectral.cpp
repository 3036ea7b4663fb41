// FFTW z transforms of batches of lines (hot: the nonlinear term runs three per line and substep).
#include "hympi/pencil/spectral.hpp"

#include <algorithm>
#include <string>

#include "hympi/core/error.hpp"

namespace hympi::pencil {

ZModes dealiased_modes(long nz, long min_nz) {
  if (nz % 2 != 0)
    throw InvalidArgument("nz must be even for the real z transform, got " + std::to_string(nz));
  if (nz < min_nz)
    throw InvalidArgument("nz = " + std::to_string(nz) + " is too small for the 2/3 dealiasing (needs >= " +
                          std::to_string(min_nz) + ")");
  return {nz, kept_modes(nz)};
}

ZTransform::Workspace::Workspace(long complex_values, long real_values) : real_values_(real_values) {
  complex_.reset(fftw_alloc_complex(static_cast<std::size_t>(complex_values)));
  for (auto& r : real_) r.reset(fftw_alloc_real(static_cast<std::size_t>(real_values)));
  if (!complex_ || !real_[0] || !real_[1]) throw Error("fftw_malloc failed for a z-transform workspace");
}

std::span<double> ZTransform::Workspace::real(int slot) noexcept {
  return {real_[slot].get(), static_cast<std::size_t>(real_values_)};
}

ZTransform::ZTransform(ZModes modes, int batch) : modes_(modes), batch_(batch) {
  if (batch < 1) throw InvalidArgument("z-transform batch must be >= 1, got " + std::to_string(batch));
  if (modes.nz < 2 || modes.kept < 1 || 3 * (modes.kept - 1) >= modes.nz)
    throw InvalidArgument("z modes " + std::to_string(modes.kept) + " do not fit nz = " + std::to_string(modes.nz));
  // Plans are made on arrays of the workspace's shape; fftw_execute_dft_* later runs them on any
  // workspace, which fftw_malloc aligns the same way.
  Workspace ws = workspace();
  const int n = static_cast<int>(modes.nz);
  const int half = n / 2 + 1;
  r2c_ = fftw_plan_many_dft_r2c(1, &n, batch, ws.real_[0].get(), nullptr, 1, n, ws.complex_.get(), nullptr, 1, half,
                                FFTW_ESTIMATE);
  c2r_ = fftw_plan_many_dft_c2r(1, &n, batch, ws.complex_.get(), nullptr, 1, half, ws.real_[0].get(), nullptr, 1, n,
                                FFTW_ESTIMATE);
  if (r2c_ == nullptr || c2r_ == nullptr) {
    if (r2c_ != nullptr) fftw_destroy_plan(r2c_);
    if (c2r_ != nullptr) fftw_destroy_plan(c2r_);
    throw Error("FFTW could not plan z transforms of " + std::to_string(n) + " points x " + std::to_string(batch));
  }
}

ZTransform::~ZTransform() {
  fftw_destroy_plan(r2c_);
  fftw_destroy_plan(c2r_);
}

ZTransform::Workspace ZTransform::workspace() const {
  return {static_cast<long>(batch_) * (modes_.nz / 2 + 1), static_cast<long>(batch_) * modes_.nz};
}

void ZTransform::check(long lines, std::size_t span_size, const char* what) const {
  if (lines < 0 || lines > batch_)
    throw InvalidArgument(std::to_string(lines) + " lines for a z-transform batch of " + std::to_string(batch_));
  if (span_size < static_cast<std::size_t>(lines * modes_.doubles()))
    throw InvalidArgument(std::string(what) + " holds " + std::to_string(span_size) + " doubles, " +
                          std::to_string(lines) + " lines need " + std::to_string(lines * modes_.doubles()));
}

void ZTransform::to_physical(std::span<const double> spectral, long lines, Workspace& ws, int slot,
                             bool derivative) const {
  check(lines, spectral.size(), "spectral input");
  const long half = modes_.nz / 2 + 1, kept = modes_.kept, d = modes_.doubles();
  fftw_complex* c = ws.complex_.get();
  for (long j = 0; j < batch_; ++j) {
    fftw_complex* line = c + j * half;
    long k = 0;
    if (j < lines) {
      const double* s = spectral.data() + j * d;
      for (; k < kept; ++k) {
        const double re = s[2 * k], im = s[2 * k + 1];
        // d/dz multiplies mode k by i k.
        line[k][0] = derivative ? -static_cast<double>(k) * im : re;
        line[k][1] = derivative ? static_cast<double>(k) * re : im;
      }
    }
    for (; k < half; ++k) line[k][0] = line[k][1] = 0.0;
  }
  fftw_execute_dft_c2r(c2r_, c, ws.real_[slot].get());
}

void ZTransform::to_spectral(Workspace& ws, int slot, long lines, std::span<double> spectral) const {
  check(lines, spectral.size(), "spectral output");
  fftw_complex* c = ws.complex_.get();
  fftw_execute_dft_r2c(r2c_, ws.real_[slot].get(), c);
  const long half = modes_.nz / 2 + 1, kept = modes_.kept, d = modes_.doubles();
  const double scale = 1.0 / static_cast<double>(modes_.nz);
  for (long j = 0; j < lines; ++j) {
    double* s = spectral.data() + j * d;
    const fftw_complex* line = c + j * half;
    for (long k = 0; k < kept; ++k) {
      s[2 * k] = line[k][0] * scale;
      s[2 * k + 1] = line[k][1] * scale;
    }
  }
}

}  // namespace hympi::pencil

#include "hympi/stream.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hympi/error.hpp"
#include "hympi/memory.hpp"

namespace hympi {

nlohmann::json StreamResult::to_json() const {
  return {{"elements", elements}, {"copy_GBps", copy_gbs},   {"scale_GBps", scale_gbs},
          {"add_GBps", add_gbs},  {"triad_GBps", triad_gbs}, {"verified", verified}};
}

std::size_t stream_elements_for(std::size_t last_level_cache_bytes, int ranks_on_node) {
  const std::size_t total = 4 * last_level_cache_bytes / sizeof(double);
  return std::max<std::size_t>(total / static_cast<std::size_t>(std::max(ranks_on_node, 1)) + 1, 1 << 20);
}

StreamResult run_stream(MPI_Comm comm, const StreamOptions& options) {
  if (options.repeats < 2) throw InvalidArgument("STREAM repeats must be >= 2, got " + std::to_string(options.repeats));
  if (options.elements < 1) throw InvalidArgument("STREAM elements must be >= 1");
  int ranks = 1;
  HYMPI_MPI(MPI_Comm_size(comm, &ranks));
  const auto n = static_cast<long>(options.elements);
  const auto a_store = make_untouched_array<double>(options.elements);
  const auto b_store = make_untouched_array<double>(options.elements);
  const auto c_store = make_untouched_array<double>(options.elements);
  double* a = a_store.get();
  double* b = b_store.get();
  double* c = c_store.get();
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    a[i] = 1.0;
    b[i] = 2.0;
    c[i] = 0.0;
  }
  const double scalar = 3.0;
  // Bytes moved per element as STREAM counts them (no write-allocate traffic).
  const double bytes[4] = {16.0 * n, 16.0 * n, 24.0 * n, 24.0 * n};
  double best[4];
  std::fill(std::begin(best), std::end(best), std::numeric_limits<double>::infinity());
  for (int rep = 0; rep < options.repeats; ++rep) {
    double t[4];
    for (int kernel = 0; kernel < 4; ++kernel) {
      HYMPI_MPI(MPI_Barrier(comm));
      const double t0 = MPI_Wtime();
      switch (kernel) {
        case 0:
#pragma omp parallel for schedule(static)
          for (long i = 0; i < n; ++i) c[i] = a[i];
          break;
        case 1:
#pragma omp parallel for schedule(static)
          for (long i = 0; i < n; ++i) b[i] = scalar * c[i];
          break;
        case 2:
#pragma omp parallel for schedule(static)
          for (long i = 0; i < n; ++i) c[i] = a[i] + b[i];
          break;
        default:
#pragma omp parallel for schedule(static)
          for (long i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
          break;
      }
      t[kernel] = MPI_Wtime() - t0;
    }
    double slowest[4];
    HYMPI_MPI(MPI_Allreduce(t, slowest, 4, MPI_DOUBLE, MPI_MAX, comm));
    if (rep > 0)  // the first pass warms caches and TLBs, as in STREAM
      for (int k = 0; k < 4; ++k) best[k] = std::min(best[k], slowest[k]);
  }
  StreamResult r;
  r.elements = options.elements;
  const double gb = 1e-9 * ranks;
  r.copy_gbs = gb * bytes[0] / best[0];
  r.scale_gbs = gb * bytes[1] / best[1];
  r.add_gbs = gb * bytes[2] / best[2];
  r.triad_gbs = gb * bytes[3] / best[3];
  r.triad_time_s = best[3];

  // STREAM's check: replay the recurrences on scalars and compare every element.
  double ea = 1.0, eb = 2.0, ec = 0.0;
  for (int rep = 0; rep < options.repeats; ++rep) {
    ec = ea;
    eb = scalar * ec;
    ec = ea + eb;
    ea = eb + scalar * ec;
  }
  double worst = 0.0;
#pragma omp parallel for schedule(static) reduction(max : worst)
  for (long i = 0; i < n; ++i)
    worst = std::max({worst, std::abs(a[i] - ea) / ea, std::abs(b[i] - eb) / eb, std::abs(c[i] - ec) / ec});
  int ok = worst <= 1e-13 ? 1 : 0, all_ok = 0;
  HYMPI_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm));
  r.verified = all_ok == 1;
  return r;
}

}  // namespace hympi

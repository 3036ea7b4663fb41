#include "hympi/stream/stream.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "hympi/contract.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/memory.hpp"
#include "hympi/core/metrics.hpp"

namespace hympi {

nlohmann::json StreamResult::to_json() const {
  return {{"elements", elements},
          {"inner_repetitions", inner},
          {"copy_GBps", copy_gbs},
          {"scale_GBps", scale_gbs},
          {"add_GBps", add_gbs},
          {"triad_GBps", triad_gbs},
          {"triad_best_s", triad_time_s},
          {"triad_mean_GBps", triad_mean_gbs},
          {"triad_total_s", triad_total_s},
          {"timed_repeats", timed_repeats},
          {"verified", verified}};
}

std::size_t stream_elements_for(std::size_t last_level_cache_bytes, int ranks_on_node) {
  // The rule is contract.toml's [stream]; python/hympi/study.py applies the same one.
  const std::size_t total = contract::kStreamLlcMultiple * last_level_cache_bytes / sizeof(double);
  return std::max<std::size_t>(total / static_cast<std::size_t>(std::max(ranks_on_node, 1)) + 1,
                               contract::kStreamMinElements);
}

std::uint64_t cache_bytes_per_pu(std::span<const CacheInfo> caches, int pus, StreamLevel level) {
  if (level == StreamLevel::memory) throw InvalidArgument("memory is not a cache level");
  if (pus < 1) throw InvalidArgument("PUs must be >= 1, got " + std::to_string(pus));
  const int depth = static_cast<int>(level) + 1;
  for (const CacheInfo& c : caches)
    if (c.level == depth) return c.size_bytes * static_cast<std::uint64_t>(c.count) / static_cast<std::uint64_t>(pus);
  std::string found;
  for (const CacheInfo& c : caches) found += (found.empty() ? "L" : ", L") + std::to_string(c.level);
  throw InvalidArgument("--level " + to_string(level) + ": hwloc reports no L" + std::to_string(depth) +
                        " cache on this machine (it reports " + (found.empty() ? "none" : found) + ")");
}

int stream_inner_for(std::size_t elements) {
  const double per_triad = kTriadCountedBytes * static_cast<double>(std::max<std::size_t>(elements, 1));
  return static_cast<int>(std::clamp(std::ceil(kStreamInnerBytes / per_triad), 1.0, 1e6));
}

std::size_t stream_elements_for_cache(std::uint64_t bytes_per_pu, int threads) {
  // The rule is contract.toml's [stream] cache_fraction.
  const auto per_thread = static_cast<std::size_t>(contract::kStreamCacheFraction * static_cast<double>(bytes_per_pu) /
                                                   (3.0 * sizeof(double)));
  return std::max<std::size_t>(per_thread, 1) * static_cast<std::size_t>(std::max(threads, 1));
}

double stream_deviation(std::span<const double> a, std::span<const double> b, std::span<const double> c,
                        int passes) {
  if (passes < 1) throw InvalidArgument("STREAM passes to verify must be >= 1, got " + std::to_string(passes));
  if (b.size() != a.size() || c.size() != a.size())
    throw InvalidArgument("STREAM arrays differ in length: " + std::to_string(a.size()) + ", " +
                          std::to_string(b.size()) + ", " + std::to_string(c.size()));
  // Replay the recurrences on scalars and compare every element.
  double ea = 1.0, eb = 2.0, ec = 0.0;
  for (int pass = 0; pass < passes; ++pass) {
    ec = ea;
    eb = kStreamScalar * ec;
    ec = ea + eb;
    ea = eb + kStreamScalar * ec;
  }
  const auto n = static_cast<long>(a.size());
  double worst = 0.0;
  bool nan = false;
#pragma omp parallel for schedule(static) reduction(max : worst) reduction(|| : nan)
  for (long i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double da = std::abs(a[k] - ea) / ea, db = std::abs(b[k] - eb) / eb, dc = std::abs(c[k] - ec) / ec;
    nan = nan || std::isnan(da) || std::isnan(db) || std::isnan(dc);
    worst = std::max({worst, da, db, dc});
  }
  return nan ? std::numeric_limits<double>::infinity() : worst;
}

StreamResult run_stream(MPI_Comm comm, const StreamOptions& options, Metrics* metrics) {
  if (options.repeats < 2) throw InvalidArgument("STREAM repeats must be >= 2, got " + std::to_string(options.repeats));
  if (options.elements < 1) throw InvalidArgument("STREAM elements must be >= 1, got 0");
  if (!(options.min_time_s >= 0.0 && std::isfinite(options.min_time_s)))
    throw InvalidArgument("minimum time must be a number of seconds >= 0, got " + std::to_string(options.min_time_s));
  int ranks = 1;
  HYMPI_MPI(MPI_Comm_size(comm, &ranks));
  const auto n = static_cast<long>(options.elements);
  const auto a_store = make_untouched_array<double>(options.elements);
  const auto b_store = make_untouched_array<double>(options.elements);
  const auto c_store = make_untouched_array<double>(options.elements);
  double* a = a_store.get();
  double* b = b_store.get();
  double* c = c_store.get();
  const auto fill = [&] {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
      a[i] = 1.0;
      b[i] = 2.0;
      c[i] = 0.0;
    }
  };
  fill();
  const double scalar = kStreamScalar;
  const std::span<const double> as{a, options.elements}, bs{b, options.elements}, cs{c, options.elements};
  if (metrics != nullptr) {
    // Touched by the kernels' schedule by now: where did the pages go (--membind)?
    metrics->observe_memory("a", std::as_bytes(as));
    metrics->observe_memory("b", std::as_bytes(bs));
    metrics->observe_memory("c", std::as_bytes(cs));
  }
  // a grows 15x per pass and would overflow after ~260 passes, which --min-time can ask for: every
  // this many passes the arrays are checked and refilled, outside the timed kernels.
  constexpr int kPassesPerFill = 50;
  int since_fill = 0;
  double worst = 0.0;
  // Bytes moved per element as STREAM counts them (no write-allocate traffic), times the kernel's repetitions
  // inside one timing. Each kernel's output feeds none of its inputs, so repeating it leaves the arrays (and the
  // verification) as one run does.
  const int inner = std::max(options.inner, 1);
  const double bytes[4] = {16.0 * n * inner, 16.0 * n * inner, 24.0 * n * inner, kTriadCountedBytes * n * inner};
  double best[4];
  std::fill(std::begin(best), std::end(best), std::numeric_limits<double>::infinity());
  constexpr long kMaxRepeats = std::numeric_limits<int>::max() / 2;
  int target = options.repeats;
  int rep = 0;
  double triad_total = 0.0, local_triad = 0.0;
  while (rep < target) {
    if (since_fill == kPassesPerFill) {
      worst = std::max(worst, stream_deviation(as, bs, cs, since_fill));
      fill();
      since_fill = 0;
    }
    double t[4];
    for (int kernel = 0; kernel < 4; ++kernel) {
      HYMPI_MPI(MPI_Barrier(comm));
      const double t0 = MPI_Wtime();
      // One fork per timing; a static schedule gives every thread the same elements in each repetition, so the
      // repetitions need no barrier between them.
#pragma omp parallel
      for (int r = 0; r < inner; ++r) {
        switch (kernel) {
          case 0:
#pragma omp for schedule(static) nowait
            for (long i = 0; i < n; ++i) c[i] = a[i];
            break;
          case 1:
#pragma omp for schedule(static) nowait
            for (long i = 0; i < n; ++i) b[i] = scalar * c[i];
            break;
          case 2:
#pragma omp for schedule(static) nowait
            for (long i = 0; i < n; ++i) c[i] = a[i] + b[i];
            break;
          default:
#pragma omp for schedule(static) nowait
            for (long i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
            break;
        }
      }
      t[kernel] = MPI_Wtime() - t0;
    }
    double slowest[4];
    HYMPI_MPI(MPI_Allreduce(t, slowest, 4, MPI_DOUBLE, MPI_MAX, comm));
    if (rep > 0) {  // the first pass warms caches and TLBs, as in STREAM
      for (int k = 0; k < 4; ++k) best[k] = std::min(best[k], slowest[k]);
      triad_total += slowest[3];
      local_triad += t[3];
    }
    ++rep;
    ++since_fill;
    // slowest[] is the same on every rank, so every rank takes the same decision.
    if (rep == target && options.min_time_s > 0)
      target = static_cast<int>(repetitions_for_min_time(rep - 1, triad_total, options.min_time_s, kMaxRepeats)) + 1;
  }
  StreamResult r;
  r.elements = options.elements;
  r.inner = inner;
  const double gb = 1e-9 * ranks;
  r.copy_gbs = gb * bytes[0] / best[0];
  r.scale_gbs = gb * bytes[1] / best[1];
  r.add_gbs = gb * bytes[2] / best[2];
  r.triad_gbs = gb * bytes[3] / best[3];
  r.triad_time_s = best[3];
  r.timed_repeats = rep - 1;
  r.triad_total_s = triad_total;
  r.triad_bytes = bytes[3] * ranks * (rep - 1);
  r.triad_mean_gbs = r.triad_bytes / triad_total * 1e-9;
  r.local_triad_s = local_triad;

  worst = std::max(worst, stream_deviation(as, bs, cs, since_fill));
  int ok = worst <= kStreamTolerance ? 1 : 0, all_ok = 0;
  HYMPI_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm));
  r.verified = all_ok == 1;
  return r;
}

double measure_triad_gbs(MPI_Comm comm, std::size_t elements) {
  StreamOptions options;
  options.elements = elements;
  options.repeats = kBoundTriadRepeats;
  options.inner = stream_inner_for(elements);
  return run_stream(comm, options).triad_gbs;
}

}  // namespace hympi

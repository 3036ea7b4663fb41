// hympi-bench-spmv: the CSR product of hympi-spmv3d (96^3 per rank by default, the ranks stacked along z)
// against its ceilings, on the same ranks and binding, in alternating rounds: each round times one product
// of every row-loop variant (csr_kernel.hpp's Shape: prefetch distance, rows at once, prefetchnta, AVX2
// gathers, two cursors; kShape with the equal-row runs known; the library's over the app's work items), read
// streams over the same arrays, STREAM's triad in a loop of its own (ordinary and streamed stores) and the
// app's bound (measure_triad_gbs), in an order that rotates per round, so that neighbours' load falls on
// every variant alike. The read stream moves the product's bytes without its indirection: values and columns
// summed in vector registers grid row by grid row, the row starts, x read once and y streamed, the five
// streams of the product; the values alone are also read as 1, 2 and 4 streams. Products are timed without the
// halo exchange (x's ghosts are filled once), from a barrier to the slowest rank; threads (1 rank x N) take
// equal slabs of planes. Every product variant's y must equal Csr27::apply's bit for bit, or the exit code is 1.
//
// Prints a Markdown table (median, min..max GB/s as moved, median of the per-round fractions of the bound
// 32/24 x triad) and one `HYMPI_BENCH {json}` line (rank 0). `--only 'NAME;...'` times those variants alone (and
// the bound's triad), for closer pairs. Exit 2 for bad arguments (one line, before the matrix is assembled).
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/core/topology.hpp"
#include "hympi/grid/cart.hpp"
#include "hympi/spmv3d/csr_kernel.hpp"
#include "hympi/spmv3d/operator.hpp"
#include "hympi/stream/stream.hpp"
#include "bench_main.hpp"

namespace {

using hympi::Box3;
using hympi::Csr27;
using hympi::InvalidArgument;
namespace csr = hympi::csr;

constexpr const char* kProg = "hympi-bench-spmv";

struct Args {
  long per_rank = 96;
  int rounds = 7;
  std::vector<std::string> only;  ///< names of the variants to time (the triad always is); empty: all
};

using hympi::bench::parse_positive;

// Points per axis of a rank's block: its cube (ghosts and 27 nonzeros a point included) stays inside 64-bit
// arithmetic, so Csr27::check_block can name the size it refuses (past 2^20 the count wrapped).
constexpr long kMaxPerRank = 1L << 20;
constexpr const char* kUsage = "[--per-rank N] [--rounds N] [--only NAME;NAME...]";

Args parse_args(int argc, char** argv) {
  Args args;
  hympi::bench::refuse_repeated_options(argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw InvalidArgument(arg + ": unknown argument or missing value");
    if (arg == "--per-rank")
      args.per_rank = parse_positive<long>(argv[++i], arg, kMaxPerRank);
    else if (arg == "--only") {
      std::string_view list = argv[++i];
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t end = std::min(list.find(';', at), list.size());
        args.only.emplace_back(list.substr(at, end - at));
        at = end + 1;
      }
    } else if (arg == "--rounds")
      args.rounds = parse_positive<int>(argv[++i], arg);
    else
      throw InvalidArgument(arg + ": unknown argument");
  }
  return args;
}

/// The view of one rank's matrix and vectors a row loop needs.
struct Problem {
  const Csr27::RowStart* starts;
  const std::int32_t* cols;
  const double* vals;
  std::array<long, 3> extent;
  const hympi::GridIndexing* indexing;
};

template <csr::Shape S>
void product(const Problem& p, const double* x, double* y, const Box3& box) {
  csr::rows<S, Csr27::RowStart, true>(p.starts, p.cols, p.vals, p.extent, *p.indexing, x, y, box);
  _mm_sfence();
}

/// Prefetches (t0) the lines from `p` to `p` + `bytes`.
inline void prefetch_lines(const void* p, std::int64_t bytes) {
  for (std::int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(static_cast<const char*>(p) + b, 0, 3);
}

/// Elements of values and columns a prefetching read stream runs ahead: as far as kShape's four groups of
/// two 27-nonzero rows.
constexpr std::int64_t kReadAhead = 256;

/// The product's five streams without its indirection (the ceiling of a one-pass read of its bytes); with
/// `Prefetch`, values and columns are also prefetched kReadAhead elements ahead, as the product prefetches them.
template <bool Prefetch>
void read_stream(const Problem& p, const double* x, double* y, const Box3& box) {
  const auto& n = p.extent;
  for (long k = box.low[2]; k < box.high[2]; ++k)
    for (long j = box.low[1]; j < box.high[1]; ++j) {
      const Csr27::RowStart* start = p.starts + (k * n[1] + j) * n[0];
      // Local pointers and 32-bit wrapping sums: so GCC emits plain vector loads (with Problem's members
      // and a 64-bit sum it emulated gathers).
      const double* vals = p.vals + start[0];
      const std::int32_t* cols = p.cols + start[0];
      const std::int64_t count = start[n[0]] - start[0];
      double sv = 0.0;
      std::uint32_t sc = 0, ss = 0;
      constexpr std::int64_t kChunk = Prefetch ? 32 : std::int64_t{1} << 40;
      for (std::int64_t c0 = 0; c0 < count; c0 += kChunk) {
        if constexpr (Prefetch) {
          prefetch_lines(vals + c0 + kReadAhead, kChunk * sizeof(double));
          prefetch_lines(cols + c0 + kReadAhead, kChunk * sizeof(std::int32_t));
        }
        const std::int64_t c1 = std::min(count, c0 + kChunk);
#pragma omp simd reduction(+ : sv, sc)
        for (std::int64_t e = c0; e < c1; ++e) {
          sv += vals[e];
          sc += static_cast<std::uint32_t>(cols[e]);
        }
      }
#pragma omp simd reduction(+ : ss)
      for (long i = 0; i < n[0]; ++i) ss += static_cast<std::uint32_t>(start[i]);
      const double* xr = x + p.indexing->index(0, j, k);
      double* yr = y + p.indexing->index(0, j, k);
      const double row = sv + static_cast<double>(sc + ss);
      for (long i = 0; i < n[0]; ++i) csr::store<true>(yr + i, xr[i] + row);
    }
  _mm_sfence();
}

/// kShape without the per-group check that its rows have equal lengths: a grid row's rows 1 .. n-2 are known
/// to be equal (the block spans the global grid along x, so only its first and last rows meet a wall), as a
/// precomputed table of runs would say. What the check costs.
void known_runs(const Problem& p, const double* x, double* y, const Box3& box) {
  constexpr long R = csr::kShape.rows_at_once;
  const auto& n = p.extent;
  for (long k = box.low[2]; k < box.high[2]; ++k)
    for (long j = box.low[1]; j < box.high[1]; ++j) {
      const Csr27::RowStart* start = p.starts + (k * n[1] + j) * n[0];
      double* out = y + p.indexing->index(0, j, k);
      auto one = [&](long i) {
        csr::row_step<csr::Shape{1, 0}, Csr27::RowStart, true>(start, p.cols, p.vals, x, out, i, n[0]);
      };
      one(0);
      const std::int64_t length = start[2] - start[1];
      long i = 1;
      for (; i + R <= n[0] - 1; i += R)
        csr::equal_rows<csr::kShape, true>(p.vals + start[i], p.cols + start[i], length, x, out + i);
      for (; i < n[0]; ++i) one(i);
    }
  _mm_sfence();
}

/// The values alone, summed (the slab of `box`'s rows) as `Cursors` streams, each over its own equal part, all in
/// one loop: whether more streams at once move more bytes per core. y[first point] keeps the sum.
template <int Cursors>
void read_values(const Problem& p, double* y, const Box3& box) {
  const auto& n = p.extent;
  const std::int64_t first = p.starts[box.low[2] * n[1] * n[0]], last = p.starts[box.high[2] * n[1] * n[0]];
  const std::int64_t part = (last - first) / Cursors;
  const double* vals = p.vals + first;
  double sv = 0.0;
#pragma omp simd reduction(+ : sv)
  for (std::int64_t e = 0; e < part; ++e)
    for (int c = 0; c < Cursors; ++c) sv += vals[c * part + e];
  for (std::int64_t e = Cursors * part; e < last - first; ++e) sv += vals[e];
  y[p.indexing->index(0, 0, box.low[2])] = sv;
}

/// STREAM's triad a = b + 3 c in the bench's own loop, with ordinary or streamed stores: if ordinary stores read
/// their line first (the bound's 32/24), both move memory at the same rate as moved; if the core elided that
/// read, the ordinary one would show 32/24 of the streamed one's rate. Threads take the share of the arrays
/// their slab of planes has of the block.
struct Triad {
  std::unique_ptr<double[]> a, b, c;
  std::size_t n = 0;
  void allocate(std::size_t elements, long planes) {
    n = elements;
    a.reset(new double[n]);
    b.reset(new double[n]);
    c.reset(new double[n]);
#pragma omp parallel
    {
      const auto [lo, hi] = share(slab_of(planes), planes);
      for (std::size_t i = lo; i < hi; ++i) {
        a[i] = 0.0;
        b[i] = 1.0;
        c[i] = 2.0;
      }
    }
  }
  static Box3 slab_of(long planes) {
    const long threads = omp_get_num_threads(), t = omp_get_thread_num();
    return Box3{{0, 0, planes * t / threads}, {1, 1, planes * (t + 1) / threads}};
  }
  [[nodiscard]] std::pair<std::size_t, std::size_t> share(const Box3& slab, long planes) const {
    return {n * static_cast<std::size_t>(slab.low[2]) / static_cast<std::size_t>(planes),
            n * static_cast<std::size_t>(slab.high[2]) / static_cast<std::size_t>(planes)};
  }
  template <bool Streaming>
  void run(const Box3& slab, long planes) {
    const auto [lo, hi] = share(slab, planes);
    double* __restrict out = a.get();
    const double* __restrict x = b.get();
    const double* __restrict z = c.get();
    if constexpr (Streaming) {
      for (std::size_t i = lo; i < hi; ++i) csr::store<true>(out + i, x[i] + 3.0 * z[i]);
      _mm_sfence();
    } else {
#pragma omp simd
      for (std::size_t i = lo; i < hi; ++i) out[i] = x[i] + 3.0 * z[i];
    }
  }
};

struct Variant {
  std::string name;
  std::function<void(const double*, double*, const Box3&)> run;  // empty: the triad
  bool checked = true;                               // y must equal the library's
  const double* bytes = nullptr;                      // per rank, set after the assembly; null: the product's
  std::vector<double> gbs{}, fraction{};
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

int run(const Args& args, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  HYMPI_MPI(MPI_Comm_rank(comm, &rank));
  HYMPI_MPI(MPI_Comm_size(comm, &ranks));
  hympi::Spmv3dOptions options;
  options.per_rank = {args.per_rank, args.per_rank, args.per_rank};
  options.dims = {1, 1, ranks};
  options.op = hympi::SpmvOperator::csr;
  options.cg_iterations = 0;
  options.validate(ranks);
  const auto [global, dims] = options.resolve(ranks);
  {
    // The triad's arrays take at most a product's bytes (the matrix, x and y): twice those, and the reference y.
    const double vector = hympi::largest_block_bytes(global, dims, options.ghost, sizeof(double));
    hympi::bench::check_memory(2 * options.product_bytes(ranks) + vector, ranks,
                               "--per-rank " + std::to_string(args.per_rank) + " (the CSR matrix's " +
                                   std::to_string(Csr27::kBytesPerPoint) + " B per point, x, y and a reference y, "
                                   "and a triad as large as a product)");
  }
  // The variants first, so that a bad --only is one line before the matrix is assembled; they read the
  // matrix through `matrix` and `p`, set below.
  const Csr27* matrix = nullptr;
  Problem p{};
  double value_bytes = 0.0, triad_bytes = 0.0, streamed_triad_bytes = 0.0;
  Triad triad_arrays;
  std::vector<Variant> variants;
  using Run = std::function<void(const double*, double*, const Box3&)>;
  auto other = [&](const std::string& name, Run run, bool checked, const double* bytes) {
    variants.push_back({name, std::move(run), checked, bytes, {}, {}});
  };
  other("Csr27::apply (library)", [&](const double* x, double* y, const Box3& b) { matrix->apply(x, y, b, true); },
        true, nullptr);
  // The app's path without its halo exchange: the overlap driver's work items of this thread's planes, in
  // order, as Operator27::apply hands them out. Far below the whole-slab call when the items did not follow
  // the matrix's storage order (plane pairs: 0.80-0.84 of it on the Zen 4 VM).
  const std::vector<Box3>* app_items = nullptr;
  other("Csr27::apply over the app's work items",
        [&](const double* x, double* y, const Box3& b) {
          for (const Box3& item : *app_items)
            if (item.low[2] >= b.low[2] && item.low[2] < b.high[2]) matrix->apply(x, y, item, true);
        },
        true, nullptr);
  other("read stream, same bytes", [&](const double* x, double* y, const Box3& b) { read_stream<false>(p, x, y, b); },
        false, nullptr);
  other("read stream, prefetcht0 ahead",
        [&](const double* x, double* y, const Box3& b) { read_stream<true>(p, x, y, b); }, false, nullptr);
  other("read values only, 1 stream", [&](const double*, double* y, const Box3& b) { read_values<1>(p, y, b); },
        false, &value_bytes);
  other("read values only, 2 streams", [&](const double*, double* y, const Box3& b) { read_values<2>(p, y, b); },
        false, &value_bytes);
  other("read values only, 4 streams", [&](const double*, double* y, const Box3& b) { read_values<4>(p, y, b); },
        false, &value_bytes);
  other("STREAM triad x 32/24", {}, false, nullptr);
  other("triad loop, stores (32 B as moved)",
        [&](const double*, double*, const Box3& b) { triad_arrays.run<false>(b, p.extent[2]); }, false, &triad_bytes);
  other("triad loop, streamed stores (24 B)",
        [&](const double*, double*, const Box3& b) { triad_arrays.run<true>(b, p.extent[2]); }, false,
        &streamed_triad_bytes);
  auto add = [&]<csr::Shape S>(const std::string& name) {
    other(name, [&](const double* x, double* y, const Box3& b) { product<S>(p, x, y, b); }, true, nullptr);
  };
  add.operator()<csr::Shape{1, 0}>("1 row, no prefetch");
  add.operator()<csr::Shape{4, 0}>("4 rows, no prefetch");
  add.operator()<csr::Shape{4, 1}>("4 rows, 1 group ahead");
  add.operator()<csr::Shape{4, 2}>("4 rows, 2 ahead");
  add.operator()<csr::Shape{4, 3}>("4 rows, 3 ahead");
  add.operator()<csr::Shape{4, 4}>("4 rows, 4 ahead");
  add.operator()<csr::Shape{4, 6}>("4 rows, 6 ahead");
  add.operator()<csr::Shape{4, 8}>("4 rows, 8 ahead");
  add.operator()<csr::Shape{1, 4}>("1 row, 4 ahead");
  add.operator()<csr::Shape{1, 8}>("1 row, 8 ahead");
  add.operator()<csr::Shape{2, 2}>("2 rows, 2 ahead");
  add.operator()<csr::Shape{2, 4}>("2 rows, 4 ahead (kShape)");
  add.operator()<csr::Shape{2, 8}>("2 rows, 8 ahead");
  add.operator()<csr::Shape{3, 4}>("3 rows, 4 ahead");
  add.operator()<csr::Shape{8, 1}>("8 rows, 1 ahead");
  add.operator()<csr::Shape{8, 2}>("8 rows, 2 ahead");
  add.operator()<csr::Shape{4, 2, true}>("4 rows, 2 ahead, prefetchnta");
  add.operator()<csr::Shape{4, 2, false, true}>("4 rows, 2 ahead, AVX2 gathers");
  add.operator()<csr::Shape{4, 2, false, false, 2}>("4 rows, 2 ahead, 2 cursors");
  add.operator()<csr::Shape{4, 4, false, false, 2}>("4 rows, 4 ahead, 2 cursors");
  add.operator()<csr::Shape{2, 4, false, false, 2}>("2 rows, 4 ahead, 2 cursors");
  other("2 rows, 4 ahead, runs known (no check)",
        [&](const double* x, double* y, const Box3& b) { known_runs(p, x, y, b); }, true, nullptr);

  if (!args.only.empty()) {
    for (const auto& name : args.only)
      if (std::none_of(variants.begin(), variants.end(), [&](const Variant& v) { return v.name == name; }))
        throw InvalidArgument("--only: no variant named '" + name + "'");
    std::erase_if(variants, [&](const Variant& v) {
      return v.run && std::find(args.only.begin(), args.only.end(), v.name) == args.only.end();
    });
  }
  hympi::CartDecomposition cart(comm, {global, {false, false, false}, dims});
  hympi::Operator27 op(cart, options);
  matrix = &op.csr();
  app_items = &op.driver().plan().all();
  const auto storage = matrix->storage();
  auto xg = op.make_vector();
  auto yg = op.make_vector();
  auto yref = op.make_vector();
  const hympi::GridIndexing indexing = xg.indexing();
  p = Problem{reinterpret_cast<const Csr27::RowStart*>(storage[2].data()),
              reinterpret_cast<const std::int32_t*>(storage[1].data()),
              reinterpret_cast<const double*>(storage[0].data()), cart.local_box().size(), &indexing};
  // x not integral, so that any other summation order or rounding would change y's bits.
  std::span<double> xs = xg.data();
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = 1.0 + static_cast<double>(i % 977) / 1024.0 + 1e-9 * static_cast<double>(i % 7);
  const Box3 local{{0, 0, 0}, p.extent};
  matrix->apply(xs.data(), yref.data().data(), local, true);

  const double product_bytes = op.bytes_per_apply();
  value_bytes = static_cast<double>(storage[0].size());
  const std::size_t triad_elements =
      std::min(hympi::stream_elements_for(hympi::Topology::this_machine().last_level_cache_bytes(), ranks),
               std::max<std::size_t>(static_cast<std::size_t>(product_bytes / (3 * sizeof(double))), 1));
  triad_arrays.allocate(triad_elements, p.extent[2]);
  triad_bytes = 32.0 * static_cast<double>(triad_elements);
  streamed_triad_bytes = 24.0 * static_cast<double>(triad_elements);

  // Round 0 warms up (page tables, caches) and checks the bits; it is not counted.
  bool all_equal = true;
  const std::size_t points = static_cast<std::size_t>(yref.data().size());
  for (int round = 0; round <= args.rounds; ++round)
    for (std::size_t n = 0; n < variants.size(); ++n) {
      Variant& v = variants[(n + static_cast<std::size_t>(round)) % variants.size()];
      double gbs = 0.0;
      if (!v.run) {
        gbs = hympi::triad_moved_gbs(hympi::measure_triad_gbs(comm, triad_elements));
      } else {
        std::fill(yg.data().begin(), yg.data().end(), 0.0);
        HYMPI_MPI(MPI_Barrier(comm));
        const double t0 = MPI_Wtime();
        // Threads take equal slabs of planes, the rows the assembly's static schedule first-touched for them.
        double* y = yg.data().data();
#pragma omp parallel
        {
          const long planes = p.extent[2], threads = omp_get_num_threads(), t = omp_get_thread_num();
          Box3 slab = local;
          slab.low[2] = planes * t / threads;
          slab.high[2] = planes * (t + 1) / threads;
          v.run(xs.data(), y, slab);
        }
        double t = MPI_Wtime() - t0;
        HYMPI_MPI(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm));
        gbs = (v.bytes != nullptr ? *v.bytes : product_bytes) * ranks / t / 1e9;
        if (round == 0 && v.checked &&
            std::memcmp(yg.data().data(), yref.data().data(), points * sizeof(double)) != 0) {
          std::fprintf(stderr, "%s: rank %d: %s: y differs from Csr27::apply's\n", kProg, rank, v.name.c_str());
          all_equal = false;
        }
      }
      if (round > 0) v.gbs.push_back(gbs);
    }
  int ok = all_equal ? 1 : 0;
  HYMPI_MPI(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm));
  // Each round's bound is that round's triad, so a fraction compares times taken seconds apart.
  const auto triad_at = std::find_if(variants.begin(), variants.end(), [](const Variant& v) { return !v.run; });
  const auto& triad = triad_at->gbs;
  for (auto& v : variants)
    for (std::size_t r = 0; r < v.gbs.size(); ++r) v.fraction.push_back(v.gbs[r] / triad[r]);

  if (rank == 0) {
    std::printf("%d ranks x %d threads, %ld^3 per rank, %zu rounds; GB/s as moved (%.4g MB per rank per product)\n\n",
                ranks, omp_get_max_threads(), args.per_rank, variants[0].gbs.size(), product_bytes / 1e6);
    std::printf("| variant | GB/s median | min..max | fraction of bound (median) |\n|---|---|---|---|\n");
    nlohmann::json record{{"bench", "spmv"}, {"ranks", ranks}, {"per_rank", args.per_rank},
                          {"rounds", args.rounds}, {"threads", omp_get_max_threads()}, {"bits_equal", ok == 1}};
    for (const auto& v : variants) {
      const auto [lo, hi] = std::minmax_element(v.gbs.begin(), v.gbs.end());
      std::printf("| %s | %.2f | %.2f..%.2f | %.3f |\n", v.name.c_str(), median(v.gbs), *lo, *hi, median(v.fraction));
      record["variants"].push_back({{"name", v.name}, {"gbs", v.gbs}, {"fraction", v.fraction}});
    }
    std::printf("HYMPI_BENCH %s\n", record.dump().c_str());
  }
  return ok == 1 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return hympi::bench::run_main(kProg, kUsage, argc, argv, [&] { return run(parse_args(argc, argv), MPI_COMM_WORLD); });
}

// hympi-bench-transpose: hympi's plane <-> pencil transpose (every exchange x wire) against FFTW-MPI's
// transpose on the same global array, ranks and run, and the local blocked transpose against a STREAM
// copy of the same size. Prints a table and one `HYMPI_BENCH {json}` line (rank 0); exit 2 for bad
// arguments, 1 when a result is wrong.
//
// The layouts are the same matrix: the global array is nx x L (L = ny*nz lines, l = z + nz*y fastest),
// row-major. hympi's planes are FFTW's input (rows x distributed over ranks, local_n0 x L), hympi's
// pencils FFTW's output (L x nx, rows l distributed, local_n1 x nx). FFTW gives every rank but the last
// ceil(n/p) rows, hympi spreads the remainder over the first ranks: both splits agree when p divides nx
// and L, which the benchmark requires, and it checks that FFTW's local sizes are hympi's.
#include <fftw3-mpi.h>
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "bench_main.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/memory.hpp"
#include "hympi/transpose/transpose.hpp"

namespace {

using hympi::InvalidArgument;
using hympi::transpose::Extent;
using hympi::transpose::Transpose;
using hympi::transpose::TransposeExchange;
using hympi::transpose::TransposeOptions;
using hympi::transpose::WirePrecision;

struct Args {
  std::array<long, 3> n{128, 128, 128};
  int reps = 20;
  bool patient = false;  ///< FFTW_PATIENT instead of FFTW_MEASURE (tries more transpose algorithms)
};

using hympi::bench::parse_positive;

// Points of the global grid per axis: their product stays inside 64-bit arithmetic.
constexpr long kMaxExtent = 1L << 20;
constexpr const char* kUsage = "--grid NX NY NZ, --reps N, --fftw-planner measure|patient";

/// --grid NX NY NZ, --reps N, --fftw-planner measure|patient; throws InvalidArgument naming the bad argument.
Args parse_args(int argc, char** argv) {
  Args args;
  hympi::bench::refuse_repeated_options(argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto need = [&](int count) {
      if (i + count >= argc) throw InvalidArgument(std::string(arg) + " needs " + std::to_string(count) + " value(s)");
    };
    if (arg == "--grid") {
      need(3);
      for (auto& n : args.n) n = parse_positive<long>(argv[++i], "--grid", kMaxExtent);
    } else if (arg == "--reps") {
      need(1);
      args.reps = parse_positive<int>(argv[++i], "--reps");
    } else if (arg == "--fftw-planner") {
      need(1);
      const std::string_view planner = argv[++i];
      if (planner != "measure" && planner != "patient")
        throw InvalidArgument("--fftw-planner: '" + std::string(planner) + "' (expected measure or patient)");
      args.patient = planner == "patient";
    } else {
      throw InvalidArgument("unknown argument '" + std::string(arg) + "' (expected " + kUsage + ")");
    }
  }
  return args;
}

/// The global array's value at (x, l): distinct everywhere, most of them not floats.
double value(long x, long l, long lines) { return static_cast<double>(x * lines + l + 1) / 3.0; }

struct FftwFree {
  void operator()(double* p) const noexcept { fftw_free(p); }
};
using FftwArray = std::unique_ptr<double[], FftwFree>;

/// An FFTW plan, destroyed with its owner.
class FftwPlan {
 public:
  explicit FftwPlan(fftw_plan plan) : plan_(plan) {
    if (plan_ == nullptr) throw hympi::Error("FFTW could not plan the transpose");
  }
  FftwPlan(const FftwPlan&) = delete;
  FftwPlan& operator=(const FftwPlan&) = delete;
  ~FftwPlan() { fftw_destroy_plan(plan_); }
  void execute() const { fftw_execute(plan_); }

 private:
  fftw_plan plan_;
};

/// One implementation under test: a forward and a backward call, and a check of their results.
struct Candidate {
  std::string name;
  std::function<void()> forward, backward;
  std::function<bool()> verify;  ///< runs forward + backward on fresh data; true when both are right
  std::function<nlohmann::json()> describe;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/// Max over ranks of each entry.
std::vector<double> max_over_ranks(std::vector<double> v) {
  HYMPI_MPI(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return v;
}

/// Whether every rank's check passed.
bool all_ranks(bool ok) {
  int local = ok ? 1 : 0, global = 0;
  HYMPI_MPI(MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  return global == 1;
}

struct Layout {
  long nx, lines;
  Extent xs, ls;
};

void fill_planes(const Layout& g, std::span<double> planes) {
  for (long x = g.xs.begin; x < g.xs.end; ++x)
    for (long l = 0; l < g.lines; ++l) planes[static_cast<std::size_t>((x - g.xs.begin) * g.lines + l)] = value(x, l, g.lines);
}

/// Whether the pencils hold the global array (through `round`, the wire's rounding) and `back` the planes.
template <class Round>
bool check(const Layout& g, std::span<const double> pencils, std::span<const double> back, Round round) {
  bool ok = true;
  for (long l = g.ls.begin; l < g.ls.end; ++l)
    for (long x = 0; x < g.nx; ++x)
      ok = ok && pencils[static_cast<std::size_t>((l - g.ls.begin) * g.nx + x)] == round(value(x, l, g.lines));
  for (long x = g.xs.begin; x < g.xs.end; ++x)
    for (long l = 0; l < g.lines; ++l)
      ok = ok && back[static_cast<std::size_t>((x - g.xs.begin) * g.lines + l)] == round(value(x, l, g.lines));
  return ok;
}

/// The local blocked transpose (hympi's on one rank: the whole array is the own block, nothing is packed
/// or exchanged) against a STREAM copy of as many doubles, every rank at once as in the transposes. Both
/// move 16 bytes per element (STREAM's count: one read, one write).
nlohmann::json local_vs_copy(const Layout& g, std::size_t reps, int threads) {
  const long lines = g.ls.size();
  Transpose local({g.nx, lines, 1}, MPI_COMM_SELF, {TransposeExchange::alltoallv, WirePrecision::double_precision, {}, threads});
  const std::size_t n = local.plane_size();
  hympi::LineAlignedVector<double> a(n), b(n);  // aligned as FFTW aligns its arrays
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<double>(i);
    b[i] = 0;
  }
  local.planes_to_pencils(a, b);  // the automatic tile
  std::vector<double> transpose_s(reps), copy_s(reps);
  for (std::size_t r = 0; r < reps; ++r) {
    HYMPI_MPI(MPI_Barrier(MPI_COMM_WORLD));
    local.reset_times();
    local.planes_to_pencils(a, b);
    transpose_s[r] = local.times().unpack_s;
    HYMPI_MPI(MPI_Barrier(MPI_COMM_WORLD));
    const double t0 = MPI_Wtime();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::size_t i = 0; i < n; ++i) b[i] = a[i];
    copy_s[r] = MPI_Wtime() - t0;
  }
  // Each rank's median, then the slowest rank's: a bandwidth every rank reaches.
  const std::vector<double> worst = max_over_ranks({median(transpose_s), median(copy_s)});
  const double bytes = 16.0 * static_cast<double>(n);
  return {{"elements", n},
          {"tile", to_string(local.options().tile)},
          {"transpose_s", worst[0]},
          {"copy_s", worst[1]},
          {"transpose_gbs", bytes / worst[0] * 1e-9},
          {"copy_gbs", bytes / worst[1] * 1e-9},
          {"ratio", worst[1] / worst[0]}};
}

int run(const Args& args, int rank, int ranks) {
  const auto [nx, ny, nz] = args.n;
  const long lines = ny * nz;
  if (nx % ranks != 0 || lines % ranks != 0)
    throw InvalidArgument("--grid " + std::to_string(nx) + " " + std::to_string(ny) + " " + std::to_string(nz) +
                          ": nx and ny*nz must be multiples of the " + std::to_string(ranks) +
                          " ranks (FFTW's block split equals hympi's only then)");
  hympi::bench::check_memory(6.0 * 8.0 * double(nx) * double(lines) / ranks, ranks,
                             "--grid " + std::to_string(nx) + " " + std::to_string(ny) + " " + std::to_string(nz) +
                                 " (six arrays of a rank's share, 8 B a point; the transposes' buffers come on top)");
  const int threads = omp_get_max_threads();
  std::vector<std::unique_ptr<Transpose>> transposes;
  std::vector<Candidate> candidates;

  // FFTW-MPI: nx x L -> L x nx and back, planned with FFTW_MEASURE on the real arrays.
  ptrdiff_t local_n0 = 0, start0 = 0, local_n1 = 0, start1 = 0;
  const ptrdiff_t alloc = fftw_mpi_local_size_2d_transposed(nx, lines, MPI_COMM_WORLD, &local_n0, &start0, &local_n1,
                                                             &start1);
  const Layout g{nx, lines, {start0, start0 + local_n0}, {start1, start1 + local_n1}};
  {
    const Transpose probe(args.n, MPI_COMM_WORLD, {});
    if (!(probe.planes_x() == g.xs && probe.pencil_lines() == g.ls))
      throw hympi::Error("FFTW's local sizes differ from hympi's on rank " + std::to_string(rank));
  }
  const auto planes_n = static_cast<std::size_t>(local_n0 * lines), pencils_n = static_cast<std::size_t>(local_n1 * nx);
  FftwArray f_planes(fftw_alloc_real(static_cast<std::size_t>(alloc)));
  FftwArray f_pencils(fftw_alloc_real(static_cast<std::size_t>(alloc)));
  FftwArray f_back(fftw_alloc_real(static_cast<std::size_t>(alloc)));
  const unsigned flags = args.patient ? FFTW_PATIENT : FFTW_MEASURE;
  const double planning0 = MPI_Wtime();
  const FftwPlan f_forward(fftw_mpi_plan_transpose(nx, lines, f_planes.get(), f_pencils.get(), MPI_COMM_WORLD, flags));
  const FftwPlan f_backward(fftw_mpi_plan_transpose(lines, nx, f_pencils.get(), f_back.get(), MPI_COMM_WORLD, flags));
  const double planning_s = MPI_Wtime() - planning0;
  fill_planes(g, {f_planes.get(), planes_n});
  candidates.push_back({"fftw", [&] { f_forward.execute(); }, [&] { f_backward.execute(); },
                        [&] {
                          // Planning and the timed runs may have overwritten the input: fresh data.
                          fill_planes(g, {f_planes.get(), planes_n});
                          f_forward.execute();
                          f_backward.execute();
                          return check(g, {f_pencils.get(), pencils_n}, {f_back.get(), planes_n},
                                       [](double v) { return v; });
                        },
                        [&] { return nlohmann::json{{"planning_s", planning_s}, {"flags", args.patient ? "FFTW_PATIENT" : "FFTW_MEASURE"}}; }});

  // hympi: every exchange x wire on its own buffers (all kept, so the runs can alternate).
  // Aligned to cache lines, as fftw_alloc_real aligns FFTW's (to its SIMD width at least).
  hympi::LineAlignedVector<double> planes(planes_n), pencils(pencils_n), back(planes_n);
  fill_planes(g, planes);
  for (const auto wire : {WirePrecision::double_precision, WirePrecision::single_precision}) {
    for (const auto exchange : {TransposeExchange::alltoallv, TransposeExchange::alltoall, TransposeExchange::pairwise}) {
      auto& t = *transposes.emplace_back(std::make_unique<Transpose>(args.n, MPI_COMM_WORLD,
                                                                     TransposeOptions{exchange, wire, {}, threads}));
      const bool single = wire == WirePrecision::single_precision;
      candidates.push_back(
          {to_string(exchange) + "/" + to_string(wire), [&] { t.planes_to_pencils(planes, pencils); },
           [&] { t.pencils_to_planes(pencils, back); },
           [&, single] {
             t.planes_to_pencils(planes, pencils);
             t.pencils_to_planes(pencils, back);
             return check(g, pencils, back,
                          [single](double v) { return single ? static_cast<double>(static_cast<float>(v)) : v; });
           },
           [&] {
             const std::string tiles = to_string(t.options().tile) + " / " + to_string(t.options().backward_tile);
             return nlohmann::json{{"options", t.options().to_json()}, {"tiles", tiles}, {"times", t.times().to_json()}};
           }});
    }
  }

  // Warm-up (first touch, FFTW's and hympi's first calls, hympi's tile measurement), then the timed
  // repetitions, candidates alternating inside each repetition so that load changes hit all alike.
  for (auto& c : candidates) {
    c.forward();
    c.backward();
  }
  for (auto& t : transposes) t->reset_times();
  const auto k = candidates.size();
  const auto reps = static_cast<std::size_t>(args.reps);
  std::vector<double> seconds(2 * k * reps);
  for (std::size_t r = 0; r < reps; ++r) {
    for (std::size_t i = 0; i < k; ++i) {
      HYMPI_MPI(MPI_Barrier(MPI_COMM_WORLD));
      const double t0 = MPI_Wtime();
      candidates[i].forward();
      const double t1 = MPI_Wtime();
      HYMPI_MPI(MPI_Barrier(MPI_COMM_WORLD));
      const double t2 = MPI_Wtime();
      candidates[i].backward();
      seconds[2 * (i * reps + r)] = t1 - t0;
      seconds[2 * (i * reps + r) + 1] = MPI_Wtime() - t2;
    }
  }
  seconds = max_over_ranks(seconds);
  nlohmann::json results = nlohmann::json::array();
  double fftw_round_trip = 0;
  bool verified = true;
  for (std::size_t i = 0; i < k; ++i) {
    std::vector<double> fwd(reps), bwd(reps), both(reps);
    for (std::size_t r = 0; r < reps; ++r) {
      fwd[r] = seconds[2 * (i * reps + r)];
      bwd[r] = seconds[2 * (i * reps + r) + 1];
      both[r] = fwd[r] + bwd[r];
    }
    if (i == 0) fftw_round_trip = median(both);
    const nlohmann::json detail = candidates[i].describe();
    const bool ok = all_ranks(candidates[i].verify());
    verified = verified && ok;
    results.push_back({{"name", candidates[i].name}, {"forward_s", median(fwd)}, {"backward_s", median(bwd)},
                       {"round_trip_s", median(both)}, {"ratio_to_fftw", median(both) / fftw_round_trip},
                       {"verified", ok}, {"detail", detail}});
  }
  const nlohmann::json local = local_vs_copy(g, reps, threads);
  if (rank == 0) {
    std::printf("transpose %ld x %ld x %ld (nx x ny x nz), %d ranks x %d threads, %d reps, medians of the max over ranks\n",
                nx, ny, nz, ranks, threads, args.reps);
    std::printf("%-22s %12s %12s %12s %10s %9s  %s\n", "implementation", "forward ms", "backward ms", "round ms",
                "vs FFTW", "verified", "tiles (forward / backward)");
    for (const auto& r : results) {
      const std::string tile = r["detail"].value("tiles", "-");
      std::printf("%-22s %12.3f %12.3f %12.3f %10.3f %9s  %s\n", r["name"].get<std::string>().c_str(),
                  1e3 * r["forward_s"].get<double>(), 1e3 * r["backward_s"].get<double>(),
                  1e3 * r["round_trip_s"].get<double>(), r["ratio_to_fftw"].get<double>(),
                  r["verified"].get<bool>() ? "yes" : "NO", tile.c_str());
    }
    std::printf("local blocked transpose %.2f GB/s, STREAM copy %.2f GB/s (same %ld doubles per rank, tile %s): ratio %.3f\n",
                local["transpose_gbs"].get<double>(), local["copy_gbs"].get<double>(), local["elements"].get<long>(),
                local["tile"].get<std::string>().c_str(), local["ratio"].get<double>());
    const nlohmann::json record{{"grid", args.n}, {"ranks", ranks}, {"threads", threads}, {"reps", args.reps},
                                {"verified", verified}, {"results", results}, {"local", local}};
    std::printf("HYMPI_BENCH %s\n", record.dump().c_str());
  }
  return verified ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  fftw_mpi_init();
  int rank = 0, ranks = 1, code = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (hympi::bench::asks_for_help(argc, argv)) {
    if (rank == 0) std::printf("usage: hympi-bench-transpose %s\n", kUsage);
  } else {
    try {
      hympi::check_openmp_environment();
      code = run(parse_args(argc, argv), rank, ranks);
    } catch (const InvalidArgument& e) {
      // Arguments are the same on every rank, so every rank gets here before any communication.
      if (rank == 0) std::fprintf(stderr, "hympi-bench-transpose: error: %s\n", e.what());
      code = 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hympi-bench-transpose: rank %d: error: %s\n", rank, e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  fftw_mpi_cleanup();
  MPI_Finalize();
  return hympi::flushed_output("hympi-bench-transpose", code);
}

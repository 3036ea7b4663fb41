#include "hympi/npb/npb_mz.hpp"

#include "hympi/core/error.hpp"
#include "hympi/npb/bt.hpp"
#include "hympi/npb/lu.hpp"
#include "hympi/npb/sp.hpp"
#include "hympi/npb/zone_exchange.hpp"

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <memory>
#include <regex>
#include <sstream>

#ifndef HYMPI_DATA_DIR
#define HYMPI_DATA_DIR "data"
#endif

namespace hympi::npb {

namespace {
// LU-MZ's SSOR relaxation factor (omega_default of the reference).
constexpr double kLuOmega = 1.2;
}  // namespace

MopsFormula MopsFormula::parse(const std::string& text, bool single_precision_average) {
  MopsFormula f;
  f.single_precision_average = single_precision_average;
  // Terms look like "+ 3478.8*n3" or "- 144010.0"; anything else is rejected.
  static const std::regex term(R"(\s*([+-]?)\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*(?:\*\s*(n3|nsur|navg))?\s*)");
  std::string rest = text;
  std::smatch m;
  bool any = false;
  while (!rest.empty() && std::regex_search(rest, m, term, std::regex_constants::match_continuous)) {
    if (m.length(0) == 0) break;
    const double value = (m[1] == "-" ? -1.0 : 1.0) * std::stod(m[2]);
    const std::string var = m[3];
    if (var == "n3") f.n3 += value;
    else if (var == "nsur") f.nsur += value;
    else if (var == "navg") f.navg += value;
    else f.constant += value;
    rest = m.suffix();
    any = true;
  }
  if (!any || !rest.empty()) throw InvalidArgument("cannot parse Mop/s formula '" + text + "'");
  return f;
}

nlohmann::json ClassParams::to_json() const {
  return nlohmann::json{{"benchmark", to_string(benchmark)},
                        {"class", problem_class},
                        {"niter", niter},
                        {"dt", dt},
                        {"x_zones", geometry.x_zones},
                        {"y_zones", geometry.y_zones},
                        {"gx_size", geometry.gx_size},
                        {"gy_size", geometry.gy_size},
                        {"gz_size", geometry.gz_size},
                        {"epsilon", epsilon},
                        {"reference_available", has_reference}};
}

std::string verification_file_path() {
  const char* env = std::getenv("HYMPI_DATA_DIR");
  const std::string dir = (env != nullptr && *env != '\0') ? env : HYMPI_DATA_DIR;
  return dir + "/npb-mz/verification.json";
}

nlohmann::json load_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot open data file " + path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error("cannot parse data file " + path + ": " + e.what());
  }
}

ClassParams load_class_params(const nlohmann::json& data, Benchmark b, const std::string& problem_class) {
  const std::string name = to_string(b);
  if (!data.contains(name)) throw Error("data file has no section for " + name);
  const auto& section = data.at(name);
  if (problem_class.empty() || problem_class[0] == '_' || !section.contains(problem_class)) {
    std::string known;
    for (auto it = section.begin(); it != section.end(); ++it) {
      if (!it.key().empty() && it.key()[0] != '_') known += (known.empty() ? "" : ",") + it.key();
    }
    throw InvalidArgument("unknown class '" + problem_class + "' for " + name + " (known: " + known + ")");
  }
  const auto& c = section.at(problem_class);
  ClassParams p;
  p.benchmark = b;
  p.problem_class = problem_class;
  const ZoneLayout layout = ZoneLayout::from_json(data, name, problem_class);
  p.geometry = layout.geometry();
  p.niter = c.contains("niter") ? c.at("niter").get<int>() : c.at("itmax").get<int>();
  p.dt = c.at("dt").get<double>();
  p.has_reference = c.contains("xcrref") && c.contains("xceref");
  if (p.has_reference) {
    p.niter_ref = c.at("verify_iterations_ref").get<int>();
    p.dt_ref = c.at("verify_dtref").get<double>();
    p.epsilon = c.value("epsilon", data.at("_meta").value("epsilon", 1e-8));
    for (int m = 0; m < 5; ++m) {
      p.xcr_ref[m] = c.at("xcrref").at(m).get<double>();
      p.xce_ref[m] = c.at("xceref").at(m).get<double>();
    }
    if (b == Benchmark::lu) p.xci_ref = c.at("xciref").get<double>();
  }
  p.mops = MopsFormula::parse(section.at("_mops_formula").at("per_zone_per_iter").get<std::string>(),
                              b != Benchmark::lu);
  return p;
}

Verification verify(const ClassParams& p, int niter, double dt, const std::array<double, 5>& xcr,
                    const std::array<double, 5>& xce, double xci) {
  Verification v;
  v.xcr = xcr;
  v.xce = xce;
  v.xci = xci;
  v.reference_available = p.has_reference;
  if (!p.has_reference) return v;
  v.dt_ok = std::abs(dt - p.dt_ref) <= p.epsilon;
  v.niter_ok = niter == p.niter_ref;
  bool ok = v.dt_ok && v.niter_ok;
  // Written so that NaN fails: a comparison with NaN is false.
  for (int m = 0; m < 5; ++m) {
    v.xcr_diff[m] = std::abs((xcr[m] - p.xcr_ref[m]) / p.xcr_ref[m]);
    v.xce_diff[m] = std::abs((xce[m] - p.xce_ref[m]) / p.xce_ref[m]);
    if (!(v.xcr_diff[m] <= p.epsilon)) ok = false;
    if (!(v.xce_diff[m] <= p.epsilon)) ok = false;
  }
  if (p.benchmark == Benchmark::lu) {
    v.xci_diff = std::abs((xci - p.xci_ref) / p.xci_ref);
    if (!(v.xci_diff <= p.epsilon)) ok = false;
  }
  v.passed = ok;
  return v;
}

void Verification::print(std::ostream& os, const ClassParams& p) const {
  char line[160];
  os << " Verification being performed for class " << p.problem_class << "\n";
  if (!reference_available) {
    os << " No reference values for this class\n";
    return;
  }
  std::snprintf(line, sizeof line, " accuracy setting for epsilon = %20.13E\n", p.epsilon);
  os << line;
  if (!dt_ok) {
    std::snprintf(line, sizeof line, " DT does not match the reference value of %15.8E\n", p.dt_ref);
    os << line;
  } else if (!niter_ok) {
    std::snprintf(line, sizeof line, " NITER does not match the reference value of %5d\n", p.niter_ref);
    os << line;
  }
  auto block = [&](const char* title, const std::array<double, 5>& val, const std::array<double, 5>& ref,
                   const std::array<double, 5>& diff) {
    os << " Comparison of " << title << "\n";
    for (int m = 0; m < 5; ++m) {
      const bool good = diff[m] <= p.epsilon;
      std::snprintf(line, sizeof line, " %s %2d%20.13E%20.13E%20.13E\n", good ? "         " : "FAILURE: ", m + 1,
                    val[m], ref[m], diff[m]);
      os << line;
    }
  };
  block("RMS-norms of residual", xcr, p.xcr_ref, xcr_diff);
  block("RMS-norms of solution error", xce, p.xce_ref, xce_diff);
  if (p.benchmark == Benchmark::lu) {
    os << " Comparison of surface integral\n";
    std::snprintf(line, sizeof line, " %s    %20.13E%20.13E%20.13E\n", xci_diff <= p.epsilon ? "         " : "FAILURE: ",
                  xci, p.xci_ref, xci_diff);
    os << line;
  }
  os << (passed ? " Verification Successful\n" : " Verification failed\n");
}

nlohmann::json Verification::to_json() const {
  nlohmann::json j{{"passed", passed},     {"reference_available", reference_available},
                   {"dt_ok", dt_ok},       {"niter_ok", niter_ok},
                   {"xcr", xcr},           {"xce", xce},
                   {"xcr_diff", xcr_diff}, {"xce_diff", xce_diff}};
  j["xci"] = xci;
  j["xci_diff"] = xci_diff;
  return j;
}

double mops_total(const ClassParams& p, const ZoneLayout& layout, int niter, double seconds) {
  if (seconds <= 0.0) return 0.0;
  double sum = 0.0;
  for (const auto& z : layout.zones()) {
    const double n3 = double(z.nx) * z.ny * z.nz;
    double navg, nsur;
    if (p.mops.single_precision_average) {
      // BT/SP: Fortran divides the integer sums by the REAL literal 3.0, i.e. in single precision.
      navg = double(float(z.nx + z.ny + z.nz) / 3.0f);
      nsur = double(float(z.nx * z.ny + z.nx * z.nz + z.ny * z.nz) / 3.0f);
    } else {
      navg = (z.nx + z.ny + z.nz) / 3.0;
      nsur = (z.nx * z.ny + z.nx * z.nz + z.ny * z.nz) / 3.0;
    }
    sum += double(niter) * 1.0e-6 * (p.mops.n3 * n3 + p.mops.nsur * nsur + p.mops.navg * navg + p.mops.constant) /
           seconds;
  }
  return sum;
}

nlohmann::json MzOptions::to_json() const {
  return nlohmann::json{{"niter", niter}, {"perturb", perturb}};
}

MzResult run_mz(const ClassParams& p, const ZoneLayout& layout, const ZonePartition& partition, MPI_Comm comm,
                const MzOptions& options, std::ostream* log) {
  int rank = 0;
  int size = 0;
  HYMPI_MPI(MPI_Comm_rank(comm, &rank));
  HYMPI_MPI(MPI_Comm_size(comm, &size));
  if (size != partition.num_ranks()) {
    throw InvalidArgument("communicator has " + std::to_string(size) + " ranks, partition " +
                          std::to_string(partition.num_ranks()));
  }
  const int niter = options.niter > 0 ? options.niter : p.niter;
  omp_set_num_threads(partition.threads(rank));

  const CfdConstants cfd = CfdConstants::make(p.geometry, p.dt);
  const LuConstants luc = LuConstants::make(p.geometry, p.dt, kLuOmega);
  std::vector<std::unique_ptr<ZoneSolver>> zones;
  for (int id : partition.zones_of(rank)) {
    const ZoneDims dims = ZoneDims::of(layout.zone(id));
    switch (p.benchmark) {
      case Benchmark::bt: zones.push_back(std::make_unique<BtZone>(cfd, dims)); break;
      case Benchmark::sp: zones.push_back(std::make_unique<SpZone>(cfd, dims)); break;
      case Benchmark::lu: zones.push_back(std::make_unique<LuZone>(luc, dims)); break;
    }
  }
  std::vector<double*> fields;
  for (auto& z : zones) fields.push_back(z->field());
  ZoneExchange exchange(layout, partition, comm, 5);

  for (auto& z : zones) z->initialize();
  // One untimed step touches every page and code path, then the fields start over (as NPB).
  exchange.exchange(fields);
  for (auto& z : zones) z->step();
  for (auto& z : zones) z->initialize();

  HYMPI_MPI(MPI_Barrier(comm));
  double t_exchange = 0.0;
  const double t0 = MPI_Wtime();
  for (int step = 1; step <= niter; ++step) {
    if (log != nullptr && options.progress && rank == 0 && (step % 20 == 0 || step == 1 || step == niter)) {
      *log << " Time step " << std::setw(4) << step << "\n" << std::flush;
    }
    const double te = MPI_Wtime();
    exchange.exchange(fields);
    t_exchange += MPI_Wtime() - te;
    for (auto& z : zones) z->step();
  }
  for (auto& z : zones) z->finish_timed();
  const double t_local = MPI_Wtime() - t0;
  // A corrupted final state must not verify; tests use this to prove the check can fail.
  if (options.perturb != 0.0 && rank == 0 && !zones.empty()) zones.front()->perturb(options.perturb);

  double local[11] = {};
  for (auto& z : zones) {
    const ZoneNorms n = z->norms();
    for (int m = 0; m < 5; ++m) {
      local[m] += n.residual[m];
      local[5 + m] += n.error[m];
    }
    local[10] += n.surface;
  }
  double global[11] = {};
  HYMPI_MPI(MPI_Allreduce(local, global, 11, MPI_DOUBLE, MPI_SUM, comm));
  double times[2] = {t_local, t_exchange};
  double tmax[2] = {};
  HYMPI_MPI(MPI_Allreduce(times, tmax, 2, MPI_DOUBLE, MPI_MAX, comm));

  MzResult r;
  r.niter = niter;
  r.seconds = tmax[0];
  r.exchange_seconds = tmax[1];
  r.local_seconds = t_local;
  r.local_exchange_seconds = t_exchange;
  std::array<double, 5> xcr{}, xce{};
  for (int m = 0; m < 5; ++m) {
    xcr[m] = global[m];
    xce[m] = global[5 + m];
  }
  r.verification = verify(p, niter, p.dt, xcr, xce, global[10]);
  r.mops = mops_total(p, layout, niter, r.seconds);
  return r;
}

void print_header(std::ostream& os, const ClassParams& p, int niter, int nranks, int total_threads) {
  std::string upper = to_string(p.benchmark);
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  char line[160];
  os << "\n\n NAS Parallel Benchmarks (NPB3.4-MZ MPI+OpenMP, hympi C++ port) - " << upper << " Benchmark\n\n";
  std::snprintf(line, sizeof line, " Number of zones: %3d x %3d\n", p.geometry.x_zones, p.geometry.y_zones);
  os << line;
  std::snprintf(line, sizeof line, " Total mesh size: %5d x %5d x %3d\n", p.geometry.gx_size, p.geometry.gy_size,
                p.geometry.gz_size);
  os << line;
  std::snprintf(line, sizeof line, " Iterations: %3d    dt: %10.6f\n", niter, p.dt);
  os << line;
  std::snprintf(line, sizeof line, " Number of active processes: %6d\n", nranks);
  os << line;
  std::snprintf(line, sizeof line, " Total number of threads: %6d  (%5.1f threads/process)\n\n", total_threads,
                double(total_threads) / nranks);
  os << line;
}

void print_report(std::ostream& os, const ClassParams& p, const MzResult& r, int nranks, int total_threads) {
  std::string upper = to_string(p.benchmark);
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  char line[200];
  r.verification.print(os, p);
  os << "\n\n " << upper << " Benchmark Completed.\n";
  std::snprintf(line, sizeof line, " Class           =                        %s\n", p.problem_class.c_str());
  os << line;
  std::snprintf(line, sizeof line, " Size            =             %5d x%5d x%4d\n", p.geometry.gx_size,
                p.geometry.gy_size, p.geometry.gz_size);
  os << line;
  std::snprintf(line, sizeof line, " Zones           =                   %5d x%5d\n", p.geometry.x_zones,
                p.geometry.y_zones);
  os << line;
  std::snprintf(line, sizeof line, " Iterations      =             %12d\n", r.niter);
  os << line;
  std::snprintf(line, sizeof line, " Time in seconds =             %12.2f\n", r.seconds);
  os << line;
  std::snprintf(line, sizeof line, " Total processes =             %12d\n", nranks);
  os << line;
  std::snprintf(line, sizeof line, " Total threads   =             %12d\n", total_threads);
  os << line;
  std::snprintf(line, sizeof line, " Mop/s total     =             %12.2f\n", r.mops);
  os << line;
  std::snprintf(line, sizeof line, " Mop/s/process   =             %12.2f\n", r.mops / nranks);
  os << line;
  std::snprintf(line, sizeof line, " Mop/s/thread    =             %12.2f\n", r.mops / total_threads);
  os << line;
  os << " Operation type  =           floating point\n";
  if (!r.verification.reference_available) {
    os << " Verification    =               UNVERIFIED (no reference for this class)\n";
  } else {
    os << " Verification    =             " << std::setw(12) << (r.verification.passed ? "SUCCESSFUL" : "UNSUCCESSFUL")
       << "\n";
  }
  os << std::flush;
}

}  // namespace hympi::npb

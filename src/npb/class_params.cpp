#include "hympi/npb/class_params.hpp"

#include "hympi/core/error.hpp"

#include <cstdlib>
#include <fstream>

#ifndef HYMPI_DATA_DIR
#define HYMPI_DATA_DIR "data"
#endif

namespace hympi::npb {

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
  // The path comes from --data or HYMPI_DATA_DIR: every way it can be wrong is the user's input (exit 2).
  if (const std::string problem = file_problem(path); !problem.empty())
    throw InvalidArgument("data file " + path + " " + problem);
  std::ifstream in(path);
  if (!in) throw InvalidArgument("cannot open data file " + path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument("data file " + path + " is not valid JSON: " + printable(e.what(), 200));
  }
}

namespace {

/// `c[key]`, a count of steps from 1 to 10^7; throws naming the key otherwise (a fraction was truncated, and a
/// count below 1 failed only inside the run, after its banner).
int step_count(const nlohmann::json& c, const char* key) {
  const nlohmann::json& value = c.at(key);
  if (!value.is_number_integer() || value.get<long long>() < 1 || value.get<long long>() > 10'000'000)
    throw Error(std::string(key) + " = " + printable(value.dump()) + " is not a count of steps from 1 to 10^7");
  return value.get<int>();
}

}  // namespace

ClassParams load_class_params(const nlohmann::json& data, Benchmark b, const std::string& problem_class) {
  const std::string name = to_string(b);
  if (!data.contains(name)) throw Error("no section for " + name);
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
  p.geometry = ZoneGrid::from_json(data, name, problem_class).geometry();
  p.niter = step_count(c, c.contains("niter") ? "niter" : "itmax");
  p.dt = c.at("dt").get<double>();
  p.has_reference = c.contains("xcrref") && c.contains("xceref");
  p.geometry_only = c.value("geometry_only", false);
  if (p.has_reference) {
    p.niter_ref = step_count(c, "verify_iterations_ref");
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

ClassParams load_class_params(Benchmark b, const std::string& problem_class, const std::string& data_file) {
  const std::string path = data_file.empty() ? verification_file_path() : data_file;
  const nlohmann::json data = load_json_file(path);
  try {
    return load_class_params(data, b, problem_class);
  } catch (const InvalidArgument& e) {
    // An unknown class: the user's --class first, named with the known ones, then the file that lacks it.
    throw InvalidArgument(std::string(e.what()) + " in data file " + path);
  } catch (const std::exception& e) {
    // A missing key or a value of the wrong type: the file is malformed, so name it.
    throw InvalidArgument("data file " + path + " (" + to_string(b) + " class " + problem_class + "): " + e.what());
  }
}

}  // namespace hympi::npb

// hympi-mpit: the MPI library's control variables (MPI_T cvars), i.e. what a tune may set.
// Run it under mpirun with >= 2 ranks: shared-memory components (and their cvars) open only then.
#include <iomanip>
#include <iostream>
#include <optional>

#include "hympi/app/app.hpp"
#include "hympi/core/environment.hpp"
#include "hympi/mpit/cvars.hpp"

namespace {

void print_table(const std::vector<hympi::mpit::Cvar>& cvars) {
  std::cout << std::left << std::setw(48) << "name" << std::setw(20) << "datatype" << std::setw(12) << "scope"
            << "value\n";
  for (const auto& c : cvars) {
    std::string value = c.value.value_or("-");
    if (!c.enum_items.empty()) {
      value += "  (";
      for (std::size_t i = 0; i < c.enum_items.size(); ++i) value += (i > 0 ? "|" : "") + c.enum_items[i];
      value += ")";
    }
    std::cout << std::setw(48) << c.name << std::setw(20) << c.datatype << std::setw(12) << c.scope << value
              << "\n";
  }
}

/// The command, before its output is flushed.
int run(int argc, char** argv) {
  const std::string prog = "hympi-mpit";
  hympi::CommandLine command_line(
      "The MPI library's control variables (MPI_T cvars): name, type, value, scope, description", prog);
  hympi::OptionSet& cli = command_line.options();
  bool json = false;
  std::string grep;
  cli.flag("--json", json, "print every cvar as one JSON object (format hympi-mpit)");
  cli.add("--grep", grep, "only cvars whose name contains this text");
  if (const auto stop = command_line.parse(argc, argv)) return *stop;
  std::optional<hympi::Environment> env;
  try {
    env.emplace(argc, argv, hympi::EnvironmentOptions{hympi::ThreadLevel::single, 1});
    if (env->rank() != 0) return 0;
    const hympi::mpit::Session session;
    auto cvars = hympi::mpit::list_cvars(session);
    std::erase_if(cvars, [&](const hympi::mpit::Cvar& c) { return c.name.find(grep) == std::string::npos; });
    if (!json) {
      print_table(cvars);
      return 0;
    }
    nlohmann::json list = nlohmann::json::array();
    for (const auto& c : cvars) list.push_back(c.to_json());
    const nlohmann::json out = {{"format", "hympi-mpit"}, {"mpi_library", env->mpi_library()}, {"cvars", list}};
    std::cout << out.dump() << std::endl;
    return 0;
  } catch (const std::exception& e) {
    return hympi::error_exit_code(prog, e);
  }
}

}  // namespace

int main(int argc, char** argv) { return hympi::flushed_output("hympi-mpit", run(argc, argv)); }

#include "hympi/app/app.hpp"

#include <omp.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "hympi/core/error.hpp"

namespace hympi {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

std::string physical_host() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

/// Threads per rank that `ranks` ranks on this machine would run: what Environment would choose.
int validation_threads(int ranks) {
  if (omp_threads_explicit()) return omp_get_max_threads();
  return machine_default_threads(Topology::this_machine().cores(), ranks, virtual_nodes_from_env());
}

/// Seconds of `text` (from option or variable `source`); throws InvalidArgument naming the value
/// unless it is a finite number >= 0.
double parse_min_time(const std::string& text, const std::string& source) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || value < 0.0)
    throw InvalidArgument(source + " must be a number of seconds >= 0, got " + text);
  return value;
}

/// Binds as asked and verifies every thread really got its intended set.
std::vector<ThreadBinding> bind_threads(const Environment& env, const Topology& topology,
                                        const AffinityOptions& affinity) {
  const BindingPlan plan =
      plan_binding(topology, affinity, env.machine_rank(), env.machine_size(), env.threads());
  apply_binding(topology, plan);
  auto rows = observe_binding(topology, plan, env.rank(), env.host(), physical_host());
  for (const auto& row : rows)
    if (affinity.bind != BindPolicy::none && row.bound_set != row.intended_set)
      throw TopologyError("rank " + std::to_string(row.rank) + " thread " + std::to_string(row.thread) +
                          " is bound to " + row.bound_set + " instead of " + row.intended_set);
  return rows;
}

int run_with_mpi(int argc, char** argv, AppDefinition& app, const AffinityOptions& affinity, bool print_bindings,
                 bool require_verified, double min_time_s) {
  const std::string prog = "hympi-" + app.name();
  std::optional<Environment> env;
  try {
    env.emplace(argc, argv, EnvironmentOptions{app.thread_level(), 0});
  } catch (const InvalidArgument& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return 1;
  }
  const bool root = env->rank() == 0;
  try {
    app.validate({env->size(), env->threads()});
  } catch (const InvalidArgument& e) {
    // Validation depends only on options and layout, so every rank fails alike; rank 0 speaks.
    if (root) std::cerr << prog << ": error: " << e.what() << "\n";
    return 2;
  }
  try {
    const Topology topology = Topology::this_machine();
    const auto mine = bind_threads(*env, topology, affinity);
    const auto bindings = gather_binding(env->world(), mine);
    // Threads sharing a PU take turns by scheduler ticks: every timing is then wrong, so say so.
    const PuSharing sharing = root ? assess_pu_sharing(bindings, topology.pus()) : PuSharing{};
    if (sharing.oversubscribed)
      std::cerr << prog << ": warning: oversubscribed" << (affinity.oversubscribe ? " (as asked)" : "") << ": "
                << sharing.summary << std::endl;
    if (root && print_bindings) std::cout << format_binding_table(bindings) << std::flush;

    Metrics metrics;
    AppContext context{*env, topology, metrics, affinity, bindings, min_time_s};
    HYMPI_MPI(MPI_Barrier(env->world()));
    ResultRecord record = app.run(context);
    const MetricsSummary summary = metrics.reduce(env->world(), env->node().get());
    const auto hosts = env->hosts();
    if (root) {
      nlohmann::json line = record.to_json();
      line.update({{"threads_default", env->threads_default()},
                   {"oversubscribed", sharing.oversubscribed},
                   {"shared_pus", sharing.shared_pus},
                   {"ranks", env->size()},
                   {"threads", env->threads()},
                   {"bind", to_string(affinity.bind)},
                   {"dist", to_string(affinity.distribution)},
                   {"comm_s", summary.comm_s},
                   {"comp_s", summary.comp_s},
                   {"imbalance", summary.imbalance},
                   {"max_rss_mib", summary.max_rss_mib},
                   {"node_rss_mib", summary.node_rss_mib},
                   {"phases", summary.to_json()},
                   {"hosts", hosts},
                   {"nodes", env->num_nodes()},
                   {"mpi_library", env->mpi_library()},
                   {"threads_level", to_string(env->thread_level())},
                   {"topology_hash", topology.hash()},
                   {"placement", binding_json(bindings)},
                   {"timestamp", utc_timestamp()}});
      std::cout << format_result_line(line) << std::endl;
      if (!record.verified) std::cerr << prog << ": error: verification FAILED\n";
    }
    return require_verified && app.verification_required() && !record.verified ? 1 : 0;
  } catch (const InvalidArgument& e) {
    std::cerr << prog << ": error: " << e.what() << std::endl;
    MPI_Abort(env->world(), 2);
  } catch (const std::exception& e) {
    // A failure on one rank would leave the others waiting in a collective: abort them all.
    std::cerr << prog << ": error on rank " << env->rank() << ": " << e.what() << std::endl;
    MPI_Abort(env->world(), 1);
  }
  return 1;
}

}  // namespace

int run_app(int argc, char** argv, AppDefinition& app) {
  const std::string prog = "hympi-" + app.name();
  CLI::App cli{app.description(), prog};
  std::string bind = env_or("HYMPI_BIND", "core");
  std::string dist = env_or("HYMPI_DIST", "compact");
  int validate_ranks = 0;
  bool print_bindings = false;
  bool allow_unverified = false;
  std::string min_time_text = env_or("HYMPI_MIN_TIME", "1.0");
  cli.add_option("--bind", bind, "binding: none, core, numa or package (env HYMPI_BIND)")->capture_default_str();
  cli.add_option("--dist", dist, "rank distribution: compact or scatter (env HYMPI_DIST)")->capture_default_str();
  cli.add_flag("--placement", print_bindings, "print where every rank and thread runs");
  cli.add_flag("--allow-unverified", allow_unverified, "exit 0 even when verification fails");
  bool oversubscribe = false;
  cli.add_flag("--oversubscribe", oversubscribe, "accept threads sharing PUs (env HYMPI_OVERSUBSCRIBE=1)");
  cli.add_option("--min-time", min_time_text,
                 "seconds of timed kernel work to reach by repeating the kernel, unless the app's count is given "
                 "(0: no minimum; env HYMPI_MIN_TIME)")
      ->type_name("SECONDS")
      ->capture_default_str();
  cli.add_option("--validate-ranks", validate_ranks, "only check the options for this many ranks, without MPI");
  app.add_options(cli);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << cli.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return 2;
  }
  AffinityOptions affinity;
  double min_time_s = 0.0;
  try {
    affinity = {parse_bind_policy(bind), parse_distribution(dist), oversubscribe || oversubscribe_from_env()};
    min_time_s = parse_min_time(min_time_text, cli.count("--min-time") > 0 ? "--min-time" : "HYMPI_MIN_TIME");
    if (cli.count("--validate-ranks") > 0) {
      if (validate_ranks < 1)
        throw InvalidArgument("--validate-ranks must be >= 1, got " + std::to_string(validate_ranks));
      app.validate({validate_ranks, validation_threads(validate_ranks)});
      return 0;
    }
  } catch (const InvalidArgument& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return 1;
  }
  return run_with_mpi(argc, argv, app, affinity, print_bindings, !allow_unverified, min_time_s);
}

}  // namespace hympi

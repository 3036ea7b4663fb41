#include "hympi/app/app.hpp"

#include <hwloc.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include "hympi/contract.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/numbers.hpp"
#include "hympi/mpit/cvars.hpp"
#include "memory.hpp"

namespace hympi {

namespace {

std::string physical_host() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

/// Threads per rank that `ranks` ranks on this machine would run: what Environment would choose.
int validation_threads(int ranks, int virtual_nodes) {
  if (omp_threads_explicit()) return omp_get_max_threads();
  return machine_default_threads(Topology::this_machine().cores(), ranks, virtual_nodes);
}

/// What the frame takes from the options layer.
struct FrameOptions {
  AffinityOptions affinity;
  locality::MemoryPolicy membind = locality::MemoryPolicy::none;
  double min_time_s = 0.0;
  bool repetitions_fixed = false;  ///< the app's repetitions_option() was given
  int virtual_nodes = 1;
  std::vector<std::string> mpit_read;  ///< cvars to read back through MPI_T and report in mpi_cvars
  std::optional<h5::IoOptions> io;     ///< checkpoints, restart, snapshots: apps whose checkpoints() is true
};

/// Whether the run writes checkpoints (and so stages them).
bool checkpointing(const FrameOptions& options) { return options.io && !options.io->checkpoint_path.empty(); }

/// The per-run I/O options of an app that checkpoints, as given on its command line.
struct IoCommandLine {
  h5::IoOptions io;
  std::string sieve_bytes, alignment, transfer, chunk;
  std::vector<std::string> hints;
};

/// A cadence given on the command line: a number of steps >= 1. IoOptions keeps 0 for "none", so an explicit 0,
/// which would write nothing and say nothing, is refused here, where "given" is still known.
std::string check_cadence(const std::string& text) {
  int steps = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), steps);
  if (error == std::errc() && end == text.data() + text.size() && steps >= 1) return "";
  return "must be a number of steps >= 1 (0 would write nothing), got '" + text + "'";
}

void add_io_options(OptionSet& cli, IoCommandLine& line) {
  h5::IoOptions& io = line.io;
  cli.add("--checkpoint", io.checkpoint_path, "write checkpoints to this HDF5 file (atomically replaced)")
      .type_name("PATH");
  cli.add("--checkpoint-every", io.checkpoint_every, "a checkpoint after every N steps (needs --checkpoint)")
      .type_name("N")
      .check("N>=1", check_cadence);
  cli.add("--restart", io.restart_path, "start from this checkpoint (any ranks x threads may have written it)")
      .type_name("PATH");
  cli.add("--snapshot", io.snapshot_prefix,
          "write single-precision snapshots PREFIX-<step>.h5 with the XDMF sidecar PREFIX.xmf")
      .type_name("PREFIX");
  cli.add("--snapshot-every", io.snapshot_every, "a snapshot after every N steps (needs --snapshot)")
      .type_name("N")
      .check("N>=1", check_cadence);
  cli.add("--h5-sieve-bytes", line.sieve_bytes, "HDF5 sieve buffer bytes (env HYMPI_H5_SIEVE_BYTES)");
  cli.add("--h5-alignment", line.alignment, "align datasets to this many bytes (env HYMPI_H5_ALIGNMENT)");
  cli.add("--h5-transfer", line.transfer, "collective or independent (env HYMPI_H5_TRANSFER)");
  cli.add("--h5-chunk", line.chunk, "chunk shape X,Y,Z (env HYMPI_H5_CHUNK)");
  cli.add("--h5-hint", line.hints, "MPI-IO hint KEY=VALUE, repeatable (env HYMPI_H5_HINTS, comma-separated)")
      .type_name("KEY=VALUE");
}

/// A byte count >= 0; throws InvalidArgument naming the text otherwise.
std::size_t byte_count(const std::string& text) {
  const auto value = ascii_integer(text);
  if (!value || *value < 0) throw InvalidArgument("'" + text + "' is not a byte count >= 0");
  return static_cast<std::size_t>(*value);
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

/// The HDF5 options of the options layer; throws InvalidArgument naming the option and value.
h5::H5Options h5_options(const Settings& settings) {
  h5::H5Options out;
  out.sieve_bytes = settings.parse("h5_sieve_bytes", [](const std::string& t) { return byte_count(t); });
  out.alignment = settings.parse("h5_alignment", [](const std::string& t) { return byte_count(t); });
  out.collective = settings.parse("h5_transfer", [](const std::string& t) {
    if (t != "collective" && t != "independent")
      throw InvalidArgument("unknown HDF5 transfer mode '" + t + "' (expected collective, independent)");
    return t == "collective";
  });
  out.chunk = settings.parse("h5_chunk", [](const std::string& t) {
    std::array<long, 3> chunk{0, 0, 0};
    if (t.empty()) return chunk;
    const auto parts = split_commas(t);
    if (parts.size() != 3) throw InvalidArgument("chunk shape '" + t + "' is not X,Y,Z");
    for (std::size_t d = 0; d < 3; ++d) {
      const std::size_t n = byte_count(parts[d]);
      if (n == 0) throw InvalidArgument("chunk shape '" + t + "' has a zero extent");
      chunk[d] = static_cast<long>(n);
    }
    return chunk;
  });
  out.hints = settings.parse("h5_hints", [](const std::string& t) {
    std::vector<std::pair<std::string, std::string>> hints;
    for (const auto& part : split_commas(t)) hints.push_back(h5::parse_hint(part));
    return hints;
  });
  out.validate();
  return out;
}

/// The names of a comma-separated list, blanks around each trimmed; throws InvalidArgument for an empty name.
std::vector<std::string> cvar_names(const std::string& text) {
  std::vector<std::string> out;
  if (text.find_first_not_of(" \t") == std::string::npos) return out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::size_t first = text.find_first_not_of(" \t", start);
    const std::size_t last = text.find_last_not_of(" \t", comma - 1);
    if (first >= comma || last == std::string::npos || last < first)
      throw InvalidArgument("empty cvar name in '" + text + "'");
    out.push_back(text.substr(first, last - first + 1));
    if (comma == text.size()) return out;
    start = comma + 1;
  }
}

/// The frame's options, each checked; throws InvalidArgument naming the option and where it came from.
FrameOptions frame_options(const Settings& settings) {
  FrameOptions out;
  out.affinity.bind = settings.parse("bind", [](const std::string& t) { return parse_bind_policy(t); });
  out.affinity.distribution = settings.parse("dist", [](const std::string& t) { return parse_distribution(t); });
  out.affinity.oversubscribe = settings.flag("oversubscribe");
  out.membind = settings.parse("membind", [](const std::string& t) { return locality::parse_memory_policy(t); });
  out.min_time_s = settings.seconds("min_time");
  out.virtual_nodes = settings.positive_int("virtual_nodes");
  out.mpit_read = settings.parse("mpit_read", [](const std::string& t) { return cvar_names(t); });
  return out;
}

/// Refuses more virtual nodes than this machine runs ranks: each needs one, and fewer nodes than asked would be
/// measured without a word (the node map would leave the rest out).
void check_virtual_nodes(int virtual_nodes, int machine_ranks) {
  if (virtual_nodes > machine_ranks)
    throw InvalidArgument("HYMPI_VIRTUAL_NODES=" + std::to_string(virtual_nodes) + ": this machine runs only " +
                          std::to_string(machine_ranks) + " rank(s), and every virtual node needs at least one");
}

/// Binds as asked and verifies every thread really got its intended set.
std::vector<ThreadBinding> bind_threads(const Environment& env, const Topology& topology,
                                        const AffinityOptions& affinity, const BindingPlan& plan) {
  apply_binding(topology, plan);
  auto rows = observe_binding(topology, plan, env.rank(), env.host(), physical_host());
  for (const auto& row : rows)
    if (affinity.bind != BindPolicy::none && row.bound_set != row.intended_set)
      throw TopologyError("rank " + std::to_string(row.rank) + " thread " + std::to_string(row.thread) +
                          " is bound to " + row.bound_set + " instead of " + row.intended_set);
  return rows;
}

int run_with_mpi(int argc, char** argv, AppDefinition& app, const FrameOptions& options, bool print_bindings,
                 bool require_verified) {
  const std::string prog = "hympi-" + app.name();
  const AffinityOptions& affinity = options.affinity;
  std::optional<Environment> env;
  try {
    env.emplace(argc, argv, EnvironmentOptions{app.thread_level(), options.virtual_nodes});
  } catch (const std::exception& e) {
    return error_exit_code(prog, e);
  }
  const bool root = env->rank() == 0;
  {
    // The memory check depends on each node's memory and rank count, so ranks may disagree: all agree on the
    // outcome (no rank left waiting in a collective), and the lowest failing rank speaks.
    std::string refusal;
    try {
      check_virtual_nodes(options.virtual_nodes, env->machine_size());
      validate_layout(app, {env->size(), env->threads()}, env->machine_size(), checkpointing(options));
    } catch (const InvalidArgument& e) {
      refusal = e.what();
    }
    const int mine = refusal.empty() ? env->size() : env->rank();
    int first = env->size();
    try {
      HYMPI_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, env->world()));
    } catch (const std::exception& e) {
      return error_exit_code(prog, e);
    }
    if (first < env->size()) {
      if (env->rank() == first) print_error(prog, refusal);
      return 2;
    }
  }
  try {
    const Topology topology = Topology::this_machine();
    const BindingPlan plan =
        plan_binding(topology, affinity, env->machine_rank(), env->machine_size(), env->threads());
    const auto mine = bind_threads(*env, topology, affinity, plan);
    // After binding (local means the node of the PU each thread now runs on), before the app allocates.
    PagePlacementProbe placement(topology, apply_memory_policy(topology, options.membind, plan));
    const auto bindings = gather_binding(env->world(), mine);
    // Threads sharing a PU take turns by scheduler ticks: every timing is then wrong, so say so.
    const PuSharing sharing = root ? assess_pu_sharing(bindings, topology.pus()) : PuSharing{};
    if (sharing.oversubscribed)
      print_error(prog, std::string("oversubscribed") + (affinity.oversubscribe ? " (as asked)" : "") + ": " +
                            sharing.summary, "warning");
    if (root && print_bindings) std::cout << format_binding_table(bindings) << std::flush;

    // Read after MPI_Init, when the library has applied its parameters: a value the user set but the
    // library ignored shows up here as the library's own value.
    std::optional<nlohmann::json> cvars;
    if (root && !options.mpit_read.empty()) {
      const mpit::Session session;
      cvars = mpit::read_cvars_json(session, options.mpit_read);
    }

    Metrics metrics;
    metrics.set_memory_probe(&placement);
    AppContext context{*env, topology, metrics, affinity, bindings, options.min_time_s, options.repetitions_fixed};
    std::optional<h5::IoSession> io;
    if (options.io) {
      io.emplace(env->world(), *options.io, app.name(), app.problem_size(),
                 std::to_string(env->size()) + "x" + std::to_string(env->threads()),
                 [&app](const std::string& path, const h5::CheckpointHeader& header) {
                   app.check_restart(path, header);
                 });
      context.io = &*io;
      if (!options.io->checkpoint_path.empty() || io->restarting()) context.min_time_s = 0.0;
    }
    HYMPI_MPI(MPI_Barrier(env->world()));
    ResultRecord record = app.run(context);
    if (io) io->finish();  // the last checkpoint under its name before the run reports
    record.repetitions_fixed = context.repetitions_fixed;
    record.min_time_s = context.min_time_s;
    const MetricsSummary summary = metrics.reduce(env->world(), env->node().get());
    const nlohmann::json pages = placement.gather(env->world());
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
                   {"membind", to_string(options.membind)},
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
                   {"binding", binding_json(bindings)},
                   {"timestamp", utc_timestamp()}});
      if (cvars) line["mpi_cvars"] = *cvars;
      if (io) line["io"] = io->to_json();
      if (!pages.is_null()) line["page_placement"] = pages;
      std::cout << format_result_line(line) << std::endl;
      // A run that asked for no verification (rb3d's --verify none) is unverified, not failed: its own output
      // says SKIPPED, and the result's "verified": false keeps it out of every comparison.
      if (!record.verified && app.verification_required()) print_error(prog, "verification FAILED");
    }
    return require_verified && app.verification_required() && !record.verified ? 1 : 0;
  } catch (const h5::BadFile& e) {
    // hympi::h5 throws these on every rank alike: stop cleanly, one line, no abort.
    if (root) print_error(prog, e.what());
    return 2;
  } catch (const h5::IoError& e) {
    if (root) print_error(prog, e.what());
    return 1;
  } catch (const InvalidArgument& e) {
    print_error(prog, e.what());
    MPI_Abort(env->world(), 2);
  } catch (const std::exception& e) {
    // A failure on one rank would leave the others waiting in a collective: abort them all.
    print_error(prog, e.what(), "error on rank " + std::to_string(env->rank()));
    MPI_Abort(env->world(), 1);
  }
  return 1;
}

/// Bytes as GiB with one decimal, for messages; beyond a million GiB (a typo's size) in three digits and an exponent.
std::string gib(double bytes) {
  char text[48];
  const double value = bytes / double(1u << 30);
  std::snprintf(text, sizeof text, value < 1e6 ? "%.1f GiB" : "%.3g GiB", value);
  return text;
}

}  // namespace

void check_memory(const MemoryEstimate& estimate, int ranks, int ranks_on_node, double node_bytes) {
  if (estimate.rank_bytes <= 0 && estimate.total_bytes <= 0) return;
  // A node holds ranks_on_node ranks, never more than all of them; the largest rank bounds each one.
  const int on_node = std::clamp(ranks_on_node, 1, std::max(ranks, 1));
  const double node = on_node >= ranks ? std::max(estimate.total_bytes, estimate.rank_bytes)
                                       : std::min(estimate.total_bytes, estimate.rank_bytes * on_node);
  if (estimate.rank_bytes > node_bytes || node > node_bytes)
    throw InvalidArgument(estimate.counted + " needs an estimated " + gib(node) + " on this machine (" +
                          std::to_string(on_node) + " rank(s), up to " + gib(estimate.rank_bytes) +
                          " each), more than its " + gib(node_bytes) + " of memory");
}

void check_memory_here(const MemoryEstimate& estimate, int ranks, int ranks_on_node) {
  if (estimate.rank_bytes <= 0 && estimate.total_bytes <= 0) return;  // no topology to load for nothing
  const Topology machine = Topology::this_machine();
  check_memory(estimate, ranks, ranks_on_node, static_cast<double>(hwloc_get_root_obj(machine.get())->total_memory));
}

int ranks_on_this_machine(int ranks) {
  return launcher_integer({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, 1).value_or(ranks);
}

void validate_layout(const AppDefinition& app, const Layout& layout, int ranks_on_node, bool checkpointing) {
  app.validate(layout);
  MemoryEstimate estimate = app.memory_estimate(layout);
  if (const MemoryEstimate staged = app.checkpoint_staging(layout); checkpointing && staged.rank_bytes > 0) {
    estimate.rank_bytes += staged.rank_bytes;
    estimate.total_bytes += staged.total_bytes;
    estimate.counted += ", and a checkpoint's staged copy of " + staged.counted;
  }
  check_memory_here(estimate, layout.ranks, ranks_on_node);
}

std::string AppDefinition::description() const {
  for (const auto& declared : contract::kApps)
    if (declared.name == name()) return std::string(declared.description);
  throw Error("app '" + name() + "' is not declared in contract.toml");
}

nlohmann::json contract_json(const AppDefinition& app) {
  nlohmann::json enums = nlohmann::json::object();
  for (const auto& e : contract::kEnums)
    enums[std::string(e.name)] = std::vector<std::string>(e.texts.begin(), e.texts.end());
  nlohmann::json options = nlohmann::json::array();
  for (const auto& o : contract::kOptions)
    if (o.app) options.push_back({{"key", o.key}, {"env", o.env}, {"default", o.default_text}});
  nlohmann::json fields = nlohmann::json::object();
  for (const auto& f : contract::kResultFields) fields[std::string(f.name)] = {{"required", f.required}};
  return {{"name", app.name()},
          {"binary", "hympi-" + app.name()},
          {"description", app.description()},
          {"enums", enums},
          {"options", options},
          {"result_fields", fields}};
}

int error_exit_code(const std::string& prog, const std::exception& e) {
  if (launched_rank() == 0) print_error(prog, e.what());
  return dynamic_cast<const InvalidArgument*>(&e) != nullptr ? 2 : 1;
}

namespace {

/// run_app before the output is flushed.
int run_app_unflushed(int argc, char** argv, AppDefinition& app) {
  const std::string prog = "hympi-" + app.name();
  CommandLine command_line(app.description(), prog);
  OptionSet& cli = command_line.options();
  // Each frame option's value on the command line, if given; Settings holds the lower layers.
  std::string config_path, bind, dist, membind, min_time_text;
  int validate_ranks = 0;
  bool print_bindings = false;
  bool allow_unverified = false;
  bool oversubscribe = false;
  bool show_config = false;
  bool print_contract = false;
  cli.add("--config", config_path, "config file (default: ./hympi.toml when present; env HYMPI_CONFIG)")
      .type_name("PATH");
  cli.add("--bind", bind, "binding: none, core, numa or package (default core; config bind, env HYMPI_BIND)");
  cli.add("--membind", membind,
          "memory policy: none (first touch), local, interleave or location (the NUMA domain of the rank's "
          "binding); env HYMPI_MEMBIND");
  cli.add("--dist", dist, "rank distribution: compact or scatter (default compact; env HYMPI_DIST)");
  cli.flag("--show-binding", print_bindings, "print where every rank and thread runs (the binding table)");
  cli.flag("--allow-unverified", allow_unverified, "exit 0 even when verification fails");
  cli.flag("--oversubscribe", oversubscribe, "accept threads sharing PUs (env HYMPI_OVERSUBSCRIBE=1)");
  cli.add("--min-time", min_time_text,
          "seconds of timed kernel work to reach by repeating the kernel, unless the app's count is given "
          "(default 1, 0: no minimum; env HYMPI_MIN_TIME)")
      .type_name("SECONDS");
  cli.add("--validate-ranks", validate_ranks, "only check the options for this many ranks, without MPI");
  cli.flag("--show-config", show_config, "print every option's value and where it came from, as JSON");
  cli.flag("--contract", print_contract, "print what this binary declares (contract.toml's view), as JSON");
  IoCommandLine io_line;
  if (app.checkpoints()) add_io_options(cli, io_line);
  app.add_options(cli);
  if (const auto stop = command_line.parse(argc, argv)) return *stop;
  FrameOptions options;
  try {
    if (print_contract) {
      std::cout << contract_json(app).dump(2) << std::endl;
      return 0;
    }
    Settings settings = Settings::load(config_path);
    if (cli.given("--bind")) settings.set_from_command_line("bind", bind);
    if (cli.given("--dist")) settings.set_from_command_line("dist", dist);
    if (cli.given("--membind")) settings.set_from_command_line("membind", membind);
    if (cli.given("--min-time")) settings.set_from_command_line("min_time", min_time_text);
    if (oversubscribe) settings.set_from_command_line("oversubscribe", "true");
    struct H5Flag {
      const char* flag;
      const char* key;
      const std::string* text;
    };
    const H5Flag h5_flags[] = {{"--h5-sieve-bytes", "h5_sieve_bytes", &io_line.sieve_bytes},
                               {"--h5-alignment", "h5_alignment", &io_line.alignment},
                               {"--h5-transfer", "h5_transfer", &io_line.transfer},
                               {"--h5-chunk", "h5_chunk", &io_line.chunk}};
    for (const auto& f : h5_flags)
      if (app.checkpoints() && cli.given(f.flag)) settings.set_from_command_line(f.key, *f.text);
    if (app.checkpoints() && cli.given("--h5-hint")) {
      std::string joined;
      for (const auto& hint : io_line.hints) joined += (joined.empty() ? "" : ",") + hint;
      settings.set_from_command_line("h5_hints", joined);
    }
    if (show_config) {
      std::cout << settings.to_json().dump(2) << std::endl;
      return 0;
    }
    options = frame_options(settings);
    check_openmp_environment();
    const std::string repetitions = app.repetitions_option();
    options.repetitions_fixed = !repetitions.empty() && cli.given(repetitions);
    if (app.checkpoints()) {
      io_line.io.h5 = h5_options(settings);
      io_line.io.validate();
      options.io = io_line.io;
    }
    app.apply_settings(settings);
    if (options.io) {
      std::vector<std::string> inputs = app.input_files();
      inputs.push_back(settings.get("config").text);
      for (const std::string& input : inputs)
        if (const std::string option = h5::option_writing_over(*options.io, input); !option.empty())
          throw InvalidArgument(option + " would write over " + input + ", which this run reads");
    }
    if (cli.given("--validate-ranks")) {
      if (validate_ranks < 1)
        throw InvalidArgument("--validate-ranks must be >= 1, got " + std::to_string(validate_ranks));
      check_virtual_nodes(options.virtual_nodes, ranks_on_this_machine(validate_ranks));
      validate_layout(app, {validate_ranks, validation_threads(validate_ranks, options.virtual_nodes)},
                      ranks_on_this_machine(validate_ranks), checkpointing(options));
      if (options.io && !options.io->restart_path.empty())
        (void)h5::check_checkpoint_file(options.io->restart_path, app.name(), app.problem_size(),
                                        [&app](const std::string& path, const h5::CheckpointHeader& header) {
                                          app.check_restart(path, header);
                                        });
      return 0;
    }
  } catch (const std::exception& e) {
    return error_exit_code(prog, e);
  }
  return run_with_mpi(argc, argv, app, options, print_bindings, !allow_unverified);
}

}  // namespace

int run_app(int argc, char** argv, AppDefinition& app) {
  return flushed_output("hympi-" + app.name(), run_app_unflushed(argc, argv, app));
}

}  // namespace hympi

#pragma once
// The command-line options an app declares, through the frame: only the frame's own sources include CLI11. Its
// header-only parser builds a dozen namespace-scope validators in every source that includes it (some 220
// functions compiled per source, ~5 s of -O1 each), which every app main paid twice per `make test`.
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace hympi {

/// One declared option: refined where it is declared, asked after parsing whether the command line gave it.
class Option {
 public:
  explicit Option(CLI::Option& option) : option_(&option) {}
  /// --help shows the value the option holds when declared.
  Option& show_default();
  /// Takes exactly `count` values (a vector option: --grid 64 64 64).
  Option& values(int count);
  /// Values are split at `separator` too (--split-table 4,8,16).
  Option& separator(char separator);
  /// Accepts only one of `names`.
  Option& one_of(const std::vector<std::string>& names);
  /// Accepts a value only when `check` returns an empty string, else the reason it returns; `type` names the
  /// value in --help (e.g. "N>=1").
  Option& check(const std::string& type, std::function<std::string(const std::string&)> check);
  /// Names the value in --help (e.g. "PATH").
  Option& type_name(const std::string& name);
  /// Refuses a command line that gives both this option and `other`.
  Option& excludes(const Option& other);
  /// Whether the command line gave the option (after parsing).
  [[nodiscard]] bool given() const;

 private:
  CLI::Option* option_;
};

/// Where an app declares its options (AppDefinition::add_options); values land in the variables given.
class OptionSet {
 public:
  explicit OptionSet(CLI::App& cli) : cli_(&cli) {}
  /// An option taking a value (int, long, long long, unsigned long, double, std::string) or values (a
  /// std::vector of int, long or std::string).
  template <class T>
  Option add(const std::string& name, T& value, const std::string& help);
  /// A flag: `value` becomes true when given; a name "!--no-x" sets it false instead.
  Option flag(const std::string& name, bool& value, const std::string& help);
  /// Whether the command line gave option `name` (after parsing).
  [[nodiscard]] bool given(const std::string& name) const;

 private:
  CLI::App* cli_;
};

/// The first of the launcher's environment variables `names` that holds an integer from `minimum` to the largest
/// int, nothing where none does (no launcher, or one that sets none of them). Never throws.
[[nodiscard]] std::optional<int> launcher_integer(std::initializer_list<const char*> names, int minimum) noexcept;

/// The rank the launcher gave this process (Open MPI, PMIx, MPICH's Hydra, Slurm), 0 where none says (no
/// launcher). Errors found before MPI_Init (the command line, the config file, a path) are found alike on every
/// rank, so only this rank 0 says them: one line for the job, not one per rank.
[[nodiscard]] int launched_rank() noexcept;

/// A program's command line: its options, --help and the one-line parse errors (exit 2).
class CommandLine {
 public:
  CommandLine(const std::string& description, const std::string& prog);
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;
  [[nodiscard]] OptionSet& options() { return options_; }
  /// Parses; returns the exit code to stop with (0 after --help, 2 after printing "prog: error: ..." for a parse
  /// error), or nothing when the program goes on. Never throws.
  [[nodiscard]] std::optional<int> parse(int argc, char** argv);

 private:
  std::unique_ptr<CLI::App> cli_;
  std::string prog_;
  OptionSet options_;
};

}  // namespace hympi

#pragma once
// The options layer every app shares with the Python CLI: defaults < config file (hympi.toml in the
// working directory, or --config / HYMPI_CONFIG) < HYMPI_* environment < command line, over the
// options contract.toml declares.
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hympi {

/// One option's effective text and where it came from: "default", "config file PATH", "env VAR" or
/// "command line" (the same words `hympi config` prints).
struct SettingValue {
  std::string text;
  std::string source;
  std::string name;  ///< how errors name it: the variable, the --flag, "FILE: key" or the key
};

/// Reads a variable of the environment (nullptr: unset); a parameter so tests need not touch the real one.
using EnvLookup = std::function<const char*(const char*)>;

/// The contract's options resolved from their defaults, the config file and the environment.
class Settings {
 public:
  /// Resolves every option. `config_path` is --config's value ("" when not given); the file it names (or
  /// HYMPI_CONFIG's) must exist, ./hympi.toml is read only when present. Throws InvalidArgument naming the
  /// file for an unreadable or malformed one, and naming the key for one the contract does not declare.
  static Settings load(const std::string& config_path, const EnvLookup& getenv = default_env());
  /// std::getenv.
  static EnvLookup default_env();

  /// The value of option `key`; throws InvalidArgument for a key the contract does not declare.
  [[nodiscard]] const SettingValue& get(std::string_view key) const;
  /// Gives `key` the command line's `text` (the highest layer); throws InvalidArgument for an undeclared key.
  void set_from_command_line(std::string_view key, std::string text);

  /// A boolean option (true/false, or 1/0 as the environment writes it); throws InvalidArgument naming
  /// the source and value otherwise.
  [[nodiscard]] bool flag(std::string_view key) const;
  /// An integer option >= 1; throws InvalidArgument naming the source and value otherwise.
  [[nodiscard]] int positive_int(std::string_view key) const;
  /// A finite number of seconds >= 0; throws InvalidArgument naming the source and value otherwise.
  [[nodiscard]] double seconds(std::string_view key) const;
  /// Runs `parse` on the option's text; an exception it throws is re-thrown as InvalidArgument with the
  /// option's name (variable, flag or file and key) in front.
  template <class Parse>
  [[nodiscard]] auto parse(std::string_view key, Parse parse) const {
    const SettingValue& value = get(key);
    try {
      return parse(value.text);
    } catch (const std::exception& e) {
      rethrow_named(value, e);
    }
  }

  /// {"key": {"value": text, "source": where}} for every option, in the contract's order.
  [[nodiscard]] nlohmann::json to_json() const;

 private:
  [[noreturn]] static void rethrow_named(const SettingValue& value, const std::exception& e);
  std::map<std::string, SettingValue, std::less<>> values_;
};

}  // namespace hympi

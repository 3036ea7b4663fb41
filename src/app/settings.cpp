#include "hympi/app/settings.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "hympi/contract.hpp"
#include "hympi/core/enum_names.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/numbers.hpp"

namespace hympi {

namespace {

constexpr std::string_view kConfigKey = "config";

const contract::OptionInfo* find_option(std::string_view key) {
  for (const auto& option : contract::kOptions)
    if (option.key == key) return &option;
  return nullptr;
}

bool flag_value(const SettingValue& value) {
  if (value.text == "true" || value.text == "1") return true;
  if (value.text == "false" || value.text == "0" || value.text.empty()) return false;
  throw InvalidArgument(value.name + " must be 0 or 1, got '" + value.text + "'");
}

int positive_int_value(const SettingValue& value) {
  const auto number = ascii_integer(value.text);
  if (!number || *number < 1 || *number > std::numeric_limits<int>::max())
    throw InvalidArgument(value.name + " must be a positive integer, got '" + value.text + "'");
  return static_cast<int>(*number);
}

double seconds_value(const SettingValue& value) {
  const auto read = ascii_number(value.text);
  if (!read) throw InvalidArgument(value.name + ": '" + value.text + "' is not a number of seconds");
  const double number = *read;
  if (!std::isfinite(number) || number < 0.0)
    throw InvalidArgument(value.name + " must be a finite number of seconds >= 0, got " + value.text);
  if (number > contract::kMaxSeconds)
    throw InvalidArgument(value.name + " " + value.text + " exceeds hympi's limit of " +
                          std::to_string(static_cast<long>(contract::kMaxSeconds)) + " seconds (" +
                          std::string(contract::kMaxSecondsReason) + ")");
  return number;
}

/// Throws InvalidArgument naming `value` when its text is not of `option`'s type. Each layer's value is checked as
/// it is read, as the CLI's load_settings does: a bad value in the config file is bad input even where the
/// environment or the command line overrides it (it would be taken the day they do not).
void check_type(const contract::OptionInfo& option, const SettingValue& value) {
  switch (option.type) {
    case contract::OptionType::boolean: (void)flag_value(value); return;
    case contract::OptionType::integer: (void)positive_int_value(value); return;
    case contract::OptionType::seconds: (void)seconds_value(value); return;
    case contract::OptionType::enumeration: {
      const contract::EnumInfo* declared = declared_enum(option.enum_name);
      if (declared == nullptr) throw Error("option " + std::string(option.key) + ": enum not in contract.toml");
      if (std::ranges::find(declared->texts, value.text) == declared->texts.end())
        throw InvalidArgument(value.name + ": " + unknown_name(declared->what, declared->texts, value.text));
      return;
    }
    case contract::OptionType::string:
    case contract::OptionType::path: return;
  }
}

/// The config file to read: --config, else HYMPI_CONFIG (both must exist), else ./hympi.toml if present.
SettingValue config_file(const std::string& from_cli, const EnvLookup& getenv) {
  const contract::OptionInfo* option = find_option(kConfigKey);
  const std::string env = option->env.data();
  const char* from_env = getenv(env.c_str());
  SettingValue chosen{std::string(option->default_text), "default", "config"};
  if (!from_cli.empty())
    chosen = {from_cli, "command line", "--config"};
  else if (from_env != nullptr && *from_env != '\0')
    chosen = {from_env, "env " + env, env};
  // Named by the flag or variable that gave it (the CLI exports --config as HYMPI_CONFIG to the apps it launches,
  // so an app names that variable); a directory, FIFO or device is said to be one, not to be missing.
  if (chosen.source != "default") {
    if (const std::string problem = file_problem(chosen.text); !problem.empty())
      throw InvalidArgument("config file " + chosen.text + " (" + chosen.name + ") " + problem);
  } else if (std::error_code ec; std::filesystem::symlink_status(chosen.text, ec).type() !=
                                 std::filesystem::file_type::not_found) {
    // Present but no file (a directory, a FIFO, a link to nothing): the user meant a config, which would be
    // ignored without a word.
    if (const std::string problem = file_problem(chosen.text); !problem.empty())
      throw InvalidArgument("config file " + chosen.text + " (read when present) " +
                            (problem == "does not exist" ? "is a link to a file that does not exist" : problem));
  }
  return chosen;
}

/// key -> text of every entry of the config file at `path`; throws InvalidArgument naming the file and
/// the first key that is not a single top-level value of a declared option.
std::map<std::string, std::string> read_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InvalidArgument("cannot read config file " + path);
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_config(in);
  } catch (const std::exception& e) {
    throw InvalidArgument("config file " + path + ": " + printable(e.what(), 200));
  }
  std::map<std::string, std::string> out;
  for (const auto& item : items) {
    std::string key;
    for (const auto& parent : item.parents) key += parent + ".";
    if (item.name == "--") continue;  // CLI11's end of a section, already refused at its start
    // A section's start: an empty [sec] has no key to refuse it by, and was accepted without a word.
    key = item.name == "++" ? key.substr(0, key.empty() ? 0 : key.size() - 1) : key + item.name;
    if (!item.parents.empty() || find_option(key) == nullptr || key == kConfigKey)
      throw InvalidArgument("config file " + path + ": unknown key '" + printable(key) + "'");
    if (item.inputs.size() != 1)
      throw InvalidArgument("config file " + path + ": " + key + " must be a single value");
    out[key] = item.inputs.front();
  }
  return out;
}

}  // namespace

EnvLookup Settings::default_env() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

Settings Settings::load(const std::string& config_path, const EnvLookup& getenv) {
  Settings settings;
  const SettingValue config = config_file(config_path, getenv);
  std::map<std::string, std::string> file;
  if (config.source != "default" || std::filesystem::is_regular_file(config.text))
    file = read_config(config.text);
  for (const auto& option : contract::kOptions) {
    const std::string key(option.key);
    const std::string env(option.env);
    SettingValue value{std::string(option.default_text), "default", key};
    if (key == kConfigKey) {
      value = config;
    } else {
      if (auto it = file.find(key); it != file.end()) {
        value = {it->second, "config file " + config.text, config.text + ": " + key};
        check_type(option, value);
      }
      if (const char* text = getenv(env.c_str()); text != nullptr && *text != '\0') {
        value = {text, "env " + env, env};
        check_type(option, value);
      }
    }
    settings.values_[key] = value;
  }
  return settings;
}

const SettingValue& Settings::get(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw InvalidArgument("unknown option '" + std::string(key) + "' (not in contract.toml)");
  return it->second;
}

void Settings::set_from_command_line(std::string_view key, std::string text) {
  (void)get(key);
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  values_[std::string(key)] = {std::move(text), "command line", flag};
}

void Settings::rethrow_named(const SettingValue& value, const std::exception& e) {
  throw InvalidArgument(value.name + ": " + e.what());
}

bool Settings::flag(std::string_view key) const { return flag_value(get(key)); }

int Settings::positive_int(std::string_view key) const { return positive_int_value(get(key)); }

double Settings::seconds(std::string_view key) const { return seconds_value(get(key)); }

nlohmann::json Settings::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& option : contract::kOptions) {
    const SettingValue& value = get(option.key);
    out[std::string(option.key)] = {{"value", value.text}, {"source", value.source}};
  }
  return out;
}

}  // namespace hympi

// The apps' options layer: defaults < config file < HYMPI_* environment < command line.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "hympi/app/settings.hpp"
#include "hympi/core/error.hpp"

namespace {

/// An environment of exactly `vars` (the real one is never read).
hympi::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::string write_config(const std::string& text) {
  const std::string path = testing::TempDir() + "hympi_settings_test.toml";
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(Settings, EachLayerOverridesTheOneBelow) {
  const auto path = write_config("bind = \"numa\"\nmin_time = 0.25\n");
  auto s = hympi::Settings::load("", env_of({}));
  EXPECT_EQ(s.get("bind").text, "core");
  EXPECT_EQ(s.get("bind").source, "default");
  s = hympi::Settings::load(path, env_of({}));
  EXPECT_EQ(s.get("bind").text, "numa");
  EXPECT_DOUBLE_EQ(s.seconds("min_time"), 0.25);
  s = hympi::Settings::load("", env_of({{"HYMPI_CONFIG", path}, {"HYMPI_BIND", "none"}}));
  EXPECT_EQ(s.get("bind").text, "none");
  EXPECT_EQ(s.get("bind").source, "env HYMPI_BIND");
  EXPECT_EQ(s.get("min_time").source, "config file " + path);
  s.set_from_command_line("bind", "package");
  EXPECT_EQ(s.get("bind").text, "package");
  EXPECT_EQ(s.get("bind").source, "command line");
  std::remove(path.c_str());
}

TEST(Settings, UnknownKeysAndBadValuesAreNamed) {
  const auto bad_key = write_config("bogus = 1\n");
  try {
    (void)hympi::Settings::load(bad_key, env_of({}));
    FAIL() << "bogus accepted";
  } catch (const hympi::InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), "config file " + bad_key + ": unknown key 'bogus'");
  }
  const auto section = write_config("[run]\nbind = \"core\"\n");
  EXPECT_THROW((void)hympi::Settings::load(section, env_of({})), hympi::InvalidArgument);
  const auto empty_section = write_config("bind = \"core\"\n[run]\n");
  try {
    (void)hympi::Settings::load(empty_section, env_of({}));
    FAIL() << "an empty section accepted";
  } catch (const hympi::InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), "config file " + empty_section + ": unknown key 'run'");
  }
  EXPECT_THROW((void)hympi::Settings::load("/nonexistent/hympi.toml", env_of({})), hympi::InvalidArgument);
  try {
    (void)hympi::Settings::load("", env_of({{"HYMPI_OVERSUBSCRIBE", "yes"}}));
    FAIL() << "yes accepted";
  } catch (const hympi::InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "HYMPI_OVERSUBSCRIBE must be 0 or 1, got 'yes'");
  }
  EXPECT_THROW((void)hympi::Settings::load("", env_of({{"HYMPI_VIRTUAL_NODES", "0"}})), hympi::InvalidArgument);
  std::remove(bad_key.c_str());
  std::remove(section.c_str());
}

TEST(Settings, SecondsAboveTheContractsLimitAreRefused) {
  // contract.toml [seconds] max: 30 days; an app asked to repeat its kernel for longer refuses before it starts.
  auto s = hympi::Settings::load("", env_of({{"HYMPI_MIN_TIME", "2592000"}}));
  EXPECT_DOUBLE_EQ(s.seconds("min_time"), 2592000.0);
  try {
    (void)hympi::Settings::load("", env_of({{"HYMPI_MIN_TIME", "2592001"}}));
    FAIL() << "2592001 s accepted";
  } catch (const hympi::InvalidArgument& e) {
    EXPECT_STREQ(e.what(),
                 "HYMPI_MIN_TIME 2592001 exceeds hympi's limit of 2592000 seconds (30 days, longer than any run or "
                 "wait hympi measures)");
  }
  s.set_from_command_line("min_time", "1e300");
  EXPECT_THROW((void)s.seconds("min_time"), hympi::InvalidArgument);
}

TEST(Settings, ALayersBadValueIsRefusedWhereAHigherLayerOverridesIt) {
  // As the CLI's load_settings: the config file's value would be taken the day the variable is unset.
  const std::map<std::string, std::string> bad{
      {"min_time = \"abc\"\n", ": min_time: 'abc' is not a number of seconds"},
      {"bind = \"cores\"\n", ": bind: unknown binding 'cores' (expected none, core, numa or package)"},
      {"virtual_nodes = 0\n", ": virtual_nodes must be a positive integer, got '0'"},
      {"ignore_load = \"maybe\"\n", ": ignore_load must be 0 or 1, got 'maybe'"}};
  const auto over = env_of({{"HYMPI_MIN_TIME", "1"}, {"HYMPI_BIND", "core"}, {"HYMPI_VIRTUAL_NODES", "1"},
                            {"HYMPI_IGNORE_LOAD", "0"}});
  for (const auto& [text, words] : bad) {
    const auto path = write_config(text);
    try {
      (void)hympi::Settings::load(path, over);
      FAIL() << text << " accepted";
    } catch (const hympi::InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()), path + words);
    }
    std::remove(path.c_str());
  }
  // A variable the command line overrides: refused by load, before any flag is set.
  EXPECT_THROW((void)hympi::Settings::load("", env_of({{"HYMPI_DIST", "spread"}})), hympi::InvalidArgument);
  // Strings and paths are their readers' to check: a layer below holds any text.
  const auto path = write_config("disturbed_above = \"x\"\nnum_locs = \"y\"\n");
  EXPECT_EQ(hympi::Settings::load(path, env_of({})).get("num_locs").text, "y");
  std::remove(path.c_str());
}

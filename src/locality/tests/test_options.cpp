// HYMPI_NUM_LOCS reaches the locality layer through the apps' options layer (defaults < config
// file < environment < command line), with the option's name in front of any error.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "hympi/app/settings.hpp"
#include "hympi/core/error.hpp"
#include "hympi/locality/locations.hpp"
#include "synthetic_machine.hpp"

using hympi::InvalidArgument;
using hympi::Settings;
using namespace hympi::locality;

namespace {
/// An environment holding only HYMPI_NUM_LOCS=value (nullptr: unset).
hympi::EnvLookup num_locs_env(const char* value) {
  return [value](const char* name) -> const char* {
    return std::strcmp(name, "HYMPI_NUM_LOCS") == 0 ? value : nullptr;
  };
}
LocationsSpec spec_of(const Settings& settings) {
  return settings.parse("num_locs", [](const std::string& text) { return parse_num_locs(text); });
}
}  // namespace

TEST(NumLocsOption, DefaultIsOneLocationPerNumaNode) {
  const auto settings = Settings::load("", num_locs_env(nullptr));
  EXPECT_EQ(settings.get("num_locs").source, "default");
  EXPECT_EQ(spec_of(settings).count, 0);
  EXPECT_EQ(spec_of(settings).level, LocationLevel::numa);
}

TEST(NumLocsOption, EnvironmentAndCommandLine) {
  auto settings = Settings::load("", num_locs_env("3"));
  EXPECT_EQ(settings.get("num_locs").source, "env HYMPI_NUM_LOCS");
  EXPECT_EQ(spec_of(settings).count, 3);
  const auto& topo = hympi::test::four_numa_machine();
  EXPECT_EQ(Locations::from_spec(topo, spec_of(settings)).size(), 3);
  settings.set_from_command_line("num_locs", "package");
  EXPECT_EQ(spec_of(settings).level, LocationLevel::package);
  EXPECT_EQ(Locations::from_spec(topo, spec_of(settings)).size(), 2);
}

TEST(NumLocsOption, ZeroIsRefusedNamingTheVariable) {
  const auto settings = Settings::load("", num_locs_env("0"));
  try {
    (void)spec_of(settings);
    FAIL() << "HYMPI_NUM_LOCS=0 was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(),
                 "HYMPI_NUM_LOCS: number of locations must be an integer >= 1 or numa, package or l3, got '0'");
  }
}

// The C++ side of contract.toml: enum names round-trip, and the result line is checked field by field.
#include <gtest/gtest.h>

#include "hympi/core/affinity.hpp"
#include "hympi/core/environment.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/metrics.hpp"
#include "hympi/core/result.hpp"

namespace {

nlohmann::json full_line() {
  hympi::ResultRecord r;
  r.app = "rb3d";
  r.problem = "8^3";
  nlohmann::json line = r.to_json();
  line.update({{"threads_default", false}, {"oversubscribed", false}, {"shared_pus", 0}, {"ranks", 1},
               {"threads", 1}, {"bind", "core"}, {"dist", "compact"}, {"comm_s", 0.0}, {"comp_s", 0.0},
               {"imbalance", 1.0}, {"max_rss_mib", 1.0}, {"node_rss_mib", 1.0}, {"phases", nlohmann::json::object()},
               {"hosts", {"h"}}, {"nodes", 1}, {"mpi_library", "MPI"}, {"threads_level", "funneled"},
               {"topology_hash", "x"}, {"binding", nlohmann::json::array()}, {"timestamp", "t"}});
  return line;
}

}  // namespace

TEST(Contract, EnumNamesRoundTripAndBadNamesAreNamed) {
  for (auto p : {hympi::BindPolicy::none, hympi::BindPolicy::core, hympi::BindPolicy::numa, hympi::BindPolicy::package})
    EXPECT_EQ(hympi::parse_bind_policy(hympi::to_string(p)), p);
  EXPECT_EQ(hympi::to_string(hympi::PhaseKind::communication), "communication");
  EXPECT_EQ(hympi::parse_thread_level("multiple"), hympi::ThreadLevel::multiple);
  try {
    (void)hympi::parse_bind_policy("socket");
    FAIL() << "socket parsed";
  } catch (const hympi::InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "unknown binding 'socket' (expected none, core, numa or package)");
  }
}

TEST(Contract, ACompleteResultLinePasses) {
  EXPECT_NO_THROW((void)hympi::format_result_line(full_line()));
}

TEST(Contract, AnUndeclaredMissingOrMistypedFieldFails) {
  auto extra = full_line();
  extra["surprise"] = 1;
  EXPECT_THROW((void)hympi::format_result_line(extra), hympi::Error);
  auto missing = full_line();
  missing.erase("rate");
  EXPECT_THROW((void)hympi::format_result_line(missing), hympi::Error);
  auto mistyped = full_line();
  mistyped["ranks"] = "one";
  EXPECT_THROW((void)hympi::format_result_line(mistyped), hympi::Error);
  auto bad_enum = full_line();
  bad_enum["bind"] = "socket";
  EXPECT_THROW((void)hympi::format_result_line(bad_enum), hympi::Error);
}

TEST(Contract, TheBoundFractionIsTheKernelsBandwidthOverTheBound) {
  hympi::ResultRecord r;
  r.app = "spmv3d";
  r.problem = "8x8x8";
  r.time_s = 2.0;
  r.bound = hympi::BandwidthBound{3.0, 4.0, hympi::TriadSource::given};
  // Without a traffic model there is no kernel bandwidth to bound.
  EXPECT_FALSE(r.to_json().contains("bound_fraction"));
  r.bytes_moved = 6e9;  // 3 GB/s over 2 s
  const auto line = r.to_json();
  EXPECT_DOUBLE_EQ(line.at("kernel_gbs").get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(line.at("triad_gbs").get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(line.at("bound_gbs").get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(line.at("bound_fraction").get<double>(), 0.75);  // over bound_gbs, not triad_gbs
  EXPECT_EQ(line.at("triad_source"), "given");
  auto full = full_line();
  full.update(line);
  EXPECT_NO_THROW((void)hympi::format_result_line(full));  // every bound field is declared
}

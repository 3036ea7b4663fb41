#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "hympi/mpit/cvars.hpp"

using hympi::mpit::Cvar;
using hympi::mpit::list_cvars;
using hympi::mpit::read_cvars;
using hympi::mpit::Session;

namespace {

bool open_mpi() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  return std::string(version).find("Open MPI") != std::string::npos;
}

const Cvar* find(const std::vector<Cvar>& cvars, const std::string& name) {
  const auto it = std::find_if(cvars.begin(), cvars.end(), [&](const Cvar& c) { return c.name == name; });
  return it == cvars.end() ? nullptr : &*it;
}

}  // namespace

TEST(ListCvars, EveryCvarOnceWithADeclaredDatatypeAndItsValueReadsBackByName) {
  const Session session;
  const auto cvars = list_cvars(session);
  ASSERT_FALSE(cvars.empty());
  std::set<std::string> names;
  std::vector<std::string> with_value;
  int enum_names = 0;
  const std::set<std::string> datatypes = {"int",  "unsigned", "long", "unsigned_long", "long_long",
                                           "unsigned_long_long", "double", "bool", "string", "other"};
  for (const auto& c : cvars) {
    EXPECT_TRUE(names.insert(c.name).second) << "twice: " << c.name;
    EXPECT_TRUE(datatypes.count(c.datatype)) << c.name << ": " << c.datatype;
    EXPECT_NE(c.scope, "unknown") << c.name;
    EXPECT_NE(c.verbosity, "unknown") << c.name;
    if (c.datatype == "bool" && c.value && c.count == 1) {
      EXPECT_TRUE(*c.value == "true" || *c.value == "false") << c.name << " = " << *c.value;
    }
    // An enum cvar reads as one of its items' names, or in decimal where its value is no single item
    // (Open MPI's flag sets, e.g. btl_vader_flags, OR several items).
    if (!c.enum_items.empty() && c.value && c.count == 1) {
      const bool item = std::count(c.enum_items.begin(), c.enum_items.end(), *c.value) > 0;
      const bool number = c.value->find_first_not_of("-0123456789") == std::string::npos;
      EXPECT_TRUE(item || number) << c.name << " = " << *c.value;
      enum_names += item ? 1 : 0;
    }
    if (c.value) with_value.push_back(c.name);
  }
  ASSERT_FALSE(with_value.empty());
  const bool has_enums = std::any_of(cvars.begin(), cvars.end(), [](const Cvar& c) { return !c.enum_items.empty(); });
  if (has_enums) {
    EXPECT_GT(enum_names, 0) << "no enum cvar reads as an item name";
  }
  const auto read = read_cvars(session, with_value);
  ASSERT_EQ(read.size(), with_value.size());
  for (const auto& name : with_value) EXPECT_EQ(read.at(name), find(cvars, name)->value) << name;
}

TEST(ReadCvars, AnUnknownNameIsAbsentNotAnError) {
  const Session session;
  const std::vector<std::string> names = {"hympi_no_such_cvar"};
  const auto read = read_cvars(session, names);
  ASSERT_EQ(read.size(), 1U);
  EXPECT_FALSE(read.at("hympi_no_such_cvar").has_value());
  EXPECT_EQ(hympi::mpit::read_cvars_json(session, names).dump(), R"({"hympi_no_such_cvar":null})");
}

TEST(Session, SessionsNest) {
  const Session outer;
  const auto before = list_cvars(outer).size();
  { const Session inner; EXPECT_EQ(list_cvars(inner).size(), before); }
  EXPECT_EQ(list_cvars(outer).size(), before);  // the inner session's end did not finalise MPI_T
}

TEST(CheckMpit, AFailingCallIsNamedWithItsErrorCode) {
  try {
    hympi::mpit::check_mpit(MPI_T_ERR_INVALID_INDEX, "MPI_T_cvar_get_info");
    FAIL() << "no exception";
  } catch (const hympi::mpit::MpiTError& e) {
    EXPECT_EQ(e.code(), MPI_T_ERR_INVALID_INDEX);
    EXPECT_NE(std::string(e.what()).find("MPI_T_cvar_get_info failed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("MPI_T_ERR_INVALID_INDEX"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(hympi::mpit::check_mpit(MPI_SUCCESS, "MPI_T_cvar_get_num"));
}

// Run by ctest with OMPI_MCA_btl_vader_eager_limit=8192 and OMPI_MCA_btl_vader_single_copy_mechanism=none.
TEST(CvarsFromEnvironment, OpenMpiMcaVariablesAreWhatReadsBack) {
  if (!open_mpi()) GTEST_SKIP() << "Open MPI's MCA variables";
  if (std::getenv("OMPI_MCA_btl_vader_eager_limit") == nullptr) GTEST_SKIP() << "run by mpi.test_cvars.mca_env";
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) GTEST_SKIP() << "the vader component opens with 2 ranks";
  const Session session;
  const std::vector<std::string> names = {"btl_vader_eager_limit", "btl_vader_single_copy_mechanism"};
  const auto read = read_cvars(session, names);
  EXPECT_EQ(read.at("btl_vader_eager_limit"), "8192");
  EXPECT_EQ(read.at("btl_vader_single_copy_mechanism"), "none");
  const auto cvars = list_cvars(session);
  const Cvar* mechanism = find(cvars, "btl_vader_single_copy_mechanism");
  ASSERT_NE(mechanism, nullptr);
  EXPECT_TRUE(std::count(mechanism->enum_items.begin(), mechanism->enum_items.end(), "none"));
}

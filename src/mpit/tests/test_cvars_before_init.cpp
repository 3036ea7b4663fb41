// MPI_T works before MPI_Init: a tool may list what can be set before the library starts.
#include <gtest/gtest.h>
#include <mpi.h>

#include "hympi/mpit/cvars.hpp"

TEST(Session, ListsCvarsBeforeMpiInit) {
  int initialized = 1;
  MPI_Initialized(&initialized);
  ASSERT_EQ(initialized, 0);
  const hympi::mpit::Session session;
  const auto cvars = hympi::mpit::list_cvars(session);
  ASSERT_FALSE(cvars.empty());
  const std::vector<std::string> names = {cvars.front().name};
  EXPECT_EQ(hympi::mpit::read_cvars(session, names).at(cvars.front().name), cvars.front().value);
}

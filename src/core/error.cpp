#include "hympi/core/error.hpp"

#include <mpi.h>

#include <sstream>

namespace hympi {

namespace {
std::string describe(const std::string& call, int code, int rank, const std::source_location& where) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) text[0] = '\0';
  std::ostringstream os;
  os << call << " failed on rank " << rank << " (" << where.file_name() << ":" << where.line()
     << "): " << text;
  return os.str();
}
}  // namespace

MpiError::MpiError(const std::string& call, int code, int rank, const std::source_location& where)
    : Error(describe(call, code, rank, where)), code_(code) {}

void check_mpi(int code, const char* call, const std::source_location& where) {
  if (code == MPI_SUCCESS) return;
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw MpiError(call, code, rank, where);
}

}  // namespace hympi

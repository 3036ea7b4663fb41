#include "hympi/core/error.hpp"

#include <mpi.h>

#include <filesystem>
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

std::string file_problem(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // follows links, as opening the file would
  switch (status.type()) {
    case fs::file_type::regular:
      return "";
    case fs::file_type::not_found:
      return "does not exist";
    case fs::file_type::directory:
      return "is a directory";
    case fs::file_type::fifo:
      return "is a FIFO";
    case fs::file_type::character:
    case fs::file_type::block:
      return "is a device";
    case fs::file_type::socket:
      return "is a socket";
    case fs::file_type::none:  // stat itself failed (a directory on the way without search permission)
      return "cannot be examined (" + ec.message() + ")";
    default:
      return "is not a regular file";
  }
}

void check_mpi(int code, const char* call, const std::source_location& where) {
  if (code == MPI_SUCCESS) return;
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw MpiError(call, code, rank, where);
}

}  // namespace hympi

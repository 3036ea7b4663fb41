#pragma once
// Error types of libhympi. Library code throws; only main() turns an error into an exit code.
#include <source_location>
#include <stdexcept>
#include <string>

namespace hympi {

/// Base of every libhympi error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A user-supplied value is out of range or malformed; apps exit with code 2.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// hwloc could not load, parse or bind.
class TopologyError : public Error {
 public:
  using Error::Error;
};

/// An MPI call returned an error code.
class MpiError : public Error {
 public:
  /// Records the failing call text, MPI error code and the calling rank.
  MpiError(const std::string& call, int code, int rank, const std::source_location& where);
  /// The MPI error code returned by the call.
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};

/// Throws MpiError when `code` is not MPI_SUCCESS; use through HYMPI_MPI.
void check_mpi(int code, const char* call,
               const std::source_location& where = std::source_location::current());

}  // namespace hympi

/// Checks an MPI call; communicators must use MPI_ERRORS_RETURN (Environment sets it on world).
#define HYMPI_MPI(call) ::hympi::check_mpi((call), #call)

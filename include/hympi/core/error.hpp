#pragma once
// Error types of libhympi. Library code throws; only main() turns an error into an exit code.
#include <exception>
#include <mutex>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

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

/// Why `path` cannot be read as an input file, in words that follow the path: "" for a regular file (or a link to
/// one), else "does not exist", "is a directory", "is a FIFO", "is a device", "is a socket" or "is not a regular
/// file". Callers refuse anything but a regular file: a FIFO blocks the reader, /dev/null reads as empty.
[[nodiscard]] std::string file_problem(const std::string& path);

/// `text` as it can stand inside a one-line message: valid UTF-8 kept, each control character and each byte of an
/// invalid sequence written \xNN, cut after `limit` bytes with "..." (a binary file named by mistake would put its
/// bytes, line breaks and all, into the refusal that quotes it). Never throws but std::bad_alloc.
[[nodiscard]] std::string printable(std::string_view text, std::size_t limit = 80);

/// Writes "prog: `kind`: message" and a newline to standard error in one write: a line in pieces (std::cerr writes
/// each << as it comes) reaches the launcher in pieces, and mpirun's own report of the failed job lands between them.
void print_error(std::string_view prog, std::string_view message, std::string_view kind = "error");

/// Flushes standard output (std::cout and C's stdout) and returns `exit_code`; when the output could not be written
/// (a full disk, a closed descriptor) says so in one line "prog: error: ..." on standard error and returns 1 instead
/// of a success: a result lost on its way out is a failed run. What every binary's main returns through.
[[nodiscard]] int flushed_output(std::string_view prog, int exit_code);

/// Throws MpiError when `code` is not MPI_SUCCESS; use through HYMPI_MPI.
void check_mpi(int code, const char* call,
               const std::source_location& where = std::source_location::current());

/// Carries the first exception thrown inside an OpenMP parallel region out of it.
///
/// An exception that leaves a parallel region calls std::terminate, so region bodies run their
/// throwing parts through capture() and the caller calls rethrow() after the region. A thread
/// whose work threw still reaches every barrier and worksharing construct of the region.
class ParallelErrors {
 public:
  /// Runs f(); keeps the first exception any thread's f() throws instead of letting it escape.
  template <class F>
  void capture(F&& f) noexcept {
    try {
      f();
    } catch (...) {
      const std::lock_guard lock(mutex_);
      if (!first_) first_ = std::current_exception();
    }
  }
  /// Rethrows the first captured exception, if any; call after the region, on one thread.
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
};

}  // namespace hympi

/// Checks an MPI call; communicators must use MPI_ERRORS_RETURN (Environment sets it on world).
#define HYMPI_MPI(call) ::hympi::check_mpi((call), #call)

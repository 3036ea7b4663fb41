#pragma once
// What the MPI benchmark programs under bench/ share: their integer arguments and how they exit.
#include <mpi.h>

#include <charconv>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "hympi/core/error.hpp"

namespace hympi::bench {

/// `text` as an integer >= 1; throws InvalidArgument naming `option` and the text otherwise.
inline long parse_positive(std::string_view text, const std::string& option) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1)
    throw InvalidArgument(option + ": '" + std::string(text) + "' is not a positive integer");
  return value;
}

/// Never thrown: run_main's default for errors that end a run quietly.
struct NoQuietError : std::exception {};

/// A benchmark's main: `run()` (its exit code) between MPI_Init_thread (funneled, which may take its own
/// arguments out of `argc` / `argv` before `run` parses them) and MPI_Finalize.
/// InvalidArgument, thrown alike on every rank before anything is launched or written: rank 0 prints one
/// line, exit code 2. `Quiet` (thrown alike on every rank, e.g. an I/O error): one line, exit code 1. Any
/// other exception: the rank's line, then MPI_Abort.
template <typename Quiet = NoQuietError, typename Run>
int run_main(const char* prog, int& argc, char**& argv, Run&& run) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, code = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    code = run();
  } catch (const Quiet& e) {
    if (rank == 0) std::fprintf(stderr, "%s: error: %s\n", prog, e.what());
    code = 1;
  } catch (const InvalidArgument& e) {
    if (rank == 0) std::fprintf(stderr, "%s: error: %s\n", prog, e.what());
    code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: error: %s\n", prog, rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}

}  // namespace hympi::bench

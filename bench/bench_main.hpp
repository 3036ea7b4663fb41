#pragma once
// What the MPI benchmark programs under bench/ share: their integer arguments, --help, the memory check and how
// they exit.
#include <mpi.h>

#include <charconv>
#include <cstdio>
#include <exception>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "hympi/app/app.hpp"
#include "hympi/core/environment.hpp"
#include "hympi/core/error.hpp"

namespace hympi::bench {

/// `text` as an integer from 1 to `max` (default: the largest T); throws InvalidArgument naming `option` and the
/// text otherwise. Bounded by the type it is stored in: a count cast into an int from past its range (2^32 rounds
/// became 0) crashed the benchmark.
template <typename T = long>
T parse_positive(std::string_view text, const std::string& option, T max = std::numeric_limits<T>::max()) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool whole = end == text.data() + text.size();
  if ((ec == std::errc::result_out_of_range && whole) || (ec == std::errc() && whole && value > max))
    throw InvalidArgument(option + ": '" + std::string(text) + "' is out of range (1 to " + std::to_string(max) + ")");
  if (ec != std::errc() || !whole || value < 1)
    throw InvalidArgument(option + ": '" + std::string(text) + "' is not a positive integer");
  return static_cast<T>(value);
}

/// Throws InvalidArgument naming the first option ("--...") given twice: the later one silently replaced the
/// earlier (--grid 8 8 8 --grid 4 4 4 ran 4^3), where the apps' command line refuses a repeat.
inline void refuse_repeated_options(int argc, char** argv) {
  std::set<std::string_view> seen;
  for (int i = 1; i < argc; ++i)
    if (const std::string_view arg = argv[i]; arg.starts_with("--") && !seen.insert(arg).second)
      throw InvalidArgument(std::string(arg) + " is given more than once");
}

/// Whether the command line asks for help (-h or --help anywhere): the benchmark prints `usage` and exits 0.
inline bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "-h" || std::string_view(argv[i]) == "--help") return true;
  return false;
}

/// Refuses, alike on every rank (InvalidArgument), a problem whose `rank_bytes` on each rank (what `counted`
/// says, e.g. "--global 8 8 8 (three copies of a rank's block, 8 B a point)") would not fit this machine's
/// memory with the launcher's ranks on it: the apps' check (check_memory_here), before anything is allocated,
/// where an allocation failing on some ranks ended the run in std::bad_alloc and MPI_Abort.
inline void check_memory(double rank_bytes, int ranks, std::string counted) {
  check_memory_here({rank_bytes, rank_bytes * ranks, std::move(counted)}, ranks, ranks_on_this_machine(ranks));
}

/// Never thrown: run_main's default for errors that end a run quietly.
struct NoQuietError : std::exception {};

/// A benchmark's main: `run()` (its exit code) between MPI_Init_thread (funneled, which may take its own
/// arguments out of `argc` / `argv` before `run` parses them) and MPI_Finalize.
/// InvalidArgument, thrown alike on every rank before anything is launched or written: rank 0 prints one
/// line, exit code 2. `Quiet` (thrown alike on every rank, e.g. an I/O error): one line, exit code 1. Any
/// other exception: the rank's line, then MPI_Abort.
/// With -h or --help, rank 0 prints "usage: prog `usage`" and every rank exits 0 without running. Output that
/// could not be written fails the run (flushed_output).
template <typename Quiet = NoQuietError, typename Run>
int run_main(const char* prog, const char* usage, int& argc, char**& argv, Run&& run) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, code = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (asks_for_help(argc, argv)) {
    if (rank == 0) std::printf("usage: %s %s\n", prog, usage);
    MPI_Finalize();
    return 0;
  }
  try {
    check_openmp_environment();
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
  return flushed_output(prog, code);
}

}  // namespace hympi::bench

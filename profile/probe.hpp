#pragma once
// The probe half of libhympi-profile (probe.cpp): what the profiler hands it when a rank finalizes, and how both
// halves write their files.
#include <cstdint>
#include <cstdio>
#include <string>

namespace hympi_probe {

/// What the process saw of MPI; all zero (not initialized) for a process that never called MPI_Init.
struct MpiFigures {
  bool initialized = false;
  int rank = -1, size = 0;
  double wall_s = 0.0;  ///< MPI_Init's return to MPI_Finalize
  double mpi_s = 0.0;   ///< inside intercepted MPI calls
  std::uint64_t bytes_sent = 0, messages_sent = 0;
};

/// MPI_Init returned: note each live thread's CPU time so far (the start-up's, no computing) and forget the PUs
/// seen so far. Open MPI binds a rank inside MPI_Init, so before it the rank runs wherever the launcher's process
/// did, and that is no fault of the layout. `spawned`: the process was started by another's MPI_Comm_spawn (it
/// has a parent communicator), so it is no rank of the launched layout.
void on_init(bool spawned);

/// Writes HYMPI_PROBE_DIR/probe-<host>-<pid>.json once per process (later calls do nothing); nothing without
/// HYMPI_PROBE_DIR.
void write(const MpiFigures& mpi);

/// Both halves' output files appear whole or not at all: written to PATH.tmp, renamed to PATH by
/// `finish_output`. Opens PATH.tmp, or says why not on stderr and returns nullptr.
std::FILE* open_output(const std::string& path);

/// Closes the file `open_output(path)` gave and renames it to `path`. A failed write (a full disk) shows in the
/// stream's error flag or at the close that flushes it: then the partial file goes and stderr says why.
void finish_output(std::FILE* f, const std::string& path);

}  // namespace hympi_probe

#pragma once
// The probe half of libhympi-profile (probe.cpp): what the profiler hands it when a rank finalizes.
#include <cstdint>

namespace hympi_probe {

/// What the process saw of MPI; all zero (not initialized) for a process that never called MPI_Init.
struct MpiFigures {
  bool initialized = false;
  int rank = -1, size = 0;
  double wall_s = 0.0;  ///< MPI_Init's return to MPI_Finalize
  double mpi_s = 0.0;   ///< inside intercepted MPI calls
  std::uint64_t bytes_sent = 0, messages_sent = 0;
};

/// MPI_Init returned: forget the PUs seen so far. Open MPI binds a rank inside MPI_Init, so before it the rank
/// runs wherever the launcher's process did, and that is no fault of the layout.
void on_init();

/// Writes HYMPI_PROBE_DIR/probe-<host>-<pid>.json once per process (later calls do nothing); nothing without
/// HYMPI_PROBE_DIR.
void write(const MpiFigures& mpi);

}  // namespace hympi_probe

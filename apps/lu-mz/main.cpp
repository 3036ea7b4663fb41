// hympi-lu-mz: NPB LU-MZ (MPI across zones, OpenMP inside zones), verified against NPB3.4-MZ.
#include "mz_app.hpp"

int main(int argc, char** argv) {
  hympi::npb::MzApp app(hympi::npb::Benchmark::lu);
  return hympi::run_app(argc, argv, app);
}

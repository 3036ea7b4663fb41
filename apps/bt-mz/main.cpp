// hympi-bt-mz: NPB BT-MZ (MPI across zones, OpenMP inside zones), verified against NPB3.4-MZ.
#include "mz_app.hpp"

int main(int argc, char** argv) {
  hympi::npb::MzApp app(hympi::npb::Benchmark::bt);
  return hympi::run_app(argc, argv, app);
}

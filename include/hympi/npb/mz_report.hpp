#pragma once
// The NPB-style text of a run, printed by rank 0: header, zone-to-rank map, zone splitting and the result block
// (the note on repetitions is core's print_repetitions).
#include "hympi/npb/class_params.hpp"
#include "hympi/npb/mz_run.hpp"
#include "hympi/npb/zone_grid.hpp"
#include "hympi/npb/zone_partition.hpp"

#include <ostream>
#include <vector>

namespace hympi::npb {

/// The NPB-style header printed before the run (benchmark, zones, mesh, iterations, dt, ranks).
void print_header(std::ostream& os, const ClassParams& p, int niter, int nranks, int total_threads);
/// The zone-to-rank map with its packing method, load imbalance and calculated speedup.
void print_partition(std::ostream& os, const ZonePartition& partition);
/// One line on OVERFLOW-style zone splitting `split` (the solver itself runs on unsplit zones).
void print_split_summary(std::ostream& os, const ZoneSplit& split);
/// Table 3 of Jin et al. ("High performance computing using MPI and OpenMP on multi-core parallel systems") for this
/// grid: for each number of groups, the points splitting costs and how
/// well whole zones (NPB bin packing) and split blocks (LPT) balance. Throws what split_zones throws.
void print_split_table(std::ostream& os, const ZoneGrid& grid, const std::vector<int>& groups, double tolerance);
/// The NPB-style result block (class, size, iterations, time, Mop/s total and per process, verification).
void print_report(std::ostream& os, const ClassParams& p, const MzResult& r, int nranks, int total_threads);

}  // namespace hympi::npb

#pragma once
// The NPB-MZ benchmarks (BT-MZ, SP-MZ, LU-MZ) as a library: class data, the time loop, the
// verification rule, Mop/s and the NPB-style report, each in its own header.
#include "hympi/npb/class_params.hpp"
#include "hympi/npb/mops.hpp"
#include "hympi/npb/mz_report.hpp"
#include "hympi/npb/mz_run.hpp"
#include "hympi/npb/verification.hpp"
